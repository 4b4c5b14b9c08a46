"""``linalg.qr``, ``linalg.svd``, ``linalg.pinv``, ``linalg.lstsq`` and ``F.unfold`` /
``F.fold`` (with ``nn.Unfold`` / ``nn.Fold``) against PyTorch: values (up to the sign
of singular vectors), reconstructions, and gradients of sign-invariant functions."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F

torch = pytest.importorskip("torch")

L = nnkit.linalg
SHAPES = [(4, 3), (3, 3), (3, 5), (2, 4, 3), (2, 3, 5)]


def _pair(a, grad=True):
    return nnkit.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _close(x, y, tol=1e-8):
    np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_values_match_torch(shape, mode):
    a = np.random.default_rng(1).standard_normal(shape)
    q, r = L.qr(nnkit.tensor(a), mode)
    tq, tr = torch.linalg.qr(torch.tensor(a), mode)
    assert tuple(q.shape) == tuple(tq.shape) and tuple(r.shape) == tuple(tr.shape)
    _close(r, tr)
    if mode != "r":
        _close(q, tq)
        _close(q @ r, torch.tensor(a))


@pytest.mark.parametrize("shape", SHAPES)
def test_qr_gradient_matches_torch(shape):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(shape)
    x, t = _pair(a)
    q, r = L.qr(x)
    tq, tr = torch.linalg.qr(t)
    wq, wr = rng.standard_normal(tq.shape), rng.standard_normal(tr.shape)
    ((q * nnkit.tensor(wq)).sum() + (r * nnkit.tensor(wr)).sum()).backward()
    ((tq * torch.tensor(wq)).sum() + (tr * torch.tensor(wr)).sum()).backward()
    _close(x.grad, t.grad)


def test_qr_complete_tall_has_no_gradient():
    x = nnkit.randn(4, 3, dtype=nnkit.float64, requires_grad=True)
    q, r = L.qr(x, "complete")
    with pytest.raises(RuntimeError, match="not differentiable"):
        q.sum().backward()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [True, False])
def test_svd_values_and_reconstruction(shape, full):
    a = np.random.default_rng(3).standard_normal(shape)
    u, s, vh = L.svd(nnkit.tensor(a), full_matrices=full)
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    assert (tuple(u.shape), tuple(vh.shape)) == (tuple(tu.shape), tuple(tvh.shape))
    _close(s, ts)
    k = s.shape[-1]
    _close((u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], torch.tensor(a))
    eye_u = nnkit.eye(u.shape[-1], dtype=u.dtype)
    eye_v = nnkit.eye(vh.shape[-2], dtype=u.dtype)
    np.testing.assert_allclose(
        (u.mT @ u).numpy(), np.broadcast_to(eye_u.numpy(), u.shape[:-2] + eye_u.shape), atol=1e-10
    )
    np.testing.assert_allclose(
        (vh @ vh.mT).numpy(),
        np.broadcast_to(eye_v.numpy(), vh.shape[:-2] + eye_v.shape),
        atol=1e-10,
    )
    # singular vectors agree with torch's up to sign
    _close(u[..., :k].abs(), tu[..., :k].abs())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [True, False])
def test_svd_gauge_invariant_gradient(shape, full):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape)
    x, t = _pair(a)
    u, s, vh = L.svd(x, full_matrices=full)
    tu, ts, tvh = torch.linalg.svd(t, full_matrices=full)
    k = s.shape[-1]
    w = rng.standard_normal(ts.shape[:-1] + (tu.shape[-2], tvh.shape[-1]))
    ((u[..., :k].abs() * s.unsqueeze(-2)) @ vh[..., :k, :].abs() * nnkit.tensor(w)).sum().backward()
    (
        (tu[..., :k].abs() * ts.unsqueeze(-2)) @ tvh[..., :k, :].abs() * torch.tensor(w)
    ).sum().backward()
    _close(x.grad, t.grad, 1e-7)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kw", [{}, {"rtol": 0.3}, {"atol": 0.5}])
def test_pinv_matches_torch(shape, kw):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shape)
    x, t = _pair(a)
    p, tp = L.pinv(x, **kw), torch.linalg.pinv(t, **kw)
    _close(p, tp)
    w = rng.standard_normal(tp.shape)
    (p * nnkit.tensor(w)).sum().backward()
    (tp * torch.tensor(w)).sum().backward()
    _close(x.grad, t.grad, 1e-7)


def test_pinv_hermitian_and_rank_deficient():
    rng = np.random.default_rng(6)
    b = rng.standard_normal((4, 2))
    a = b @ b.T  # symmetric, rank 2
    x, t = _pair(a)
    p, tp = L.pinv(x, hermitian=True), torch.linalg.pinv(t, hermitian=True)
    _close(p, tp)
    _close(L.pinv(nnkit.tensor(a)), torch.linalg.pinv(torch.tensor(a)))
    w = rng.standard_normal((4, 4))
    (p * nnkit.tensor(w)).sum().backward()
    (tp * torch.tensor(w)).sum().backward()
    _close(x.grad, t.grad, 1e-7)


@pytest.mark.parametrize("shapes", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((2, 5, 3), (2, 5, 1))])
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_outputs_match_torch(shapes, driver):
    if driver == "gels" and shapes[0][-2] < shapes[0][-1]:
        pytest.skip("gels needs full column rank")
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    x, t = _pair(a)
    res = L.lstsq(x, nnkit.tensor(b), driver=driver)
    ref = torch.linalg.lstsq(t, torch.tensor(b), driver=driver)
    for mine, theirs in zip(res, ref):
        assert tuple(mine.shape) == tuple(theirs.shape)
        assert str(mine.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), atol=1e-8)
    (res.solution.sum() + res.residuals.sum()).backward()
    (ref.solution.sum() + ref.residuals.sum()).backward()
    _close(x.grad, t.grad, 1e-7)


UNFOLD_ARGS = [
    {"kernel_size": 2},
    {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)},
    {"kernel_size": 3, "padding": (0, 1), "stride": 2},
]


@pytest.mark.parametrize("kw", UNFOLD_ARGS)
def test_unfold_fold_match_torch(kw):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 5, 6))
    x, t = _pair(a)
    u, tu = F.unfold(x, **kw), torch.nn.functional.unfold(t, **kw)
    _close(u, tu)
    w = rng.standard_normal(tu.shape)
    (u * nnkit.tensor(w)).sum().backward()
    (tu * torch.tensor(w)).sum().backward()
    _close(x.grad, t.grad)
    y, ty = _pair(w)
    f, tf = F.fold(y, (5, 6), **kw), torch.nn.functional.fold(ty, (5, 6), **kw)
    _close(f, tf)
    (f * nnkit.tensor(a)).sum().backward()
    (tf * torch.tensor(a)).sum().backward()
    _close(y.grad, ty.grad)
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)>
    lhs = float((u * nnkit.tensor(w)).sum())
    rhs = float((nnkit.tensor(a) * f).sum())
    assert abs(lhs - rhs) < 1e-9 * max(1.0, abs(lhs))


def test_unfold_fold_unbatched_layers_and_errors():
    a = np.random.default_rng(9).standard_normal((3, 4, 4))
    _close(nn.Unfold(2, stride=2)(nnkit.tensor(a)), torch.nn.Unfold(2, stride=2)(torch.tensor(a)))
    cols = np.random.default_rng(10).standard_normal((12, 4))
    _close(
        nn.Fold((4, 4), 2, stride=2)(nnkit.tensor(cols)),
        torch.nn.Fold((4, 4), 2, stride=2)(torch.tensor(cols)),
    )
    assert "kernel_size=2" in repr(nn.Unfold(2))
    with pytest.raises(RuntimeError, match="fold"):
        F.fold(nnkit.tensor(cols), (6, 6), 2, stride=2)
    with pytest.raises(ValueError, match="unfold"):
        F.unfold(nnkit.zeros(2, 3), 2)


@pytest.mark.parametrize("some", [True, False])
def test_legacy_svd_qr_pinverse(some):
    a = np.random.default_rng(11).standard_normal((2, 4, 3))
    x, t = _pair(a)
    u, s, v = nnkit.svd(x, some=some)
    tu, ts, tv = torch.svd(t, some=some)
    assert (tuple(u.shape), tuple(v.shape)) == (tuple(tu.shape), tuple(tv.shape))
    _close(s, ts)
    _close(u[..., :3].abs(), tu[..., :3].abs())
    _close(v.abs(), tv.abs())
    zu, _, zv = x.svd(compute_uv=False)
    assert tuple(zu.shape) == (2, 4, 4) and tuple(zv.shape) == (2, 3, 3)
    assert not bool(zu.any()) and not bool(zv.any())
    _close(nnkit.qr(x, some=some).R, torch.linalg.qr(t, "reduced" if some else "complete").R)
    _close(nnkit.pinverse(x), torch.pinverse(t))
