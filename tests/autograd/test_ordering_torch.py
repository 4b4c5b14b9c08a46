"""The ordering ops (nnkit/autograd/ops/ordering.py) against PyTorch: values, indices,
dtypes and gradients (second gradients where they are smooth), with ties, NaN, zeros,
0-d and empty inputs, and the errors torch raises."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")

NAN = float("nan")


def _lib_tensor(lib, a, grad):
    a = np.asarray(a)
    if lib is torch:
        return torch.tensor(a, requires_grad=grad and a.dtype.kind == "f")
    return nnkit.tensor(a, requires_grad=grad and a.dtype.kind == "f")


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in _flat(x)]
    return [out]


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def check(fn, *arrays, grad=True, gradgrad=False, idx_check=True):
    """``fn(lib, *tensors)`` gives the same values, indices, dtypes and gradients under
    nnkit and torch (float64)."""
    ours = [_lib_tensor(nnkit, a, grad) for a in arrays]
    theirs = [_lib_tensor(torch, a, grad) for a in arrays]
    o, t = fn(nnkit, *ours), fn(torch, *theirs)
    assert type(o) is not tuple or isinstance(t, tuple)
    if hasattr(t, "_fields"):  # a torch.return_types named pair
        assert tuple(o._fields) == ("values", "indices")
        np.testing.assert_array_equal(_np(o.indices), _np(o[1]))
    of, tf = _flat(o), _flat(t)
    assert len(of) == len(tf)
    for a, b in zip(of, tf):
        assert tuple(a.shape) == tuple(b.shape), (a.shape, b.shape)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], (a.dtype, b.dtype)
        if a.dtype.is_floating_point:
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12, equal_nan=True)
        elif idx_check:
            np.testing.assert_array_equal(_np(a), _np(b))
    if not grad:
        return
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(tuple(b.shape)) for b in tf]
    pairs = [(a, b, w) for a, b, w in zip(of, tf, ws) if b.requires_grad]
    if not pairs:
        return
    lo = sum((a * nnkit.tensor(w)).sum() for a, _, w in pairs)
    lt = sum((b * torch.tensor(w)).sum() for _, b, w in pairs)
    xo = [x for x in ours if x.requires_grad]
    xt = [x for x in theirs if x.requires_grad]
    go = nnkit.autograd.grad(lo, xo, create_graph=gradgrad, allow_unused=True)
    gt = torch.autograd.grad(lt, xt, create_graph=gradgrad, allow_unused=True)
    for a, b in zip(go, gt):
        if b is None:
            assert a is None or not np.any(_np(a))
            continue
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-12, equal_nan=True)
    if gradgrad:
        so = sum((g * g).sum() for g in go if g is not None)
        st = sum((g * g).sum() for g in gt if g is not None)
        for a, b in zip(
            nnkit.autograd.grad(so, xo, allow_unused=True),
            torch.autograd.grad(st, xt, allow_unused=True),
        ):
            np.testing.assert_allclose(
                _np(a) if a is not None else 0.0,
                _np(b) if b is not None else 0.0,
                rtol=1e-8,
                atol=1e-10,
            )


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 5))
TIES = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 2.0, 5.0], [0.0, 0.0, 4.0, 4.0, 4.0, 0.0, 1.0]])


# ---------------------------------------------------------------- scans
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod_logcumsumexp(dim):
    check(
        lambda L, x: (L.cumsum(x, dim), L.cumprod(x, dim), L.logcumsumexp(x, dim)), X, gradgrad=True
    )


def test_cumprod_with_zeros_gradients():
    x = X.copy()
    x[0, 1] = 0.0
    x[1, 0] = x[1, 3] = 0.0
    x[2, 4] = 0.0
    check(lambda L, x: L.cumprod(x, 1), x, gradgrad=True)
    check(lambda L, x: x.cumprod(0), x.T.copy(), gradgrad=True)


def test_scan_dtypes_and_edges():
    ints = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    check(lambda L, x: (x.cumsum(1), x.cumprod(0)), ints)
    check(lambda L, x: (x.cumsum(0), x.cumprod(0)), np.array([True, False, True]))
    check(lambda L, x: L.cumsum(x, 0, dtype=L.float64), ints)
    check(lambda L, x: (x.cumsum(0), x.cumprod(-1), x.logcumsumexp(0)), np.array(1.5))
    check(lambda L, x: (x.cumsum(0), x.cumprod(1), x.logcumsumexp(1)), np.zeros((0, 3)))


def test_logcumsumexp_extremes():
    x = np.array([-np.inf, -np.inf, 1.0, 800.0, -800.0, np.inf])
    check(lambda L, x: x.logcumsumexp(0), x, grad=False)
    check(lambda L, x: x.logcumsumexp(1), np.array([[700.0, 710.0, -5.0], [-1e3, 2.0, 3.0]]))


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin(op):
    x = np.array([1.0, 3.0, 3.0, 2.0, NAN, 5.0, NAN, 1.0])
    check(lambda L, x: getattr(L, op)(x, 0), x)
    check(lambda L, x: getattr(x, op)(1), TIES)
    check(lambda L, x: getattr(x, op)(-2), X)
    check(lambda L, x: getattr(x, op)(0), np.array(2.0))
    check(lambda L, x: getattr(x, op)(0), np.zeros((0, 2)))
    check(lambda L, x: getattr(x, op)(1), np.array([[3, 1, 3, 5]]))


# ---------------------------------------------------------------- sorting
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(descending):
    x = np.array([[1.0, 3.0, 3.0, NAN, 2.0, -1.0, 3.0], [0.0, -0.0, 2.0, 2.0, NAN, NAN, 1.0]])
    check(lambda L, x: L.sort(x, dim=1, descending=descending, stable=True), x)
    check(lambda L, x: x.sort(dim=0, descending=descending, stable=True), TIES.T.copy())
    check(lambda L, x: L.argsort(x, dim=-1, descending=descending, stable=True), x)
    check(lambda L, x: x.sort(descending=descending), X)
    check(lambda L, x: x.sort(0), np.array(4.0))
    check(lambda L, x: x.sort(1), np.zeros((2, 0)))
    check(
        lambda L, x: x.sort(dim=1, descending=descending, stable=True),
        np.array([[3, 1, 3, 0, -(2**63)]], dtype=np.int64),
        grad=False,
    )
    check(
        lambda L, x: x.sort(dim=0, descending=descending, stable=True),
        np.array([True, False, True, False]),
        grad=False,
    )


def test_topk():
    check(lambda L, x: x.topk(3), np.array([1.0, 3.0, 3.0, NAN, 2.0]))
    check(lambda L, x: L.topk(x, 2, dim=0), X)
    check(lambda L, x: x.topk(3, 1, largest=False), X)
    check(lambda L, x: x.topk(0, 1), X)
    check(lambda L, x: x.topk(1), np.array(2.0))
    check(lambda L, x: x.topk(5, sorted=True), X)


def test_kthvalue_median_mode():
    check(lambda L, x: x.kthvalue(2, 1), X)
    check(lambda L, x: L.kthvalue(x, 3, 0, keepdim=True), X)
    check(lambda L, x: x.kthvalue(1, 0), np.array(3.0))
    check(lambda L, x: (x.median(1), x.median(0, keepdim=True), x.median()), X)
    check(
        lambda L, x: x.median(-1), np.array([[2.0, 1.0, NAN, 2.0, 0.0], [1.0, 2.0, 3.0, 4.0, 5.0]])
    )
    check(lambda L, x: x.median(0), np.array(1.0))
    check(lambda L, x: x.median(0), np.zeros((0, 3)).T.copy())
    check(lambda L, x: x.mode(1), TIES)
    check(lambda L, x: L.mode(x, 0, keepdim=True), TIES.T.copy())
    check(lambda L, x: x.mode(), np.array([2, 2, 1, 1, 3]))
    check(lambda L, x: x.mode(0), np.array(1.0))


def test_median_all_shares_gradient_between_ties_and_nans():
    check(lambda L, x: x.median(), np.array([1.0, 1.0, 2.0, 1.0]))
    check(lambda L, x: x.median(), np.array([[1.0, NAN], [2.0, NAN]]))
    check(lambda L, x: x.median(), np.array(3.0))
    check(lambda L, x: x.median(), np.zeros(0), grad=False)
    check(lambda L, x: x.median(), np.array([5, 1, 3, 2]))


def test_nanmedian():
    x = np.array([[2.0, NAN, 1.0, 2.0, 0.0], [NAN, 1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, NAN, NAN]])
    check(lambda L, x: (x.nanmedian(1), L.nanmedian(x, 0, keepdim=True), x.nanmedian()), x)
    check(lambda L, x: x.nanmedian(), np.array([[NAN, NAN], [NAN, NAN]]))
    check(lambda L, x: (x.nanmedian(), x.nanmedian(0)), np.array(2.0))
    check(lambda L, x: (x.nanmedian(1), x.nanmedian()), np.array([[3, 1, 2, 2]]))
    # an all-NaN slice: NaN as torch; torch's index there (and so where the gradient
    # goes) is unspecified: nnkit's is the first NaN's
    check(
        lambda L, x: x.nanmedian(1).values,
        np.array([[NAN, NAN, NAN, NAN], [1, 2, 3, 4]]),
        grad=False,
    )


# ---------------------------------------------------------------- reductions
def test_nansum_nanmean():
    x = X.copy()
    x[0, 1] = x[2, 3] = NAN
    x[1] = NAN
    check(lambda L, x: (x.nansum(), x.nansum(1), L.nansum(x, (0, 1), keepdim=True)), x)
    check(lambda L, x: (x.nanmean(), x.nanmean(0), L.nanmean(x, 1, keepdim=True)), x)
    check(lambda L, x: L.nansum(x, 0), np.array([[1, 2], [3, 4]], dtype=np.int32))


def test_prod():
    x = X.copy()
    x[0, 1] = 0.0
    x[1, 0] = x[1, 3] = 0.0
    check(lambda L, x: (x.prod(), x.prod(1), L.prod(x, 0, keepdim=True)), X, gradgrad=True)
    check(lambda L, x: (x.prod(1), x.prod(-1, True)), x, gradgrad=True)
    check(lambda L, x: x.prod(), x[:1].copy(), gradgrad=True)
    check(lambda L, x: x.prod(), x[1:2].copy(), gradgrad=True)
    check(lambda L, x: (x.prod(), x.prod(0)), np.array(-2.5))
    check(lambda L, x: (x.prod(), x.prod(0)), np.zeros((0, 2)))
    check(lambda L, x: (x.prod(), x.prod(0)), np.array([[1, 2], [3, 4]], dtype=np.int32))
    check(lambda L, x: (x.prod(), L.prod(x, dtype=L.float64)), np.array([True, False]))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
def test_quantile(op, interpolation):
    x = np.array([[1.0, 3.0, 3.0, NAN, 2.0, -1.0, 3.0], [0.0, 5.0, 2.0, 2.0, 4.0, 7.0, 1.0]])
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    kw = {"interpolation": interpolation}
    check(lambda L, x, q: getattr(x, op)(q, 1, **kw), x, q)
    check(lambda L, x, q: getattr(L, op)(x, q, dim=0, keepdim=True, **kw), X, q[1:4].copy())
    check(lambda L, x: getattr(x, op)(0.3, **kw), X)
    check(lambda L, x: getattr(x, op)(0.6, keepdim=True, **kw), x)
    check(lambda L, x, q: getattr(x, op)(q, -1, **kw), np.array(2.0), np.array(0.5))


@pytest.mark.parametrize("f", ["var_mean", "std_mean"])
def test_var_mean_std_mean(f):
    check(lambda L, x: getattr(L, f)(x), X)
    check(lambda L, x: getattr(L, f)(x, 1, keepdim=True), X)
    check(lambda L, x: getattr(L, f)(x, (0, 1), correction=0), X)
    check(lambda L, x: getattr(L, f)(x, 0, unbiased=False), X)
    check(lambda L, x: getattr(L, f)(x, False), X)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call,match",
    [
        (lambda x: x.topk(6), "topk.*k"),
        (lambda x: x.kthvalue(0), "kthvalue.*k"),
        (lambda x: x.sort(2), "sort.*dim"),
        (lambda x: x.cumsum(-3), "cumsum.*dim"),
        (lambda x: x.quantile(1.5), "quantile.*q"),
        (lambda x: x.quantile(0.5, interpolation="cubic"), "quantile.*interpolation"),
        (lambda x: x.long().quantile(0.5), "quantile.*input"),
        (lambda x: x[:, :0].median(1), "median.*dim"),
        (lambda x: x[:, :0].mode(1), "mode.*dim"),
        (lambda x: x.long().nanmean(), "nanmean.*dtype"),
        (lambda x: x.long().logcumsumexp(0), "logcumsumexp.*floating"),
        (lambda x: x[:, :0].nanmedian(1), "nanmedian.*dim"),
    ],
)
def test_errors_name_the_op_and_argument(call, match):
    x = nnkit.tensor(X)
    with pytest.raises((RuntimeError, IndexError, ValueError, TypeError), match=match):
        call(x)
    with pytest.raises(Exception):  # noqa: B017 (torch refuses the same call)
        call(torch.tensor(X))
