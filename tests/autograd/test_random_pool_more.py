"""``bernoulli``, ``multinomial``, ``normal``, ``randint_like`` (statistics, shapes,
determinism, refusals) and ``lp_pool*d``, ``max_unpool*d``, ``upsample`` (values and
gradients against PyTorch)."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit import nn

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------ random ops
def test_bernoulli_moments_dtype_and_determinism():
    nnkit.manual_seed(3)
    p = nnkit.full((20000,), 0.3, dtype=nnkit.float64)
    x = nnkit.bernoulli(p)
    assert x.dtype == nnkit.float64 and x.shape == (20000,)
    assert set(np.unique(_np(x))) <= {0.0, 1.0}
    assert abs(float(x.mean()) - 0.3) < 0.02
    nnkit.manual_seed(3)
    assert nnkit.equal(nnkit.bernoulli(p), x)
    y = nnkit.bernoulli(nnkit.zeros(5000), 0.8)
    assert abs(float(y.mean()) - 0.8) < 0.03
    assert nnkit.equal(nnkit.bernoulli(nnkit.tensor([0.0, 1.0])), nnkit.tensor([0.0, 1.0]))
    assert p.bernoulli().shape == (20000,)
    g = np.random.default_rng(5)
    a = nnkit.bernoulli(p[:50], generator=g)
    b = nnkit.bernoulli(p[:50], generator=np.random.default_rng(5))
    assert nnkit.equal(a, b)


def test_bernoulli_inplace():
    nnkit.manual_seed(4)
    x = nnkit.empty(20000, dtype=nnkit.float64)
    assert x.bernoulli_(0.25) is x
    assert abs(float(x.mean()) - 0.25) < 0.02
    y = nnkit.zeros(4000, 2).bernoulli_(nnkit.tensor([0.0, 1.0]))
    assert float(y[:, 0].sum()) == 0 and float(y[:, 1].sum()) == 4000
    with pytest.raises(RuntimeError):
        torch.zeros(2).bernoulli_(1.5)
    with pytest.raises(RuntimeError):
        nnkit.zeros(2).bernoulli_(1.5)
    leaf_t, leaf_n = torch.zeros(2, requires_grad=True), nnkit.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError):
        leaf_t.bernoulli_()
    with pytest.raises(RuntimeError):
        leaf_n.bernoulli_()
    # a non-leaf: the old value gets a zero gradient, as torch
    a_t, a_n = torch.ones(3, requires_grad=True), nnkit.ones(3, requires_grad=True)
    (a_t * 2).bernoulli_(0.5).sum().backward()
    (a_n * 2).bernoulli_(0.5).sum().backward()
    np.testing.assert_array_equal(_np(a_n.grad), a_t.grad.numpy())


@pytest.mark.parametrize("bad", [[-0.1, 0.5], [0.5, 1.5]])
def test_bernoulli_refuses_bad_probabilities(bad):
    with pytest.raises(RuntimeError):
        torch.bernoulli(torch.tensor(bad))
    with pytest.raises(RuntimeError):
        nnkit.bernoulli(nnkit.tensor(bad))
    with pytest.raises(RuntimeError):
        nnkit.bernoulli(nnkit.zeros(2), 1.5)
    with pytest.raises(RuntimeError):
        nnkit.bernoulli(nnkit.tensor([0, 1]))


def test_multinomial_with_replacement_frequencies():
    nnkit.manual_seed(0)
    w = nnkit.tensor([1.0, 2.0, 3.0, 4.0])
    s = nnkit.multinomial(w, 20000, replacement=True)
    assert s.dtype == nnkit.int64 and s.shape == (20000,)
    freq = np.bincount(_np(s), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.015)
    z = nnkit.multinomial(nnkit.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), 7, True)
    assert z.shape == (2, 7)
    assert (_np(z)[0] == 1).all() and (_np(z)[1] == 0).all()


def test_multinomial_without_replacement_never_repeats():
    nnkit.manual_seed(1)
    w = nnkit.rand(50, 6) + 0.01
    s = nnkit.multinomial(w, 6)
    assert s.shape == (50, 6) and torch.multinomial(torch.rand(50, 6), 6).shape == (50, 6)
    for row in _np(s):
        assert sorted(row) == list(range(6))
    # first draw follows the weights: category 2 of [1, 1, 8] most often
    firsts = _np(nnkit.multinomial(nnkit.tensor([[1.0, 1.0, 8.0]] * 4000), 2))[:, 0]
    assert abs((firsts == 2).mean() - 0.8) < 0.03
    nnkit.manual_seed(1)
    assert nnkit.equal(nnkit.multinomial(nnkit.rand(50, 6) + 0.01, 6), s)
    assert nnkit.rand(3).multinomial(2).shape == (2,)
    # zero weights come last once the others are used up (as torch on CPU)
    zw = [1.0, 0.0, 0.0]
    assert _np(nnkit.multinomial(nnkit.tensor(zw), 3)).tolist() == [0, 1, 2]
    assert torch.multinomial(torch.tensor(zw), 3).tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    "weights, n, repl",
    [
        ([0.5, -0.1], 1, True),
        ([0.0, 0.0], 1, True),
        ([1.0, float("nan")], 1, True),
        ([1.0, float("inf")], 1, True),
        ([1.0, 2.0], 3, False),
        ([1.0, 2.0], 0, True),
    ],
)
def test_multinomial_refusals_match_torch(weights, n, repl):
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor(weights), n, repl)
    with pytest.raises(RuntimeError):
        nnkit.multinomial(nnkit.tensor(weights), n, repl)


def test_multinomial_refuses_bad_rank():
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError):
        nnkit.multinomial(nnkit.ones(2, 2, 2), 1)


def test_normal_overloads_shapes_and_moments():
    nnkit.manual_seed(7)
    m = nnkit.full((40000,), 3.0, dtype=nnkit.float64)
    x = nnkit.normal(m, 2.0)
    assert x.dtype == nnkit.float64 and x.shape == (40000,)
    assert abs(float(x.mean()) - 3.0) < 0.05 and abs(float(x.std()) - 2.0) < 0.05
    y = nnkit.normal(-1.0, nnkit.full((40000,), 0.5))
    assert abs(float(y.mean()) + 1.0) < 0.02 and abs(float(y.std()) - 0.5) < 0.02
    both = nnkit.normal(nnkit.zeros(3, 1), nnkit.ones(4))
    assert both.shape == tuple(torch.normal(torch.zeros(3, 1), torch.ones(4)).shape)
    z = nnkit.normal(1.0, 0.0, (2, 3))
    assert z.shape == (2, 3) and z.dtype == nnkit.float32 and bool((z == 1).all())
    assert nnkit.normal(0.0, 1.0, (2,), dtype=nnkit.float64).dtype == nnkit.float64
    nnkit.manual_seed(7)
    assert nnkit.equal(nnkit.normal(m, 2.0), x)


def test_normal_refusals_match_torch():
    with pytest.raises(RuntimeError):
        torch.normal(torch.zeros(2), torch.tensor([1.0, -1.0]))
    with pytest.raises(RuntimeError):
        nnkit.normal(nnkit.zeros(2), nnkit.tensor([1.0, -1.0]))
    with pytest.raises(RuntimeError):
        torch.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError):
        nnkit.normal(0.0, -1.0, (2,))
    with pytest.raises(TypeError):
        nnkit.normal(0.0, 1.0)


def test_randint_like():
    nnkit.manual_seed(2)
    base = nnkit.zeros(200, 3, dtype=nnkit.float64)
    x = nnkit.randint_like(base, 5)
    t = torch.randint_like(torch.zeros(200, 3, dtype=torch.float64), 5)
    assert x.shape == tuple(t.shape) and x.dtype == nnkit.float64
    assert set(np.unique(_np(x))) == {0.0, 1.0, 2.0, 3.0, 4.0}
    y = nnkit.randint_like(base, -3, 2, dtype=nnkit.int64)
    assert y.dtype == nnkit.int64 and _np(y).min() >= -3 and _np(y).max() < 2
    nnkit.manual_seed(2)
    assert nnkit.equal(nnkit.randint_like(base, 5), x)
    with pytest.raises(RuntimeError):
        torch.randint_like(torch.zeros(2), 3, 3)
    with pytest.raises(RuntimeError):
        nnkit.randint_like(nnkit.zeros(2), 3, 3)


# ------------------------------------------------------------------- pooling
def _both(shape, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.3
    x = nnkit.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    return x, t


def _check(out, ref, x, t):
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = np.random.default_rng(9).standard_normal(tuple(ref.shape))
    out.backward(nnkit.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(_np(x.grad), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "p, k, stride, ceil, shape",
    [(2, 2, None, False, (2, 3, 7)), (3, 3, 2, True, (1, 2, 8)), (1.5, 2, 1, False, (2, 5))],
)
def test_lp_pool1d_matches_torch(p, k, stride, ceil, shape):
    x, t = _both(shape, positive=p != 2)
    _check(
        F.lp_pool1d(x, p, k, stride, ceil),
        torch.nn.functional.lp_pool1d(t, p, k, stride, ceil),
        x,
        t,
    )


@pytest.mark.parametrize(
    "p, k, stride, ceil, shape",
    [
        (2, 2, None, False, (2, 3, 4, 6)),
        (3, (2, 3), 1, False, (1, 2, 4, 5)),
        (2, 2, 2, True, (2, 5, 5)),
    ],
)
def test_lp_pool2d_matches_torch(p, k, stride, ceil, shape):
    x, t = _both(shape, seed=1, positive=p != 2)
    _check(
        F.lp_pool2d(x, p, k, stride, ceil),
        torch.nn.functional.lp_pool2d(t, p, k, stride, ceil),
        x,
        t,
    )
    layer = nn.LPPool2d(p, k, stride, ceil)
    ref = torch.nn.LPPool2d(p, k, stride, ceil)(t)
    np.testing.assert_allclose(_np(layer(x)), ref.detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize(
    "k, stride, pad, out_size", [(2, None, 0, None), (3, 2, 1, 8), (2, 2, 0, 9)]
)
def test_max_unpool1d_roundtrip_matches_torch(k, stride, pad, out_size):
    a = np.random.default_rng(4).permutation(2 * 3 * 8).reshape(2, 3, 8).astype(np.float64)
    ta = torch.tensor(a)
    pooled, idx = torch.nn.functional.max_pool1d(ta, k, stride, pad, return_indices=True)
    osz = None if out_size is None else (out_size,)
    x = nnkit.tensor(pooled.numpy(), requires_grad=True)
    t = pooled.clone().requires_grad_(True)
    ni = nnkit.tensor(idx.numpy())
    _check(
        F.max_unpool1d(x, ni, k, stride, pad, osz),
        torch.nn.functional.max_unpool1d(t, idx, k, stride, pad, osz),
        x,
        t,
    )
    # nnkit's own max_pool1d indices give the same result
    out, nidx = F.max_pool1d(nnkit.tensor(a), k, stride, pad, return_indices=True)
    np.testing.assert_array_equal(_np(nidx), idx.numpy())
    m = nn.MaxUnpool1d(k, stride, pad)(out, nidx, osz)
    ref = torch.nn.MaxUnpool1d(k, stride, pad)(pooled, idx, osz)
    np.testing.assert_array_equal(_np(m), ref.numpy())


@pytest.mark.parametrize(
    "k, stride, pad, out_size", [(2, None, 0, None), ((2, 3), (2, 3), 0, (7, 8))]
)
def test_max_unpool2d_matches_torch(k, stride, pad, out_size):
    a = np.random.default_rng(5).permutation(2 * 2 * 6 * 8).reshape(2, 2, 6, 8).astype(np.float64)
    pooled, idx = torch.nn.functional.max_pool2d(
        torch.tensor(a), k, stride, pad, return_indices=True
    )
    x = nnkit.tensor(pooled.numpy(), requires_grad=True)
    t = pooled.clone().requires_grad_(True)
    _check(
        F.max_unpool2d(x, nnkit.tensor(idx.numpy()), k, stride, pad, out_size),
        torch.nn.functional.max_unpool2d(t, idx, k, stride, pad, out_size),
        x,
        t,
    )
    unbatched = nn.MaxUnpool2d(k, stride, pad)(x[0], nnkit.tensor(idx.numpy())[0], out_size)
    ref = torch.nn.MaxUnpool2d(k, stride, pad)(pooled[0], idx[0], out_size)
    np.testing.assert_array_equal(_np(unbatched), ref.numpy())


def test_max_unpool_refusals():
    x, i = nnkit.ones(1, 1, 2), nnkit.tensor([[[0, 1]]])
    with pytest.raises(ValueError):
        torch.nn.functional.max_unpool1d(
            torch.ones(1, 1, 2), torch.tensor([[[0, 1]]]), 2, output_size=(9,)
        )
    with pytest.raises(ValueError):
        F.max_unpool1d(x, i, 2, output_size=(9,))
    with pytest.raises(RuntimeError):
        torch.nn.functional.max_unpool1d(torch.ones(1, 1, 2), torch.tensor([[[0, 7]]]), 2)
    with pytest.raises(RuntimeError):
        F.max_unpool1d(x, nnkit.tensor([[[0, 7]]]), 2)
    with pytest.raises(ValueError):
        F.max_unpool1d(x, nnkit.tensor([[0, 1]]), 2)
    with pytest.raises(TypeError):
        F.max_unpool1d(x, x, 2)


def test_upsample_is_interpolate():
    a = np.random.default_rng(2).standard_normal((1, 2, 3, 4))
    with pytest.warns(UserWarning):
        ref = torch.nn.functional.upsample(torch.tensor(a), scale_factor=2, mode="bilinear")
    out = F.upsample(nnkit.tensor(a), scale_factor=2, mode="bilinear")
    np.testing.assert_allclose(_np(out), ref.numpy(), rtol=1e-10)
    np.testing.assert_array_equal(
        _np(F.upsample(nnkit.tensor(a), size=(5, 5))),
        torch.nn.functional.interpolate(torch.tensor(a), size=(5, 5)).numpy(),
    )
