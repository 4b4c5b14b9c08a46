"""The fused cross-entropy Op (``nnkit/autograd/ops/loss_fused.py``) against PyTorch and
against the composite ``log_softmax`` + ``nll_loss`` path it replaces: values (bitwise
equal to the composite), gradients (float rounding), double backward, edge cases.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F
from nnkit.autograd import gradcheck, gradgradcheck
from nnkit.autograd.ops import loss as loss_mod

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

SHAPES = {"2d": ((6, 5), (6,)), "kd": ((3, 4, 2, 3), (3, 2, 3)), "1d": ((5,), ())}


def _case(shape_key, prob, seed=0):
    xs, ts = SHAPES[shape_key]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs) * 2
    n_classes = xs[1] if len(xs) > 1 else xs[0]
    if prob:
        t = rng.random(xs)
        t /= t.sum(axis=1 if len(xs) > 1 else 0, keepdims=True)
    else:
        t = rng.integers(0, n_classes, ts)
        if t.ndim:
            t.flat[1] = -100  # one ignored target
    w = rng.random(n_classes) + 0.5
    return x, t, w


def _composite(monkeypatch):
    monkeypatch.setattr(loss_mod, "_fusable", lambda *a: False)


def _both(x, t, w, dtype, **kw):
    a = nnkit.tensor(x, dtype=dtype, requires_grad=True)
    b = torch.tensor(x, dtype=getattr(torch, str(dtype).split(".")[-1]), requires_grad=True)
    tt = torch.tensor(t) if t.dtype.kind != "f" else torch.tensor(t, dtype=b.dtype)
    nw = None if w is None else nnkit.tensor(w, dtype=dtype)
    tw = None if w is None else torch.tensor(w, dtype=b.dtype)
    nt = nnkit.tensor(t) if t.dtype.kind != "f" else nnkit.tensor(t, dtype=dtype)
    return (a, nt, nw), (b, tt, tw)


GRID = list(
    itertools.product(
        ["2d", "kd", "1d"], [False, True], [False, True], [0.0, 0.2], ["mean", "sum", "none"]
    )
)


@pytest.mark.parametrize("dtype", [nnkit.float32, nnkit.float64])
@pytest.mark.parametrize("shape,prob,weighted,smoothing,reduction", GRID)
def test_matches_torch(shape, prob, weighted, smoothing, reduction, dtype):
    x, t, w = _case(shape, prob)
    if shape == "1d" and not prob:
        t = np.asarray(3)
    (a, nt, nw), (b, tt, tw) = _both(x, t, w if weighted else None, dtype)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    out = F.cross_entropy(a, nt, weight=nw, **kw)
    ref = TF.cross_entropy(b, tt, weight=tw, **kw)
    assert out.grad_fn.name() == "CrossEntropyBackward"
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == nnkit.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **tol)
    g = np.random.default_rng(1).standard_normal(tuple(out.shape))
    out.backward(nnkit.tensor(g, dtype=dtype))
    ref.backward(torch.tensor(g, dtype=b.dtype))
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


@pytest.mark.parametrize("shape,prob,weighted,smoothing,reduction", GRID)
def test_bitwise_equal_to_composite(monkeypatch, shape, prob, weighted, smoothing, reduction):
    x, t, w = _case(shape, prob, seed=3)
    if shape == "1d" and not prob:
        t = np.asarray(1)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    (a, nt, nw), _ = _both(x, t, w if weighted else None, nnkit.float32)
    fused = F.cross_entropy(a, nt, weight=nw, **kw)
    fused.sum().backward()
    with monkeypatch.context() as m:
        _composite(m)
        (c, ct, cw), _ = _both(x, t, w if weighted else None, nnkit.float32)
        comp = F.cross_entropy(c, ct, weight=cw, **kw)
        comp.sum().backward()
    assert comp.grad_fn.name() != "CrossEntropyBackward"
    # the same operations forward: equal bits (ignored samples give +0.0, torch's value,
    # where the composite gave -0.0); gradients up to float rounding
    assert np.array_equal(fused.detach().numpy(), comp.detach().numpy())
    np.testing.assert_allclose(a.grad.numpy(), c.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape,prob,smoothing,reduction", [
    ("2d", False, 0.0, "mean"), ("2d", False, 0.3, "none"), ("kd", False, 0.1, "sum"),
    ("2d", True, 0.2, "mean"), ("1d", True, 0.0, "none"), ("kd", True, 0.1, "none"),
])  # fmt: skip
def test_gradcheck_and_double_backward(shape, prob, smoothing, reduction):
    x, t, w = _case(shape, prob, seed=5)
    a = nnkit.tensor(x, dtype=nnkit.float64, requires_grad=True)
    nt = nnkit.tensor(t, dtype=nnkit.float64) if prob else nnkit.tensor(t)
    nw = nnkit.tensor(w, dtype=nnkit.float64)

    def fn(z):
        return F.cross_entropy(z, nt, weight=nw, reduction=reduction, label_smoothing=smoothing)

    assert gradcheck(fn, (a,))
    assert gradgradcheck(fn, (a,))
    # the Hessian-vector product against torch's
    b = torch.tensor(x, requires_grad=True)
    tt = torch.tensor(t)
    ref = TF.cross_entropy(b, tt, weight=torch.tensor(w), reduction=reduction,
                           label_smoothing=smoothing)  # fmt: skip
    out = fn(a)
    v = np.random.default_rng(2).standard_normal(x.shape)
    (ga,) = nnkit.autograd.grad(out.sum(), a, create_graph=True)
    (gb,) = torch.autograd.grad(ref.sum(), b, create_graph=True)
    (ha,) = nnkit.autograd.grad((ga * nnkit.tensor(v)).sum(), a)
    (hb,) = torch.autograd.grad((gb * torch.tensor(v)).sum(), b)
    np.testing.assert_allclose(ga.detach().numpy(), gb.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ha.numpy(), hb.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_minus_inf_logits_and_ignored(smoothing):
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, 2.0, 0.5], [-np.inf, 1.0, 1.0]])
    t = np.array([0, 1, -100])
    (a, nt, _), (b, tt, _) = _both(x, t, None, nnkit.float64)
    for red in ("none", "mean", "sum"):
        a.grad = None
        b.grad = None
        out = F.cross_entropy(a, nt, reduction=red, label_smoothing=smoothing)
        ref = TF.cross_entropy(b, tt, reduction=red, label_smoothing=smoothing)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_all_ignored_is_nan_and_empty_batch():
    a = nnkit.tensor(np.ones((2, 3)), requires_grad=True)
    out = F.cross_entropy(a, nnkit.tensor([-100, -100]))
    assert math.isnan(out.item())
    out.backward()
    ref = torch.ones(2, 3, requires_grad=True)
    TF.cross_entropy(ref, torch.tensor([-100, -100])).backward()
    np.testing.assert_array_equal(a.grad.numpy(), ref.grad.numpy())
    e = nnkit.zeros(0, 4, requires_grad=True)
    for red in ("mean", "sum", "none"):
        got = F.cross_entropy(e, nnkit.tensor(np.zeros(0, dtype=np.int64)), reduction=red)
        want = TF.cross_entropy(torch.zeros(0, 4), torch.zeros(0, dtype=torch.long), reduction=red)
        np.testing.assert_array_equal(got.detach().numpy(), want.numpy())
        got.sum().backward()
    assert tuple(e.grad.shape) == (0, 4)


def test_module_and_errors():
    x, t, w = _case("2d", False, seed=7)
    (a, nt, nw), (b, tt, tw) = _both(x, t, w, nnkit.float32)
    loss = nn.CrossEntropyLoss(weight=nw, label_smoothing=0.05)(a, nt)
    ref = torch.nn.CrossEntropyLoss(weight=tw, label_smoothing=0.05)(b, tt)
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-6)
    with pytest.raises(IndexError, match="out of range"):
        F.cross_entropy(a, nnkit.tensor([0, 1, 2, 3, 4, 5]))
    with pytest.raises(ValueError):
        F.cross_entropy(a, nnkit.tensor([0, 1]))


def test_target_and_weight_gradients_take_composite_path():
    x, t, w = _case("2d", True, seed=9)
    a = nnkit.tensor(x, requires_grad=True)
    nt = nnkit.tensor(t, requires_grad=True)
    nw = nnkit.tensor(w, requires_grad=True)
    F.cross_entropy(a, nt, weight=nw, label_smoothing=0.1).backward()
    b = torch.tensor(x, requires_grad=True)
    tt = torch.tensor(t, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    TF.cross_entropy(b, tt, weight=tw, label_smoothing=0.1).backward()
    for n, r in ((a, b), (nt, tt), (nw, tw)):
        np.testing.assert_allclose(n.grad.numpy(), r.grad.numpy(), rtol=1e-10, atol=1e-12)


# --- rows of logits with no ignored target, no weight, no smoothing: the kernel's fast
# path (loss_kernels._ce_forward_rows); an ignore_index inside the targets' range that
# no target equals sends the same input down the general path


def _rows_case(dtype, seed=11):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((9, 5)) * 3
    t = rng.choice([0, 1, 3, 4], 9)
    t[:2] = (0, 4)  # the range [0, 4] holds the unused class 2
    return x, t


@pytest.mark.parametrize("dtype", [nnkit.float32, nnkit.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_rows_fast_path_bitwise_equal_to_general_path_and_torch(dtype, reduction):
    x, t = _rows_case(dtype)
    (a, nt, _), (b, tt, _) = _both(x, t, None, dtype)
    fast = F.cross_entropy(a, nt, reduction=reduction)
    c = nnkit.tensor(x, dtype=dtype, requires_grad=True)
    general = F.cross_entropy(c, nt, reduction=reduction, ignore_index=2)
    assert np.array_equal(fast.detach().numpy(), general.detach().numpy())
    g = nnkit.tensor(np.random.default_rng(1).standard_normal(tuple(fast.shape)), dtype=dtype)
    fast.backward(g)
    general.backward(g)
    assert np.array_equal(a.grad.numpy(), c.grad.numpy())
    ref = TF.cross_entropy(b, tt, reduction=reduction)
    ref.backward(torch.tensor(g.numpy()))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == nnkit.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(fast.detach().numpy(), ref.detach().numpy(), **tol)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


def test_rows_fast_path_double_backward():
    x, t = _rows_case(nnkit.float64, seed=12)
    nt = nnkit.tensor(t)
    a = nnkit.tensor(x, requires_grad=True)
    for red in ("mean", "sum", "none"):
        assert gradgradcheck(lambda z, red=red: F.cross_entropy(z, nt, reduction=red), (a,))


@pytest.mark.parametrize("bad", [5, -1, -101])
def test_rows_fast_path_out_of_range_target(bad):
    a = nnkit.tensor(np.zeros((3, 5)), requires_grad=True)
    with pytest.raises(IndexError, match=f"target class {bad} out of range for 5 classes"):
        F.cross_entropy(a, nnkit.tensor([0, bad, 4]))


def test_rows_fast_path_infinite_logits_as_torch():
    inf = np.inf
    x = np.array([[0.0, -inf, 1.0], [-inf, -inf, -inf], [inf, 1.0, 0.0], [np.nan, 0.0, 1.0]])
    t = np.array([0, 1, 2, 2])
    (a, nt, _), (b, tt, _) = _both(x, t, None, nnkit.float64)
    for red in ("none", "mean", "sum"):
        a.grad = b.grad = None
        out = F.cross_entropy(a, nt, reduction=red)
        ref = TF.cross_entropy(b, tt, reduction=red)
        np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
