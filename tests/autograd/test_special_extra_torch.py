"""The special functions of issue 13 against PyTorch: values on grids with the edge values
(0, -0, negatives, +-inf, NaN, large arguments), dtype promotion, gradients, the errors
where torch has no derivative, ``frexp``, the bit shifts and the window functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nnkit
import nnkit.signal.windows as nw
import nnkit.special as ns

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan
EDGES = [0.0, -0.0, 1e-300, -1e-300, 1.0, -1.0, 7.9, 8.0, 8.1, -8.1, 26.0, -26.0, 27.0]
EDGES += [-27.0, 50.0, 51.0, -40.0, 700.0, -700.0, 1e8, INF, -INF, NAN]


def grid():
    rng = np.random.default_rng(0)
    return np.concatenate([rng.uniform(-30, 30, 300), rng.uniform(-3, 3, 200), EDGES])


def close(got, want, rtol=1e-12, atol=0.0):
    """nnkit's tensor ``got`` equals torch's ``want`` in shape, dtype and value (NaN where
    torch has NaN, the same infinities)."""
    a = got.detach().numpy()
    b = want.detach().numpy()
    assert a.shape == b.shape
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


UNARY = [
    ("i0", nnkit.i0, torch.i0),
    ("i0e", ns.i0e, torch.special.i0e),
    ("i1", ns.i1, torch.special.i1),
    ("i1e", ns.i1e, torch.special.i1e),
    ("erfcx", ns.erfcx, torch.special.erfcx),
    ("log_ndtr", ns.log_ndtr, torch.special.log_ndtr),
]


@pytest.mark.parametrize("name,fn,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_values_match_torch(name, fn, ref):
    x = grid()
    close(fn(nnkit.tensor(x)), ref(torch.tensor(x)), rtol=1e-12)
    x32 = x.astype(np.float32)
    # float32: torch computes in float32 (exp(x*x) of a rounded x*x), nnkit in float64
    close(fn(nnkit.tensor(x32)), ref(torch.tensor(x32)), rtol=1e-4, atol=1e-30)
    ints = np.arange(-5, 6)
    close(fn(nnkit.tensor(ints)), ref(torch.tensor(ints)), rtol=2e-6)  # default float dtype


@pytest.mark.parametrize("name,fn,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradients_match_torch(name, fn, ref):
    x = np.array([-12.0, -3.0, -0.5, 0.0, 1e-20, 0.7, 2.0, 9.0, 30.0])
    n = nnkit.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    (gn,) = nnkit.autograd.grad(fn(n).sum(), n, create_graph=True)
    (gt,) = torch.autograd.grad(ref(t).sum(), t, create_graph=True)
    close(gn, gt, rtol=1e-11)
    (ggn,) = nnkit.autograd.grad(gn.sum(), n)  # double backward
    (ggt,) = torch.autograd.grad(gt.sum(), t)
    close(ggn, ggt, rtol=1e-9, atol=1e-300)


def test_zeta_values_gradient_and_errors():
    x = np.array([1.0, 0.5, 2.0, 2.0, 3.0, 3.0, 2.5, 4.0, 2.0, INF, 6.0, NAN])
    q = np.array([1.0, 1.0, 0.0, -1.0, -2.5, 1e-3, -2.5, 100.0, INF, 2.0, 0.1, 1.0])
    close(
        ns.zeta(nnkit.tensor(x), nnkit.tensor(q)),
        torch.special.zeta(torch.tensor(x), torch.tensor(q)),
    )
    close(ns.zeta(3.0, nnkit.tensor([1.0, 2.0])), torch.special.zeta(3.0, torch.tensor([1.0, 2.0])))
    close(ns.zeta(nnkit.tensor([2.0, 3.0]), 1.0), torch.special.zeta(torch.tensor([2.0, 3.0]), 1.0))
    qs = nnkit.tensor([0.5, 1.5, 3.0], dtype=nnkit.float64, requires_grad=True)
    qt = torch.tensor([0.5, 1.5, 3.0], dtype=torch.float64, requires_grad=True)
    ns.zeta(nnkit.tensor([[2.0], [3.5]]), qs).sum().backward()
    torch.special.zeta(torch.tensor([[2.0], [3.5]], dtype=torch.float64), qt).sum().backward()
    close(qs.grad, qt.grad)
    xs = nnkit.tensor([2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="zeta"):
        ns.zeta(xs, nnkit.tensor([1.0, 2.0])).sum().backward()


@pytest.mark.parametrize("n", range(6))
def test_polygamma_matches_torch(n):
    # n = 1 is trigamma: at the poles nnkit gives inf, torch large finite values
    poles = [] if n == 1 else [0.0, -1.0, -2.0]
    x = np.concatenate([np.linspace(-4.7, 6.05, 44), [*poles, 1e-8, 100.0]])
    close(nnkit.polygamma(n, nnkit.tensor(x)), torch.polygamma(n, torch.tensor(x)), rtol=1e-9)
    close(nnkit.tensor(x).polygamma(n), torch.tensor(x).polygamma(n), rtol=1e-9)
    got = ns.polygamma(n, nnkit.tensor([1, 2]))  # integers: the default float dtype
    close(got, torch.special.polygamma(n, torch.tensor([1, 2])), rtol=1e-6)
    xr = np.array([0.4, 1.3, 2.5])
    a = nnkit.tensor(xr, requires_grad=True)
    b = torch.tensor(xr, requires_grad=True)
    nnkit.polygamma(n, a).sum().backward()
    torch.polygamma(n, b).sum().backward()
    # n = 0: the gradient is trigamma, whose torch kernel is accurate to ~1e-10 only
    close(a.grad, b.grad, rtol=1e-9 if n == 0 else 1e-12)


def test_polygamma_and_mvlgamma_errors():
    with pytest.raises(RuntimeError, match="negative n"):
        nnkit.polygamma(-1, nnkit.tensor([1.0]))
    with pytest.raises(TypeError, match="'n'"):
        nnkit.polygamma(1.5, nnkit.tensor([1.0]))
    with pytest.raises(RuntimeError, match="greater than"):
        nnkit.mvlgamma(nnkit.tensor([0.9, 3.0]), 3)
    with pytest.raises(RuntimeError, match="p has to be"):
        nnkit.mvlgamma(nnkit.tensor([2.0]), 0)


@pytest.mark.parametrize("p", [1, 2, 5])
def test_mvlgamma_matches_torch(p):
    x = np.linspace(0.5 * (p - 1) + 0.01, 9.0, 17)
    a = nnkit.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    close(nnkit.mvlgamma(a, p), torch.mvlgamma(b, p))
    close(ns.multigammaln(a, p), torch.special.multigammaln(b, p))
    nnkit.mvlgamma(a, p).sum().backward()
    torch.mvlgamma(b, p).sum().backward()
    close(a.grad, b.grad, rtol=1e-10)


def test_igamma_igammac_match_torch():
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(0, 12, 400), [0, 0, 1, INF, INF, 2, NAN, -1, 2, 0.5]])
    x = np.concatenate([rng.uniform(0, 15, 400), [0, 1, 0, 5, INF, INF, 1, 1, -1, 1e-5]])
    for fn, ref in ((nnkit.igamma, torch.igamma), (nnkit.igammac, torch.igammac)):
        close(fn(nnkit.tensor(a), nnkit.tensor(x)), ref(torch.tensor(a), torch.tensor(x)), 1e-12)
    # a ~ x for large a: Temme's uniform asymptotic expansion (both branches of torch)
    big = np.concatenate([np.linspace(21.0, 190.0, 9), [250.0, 1e3, 2e4]])
    for f in (1.1, 0.95, 1.0, 1.3):
        got = ns.gammainc(nnkit.tensor(big), nnkit.tensor(big * f))
        close(got, torch.special.gammainc(torch.tensor(big), torch.tensor(big * f)), 1e-12)
        got = ns.gammaincc(nnkit.tensor(big), nnkit.tensor(big * f))
        close(got, torch.special.gammaincc(torch.tensor(big), torch.tensor(big * f)), 1e-12)


def test_igamma_gradients():
    a = np.array([[0.5], [2.0], [7.5]])
    x = np.array([0.3, 1.0, 4.0, 12.0])
    for fn, ref in ((nnkit.igamma, torch.igamma), (nnkit.igammac, torch.igammac)):
        xn = nnkit.tensor(x, requires_grad=True)
        xt = torch.tensor(x, requires_grad=True)
        fn(nnkit.tensor(a), xn).sum().backward()
        ref(torch.tensor(a), xt).sum().backward()
        close(xn.grad, xt.grad, rtol=1e-11)
        an = nnkit.tensor(a, requires_grad=True)
        with pytest.raises(RuntimeError, match="igamma"):
            fn(an, nnkit.tensor(x)).sum().backward()


def test_frexp_matches_torch():
    x = np.array([0.0, -0.0, 1.0, 8.5, -3.0, 1e300, -1e-300, 0.75, INF, -INF, NAN])
    m, e = nnkit.frexp(nnkit.tensor(x))
    tm, te = torch.frexp(torch.tensor(x))
    close(m, tm, rtol=0)
    close(e, te)
    assert np.array_equal(np.signbit(m.numpy()), np.signbit(tm.numpy()))
    a = nnkit.tensor([3.0, -0.1, 100.0], requires_grad=True)
    b = torch.tensor([3.0, -0.1, 100.0], requires_grad=True)
    nnkit.frexp(a).mantissa.sum().backward()
    torch.frexp(b).mantissa.sum().backward()
    close(a.grad, b.grad)
    with pytest.raises(RuntimeError, match="frexp"):
        nnkit.frexp(nnkit.tensor([1, 2]))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_shifts_match_torch(dtype):
    rng = np.random.default_rng(2)
    lo = 0 if dtype == "uint8" else -100
    a = rng.integers(lo, 100, 40).astype(dtype)
    b = rng.integers(0 if dtype == "uint8" else -3, 70, 40).astype(dtype)
    na, nb = nnkit.tensor(a), nnkit.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    close(nnkit.bitwise_left_shift(na, nb), torch.bitwise_left_shift(ta, tb))
    close(nnkit.bitwise_right_shift(na, nb), torch.bitwise_right_shift(ta, tb))
    close(na << 3, ta << 3)
    close(na >> 2, ta >> 2)
    close(5 << nb[:8].abs(), 5 << tb[:8].abs())
    close(na.bitwise_left_shift(nb), ta.bitwise_left_shift(tb))


def test_shift_promotion_and_errors():
    a = nnkit.tensor([1, -8], dtype=nnkit.int8)
    b = nnkit.tensor([1, 2])
    ta = torch.tensor([1, -8], dtype=torch.int8)
    close(a << b, ta << torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="bitwise_left_shift"):
        nnkit.tensor([1.0]) << 1
    with pytest.raises(TypeError, match="bitwise_right_shift"):
        nnkit.bitwise_right_shift(nnkit.tensor([1]), 1.5)


TOP_WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window"]


@pytest.mark.parametrize("name", [*TOP_WINDOWS, "kaiser_window"])
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("periodic", [True, False])
def test_top_level_windows(name, length, periodic):
    for nd, td in ((nnkit.float64, torch.float64), (nnkit.float32, torch.float32)):
        got = getattr(nnkit, name)(length, periodic, dtype=nd)
        want = getattr(torch, name)(length, periodic, dtype=td)
        close(got, want, rtol=1e-6 if nd is nnkit.float32 else 1e-12, atol=1e-7)
    if name == "hamming_window":
        got = nnkit.hamming_window(length, periodic, 0.6, 0.3)
        close(got, torch.hamming_window(length, periodic, 0.6, 0.3), atol=1e-7)
    if name == "kaiser_window":
        got = nnkit.kaiser_window(length, periodic, 3.5)
        close(got, torch.kaiser_window(length, periodic, 3.5), rtol=1e-6)


def test_window_options_and_errors():
    w = nnkit.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.dtype == nnkit.float32
    with pytest.raises(ValueError, match="non-negative"):
        nnkit.hann_window(-1)
    with pytest.raises(ValueError, match="floating point"):
        nnkit.bartlett_window(3, dtype=nnkit.int64)
    with pytest.raises(ValueError, match="Center"):
        nw.exponential(4, center=1.0)
    with pytest.raises(ValueError, match="Tau"):
        nw.exponential(4, tau=0.0)
    with pytest.raises(ValueError, match="Standard deviation"):
        nw.gaussian(4, std=-1.0)
    with pytest.raises(ValueError, match="beta"):
        nw.kaiser(4, beta=-1.0)
    with pytest.raises(ValueError, match="empty"):
        nw.general_cosine(4, a=[])


SIGNAL = [
    ("bartlett", {}),
    ("blackman", {}),
    ("cosine", {}),
    ("exponential", {"tau": 2.5}),
    ("gaussian", {"std": 0.7}),
    ("general_cosine", {"a": [0.46, 0.23, 0.31]}),
    ("general_hamming", {"alpha": 0.7}),
    ("hamming", {}),
    ("hann", {}),
    ("kaiser", {"beta": 4.0}),
    ("nuttall", {}),
]


@pytest.mark.parametrize("name,kw", SIGNAL, ids=[s[0] for s in SIGNAL])
def test_signal_windows(name, kw):
    for m in (0, 1, 2, 7, 10):
        for sym in (True, False):
            got = getattr(nw, name)(m, sym=sym, dtype=nnkit.float64, **kw)
            want = getattr(torch.signal.windows, name)(m, sym=sym, dtype=torch.float64, **kw)
            close(got, want, rtol=1e-12, atol=1e-15)
    got = nw.exponential(6, center=1.0, sym=False)
    close(got, torch.signal.windows.exponential(6, center=1.0, sym=False), rtol=1e-6)


BESSEL = [
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
    "airy_ai",
]


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_family_matches_torch(name):
    x = np.concatenate([grid(), [2.0, -2.0, 2.09, -2.09, 5.0, 5.0001, 103.0, 104.0, 0.3]])
    fn, ref = getattr(ns, name), getattr(torch.special, name)
    # relative 1e-12 away from the zeros of the oscillating functions
    close(fn(nnkit.tensor(x)), ref(torch.tensor(x)), rtol=1e-12, atol=1e-14)
    # float32: torch reduces x - pi/4 in float32, meaningless for huge x; nnkit in float64
    x32 = x[np.abs(x) < 1e4].astype(np.float32)
    close(fn(nnkit.tensor(x32)), ref(torch.tensor(x32)), rtol=1e-4, atol=1e-6)
    close(fn(nnkit.tensor([1, 2, 3])), ref(torch.tensor([1, 2, 3])), rtol=1e-6)
    y = fn(nnkit.tensor([0.5, 1.5], requires_grad=True))
    assert y.requires_grad  # as torch: recorded, but without a derivative
    with pytest.raises(RuntimeError, match=name):
        y.sum().backward()


@pytest.mark.parametrize("name", list(ns.__all__))
def test_every_special_name_resolves(name):
    assert callable(getattr(ns, name))


POLY = [n for n in ns.__all__ if n.endswith(("_polynomial_t", "_polynomial_u"))]
POLY += [n for n in ns.__all__ if n.endswith(("_v", "_w", "_h", "_he", "_l", "_p"))]


@pytest.mark.parametrize("name", sorted(set(POLY)))
def test_polynomials_match_torch(name):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-3, 3, 300), [1, -1, 0, 0.5, 2, -2, INF, -INF, 1, -1, 0]])
    n = np.concatenate(
        [rng.integers(-2, 15, 300).astype(float), [3, 4, 5, 9, 7, 2, 3, 2, 12, 13, 10]]
    )
    n[:40] += 0.6  # non-integer degrees are truncated
    fn, ref = getattr(ns, name), getattr(torch.special, name)
    close(fn(nnkit.tensor(x), nnkit.tensor(n)), ref(torch.tensor(x), torch.tensor(n)), 1e-10, 1e-12)
    grid_x = np.linspace(-1.0, 1.0, 41)[:, None]
    grid_n = np.array([0.0, 1.0, 5.0, 7.0, 9.0, 20.0])
    got = fn(nnkit.tensor(grid_x), nnkit.tensor(grid_n))
    close(got, ref(torch.tensor(grid_x), torch.tensor(grid_n)), 1e-9, 1e-11)
    close(fn(nnkit.tensor(x[:20]), 4), ref(torch.tensor(x[:20]), 4), 1e-12)
    close(fn(0.3, nnkit.tensor(n[:20])), ref(0.3, torch.tensor(n[:20])), 1e-12)
    x32, n32 = x.astype(np.float32), n.astype(np.float32)
    close(
        fn(nnkit.tensor(x32), nnkit.tensor(n32)),
        ref(torch.tensor(x32), torch.tensor(n32)),
        1e-4,
        1e-4,
    )


def test_hermite_degree_limit():
    """Degrees above 512 (float64) or 128 (float32) give NaN, as torch."""
    for dt, tdt, top in ((nnkit.float64, torch.float64, 512), (nnkit.float32, torch.float32, 128)):
        for kind in ("h", "he"):
            fn = getattr(ns, f"hermite_polynomial_{kind}")
            ref = getattr(torch.special, f"hermite_polynomial_{kind}")
            n = [float(top + 1), 3.0]
            got = fn(nnkit.tensor([0.5, 0.5], dtype=dt), nnkit.tensor(n, dtype=dt))
            close(got, ref(torch.tensor([0.5, 0.5], dtype=tdt), torch.tensor(n, dtype=tdt)), 1e-6)
    got = ns.hermite_polynomial_he(nnkit.tensor([0.01], dtype=nnkit.float64), 512)
    want = torch.special.hermite_polynomial_he(torch.tensor([0.01], dtype=torch.float64), 512)
    close(got, want, 1e-10)
