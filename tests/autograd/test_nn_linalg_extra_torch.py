"""Torch-compared tests of the LU family, ``matrix_exp``, ``householder_product``,
legacy ``cholesky``, ``grid_sample``/``affine_grid``, fractional max pooling, the alpha
dropouts, ``dropout3d`` and ``multilabel_margin_loss`` (values, gradients, errors,
Module forms and reprs)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _n(t, grad=False):
    return nnkit.tensor(t.detach().numpy(), requires_grad=grad)


def _close(a, b, tol=1e-10):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _compare(tfn, nfn, *tensors, tol=1e-10):
    """Values and gradients (of a random cotangent) of ``nfn`` vs ``tfn``."""
    ts = [t.detach().clone().requires_grad_(t.dtype.is_floating_point) for t in tensors]
    ns = [_n(t, t.dtype.is_floating_point) for t in tensors]
    out_t, out_n = tfn(*ts), nfn(*ns)
    _close(out_n, out_t, tol)
    if not out_t.requires_grad:  # a permutation or an index: values only
        return
    g = torch.randn_like(out_t)
    floats = [t for t in ts if t.requires_grad]
    gt = torch.autograd.grad((out_t * g).sum(), floats, allow_unused=True)
    (out_n * _n(g)).sum().backward()
    for a, n in zip(gt, [x for x in ns if x.requires_grad]):
        if a is None or not bool(a.any()):
            assert n.grad is None or not bool(n.grad.abs().sum())
        else:
            _close(n.grad, a, tol)


def _rand(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------ grid_sample
_GS = list(
    itertools.product(
        ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]
    )
)


@pytest.mark.parametrize("mode,padding,align", _GS)
def test_grid_sample_2d_matches_torch(mode, padding, align):
    x = _rand(2, 3, 4, 5)
    g = (
        torch.rand(2, 3, 4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 3
        - 1.5
    )
    _compare(
        lambda a, b: TF.grid_sample(a, b, mode, padding, align),
        lambda a, b: F.grid_sample(a, b, mode, padding, align),
        x,
        g,
    )


@pytest.mark.parametrize("mode,padding,align", [m for m in _GS if m[0] != "bicubic"])
def test_grid_sample_3d_matches_torch(mode, padding, align):
    x = _rand(2, 2, 3, 4, 5)
    g = (
        torch.rand(2, 2, 3, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
        * 3
        - 1.5
    )
    _compare(
        lambda a, b: TF.grid_sample(a, b, mode, padding, align),
        lambda a, b: F.grid_sample(a, b, mode, padding, align),
        x,
        g,
    )


def test_grid_sample_float32_and_samplers():
    x, g = torch.randn(1, 2, 3, 3), torch.rand(1, 2, 2, 2) * 2 - 1
    _close(F.grid_sample(_n(x), _n(g)), TF.grid_sample(x, g, align_corners=False), 1e-6)
    _close(
        nnkit.grid_sampler_2d(_n(x), _n(g), 2, 1, True),
        torch.grid_sampler_2d(x, g, 2, 1, True),
        1e-5,
    )
    x3, g3 = torch.randn(1, 2, 2, 3, 3), torch.rand(1, 1, 2, 2, 3) * 2 - 1
    _close(
        nnkit.grid_sampler_3d(_n(x3), _n(g3), 0, 2, False),
        torch.grid_sampler_3d(x3, g3, 0, 2, False),
        1e-6,
    )


def test_grid_sample_errors():
    x = nnkit.zeros(1, 1, 2, 2)
    with pytest.raises(ValueError, match="grid_sample: expected mode"):
        F.grid_sample(x, nnkit.zeros(1, 1, 1, 2), mode="area")
    with pytest.raises(ValueError, match="padding_mode"):
        F.grid_sample(x, nnkit.zeros(1, 1, 1, 2), padding_mode="wrap")
    with pytest.raises(ValueError, match="bicubic interpolation only supports 4D"):
        F.grid_sample(nnkit.zeros(1, 1, 2, 2, 2), nnkit.zeros(1, 1, 1, 1, 3), mode="bicubic")
    with pytest.raises(ValueError, match="grid_sample: expected grid"):
        F.grid_sample(x, nnkit.zeros(1, 1, 1, 3))


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 1, 2)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_matches_torch(size, align):
    nd = len(size) - 2
    with pytest.warns(UserWarning) if (align and 1 in size[2:]) else _nowarn():
        _compare(
            lambda t: TF.affine_grid(t, size, align_corners=align),
            lambda t: F.affine_grid(t, size, align_corners=align),
            _rand(2, nd, nd + 1),
        )


class _nowarn:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_affine_grid_errors():
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(nnkit.zeros(1, 3, 3), (1, 1, 2, 2))
    with pytest.raises(NotImplementedError, match="4D and 5D"):
        F.affine_grid(nnkit.zeros(1, 2, 3), (1, 1, 2))


# ------------------------------------------------------------------ LU family
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (3, 5), (5, 3), (2, 1, 4, 2)])
def test_linalg_lu_matches_torch(shape):
    a = _rand(*shape)
    for i in range(3):
        _compare(lambda x, i=i: torch.linalg.lu(x)[i], lambda x, i=i: nnkit.linalg.lu(x)[i], a)
    lu_t, piv_t = torch.linalg.lu_factor(a)
    lu_n, piv_n = nnkit.linalg.lu_factor(_n(a))
    _close(lu_n, lu_t)
    assert piv_n.dtype == nnkit.int32 and piv_n.tolist() == piv_t.tolist()
    _compare(lambda x: torch.linalg.lu_factor(x).LU, lambda x: nnkit.linalg.lu_factor(x).LU, a)


@pytest.mark.parametrize("left,adjoint", list(itertools.product([True, False], [True, False])))
def test_linalg_lu_solve_matches_torch(left, adjoint):
    a, b = _rand(2, 3, 3), _rand(3, 2, seed=1)
    b = b if left else b.mT

    def run(lib, x, y):
        return lib.linalg.lu_solve(*lib.linalg.lu_factor(x), y, left=left, adjoint=adjoint)

    _compare(lambda x, y: run(torch, x, y), lambda x, y: run(nnkit, x, y), a, b)


def test_legacy_lu_and_unpack():
    a = _rand(2, 4, 3)
    lu_t, piv_t, info_t = torch.linalg.lu_factor_ex(a)
    lu_n, piv_n, info_n = nnkit.lu(_n(a), get_infos=True)
    _close(lu_n, lu_t)
    assert info_n.tolist() == info_t.tolist() == [0, 0]
    for kw in ({}, {"unpack_data": False}, {"unpack_pivots": False}):
        pt, lt, ut = torch.lu_unpack(lu_t, piv_t, **kw)
        pn, ln, un = nnkit.lu_unpack(lu_n, piv_n, **kw)
        for x, y in ((pn, pt), (ln, lt), (un, ut)):
            assert tuple(x.shape) == tuple(y.shape)
            _close(x, y)
    sq = _rand(3, 3, seed=4)
    b = _rand(3, 2, seed=5)
    _compare(
        lambda x, y: torch.linalg.lu_solve(*torch.linalg.lu_factor(x), y),
        lambda x, y: nnkit.lu_solve(y, *nnkit.lu(x)),
        sq,
        b,
    )


def test_lu_singular_and_errors():
    z = torch.tensor([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]]])
    lu_t, piv_t, info_t = torch.linalg.lu_factor_ex(z)
    lu_n, piv_n, info_n = nnkit.linalg.lu_factor_ex(_n(z))
    _close(lu_n, lu_t)
    assert piv_n.tolist() == piv_t.tolist() and info_n.tolist() == info_t.tolist()
    with pytest.raises(RuntimeError, match=r"Batch element 0\): U\[2,2\] is zero"):
        nnkit.linalg.lu_factor(_n(z))
    with pytest.raises(RuntimeError, match="lu_factor_ex"):
        nnkit.linalg.lu_factor_ex(_n(z), check_errors=True)
    assert nnkit.linalg.lu(_n(z)).U.shape == (2, 2, 2)  # no error for singular input
    with pytest.raises(ValueError, match="linalg.lu_factor: expects matrices"):
        nnkit.linalg.lu_factor(nnkit.ones(3))
    with pytest.raises(TypeError, match="floating"):
        nnkit.linalg.lu_factor(nnkit.ones(3, 3, dtype=nnkit.int64))
    with pytest.raises(NotImplementedError, match="pivot=False"):
        nnkit.linalg.lu(nnkit.ones(3, 3), pivot=False)
    with pytest.raises(ValueError, match="square"):
        nnkit.linalg.lu_solve(nnkit.ones(3, 2), nnkit.ones(2, dtype=nnkit.int32), nnkit.ones(3, 1))


# ------------------------------------------------------------------ matrix_exp & co
@pytest.mark.parametrize("scale", [0.1, 1.0, 20.0])
def test_matrix_exp_matches_torch(scale):
    a = _rand(2, 4, 4) * scale
    tol = 1e-9 if scale < 10 else 1e-6
    _compare(torch.linalg.matrix_exp, nnkit.linalg.matrix_exp, a, tol=tol)
    _compare(torch.matrix_exp, nnkit.matrix_exp, a[0], tol=tol)
    x = _n(a[0] * 0 + torch.eye(4), True)
    assert nnkit.matrix_exp(x.float()).dtype == nnkit.float32


def test_matrix_exp_double_backward_and_errors():
    a = _rand(3, 3)
    at, an = a.clone().requires_grad_(), _n(a, True)
    (gt,) = torch.autograd.grad(torch.linalg.matrix_exp(at).sin().sum(), at, create_graph=True)
    (gn,) = nnkit.autograd.grad(nnkit.linalg.matrix_exp(an).sin().sum(), an, create_graph=True)
    _close(gn, gt)
    (ggt,) = torch.autograd.grad(gt.square().sum(), at)
    (ggn,) = nnkit.autograd.grad(gn.square().sum(), an)
    _close(ggn, ggt, 1e-8)
    with pytest.raises(ValueError, match="linalg.matrix_exp: A must be batches of square"):
        nnkit.linalg.matrix_exp(nnkit.ones(3, 2))


def test_householder_product_and_cholesky():
    _compare(
        torch.linalg.householder_product,
        nnkit.linalg.householder_product,
        _rand(5, 3),
        _rand(2, seed=1),
    )
    _compare(
        torch.linalg.householder_product,
        nnkit.linalg.householder_product,
        _rand(2, 4, 4),
        _rand(2, 4, seed=1),
    )
    with pytest.raises(ValueError, match="householder_product"):
        nnkit.linalg.householder_product(nnkit.ones(2, 3), nnkit.ones(1))
    a = _rand(2, 3, 3)
    spd = a @ a.mT + 3 * torch.eye(3, dtype=torch.float64)
    for upper in (False, True):
        _compare(
            lambda x, u=upper: torch.linalg.cholesky(x, upper=u),
            lambda x, u=upper: nnkit.cholesky(x, u),
            spd,
        )


# ------------------------------------------------------------------ nn ops
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss_matches_torch(reduction):
    x = _rand(3, 5)
    y = torch.tensor([[1, 0, -1, 2, 4], [3, 3, -1, 0, 0], [4, 0, 1, 2, 3]])
    _compare(
        lambda a, b: TF.multilabel_margin_loss(a, b, reduction=reduction),
        lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction),
        x,
        y,
    )
    _compare(
        lambda a, b: TF.multilabel_margin_loss(a, b, reduction=reduction),
        lambda a, b: F.multilabel_margin_loss(a, b, reduction=reduction),
        x[0],
        y[0],
    )
    mod_t, mod_n = (
        torch.nn.MultiLabelMarginLoss(reduction=reduction),
        nn.MultiLabelMarginLoss(reduction=reduction),
    )
    if reduction == "mean":  # nnkit's losses show a non-default reduction
        assert repr(mod_n) == repr(mod_t)
    _close(mod_n(_n(x), _n(y)), mod_t(x, y))
    with pytest.raises(RuntimeError, match="out of range"):
        F.multilabel_margin_loss(nnkit.zeros(1, 3), nnkit.tensor([[3, -1, 0]]))


@pytest.mark.parametrize(
    "nd,shape,k,out",
    [
        (2, (2, 3, 7, 9), 2, (4, 5)),
        (2, (3, 8, 8), (3, 2), (3, 6)),
        (3, (2, 2, 5, 6, 7), 2, (3, 3, 4)),
        (3, (2, 6, 5, 7), (2, 1, 3), (2, 4, 3)),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fractional_max_pool_matches_torch(nd, shape, k, out, dtype):
    x = torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(3))
    n = shape[0] if len(shape) == nd + 2 else 1
    s = torch.rand(n, shape[-nd - 1], nd, dtype=dtype, generator=torch.Generator().manual_seed(4))
    tf, nf = getattr(TF, f"fractional_max_pool{nd}d"), getattr(F, f"fractional_max_pool{nd}d")
    yt, it = tf(x, k, output_size=out, return_indices=True, _random_samples=s)
    yn, in_ = nf(_n(x), k, output_size=out, return_indices=True, _random_samples=_n(s))
    _close(yn, yt, 0)
    assert in_.tolist() == it.tolist()
    if dtype == torch.float64:
        _compare(
            lambda a: tf(a, k, output_size=out, _random_samples=s),
            lambda a: nf(a, k, output_size=out, _random_samples=_n(s)),
            x,
        )


def test_fractional_max_pool_ratio_modules_and_errors():
    x = torch.randn(2, 3, 10, 8)
    s = torch.rand(2, 3, 2)
    mt = torch.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.75), _random_samples=s)
    mn = nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.75), _random_samples=_n(s))
    assert repr(mn) == repr(mt)
    _close(mn(_n(x)), mt(x), 0)
    assert nn.FractionalMaxPool3d(2, output_size=2)(nnkit.randn(1, 2, 4, 4, 4)).shape == (
        1,
        2,
        2,
        2,
        2,
    )
    y, idx = nn.FractionalMaxPool2d(2, output_size=3, return_indices=True)(nnkit.randn(2, 5, 5))
    assert y.shape == idx.shape == (2, 3, 3) and idx.dtype == nnkit.int64
    with pytest.raises(ValueError, match="output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="either an output_size or an output_ratio"):
        F.fractional_max_pool2d(nnkit.zeros(1, 1, 4, 4), 2)
    with pytest.raises(ValueError, match="do not fit"):
        F.fractional_max_pool2d(nnkit.zeros(1, 1, 4, 4), 3, output_size=3)


def test_alpha_dropout_statistics_and_gradient():
    nnkit.manual_seed(0)
    x = nnkit.randn(200000)
    y = F.alpha_dropout(x, 0.3, training=True)
    assert abs(float(y.mean())) < 0.01 and abs(float(y.var()) - 1) < 0.02
    assert F.alpha_dropout(x, 0.3) is x  # training=False by default, as torch
    xg = nnkit.randn(4, 5, requires_grad=True)
    nnkit.manual_seed(1)
    out = F.alpha_dropout(xg, 0.5, True)
    out.sum().backward()
    a = 1 / np.sqrt((1.7580993408473766**2 * 0.5 + 1) * 0.5)
    grad = xg.grad.numpy()
    dropped = grad == 0
    assert dropped.any() and (~dropped).any()
    np.testing.assert_allclose(grad[~dropped], a, rtol=1e-6)
    np.testing.assert_allclose(
        out.detach().numpy()[dropped],
        -1.7580993408473766 * a + 1.7580993408473766 * a * 0.5,
        rtol=1e-6,
    )
    assert bool(F.alpha_dropout(nnkit.tensor([float("nan"), 1.0]), 1.0, True).isnan()[0])


def test_feature_alpha_dropout_and_dropout3d():
    nnkit.manual_seed(0)
    y = F.feature_alpha_dropout(nnkit.randn(4, 6, 3, 2) * 0, 0.5, True)
    assert bool((y == y[:, :, :1, :1]).all())
    with pytest.raises(nnkit.ShapeError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(nnkit.ones(3), 0.5, True)
    y = F.dropout3d(nnkit.ones(2, 8, 2, 2, 2), 0.5)
    assert bool(((y == 0).all((2, 3, 4)) | (y == 2).all((2, 3, 4))).all())
    assert F.dropout3d(nnkit.ones(8, 2, 2, 2), 0.5).shape == (8, 2, 2, 2)
    with pytest.raises(nnkit.ShapeError, match="dropout3d"):
        F.dropout3d(nnkit.ones(2, 2), 0.5)


@pytest.mark.parametrize(
    "name", ["AlphaDropout", "FeatureAlphaDropout", "Dropout1d", "Dropout2d", "Dropout3d"]
)
def test_dropout_modules(name):
    mt, mn = getattr(torch.nn, name)(0.25), getattr(nn, name)(0.25)
    assert repr(mn) == repr(mt)
    x = (
        nnkit.randn(2, 3, 4, 4, 4)
        if name == "Dropout3d"
        else nnkit.randn(2, 3, 4)
        if name == "Dropout1d"
        else nnkit.randn(2, 3, 4, 4)
    )
    assert mn(x).shape == x.shape and not bool((mn(x) == x).all())
    mn.eval()
    assert mn(x) is x
