"""``F.embedding_bag`` / ``nn.EmbeddingBag`` and ``F.max_unpool3d`` / ``nn.MaxUnpool3d``
against PyTorch: values, gradients, every mode, offsets and ``include_last_offset``,
``padding_idx``, empty bags, ``per_sample_weights``, ``max_norm``, ``scale_grad_by_freq``,
``output_size``, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _np(t):
    return t.detach().cpu().numpy()


def _pair(a, device, grad=False):
    """The same array as a torch tensor and an nnkit tensor on ``device``."""
    if a is None:
        return None, None
    t = torch.tensor(a, requires_grad=grad)
    n = nnkit.tensor(a, device=device, requires_grad=grad)
    return t, n


def _check_bag(device, idx, w, offsets=None, psw=None, seed=0, **kw):
    """Forward and the gradients of weight (and per_sample_weights) against torch."""
    tw, nw = _pair(w, device, True)
    ti, ni = _pair(np.asarray(idx, dtype=np.int64), device)
    to, no = _pair(None if offsets is None else np.asarray(offsets, dtype=np.int64), device)
    tp, npw = _pair(psw, device, psw is not None)
    t_out = TF.embedding_bag(ti, tw, to, per_sample_weights=tp, **kw)
    n_out = F.embedding_bag(ni, nw, no, per_sample_weights=npw, **kw)
    assert n_out.shape == tuple(t_out.shape) and str(n_out.dtype) == str(w.dtype)
    tol = 1e-5 if w.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(_np(n_out), _np(t_out), rtol=tol, atol=tol)
    g = np.random.default_rng(seed).standard_normal(tuple(t_out.shape)).astype(w.dtype)
    t_out.backward(torch.tensor(g))
    n_out.backward(nnkit.tensor(g, device=device))
    np.testing.assert_allclose(_np(nw.grad), _np(tw.grad), rtol=tol, atol=tol)
    if psw is not None:
        np.testing.assert_allclose(_np(npw.grad), _np(tp.grad), rtol=tol, atol=tol)
    return n_out


IDX = [1, 4, 4, 0, 2, 3, 4, 1, 5]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_offsets_and_empty_bags(device, mode, dtype):
    w = np.random.default_rng(1).standard_normal((6, 4)).astype(dtype)
    out = _check_bag(device, IDX, w, [0, 3, 3, 7, 9], mode=mode)  # bags 1 and 4 are empty
    assert not _np(out)[[1, 4]].any()
    _check_bag(device, IDX, w, [0], mode=mode)  # one bag of everything
    _check_bag(device, IDX, w, [0, 2, 5, 9], mode=mode, include_last_offset=True)
    _check_bag(device, IDX, w, [0, 0, 4, 9, 9], mode=mode, include_last_offset=True)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [4, -2, 0])
def test_padding_idx_left_out_of_bags(device, mode, padding_idx):
    w = np.random.default_rng(2).standard_normal((6, 3))
    out = _check_bag(device, IDX, w, [0, 2, 3, 6], mode=mode, padding_idx=padding_idx)
    if padding_idx == 4:  # bag 1 holds only the padding index: zeros, also for mean/max
        assert not _np(out)[1].any()
    _check_bag(device, np.reshape(IDX[:8], (2, 4)), w, mode=mode, padding_idx=padding_idx)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_2d_input_fixed_length_bags(device, mode):
    w = np.random.default_rng(3).standard_normal((6, 5)).astype(np.float32)
    _check_bag(device, np.reshape(IDX[:8], (4, 2)), w, mode=mode)
    # include_last_offset does not apply to a 2-d input (torch resets it)
    _check_bag(device, np.reshape(IDX[:6], (2, 3)), w, mode=mode, include_last_offset=True)


def test_per_sample_weights(device):
    rng = np.random.default_rng(4)
    w, psw = rng.standard_normal((6, 3)), rng.standard_normal(len(IDX))
    _check_bag(device, IDX, w, [0, 4, 4], psw, mode="sum")
    _check_bag(device, IDX, w, [0, 4, 9], psw, mode="sum", include_last_offset=True)
    _check_bag(device, IDX, w, [0, 4, 6], psw, mode="sum", padding_idx=4)
    x = np.reshape(IDX[:8], (2, 4))
    _check_bag(device, x, w, None, psw[:8].reshape(2, 4), mode="sum", padding_idx=1)


def test_max_ties_nan_and_first_maximum(device):
    w = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 3.0], [np.nan, -1.0], [-np.inf, -np.inf]])
    _check_bag(device, [1, 0, 2, 0, 1], w, [0, 2], mode="max")  # ties: the first one
    _check_bag(device, [4, 4, 0, 3, 1], w, [0, 2], mode="max")  # all -inf; NaN later
    _check_bag(device, [3, 0, 1], w, [0], mode="max")  # a NaN first row stays the max


def test_entries_past_the_last_offset_are_in_no_bag(device):
    # include_last_offset with offsets[-1] < len(input): torch's float32 'sum' kernel
    # leaves the trailing entries out (CSR, as its docs describe offsets); its other
    # kernels disagree (float64 and 'max' extend the last bag to the end, float32 'mean'
    # sums the bag but counts to the end). nnkit follows the CSR reading for all.
    # (torch's gradient for the trailing rows is uninitialised memory: values only.)
    w = np.random.default_rng(5).standard_normal((6, 3)).astype(np.float32)
    t_out = TF.embedding_bag(torch.tensor(IDX), torch.tensor(w), torch.tensor([0, 2, 5]),
                             mode="sum", include_last_offset=True)  # fmt: skip
    n_out = F.embedding_bag(
        nnkit.tensor(IDX, device=device),
        nnkit.tensor(w, device=device),
        nnkit.tensor([0, 2, 5], device=device),
        mode="sum",
        include_last_offset=True,
    )
    np.testing.assert_allclose(_np(n_out), _np(t_out), rtol=1e-6)
    nw = nnkit.tensor(w.astype(np.float64), device=device, requires_grad=True)
    out = F.embedding_bag(
        nnkit.tensor(IDX, device=device),
        nw,
        nnkit.tensor([0, 2, 5], device=device),
        mode="mean",
        include_last_offset=True,
    )
    wd = w.astype(np.float64)
    expect = [wd[[1, 4]].mean(0), wd[[4, 0, 2]].mean(0)]
    np.testing.assert_allclose(_np(out), expect, rtol=1e-12)
    out.sum().backward()
    assert not _np(nw.grad)[[3, 5]].any()


def test_no_indices_at_all(device):
    w = nnkit.ones(3, 2, device=device, requires_grad=True)
    for mode in ("sum", "mean", "max"):
        e = nnkit.tensor([], dtype=nnkit.int64, device=device)
        out = F.embedding_bag(e, w, nnkit.tensor([0, 0], device=device), mode=mode)
        assert out.shape == (2, 2) and not _np(out).any()
        out.sum().backward()
    assert not _np(w.grad).any()
    x = nnkit.zeros(3, 0, dtype=nnkit.int64, device=device)
    assert not _np(F.embedding_bag(x, w, mode="max")).any()


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq(device, mode):
    # torch's CPU embedding_bag kernel divides by the wrong count when several indices
    # repeat; the oracle is torch's embedding (which scales correctly) reduced by bag.
    rng = np.random.default_rng(6)
    w = rng.standard_normal((6, 3))
    idx, bags = [1, 1, 2, 1, 0, 2, 5], [0, 0, 1, 2, 2, 2, 2]
    tw = torch.tensor(w, requires_grad=True)
    rows = TF.embedding(torch.tensor(idx), tw, scale_grad_by_freq=True)
    t_out = torch.zeros(3, 3, dtype=torch.float64).index_add(0, torch.tensor(bags), rows)
    if mode == "mean":
        t_out = t_out / torch.tensor([2.0, 1.0, 4.0])[:, None]
    nw = nnkit.tensor(w, device=device, requires_grad=True)
    n_out = F.embedding_bag(
        nnkit.tensor(idx, device=device),
        nw,
        nnkit.tensor([0, 2, 3], device=device),
        mode=mode,
        scale_grad_by_freq=True,
    )
    np.testing.assert_allclose(_np(n_out), _np(t_out), rtol=1e-12)
    g = rng.standard_normal((3, 3))
    t_out.backward(torch.tensor(g))
    n_out.backward(nnkit.tensor(g, device=device))
    np.testing.assert_allclose(_np(nw.grad), _np(tw.grad), rtol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_max_norm_renormalises_rows_in_place(device, norm_type):
    w = np.random.default_rng(7).standard_normal((6, 3)).astype(np.float32) * 3
    tw = torch.tensor(w)
    nw = nnkit.tensor(w, device=device)
    idx, off = [1, 2, 4, 4], [0, 2]
    t_out = TF.embedding_bag(torch.tensor(idx), tw, torch.tensor(off), max_norm=1.5,
                             norm_type=norm_type)  # fmt: skip
    n_out = F.embedding_bag(
        nnkit.tensor(idx, device=device),
        nw,
        nnkit.tensor(off, device=device),
        max_norm=1.5,
        norm_type=norm_type,
    )
    np.testing.assert_allclose(_np(n_out), _np(t_out), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(nw), _np(tw), rtol=1e-5, atol=1e-6)  # rows 1, 2, 4
    np.testing.assert_array_equal(_np(nw)[[0, 3, 5]], w[[0, 3, 5]])


def test_max_norm_on_a_parameter_keeps_gradients(device):
    bag = nn.EmbeddingBag(5, 3, max_norm=1.0, mode="sum").to(device)
    out = bag(nnkit.tensor([0, 1, 1], device=device), nnkit.tensor([0, 1], device=device))
    out.sum().backward()
    norms = np.linalg.norm(_np(bag.weight)[[0, 1]], axis=1)
    assert (norms <= 1.0 + 1e-5).all()
    np.testing.assert_allclose(_np(bag.weight.grad)[[0, 1, 2]], [[1] * 3, [2] * 3, [0] * 3])


def test_double_backward_through_weight_and_per_sample_weights(device):
    w = nnkit.tensor(np.arange(12.0).reshape(4, 3) / 10, device=device, requires_grad=True)
    p = nnkit.tensor([0.5, -1.0, 2.0], dtype=nnkit.float64, device=device, requires_grad=True)
    i, off = nnkit.tensor([3, 1, 3], device=device), nnkit.tensor([0, 1], device=device)
    out = F.embedding_bag(i, w, off, mode="sum", per_sample_weights=p)
    (gw,) = nnkit.autograd.grad((out**2).sum(), [w], create_graph=True)
    (gp,) = nnkit.autograd.grad(gw.sum(), [p])
    tw = torch.tensor(_np(w), requires_grad=True)
    tp = torch.tensor(_np(p), requires_grad=True)
    rows = tw[torch.tensor([3, 1, 3])] * tp[:, None]
    t_out = torch.stack([rows[0], rows[1] + rows[2]])
    (tgw,) = torch.autograd.grad((t_out**2).sum(), [tw], create_graph=True)
    (tgp,) = torch.autograd.grad(tgw.sum(), [tp])
    np.testing.assert_allclose(_np(gw), _np(tgw), rtol=1e-6)
    np.testing.assert_allclose(_np(gp), _np(tgp), rtol=1e-6)


def _err(exc, match, *args, **kw):
    with pytest.raises(exc, match=match):
        F.embedding_bag(*args, **kw)


def test_refusals_name_the_op_and_argument():
    w = nnkit.randn(5, 3)
    i, off = nnkit.tensor([1, 2, 4, 0]), nnkit.tensor([0, 2])
    _err(RuntimeError, r"embedding_bag: offsets\[0\] has to be 0", i, w, nnkit.tensor([1, 2]))
    _err(RuntimeError, r"offsets\[-1\] can not be greater", i, w, nnkit.tensor([0, 7]))
    _err(RuntimeError, "offsets must be non-decreasing", i, w, nnkit.tensor([0, 3, 2]))
    _err(ValueError, "offsets must not be empty", i, w, nnkit.tensor([], dtype=nnkit.int64))
    _err(ValueError, "offsets must be a 1-d", i, w, nnkit.tensor([[0, 2]]))
    _err(ValueError, "offsets is required", i, w)
    _err(ValueError, "offsets must be None for a 2-d input", i.reshape(2, 2), w, off)
    _err(ValueError, "input must be 1-d or 2-d", i.reshape(1, 2, 2), w)
    _err(ValueError, "weight must be 2-d", i, nnkit.randn(5), off)
    _err(TypeError, "weight must be floating point", i, nnkit.ones(5, 3, dtype=nnkit.int64), off)
    _err(TypeError, "input must be an int32 or int64", i.float(), w, off)
    _err(TypeError, "offsets must be an int32 or int64", i, w, off.float())
    _err(IndexError, "embedding_bag: index 5 out of range for 5", nnkit.tensor([5]), w, off[:1])
    _err(IndexError, "index -1 out of range", nnkit.tensor([-1]), w, off[:1])
    _err(ValueError, "mode must be one of", i, w, off, mode="median")
    _err(ValueError, "padding_idx must be within", i, w, off, padding_idx=5)
    _err(ValueError, "max mode does not support scale_grad_by_freq", i, w, off, mode="max",
         scale_grad_by_freq=True)  # fmt: skip
    _err(NotImplementedError, "sparse=True is not supported", i, w, off, sparse=True)
    p = nnkit.ones(4)
    for mode in ("mean", "max"):
        _err(NotImplementedError, "only supported for mode='sum'", i, w, off, mode=mode,
             per_sample_weights=p)  # fmt: skip
    _err(ValueError, "per_sample_weights of shape", i, w, off, mode="sum",
         per_sample_weights=nnkit.ones(3))  # fmt: skip
    _err(TypeError, "per_sample_weights must have weight's dtype", i, w, off, mode="sum",
         per_sample_weights=p.double())  # fmt: skip
    _err(TypeError, "argument 'weight' must be a Tensor", i, np.ones((5, 3)), off)


def test_int32_indices_and_offsets(device):
    w = np.random.default_rng(8).standard_normal((6, 2))
    nw = nnkit.tensor(w, device=device)
    i = nnkit.tensor(IDX, dtype=nnkit.int32, device=device)
    off = nnkit.tensor([0, 4], dtype=nnkit.int32, device=device)
    out = F.embedding_bag(i, nw, off, mode="sum")
    expect = TF.embedding_bag(torch.tensor(IDX), torch.tensor(w), torch.tensor([0, 4]), mode="sum")
    np.testing.assert_allclose(_np(out), _np(expect), rtol=1e-12)


# ------------------------------------------------------------------ the module
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_module_matches_torch(device, mode):
    tb = torch.nn.EmbeddingBag(7, 4, mode=mode, padding_idx=2, include_last_offset=True)
    nb = nn.EmbeddingBag(7, 4, mode=mode, padding_idx=2, include_last_offset=True).to(device)
    assert not _np(nb.weight)[2].any()  # the padding row starts at zero
    nb.load_state_dict({"weight": nnkit.tensor(_np(tb.weight))})
    i, off = [1, 2, 6, 0, 2, 5, 3], [0, 3, 3, 7]
    t_out = tb(torch.tensor(i), torch.tensor(off))
    n_out = nb(nnkit.tensor(i, device=device), nnkit.tensor(off, device=device))
    np.testing.assert_allclose(_np(n_out), _np(t_out), rtol=1e-5, atol=1e-6)
    t_out.sum().backward()
    n_out.sum().backward()
    np.testing.assert_allclose(_np(nb.weight.grad), _np(tb.weight.grad), rtol=1e-5, atol=1e-6)
    assert repr(nb) == repr(tb)
    assert list(nb.state_dict()) == ["weight"]


def test_module_per_sample_weights_2d_and_repr():
    nb = nn.EmbeddingBag(5, 2, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True, mode="sum")
    tb = torch.nn.EmbeddingBag(5, 2, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True,
                               mode="sum")  # fmt: skip
    assert repr(nb) == repr(tb)
    x, p = nnkit.tensor([[0, 1], [3, 3]]), nnkit.tensor([[1.0, 2.0], [0.5, 0.5]])
    assert nb(x, per_sample_weights=p).shape == (2, 2)


def test_module_from_pretrained_and_refusals():
    emb = nnkit.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    bag = nn.EmbeddingBag.from_pretrained(emb, mode="max", padding_idx=1)
    assert not bag.weight.requires_grad and bag.padding_idx == 1 and bag.mode == "max"
    out = bag(nnkit.tensor([0, 1, 2, 1]), nnkit.tensor([0, 2]))
    np.testing.assert_array_equal(_np(out), [[1.0, 2.0], [5.0, 6.0]])
    assert nn.EmbeddingBag.from_pretrained(emb, freeze=False).weight.requires_grad
    emb2 = emb.clone()
    nn.EmbeddingBag.from_pretrained(emb2, max_norm=1.0)(nnkit.tensor([[0, 1]]))
    assert nnkit.equal(emb2, emb)  # the layer holds a copy
    with pytest.raises(ValueError, match="2-dimensional"):
        nn.EmbeddingBag.from_pretrained(nnkit.ones(3))
    with pytest.raises(NotImplementedError, match="EmbeddingBag: sparse=True"):
        nn.EmbeddingBag(3, 2, sparse=True)
    with pytest.raises(ValueError, match="EmbeddingBag: mode must be"):
        nn.EmbeddingBag(3, 2, mode="min")
    with pytest.raises(ValueError, match="EmbeddingBag: padding_idx must be within"):
        nn.EmbeddingBag(3, 2, padding_idx=3)
    with pytest.raises(ValueError, match="EmbeddingBag: num_embeddings must be a positive"):
        nn.EmbeddingBag(0, 2)
    with pytest.raises(ValueError, match=r"_weight must have shape \(3, 2\)"):
        nn.EmbeddingBag(3, 2, _weight=nnkit.ones(2, 2))
    assert nn.EmbeddingBag(4, 2, padding_idx=-1).padding_idx == 3


# ------------------------------------------------------------------ max_unpool3d
@pytest.mark.parametrize(
    "shape,kw,output_size",
    [
        ((2, 3, 4, 4, 4), dict(kernel_size=2), None),
        ((1, 2, 5, 4, 6), dict(kernel_size=(2, 2, 3), stride=(2, 1, 3)), (5, 4, 6)),
        ((2, 5, 5, 5), dict(kernel_size=3, stride=2, padding=1), (6, 5, 5)),
        ((1, 1, 4, 5, 4), dict(kernel_size=2), [1, 1, 5, 5, 5]),
    ],
)
def test_max_unpool3d_matches_torch(device, shape, kw, output_size):
    x = np.random.default_rng(9).standard_normal(shape)
    t_pooled, t_idx = TF.max_pool3d(torch.tensor(x), return_indices=True, **kw)
    tin = t_pooled.detach().requires_grad_()
    nin = nnkit.tensor(_np(t_pooled), device=device, requires_grad=True)
    n_idx = nnkit.tensor(_np(t_idx), device=device)
    ukw = {k: v for k, v in kw.items()}
    t_out = TF.max_unpool3d(tin, t_idx, output_size=output_size, **ukw)
    n_out = F.max_unpool3d(nin, n_idx, output_size=output_size, **ukw)
    np.testing.assert_array_equal(_np(n_out), _np(t_out))
    g = np.random.default_rng(10).standard_normal(tuple(t_out.shape))
    t_out.backward(torch.tensor(g))
    n_out.backward(nnkit.tensor(g, device=device))
    np.testing.assert_allclose(_np(nin.grad), _np(tin.grad), rtol=1e-12)
    mod = nn.MaxUnpool3d(**kw)
    np.testing.assert_array_equal(_np(mod(nin, n_idx, output_size)), _np(t_out))
    assert repr(mod) == repr(torch.nn.MaxUnpool3d(**kw))


def test_max_unpool3d_with_nnkit_pool_indices(device):
    x = nnkit.tensor(np.random.default_rng(11).standard_normal((1, 2, 4, 4, 4)), device=device)
    out, idx = F.max_pool3d(x, 2, return_indices=True)
    back = F.max_unpool3d(out, idx, 2)
    assert back.shape == x.shape
    np.testing.assert_array_equal(_np(F.max_pool3d(back, 2)), _np(out))


def test_max_unpool3d_refusals():
    x, i = nnkit.ones(1, 1, 2, 2, 2), nnkit.tensor([[[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]]])
    with pytest.raises(ValueError, match="max_unpool3d: invalid output_size"):
        F.max_unpool3d(x, i, 2, output_size=(2, 4, 4))
    with pytest.raises(ValueError, match="max_unpool3d: expected a 4-d or 5-d input"):
        F.max_unpool3d(x[0, 0], i[0, 0], 2)
    with pytest.raises(RuntimeError, match="max_unpool3d: found an invalid max index"):
        F.max_unpool3d(x, i + 60, 2)
    with pytest.raises(ValueError, match="max_unpool3d: kernel_size must be"):
        F.max_unpool3d(x, i, (2, 2))
    with pytest.raises(TypeError, match="max_unpool3d: indices must be an integer"):
        F.max_unpool3d(x, i.float(), 2)
