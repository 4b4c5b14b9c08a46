"""The special ops and activations of issue 13 against torch: values, gradients, dtypes,
edge points (poles, +-inf, NaN, the kinks), 0-d/empty/broadcast inputs and errors."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

INF, NAN = np.inf, np.nan
DTYPES = [("float32", np.float32, 2e-6, 1e-5), ("float64", np.float64, 1e-12, 1e-10)]


def _run_nnkit(fn, arrays, dtype, upstream):
    xs = [nnkit.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    # Gradients at singular points divide by 0 in the backend's shared kernels.
    with np.errstate(all="ignore"):
        out = fn(*xs)
        out.backward(nnkit.tensor(upstream.astype(dtype)))
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


def _run_torch(fn, arrays, dtype, upstream):
    xs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    out = fn(*xs)
    out.backward(torch.tensor(upstream.astype(dtype)))
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


def _compare(nk_fn, th_fn, arrays, dtype, atol, rtol, grads=True):
    with torch.no_grad():
        shape = tuple(th_fn(*(torch.tensor(a.astype(dtype)) for a in arrays)).shape)
    up = np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)
    got, ggot = _run_nnkit(nk_fn, arrays, dtype, up)
    want, gwant = _run_torch(th_fn, arrays, dtype, up)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)
    if grads:
        for g, w in zip(ggot, gwant):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, atol=atol * 10, rtol=rtol * 10)


A = np.array
UNARY = {
    "asin": (nnkit.asin, torch.asin, A([-1, -0.999, -0.5, 0, 0.3, 0.999, 1, 1.5, -2, NAN])),
    "acos": (nnkit.acos, torch.acos, A([-1, -0.999, -0.5, 0, 0.3, 0.999, 1, 1.5, -2, NAN])),
    "atan": (nnkit.atan, torch.atan, A([-INF, -10, -1, 0, 1e-8, 2, INF, NAN])),
    "sinh": (nnkit.sinh, torch.sinh, A([-INF, -20, -3, 0, 2, 80, INF, NAN])),
    "cosh": (nnkit.cosh, torch.cosh, A([-INF, -20, -3, 0, 2, 80, INF, NAN])),
    "asinh": (nnkit.asinh, torch.asinh, A([-INF, -1e6, -2, -0.0, 0.5, 3, INF, NAN])),
    "acosh": (nnkit.acosh, torch.acosh, A([0.5, 1, 1.0001, 2, 10, 1e6, INF, NAN])),
    "atanh": (nnkit.atanh, torch.atanh, A([-1.5, -1, -0.9, 0, 0.5, 0.999, 1, NAN])),
    "erfc": (
        nnkit.erfc,
        torch.erfc,
        A([-INF, -5, -1, -0.3, 0, 0.5, 1, 3, 8, 9.5, 26, 30, INF, NAN]),
    ),
    "erfinv": (
        nnkit.erfinv,
        torch.erfinv,
        A([-1, -0.999999, -0.5, 0, 1e-10, 0.3, 0.9, 0.999, 1, 1.2, NAN]),
    ),
    "lgamma": (
        nnkit.lgamma,
        torch.lgamma,
        A([-INF, -2.5, -2, -1, -0.5, 0, 1e-8, 0.5, 1, 2, 3.7, 30, 1e10, INF, NAN]),
    ),
    "digamma": (
        nnkit.digamma,
        torch.digamma,
        A([-2.5, -1.5, -0.3, -0.0, 0, 1e-8, 0.5, 1, 1.4616, 2, 10, 1e6, INF, NAN]),
    ),
    "logit": (nnkit.logit, torch.logit, A([0, 1e-7, 0.3, 0.5, 1, -0.1, 1.1, NAN])),
    "logit_eps": (
        lambda x: nnkit.logit(x, eps=0.2),
        lambda x: torch.logit(x, eps=0.2),
        A([0, 0.1, 0.2, 0.5, 0.8, 0.9, 1, NAN]),
    ),
    "frac": (nnkit.frac, torch.frac, A([-2.5, -1, -0.3, 0, 0.7, 3.25, INF, -INF, NAN])),
    "nan_to_num": (nnkit.nan_to_num, torch.nan_to_num, A([NAN, INF, -INF, 1.5, -0.0])),
    "nan_to_num_kw": (
        lambda x: nnkit.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0),
        lambda x: torch.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0),
        A([NAN, INF, -INF, 1.5]),
    ),
    "clamp_min": (
        lambda x: nnkit.clamp_min(x, 0.5),
        lambda x: torch.clamp_min(x, 0.5),
        A([-1, 0.5, 2, NAN]),
    ),
    "clamp_max": (
        lambda x: nnkit.clamp_max(x, 0.5),
        lambda x: torch.clamp_max(x, 0.5),
        A([-1, 0.5, 2, NAN]),
    ),
    "hardswish": (F.hardswish, TF.hardswish, A([-4, -3, -2, 0, 2, 3, 4, NAN])),
    "hardsigmoid": (F.hardsigmoid, TF.hardsigmoid, A([-4, -3, -2, 0, 2, 3, 4, NAN])),
    "celu": (F.celu, TF.celu, A([-50, -2, -1e-3, 0, 1e-3, 3, NAN])),
    "celu_alpha": (lambda x: F.celu(x, 0.5), lambda x: TF.celu(x, 0.5), A([-3, -0.1, 0, 2])),
    "softsign": (F.softsign, TF.softsign, A([-INF, -3, 0, 0.5, 1e8, NAN])),
    "threshold": (
        lambda x: F.threshold(x, 0.1, 20.0),
        lambda x: TF.threshold(x, 0.1, 20.0),
        A([-1, 0.1, 0.2, 5, NAN]),
    ),
    "hardshrink": (F.hardshrink, TF.hardshrink, A([-1, -0.5, -0.2, 0, 0.5, 0.7, NAN])),
    "softshrink": (F.softshrink, TF.softshrink, A([-1, -0.5, -0.2, 0, 0.5, 0.7, NAN])),
    "softshrink_1": (
        lambda x: F.softshrink(x, 1.0),
        lambda x: TF.softshrink(x, 1.0),
        A([-2, -1, 0.3, 1, 1.5]),
    ),
    "tanhshrink": (F.tanhshrink, TF.tanhshrink, A([-INF, -3, 0, 0.5, 20, NAN])),
    "mish": (F.mish, TF.mish, A([-30, -1, 0, 1, 25, NAN])),
}


@pytest.mark.parametrize("dname,dtype,atol,rtol", DTYPES, ids=[d[0] for d in DTYPES])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_torch(name, dname, dtype, atol, rtol):
    nk, th, x = UNARY[name]
    if name == "digamma" and dtype == np.float32:
        atol, rtol = 1e-5, 1e-5  # torch's float32 digamma is computed in float32
    if name in _NAN_GRAD_VARIES:
        _compare(nk, th, [x], dtype, *_tols(name, dtype, atol, rtol), grads=False)
        x = x[~np.isnan(x)]
    _compare(nk, th, [x], dtype, *_tols(name, dtype, atol, rtol))


# Gradients at a NaN input that torch's own CPU kernels disagree on: its float64 kernels
# for AVX2 give NaN for hardswish and 0 for logit with eps, where its float32 ones (and
# its AVX-512 ones) give the upstream gradient and NaN, as nnkit does; the values agree.
_NAN_GRAD_VARIES = {"hardswish", "logit_eps"}


def _tols(name, dtype, atol, rtol):
    # torch's float64 hardsigmoid gradient uses a float32 1/6 (relative error 3e-8).
    return (atol, 1e-7) if name == "hardsigmoid" and dtype == np.float64 else (atol, rtol)


@pytest.mark.parametrize("dname,dtype,atol,rtol", DTYPES, ids=[d[0] for d in DTYPES])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_random_values(name, dname, dtype, atol, rtol):
    nk, th, _ = UNARY[name]
    lo, hi = {"acosh": (1.0, 4.0), "lgamma": (-3.9, 6.0), "digamma": (-3.9, 6.0)}.get(
        name, (-0.999, 0.999) if name in ("asin", "acos", "atanh", "erfinv") else (-4.0, 4.0)
    )
    if name.startswith("logit"):
        lo, hi = 0.001, 0.999
    x = np.random.default_rng(len(name)).uniform(lo, hi, (3, 5))
    if name in ("lgamma", "digamma"):
        atol, rtol = (1e-4, 1e-4) if dtype == np.float32 else (1e-9, 1e-9)
    _compare(nk, th, [x], dtype, *_tols(name, dtype, atol, rtol))


def test_lgamma_digamma_wide_range_float64():
    x = np.concatenate([np.linspace(-20.3, 40.7, 613), [1e-300, 171.6, 1e300, -1e-300]])
    for nk, th in ((nnkit.lgamma, torch.lgamma), (nnkit.digamma, torch.digamma)):
        got = nk(nnkit.tensor(x)).numpy()
        want = th(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


def test_erfc_erfinv_tails_float64():
    x = np.linspace(-6, 27, 500)
    np.testing.assert_allclose(
        nnkit.erfc(nnkit.tensor(x)).numpy(),
        torch.erfc(torch.tensor(x)).numpy(),
        rtol=1e-13,
        atol=1e-300,
    )
    y = np.concatenate(
        [1 - np.logspace(-16, -1, 80), -1 + np.logspace(-16, -1, 80), np.linspace(-0.99, 0.99, 199)]
    )
    np.testing.assert_allclose(
        nnkit.erfinv(nnkit.tensor(y)).numpy(),
        torch.erfinv(torch.tensor(y)).numpy(),
        rtol=1e-13,
        atol=1e-15,
    )


def test_digamma_grad_at_negative_poles_is_inf():
    # Deviation: trigamma at the poles is inf; torch gives a large finite value there.
    x = nnkit.tensor([-2.0, -1.0], dtype=nnkit.float64, requires_grad=True)
    nnkit.digamma(x).sum().backward()
    assert np.isnan(nnkit.digamma(x.detach()).numpy()).all()
    assert np.isinf(x.grad.numpy()).all()


BINARY = {
    "atan2": (
        nnkit.atan2,
        torch.atan2,
        A([0, 0, -0.0, 1, -1, INF, -INF, 2, 3]),
        A([0, -0.0, 0, 0, -2, INF, 1, NAN, 4]),
    ),
    "hypot": (
        nnkit.hypot,
        torch.hypot,
        A([0, 3, -3, INF, 1e200, 1e-200, NAN, 2]),
        A([0, 4, 4, 1, 1e200, 1e-200, 1, -5]),
    ),
    "logaddexp": (
        nnkit.logaddexp,
        torch.logaddexp,
        A([-INF, -INF, INF, 0, 1000, -1000, 2, NAN]),
        A([-INF, 0, INF, 0, 1, -999, 2, 1]),
    ),
    "xlogy": (
        nnkit.xlogy,
        torch.xlogy,
        A([0, 0, 0, 1, 2, -1, 0, 3, 0]),
        A([0, -1, NAN, 0, 3, INF, 2, -1, INF]),
    ),
}


@pytest.mark.parametrize("dname,dtype,atol,rtol", DTYPES, ids=[d[0] for d in DTYPES])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_matches_torch(name, dname, dtype, atol, rtol):
    nk, th, a, b = BINARY[name]
    if name == "hypot" and dtype == np.float32:
        a, b = a[[0, 1, 2, 3, 6, 7]], b[[0, 1, 2, 3, 6, 7]]  # 1e200 is inf in float32
    _compare(nk, th, [a, b], dtype, atol, rtol)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_and_0d(name):
    nk, th, _, _ = BINARY[name]
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0.5, 2, (3, 1)), rng.uniform(0.5, 2, (1, 4))
    _compare(nk, th, [a, b], np.float64, 1e-12, 1e-10)
    _compare(nk, th, [a[0, 0], b], np.float64, 1e-12, 1e-10)
    _compare(nk, th, [a[0, 0], b[0, 0]], np.float64, 1e-12, 1e-10)


@pytest.mark.parametrize("name", sorted(set(UNARY) - {"frac"}))
def test_unary_integer_input_dtype_and_empty(name):
    nk, th, _ = UNARY[name]
    ints = np.array([[0, 1, 2], [3, -1, 4]])
    with np.errstate(all="ignore"):
        got = nk(nnkit.tensor(ints))
    try:
        want = th(torch.tensor(ints))
    except NotImplementedError:  # deviation: nnkit computes these in the default float
        want = th(torch.tensor(ints, dtype=torch.float32))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy(), rtol=1e-5, atol=1e-6)
    empty = nk(nnkit.zeros(0, 3, requires_grad=True))
    assert empty.shape == (0, 3)
    empty.sum().backward()


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_integer_inputs_and_scalars(name):
    nk, th, _, _ = BINARY[name]
    a, b = np.array([[1, 2, 3]]), np.array([[2], [5]])
    got = nk(nnkit.tensor(a), nnkit.tensor(b))
    try:
        want = th(torch.tensor(a), torch.tensor(b))
    except NotImplementedError:  # deviation: nnkit computes these in the default float
        want = th(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
    assert got.dtype == nnkit.float32 and want.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    f = nnkit.tensor(a, dtype=nnkit.float64)
    assert nk(f, nnkit.tensor(b)).dtype == nnkit.float64


def test_xlogy_scalar_operands():
    y = np.array([0.5, 2.0, 0.0])
    for s in (0, 2.0):
        got = nnkit.xlogy(s, nnkit.tensor(y)).numpy()
        np.testing.assert_allclose(got, torch.xlogy(s, torch.tensor(y)).numpy())
        got = nnkit.xlogy(nnkit.tensor(y), s).numpy()
        np.testing.assert_allclose(got, torch.xlogy(torch.tensor(y), s).numpy())


def test_double_backward_matches_torch():
    cases = [
        (nnkit.lgamma, torch.lgamma, [0.7, 2.5, -1.5]),
        (nnkit.atanh, torch.atanh, [-0.5, 0.2, 0.9]),
        (nnkit.logit, torch.logit, [0.1, 0.5, 0.8]),
        (nnkit.erfinv, torch.erfinv, [-0.7, 0.1, 0.6]),
        (F.hardswish, TF.hardswish, [-2.0, 0.5, 4.0]),
        (lambda a: nnkit.hypot(a, a * 2), lambda a: torch.hypot(a, a * 2), [1.0, -2.0]),
    ]
    for nk, th, v in cases:
        x = nnkit.tensor(v, dtype=nnkit.float64, requires_grad=True)
        (g,) = nnkit.autograd.grad(nk(x).sum(), x, create_graph=True)
        (gg,) = nnkit.autograd.grad(g.sum(), x)
        tx = torch.tensor(v, dtype=torch.float64, requires_grad=True)
        (tg,) = torch.autograd.grad(th(tx).sum(), tx, create_graph=True)
        (tgg,) = torch.autograd.grad(tg.sum(), tx)
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- comparisons
CLOSE_A = np.array([1.0, 1.0, INF, -INF, NAN, 0.0, 1e10, 2.0])
CLOSE_B = np.array([1.0 + 1e-6, 1.1, INF, INF, NAN, 1e-9, 1e10 + 1e4, -2.0])


@pytest.mark.parametrize(
    "kw", [{}, {"equal_nan": True}, {"rtol": 0.2}, {"atol": 1e-3}, {"rtol": 0.0, "atol": 0.0}]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_isclose_allclose_match_torch(kw, dtype):
    a, b = CLOSE_A.astype(dtype), CLOSE_B.astype(dtype)
    got = nnkit.isclose(nnkit.tensor(a), nnkit.tensor(b), **kw)
    want = torch.isclose(torch.tensor(a), torch.tensor(b), **kw)
    assert got.dtype == nnkit.bool and got.grad_fn is None
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    for sl in (slice(None), slice(0, 3), slice(5, 6)):
        ta, tb = nnkit.tensor(a[sl]), nnkit.tensor(b[sl])
        assert nnkit.allclose(ta, tb, **kw) is torch.allclose(
            torch.tensor(a[sl]), torch.tensor(b[sl]), **kw
        )
    assert nnkit.tensor(a).isclose(nnkit.tensor(b), **kw).numpy().tolist() == want.tolist()


def test_isclose_integers_broadcast_and_errors():
    a, b = np.array([[1, 2, 3]]), np.array([[1], [3]])
    got = nnkit.isclose(nnkit.tensor(a), nnkit.tensor(b), atol=1)
    want = torch.isclose(torch.tensor(a), torch.tensor(b), atol=1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="isclose.*dtype"):
        nnkit.isclose(nnkit.tensor([1, 2]), nnkit.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="isclose: rtol"):
        nnkit.isclose(nnkit.tensor([1.0]), nnkit.tensor([1.0]), rtol=-1)
    with pytest.raises(TypeError, match="isclose: argument 'other'"):
        nnkit.isclose(nnkit.tensor([1.0]), 1.0)


def test_equal_matches_torch():
    pairs = [
        ([1.0, 2.0], [1.0, 2.0]),
        ([1.0, 2.0], [1.0, 3.0]),
        ([1.0], [1.0, 1.0]),
        ([NAN], [NAN]),
        ([[1.0, 2.0]], [1.0, 2.0]),
        ([], []),
    ]
    for a, b in pairs:
        assert nnkit.equal(nnkit.tensor(a), nnkit.tensor(b)) is torch.equal(
            torch.tensor(a), torch.tensor(b)
        ), (a, b)
    assert nnkit.equal(nnkit.tensor([1, 2]), nnkit.tensor([1.0, 2.0]))
    assert nnkit.tensor([1.0]).equal(nnkit.tensor([1.0]))
    with pytest.raises(TypeError, match="equal: argument 'other'"):
        nnkit.equal(nnkit.tensor([1.0]), [1.0])


def test_nan_to_num_and_frac_integer_inputs():
    t = nnkit.nan_to_num(nnkit.tensor([1, 2]))
    assert t.dtype == nnkit.int64 and t.tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="frac"):
        nnkit.frac(nnkit.tensor([1, 2]))


# ----------------------------------------------------------------- activations
def test_glu_and_prelu_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 6))
    for dim in (-1, 1, 0):
        _compare(
            lambda t, d=dim: F.glu(t, d),
            lambda t, d=dim: TF.glu(t, d),
            [x],
            np.float64,
            1e-12,
            1e-10,
        )
    w = np.array([0.1, -0.3, 0.25, 2.0])
    _compare(F.prelu, TF.prelu, [x, w], np.float64, 1e-12, 1e-10)
    _compare(F.prelu, TF.prelu, [x, w[:1]], np.float32, 2e-6, 1e-5)
    _compare(F.prelu, TF.prelu, [np.array([-1.0, 0.0, 2.0]), w[:1]], np.float64, 0, 1e-12)
    _compare(F.prelu, TF.prelu, [np.array(-1.5), w[:1]], np.float64, 0, 1e-12)


def test_activation_errors_name_op_and_argument():
    with pytest.raises(RuntimeError, match="glu: halving dimension must be even"):
        F.glu(nnkit.ones(2, 3))
    with pytest.raises(RuntimeError, match="glu"):
        F.glu(nnkit.tensor(1.0))
    with pytest.raises(RuntimeError, match="prelu: 'weight' has 3 elements"):
        F.prelu(nnkit.ones(2, 4), nnkit.ones(3))
    with pytest.raises(RuntimeError, match="softshrink: argument 'lambd'"):
        F.softshrink(nnkit.ones(2), -1.0)
    with pytest.raises(RuntimeError, match="celu: argument 'alpha'"):
        F.celu(nnkit.ones(2), 0.0)
    with pytest.raises(TypeError, match="atan2: argument 'other'"):
        nnkit.atan2(nnkit.ones(2), 2.0)
    with pytest.raises(TypeError, match="asin: argument 'input'"):
        nnkit.asin(0.5)
    with pytest.raises(TypeError, match="logit: argument 'eps'"):
        nnkit.logit(nnkit.ones(2), eps="x")


MODULES = [
    (lambda: nn.Hardswish(), lambda: torch.nn.Hardswish()),
    (lambda: nn.Hardsigmoid(), lambda: torch.nn.Hardsigmoid()),
    (lambda: nn.Mish(), lambda: torch.nn.Mish()),
    (lambda: nn.GLU(dim=1), lambda: torch.nn.GLU(dim=1)),
    (lambda: nn.CELU(0.7), lambda: torch.nn.CELU(0.7)),
    (lambda: nn.Softsign(), lambda: torch.nn.Softsign()),
    (lambda: nn.Threshold(0.2, -1.0), lambda: torch.nn.Threshold(0.2, -1.0)),
    (lambda: nn.Hardshrink(0.3), lambda: torch.nn.Hardshrink(0.3)),
    (lambda: nn.Softshrink(0.3), lambda: torch.nn.Softshrink(0.3)),
    (lambda: nn.Tanhshrink(), lambda: torch.nn.Tanhshrink()),
]


@pytest.mark.parametrize("k", range(len(MODULES)))
def test_modules_match_torch(k):
    mk, mt = MODULES[k]
    x = np.random.default_rng(k).standard_normal((3, 4, 2)) * 3
    _compare(mk(), mt(), [x], np.float32, 2e-6, 1e-5)
    assert list(mk().parameters()) == []


def test_prelu_module_learns_its_weight():
    x = np.random.default_rng(1).standard_normal((5, 3, 2))
    m, tm = nn.PReLU(3, init=0.1), torch.nn.PReLU(3, init=0.1)
    assert [n for n, _ in m.named_parameters()] == ["weight"] and m.weight.shape == (3,)
    out = m(nnkit.tensor(x.astype(np.float32)))
    tout = tm(torch.tensor(x.astype(np.float32)))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6)
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-5)
    assert nn.PReLU().weight.shape == (1,) and "weight" in nn.PReLU().state_dict()
    assert repr(nn.PReLU(3)) == "PReLU(num_parameters=3)"
