"""``F.embedding`` / ``nn.Embedding`` with ``max_norm``, ``norm_type`` and
``scale_grad_by_freq`` against PyTorch: the outputs, the table renormalised in place,
the gradients (repeated indices, ``padding_idx``), the module form and the refusal of
``sparse=True``."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit import nn
from nnkit.autograd import gradgradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional

IDX = np.array([[1, 4, 4, 0], [2, 4, 1, 6]], dtype=np.int64)  # 3 and 5 never looked up


def _np(t):
    return t.detach().cpu().numpy()


def _table(dtype, seed=0, scale=2.0):
    return (np.random.default_rng(seed).standard_normal((7, 3)) * scale).astype(dtype)


def _tol(dtype):
    return dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("norm_type", [1.0, 2.0, float("inf"), 3.0])
def test_max_norm_renormalises_looked_up_rows_in_place(device, norm_type, dtype):
    w = _table(dtype)
    tw = torch.tensor(w, requires_grad=True)
    nw = nnkit.tensor(w, device=device, requires_grad=True)
    t_out = TF.embedding(torch.tensor(IDX), tw, max_norm=1.5, norm_type=norm_type)
    n_out = F.embedding(nnkit.tensor(IDX, device=device), nw, max_norm=1.5, norm_type=norm_type)
    assert n_out.shape == tuple(t_out.shape) and str(n_out.dtype) == str(w.dtype)
    np.testing.assert_allclose(_np(n_out), _np(t_out), **_tol(dtype))
    # the table itself changed, as torch's: looked-up rows above max_norm shrank
    np.testing.assert_allclose(_np(nw), _np(tw), **_tol(dtype))
    assert not np.allclose(_np(nw), w)
    np.testing.assert_array_equal(_np(nw)[[3, 5]], w[[3, 5]])
    norms = np.linalg.norm(_np(nw)[[0, 1, 2, 4, 6]], ord=norm_type, axis=1)
    assert (norms <= 1.5 * (1 + 1e-6)).all()
    # the gradient ignores the rescaling (it ran under no_grad)
    g = np.random.default_rng(1).standard_normal(tuple(t_out.shape)).astype(dtype)
    t_out.backward(torch.tensor(g))
    n_out.backward(nnkit.tensor(g, device=device))
    np.testing.assert_allclose(_np(nw.grad), _np(tw.grad), **_tol(dtype))


def test_max_norm_leaves_small_rows_and_unused_rows_alone(device):
    w = _table(np.float32, seed=2, scale=0.1)  # every row's norm is far below 10
    nw = nnkit.tensor(w, device=device)
    F.embedding(nnkit.tensor(IDX, device=device), nw, max_norm=10.0)
    np.testing.assert_array_equal(_np(nw), w)
    empty = nnkit.zeros(0, dtype=nnkit.int64, device=device)
    big = nnkit.tensor(w * 1000, device=device)
    assert F.embedding(empty, big, max_norm=1.0).shape == (0, 3)
    np.testing.assert_array_equal(_np(big), w * 1000)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding_idx", [None, 4, -3])
def test_scale_grad_by_freq_divides_by_the_index_count(device, padding_idx, dtype):
    w = _table(dtype, seed=3)
    idx = np.array([[4, 1, 4, 4], [0, 1, 6, 4], [2, 2, 2, 2]], dtype=np.int64)
    tw = torch.tensor(w, requires_grad=True)
    nw = nnkit.tensor(w, device=device, requires_grad=True)
    kw = dict(padding_idx=padding_idx, scale_grad_by_freq=True)
    t_out = TF.embedding(torch.tensor(idx), tw, **kw)
    n_out = F.embedding(nnkit.tensor(idx, device=device), nw, **kw)
    np.testing.assert_array_equal(_np(n_out), _np(t_out))
    g = np.random.default_rng(4).standard_normal(tuple(t_out.shape)).astype(dtype)
    t_out.backward(torch.tensor(g))
    n_out.backward(nnkit.tensor(g, device=device))
    np.testing.assert_allclose(_np(nw.grad), _np(tw.grad), **_tol(dtype))
    # row 2 (four times, each gradient a quarter) is the mean of its gradients
    np.testing.assert_allclose(_np(nw.grad)[2], g[2].mean(0), **_tol(dtype))
    if padding_idx is not None:
        assert not _np(nw.grad)[padding_idx].any()


def test_scale_grad_by_freq_with_max_norm(device):
    w = _table(np.float64, seed=5)
    tw = torch.tensor(w, requires_grad=True)
    nw = nnkit.tensor(w, device=device, requires_grad=True)
    kw = dict(max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, padding_idx=0)
    t_out = TF.embedding(torch.tensor(IDX), tw, **kw)
    n_out = F.embedding(nnkit.tensor(IDX, device=device), nw, **kw)
    np.testing.assert_allclose(_np(n_out), _np(t_out), rtol=1e-12)
    np.testing.assert_allclose(_np(nw), _np(tw), rtol=1e-12)
    (t_out * t_out).sum().backward()
    (n_out * n_out).sum().backward()
    np.testing.assert_allclose(_np(nw.grad), _np(tw.grad), rtol=1e-12)


def test_scale_grad_by_freq_backward_is_differentiable():
    # the scaled gradient is linear in the cotangent v: d(u . grad_w)/dv = u[idx] / count.
    # (torch's double backward drops the 1 / count; the scaled first gradient is not a
    # derivative of the output, so only the cotangent path is checked.)
    idx = nnkit.tensor([[1, 1, 3], [0, 1, 3]])
    w = nnkit.tensor(_table(np.float64, seed=6)[:4], requires_grad=True)
    assert gradgradcheck(lambda t: F.embedding(idx, t, scale_grad_by_freq=True) * 2.0, (w,))
    rng = np.random.default_rng(9)
    v = nnkit.tensor(rng.standard_normal((2, 3, 3)), requires_grad=True)
    (gw,) = nnkit.autograd.grad(F.embedding(idx, w, scale_grad_by_freq=True), w, v,
                                create_graph=True)  # fmt: skip
    u = rng.standard_normal((4, 3))
    (gv,) = nnkit.autograd.grad(gw, v, nnkit.tensor(u))
    count = np.array([1, 3, 0, 2])[idx.numpy()][..., None]
    np.testing.assert_allclose(_np(gv), u[idx.numpy()] / count, rtol=1e-12)


def test_sparse_is_refused():
    w = nnkit.tensor(_table(np.float32))
    with pytest.raises(NotImplementedError, match="embedding: sparse=True"):
        F.embedding(nnkit.tensor([0, 1]), w, sparse=True)
    with pytest.raises(NotImplementedError, match="Embedding: sparse=True"):
        nn.Embedding(7, 3, sparse=True)


def test_module_passes_max_norm_and_scale_grad_by_freq(device):
    w = _table(np.float32, seed=7)
    kw = dict(padding_idx=1, max_norm=1.2, norm_type=1.0, scale_grad_by_freq=True)
    t_mod = torch.nn.Embedding(7, 3, _weight=torch.tensor(w), **kw)
    n_mod = nn.Embedding(7, 3, _weight=nnkit.tensor(w), **kw).to(device)
    assert repr(n_mod) == repr(t_mod)
    t_out = t_mod(torch.tensor(IDX))
    n_out = n_mod(nnkit.tensor(IDX, device=device))
    np.testing.assert_allclose(_np(n_out), _np(t_out), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(n_mod.weight), _np(t_mod.weight), rtol=1e-6, atol=1e-6)
    t_out.pow(2).sum().backward()
    n_out.pow(2).sum().backward()
    np.testing.assert_allclose(_np(n_mod.weight.grad), _np(t_mod.weight.grad), rtol=1e-5)


def test_from_pretrained_passes_the_options(device):
    w = _table(np.float32, seed=8)
    t_mod = torch.nn.Embedding.from_pretrained(torch.tensor(w), max_norm=1.0, norm_type=2.0)
    n_mod = nn.Embedding.from_pretrained(nnkit.tensor(w), max_norm=1.0, norm_type=2.0)
    assert repr(n_mod) == repr(t_mod) and not n_mod.weight.requires_grad
    n_mod = n_mod.to(device)
    t_out = t_mod(torch.tensor(IDX))
    n_out = n_mod(nnkit.tensor(IDX, device=device))
    np.testing.assert_allclose(_np(n_out), _np(t_out), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(n_mod.weight), _np(t_mod.weight), rtol=1e-6, atol=1e-6)
    trained = nn.Embedding.from_pretrained(
        nnkit.tensor(w), freeze=False, padding_idx=2, scale_grad_by_freq=True
    )
    assert trained.weight.requires_grad and trained.scale_grad_by_freq
    assert repr(trained) == repr(
        torch.nn.Embedding.from_pretrained(
            torch.tensor(w), freeze=False, padding_idx=2, scale_grad_by_freq=True
        )
    )
    frozen = nn.Embedding(7, 3, _weight=nnkit.tensor(w), _freeze=True)
    assert not frozen.weight.requires_grad
