"""Kernels of ``nnkit.special``'s Bessel functions (``bessel_j0/j1/y0/y1``,
``modified_bessel_k0/k1`` and their scaled forms, ``spherical_bessel_j0``), ``airy_ai``
and the orthogonal polynomial families (Chebyshev ``T/U/V/W`` and their shifted forms,
Hermite ``H/He``, Laguerre ``L``, Legendre ``P``).

Each ``*_array(xp, ...)`` works on float64 arrays of NumPy or CuPy (``xp``), vectorised
with masks; they port PyTorch's kernels (``aten/src/ATen/native/Math.h``, from Cephes):
the same rational and Chebyshev approximations, the same recurrences and the same special
cases (``n < 0`` gives 0, ``n`` is truncated to an integer, the values at ``x = +-1``).
A recurrence runs up to the largest ``n`` of its elements. Floating-point exceptions are
silenced by the callers.
"""

from __future__ import annotations

import math

import numpy as np

from nnkit.backends.nn_kernels import _polyval
from nnkit.backends.special_kernels2 import chbevl, i0_array, i1_array

__all__ = [
    "bessel_j0_array",
    "bessel_j1_array",
    "bessel_y0_array",
    "bessel_y1_array",
    "modified_bessel_k0_array",
    "modified_bessel_k1_array",
    "scaled_modified_bessel_k0_array",
    "scaled_modified_bessel_k1_array",
    "spherical_bessel_j0_array",
    "airy_ai_array",
    "POLYNOMIALS",
]

# fmt: off
_J0_PP = (
    0.0007969367292973471, 0.08283523921074408, 1.239533716464143, 5.447250030587687,
    8.74716500199817, 5.303240382353949, 1.0,
)
_J0_PQ = (
    0.0009244088105588637, 0.08562884743544745, 1.2535274390105895, 5.470977403304171,
    8.761908832370695, 5.306052882353947, 1.0,
)
_J0_QP = (
    -0.011366383889846916, -1.2825271867050931, -19.553954425773597, -93.20601521237683,
    -177.68116798048806, -147.07750515495118, -51.41053267665993, -6.050143506007285,
)
_J0_QQ = (
    64.3178256118178, 856.4300259769806, 3882.4018360540163, 7240.467741956525,
    5930.727011873169, 2062.0933166032783, 242.0057402402914,
)
_J0_RP = (
    -4794432209.782018, 1956174919465.5657, -249248344360967.72, 9708622510473064.0,
)
_J0_RQ = (
    499.563147152651, 173785.4016763747, 48440965.83399621, 11185553704.535683,
    2112775201154.892, 310518229857422.56, 3.1812195594320496e+16, 1.7108629408104315e+18,
)
_J1_PP = (
    0.0007621256162081731, 0.07313970569409176, 1.1271960812968493, 5.112079511468076,
    8.424045901417724, 5.214515986823615, 1.0,
)
_J1_PQ = (
    0.0005713231280725487, 0.06884559087544954, 1.105142326340617, 5.073863861286015,
    8.399855543276042, 5.209828486823619, 1.0,
)
_J1_QP = (
    0.05108625947501766, 4.982138729512334, 75.82382841325453, 366.7796093601508,
    710.8563049989261, 597.4896124006136, 211.68875710057213, 25.207020585802372,
)
_J1_QQ = (
    74.23732770356752, 1056.4488603826283, 4986.410583376536, 9562.318924047562,
    7997.041604473507, 2826.1927851763908, 336.0936078106983,
)
_J1_RP = (
    -899971225.7055594, 452228297998.19403, -72749424522181.83, 3682957328638529.0,
)
_J1_RQ = (
    620.8364781180543, 256987.25675774884, 83514679.14319493, 22151159547.97925,
    4749141220799.914, 784369607876235.9, 8.952223361846274e+16, 5.322786203326801e+18,
)
_Y0_PP = (
    0.0007969367292973471, 0.08283523921074408, 1.239533716464143, 5.447250030587687,
    8.74716500199817, 5.303240382353949, 1.0,
)
_Y0_PQ = (
    0.0009244088105588637, 0.08562884743544745, 1.2535274390105895, 5.470977403304171,
    8.761908832370695, 5.306052882353947, 1.0,
)
_Y0_QP = (
    -0.011366383889846916, -1.2825271867050931, -19.553954425773597, -93.20601521237683,
    -177.68116798048806, -147.07750515495118, -51.41053267665993, -6.050143506007285,
)
_Y0_QQ = (
    64.3178256118178, 856.4300259769806, 3882.4018360540163, 7240.467741956525,
    5930.727011873169, 2062.0933166032783, 242.0057402402914,
)
_Y0_YP = (
    15592.436785523574, -14663929.59039716, 5435264770.518765, -982136065717.9115,
    87590639439536.7, -3466283033847297.0, 4.4273326857256984e+16, -1.8495080043698668e+16,
)
_Y0_YQ = (
    1041.2835366425984, 626107.330137135, 268919633.39381415, 86400248710.3935,
    20297961275010.555, 3171577528429750.5, 2.5059625617265306e+17,
)
_Y1_PP = (
    0.0007621256162081731, 0.07313970569409176, 1.1271960812968493, 5.112079511468076,
    8.424045901417724, 5.214515986823615, 1.0,
)
_Y1_PQ = (
    0.0005713231280725487, 0.06884559087544954, 1.105142326340617, 5.073863861286015,
    8.399855543276042, 5.209828486823619, 1.0,
)
_Y1_QP = (
    0.05108625947501766, 4.982138729512334, 75.82382841325453, 366.7796093601508,
    710.8563049989261, 597.4896124006136, 211.68875710057213, 25.207020585802372,
)
_Y1_QQ = (
    74.23732770356752, 1056.4488603826283, 4986.410583376536, 9562.318924047562,
    7997.041604473507, 2826.1927851763908, 336.0936078106983,
)
_Y1_YP = (
    1263204747.9017804, -647355876379.1603, 114509511541823.73, -8127702555013251.0,
    2.024394757135949e+17, -7.788771962659501e+17,
)
_Y1_YQ = (
    594.3015923461282, 235564.09294306856, 73481194.44597217, 18760131610.870617,
    3882312774962.3857, 620557727146953.8, 6.871410873553005e+16, 3.9727060811656064e+18,
)
_K0_A = (
    1.374465435613523e-16, 4.25981614279661e-14, 1.0349695257633842e-11, 1.904516377220209e-09,
    2.5347910790261494e-07, 2.286212103119452e-05, 0.001264615411446926, 0.0359799365153615,
    0.3442898999246285, -0.5353273932339028,
)
_K0_B = (
    5.300433772686263e-18, -1.6475804301524212e-17, 5.2103915050390274e-17,
    -1.678231096805412e-16, 5.512055978524319e-16, -1.848593377343779e-15,
    6.3400764774050706e-15, -2.2275133269916698e-14, 8.032890775363575e-14,
    -2.9800969231727303e-13, 1.140340588208475e-12, -4.514597883373944e-12,
    1.8559491149547177e-11, -7.957489244477107e-11, 3.577397281400301e-10,
    -1.69753450938906e-09, 8.574034017414225e-09, -4.660489897687948e-08, 2.766813639445015e-07,
    -1.8317555227191195e-06, 1.39498137188765e-05, -0.00012849549581627802,
    0.0015698838857300533, -0.0314481013119645, 2.4403030820659555,
)
_K1_A = (
    -7.023863479386288e-18, -2.427449850519366e-15, -6.666901694199329e-13,
    -1.4114883926335278e-10, -2.213387630734726e-08, -2.4334061415659684e-06,
    -0.0001730288957513052, -0.006975723859639864, -0.12261118082265715, -0.3531559607765449,
    1.5253002273389478,
)
_K1_B = (
    -5.756744483665017e-18, 1.7940508731475592e-17, -5.689462558442859e-17,
    1.838093544366639e-16, -6.057047248373319e-16, 2.038703165624334e-15,
    -7.019837090418314e-15, 2.4771544244813043e-14, -8.976705182324994e-14,
    3.3484196660784293e-13, -1.2891739609510289e-12, 5.13963967348173e-12,
    -2.1299678384275683e-11, 9.218315187605006e-11, -4.1903547593418965e-10,
    2.015049755197033e-09, -1.0345762465678097e-08, 5.7410841254500495e-08,
    -3.5019606030878126e-07, 2.406484947837217e-06, -1.936197974166083e-05,
    0.00019521551847135162, -0.002857816859622779, 0.10392373657681724, 2.7206261904844427,
)
_AIRY_AN = (
    0.346538101525629, 12.007595273964581, 76.27960536152345, 168.08922493463058,
    159.75639135016442, 70.53609068404442, 14.026469116338967, 1.0,
)
_AIRY_AD = (
    0.5675945326387702, 14.75625625848472, 84.51389701414746, 177.31808814540045,
    164.2346928715297, 71.47784008255756, 14.095913560783403, 1.0,
)
_AIRY_AFN = (
    -0.1316963234183318, -0.6264565444319123, -0.6931580360369335, -0.2797799815451191,
    -0.04919001326095003, -0.004062659235948854, -0.0001592764962392621, -2.776491081552329e-06,
    -1.6778769848911465e-08,
)
_AIRY_AFD = (
    13.356042070655324, 32.682503279522464, 26.736704094149957, 9.187074029072596,
    1.4752914677166642, 0.11568717379518804, 0.004402916416152112, 7.547203482874142e-05,
    4.5185009297058035e-07,
)
_AIRY_AGN = (
    0.01973399320916857, 0.39110302961568827, 1.0657989759959559, 0.9391692298166502,
    0.35146565610554764, 0.06338889196289255, 0.005858041130483885, 0.000282851600836737,
    6.98793669997261e-06, 8.117892395543892e-08, 3.415517847659236e-10,
)
_AIRY_AGD = (
    9.30892908077442, 19.835292871831214, 15.564662893286462, 5.476860694229755,
    0.9542936116189619, 0.08645808263523921, 0.004126565238242226, 0.00010125908511650914,
    1.1716673321441352e-06, 4.9183457006293e-09,
)
# fmt: on


_SQRT_2_PI = 0.797884560802865355879892119868763737  # sqrt(2 / pi)
_2_PI = 0.636619772367581343075535053490057448  # 2 / pi
_PI_4 = 0.785398163397448309615660845819875721
_3PI_4 = 2.356194490192344928846982537459627163


def _far(xp, x, y, pp, pq, qp, qq, shift, sine):
    """Hankel's asymptotic form of ``J``/``Y`` for ``x > 5`` (``y = (5 / x)**2``)."""
    p = _polyval(pp, y) / _polyval(pq, y)
    q = _polyval(qp, y) / _polyval(qq, y)
    s, c = xp.sin(x - shift), xp.cos(x - shift)
    w = p * s + 5.0 / x * q * c if sine else p * c - 5.0 / x * q * s
    return w * _SQRT_2_PI / xp.sqrt(x)


def bessel_j0_array(xp, x):
    """The Bessel function of the first kind of order 0."""
    x = xp.abs(x)
    big = x > 5.0
    xs = xp.where(big, 1.0, x)
    xl = xp.where(big, x, 10.0)
    z = xs * xs
    near = (z - 5.78318596294678452118e00) * (z - 3.04712623436620863991e01)
    near = near * _polyval(_J0_RP, z) / _polyval(_J0_RQ, z)
    near = xp.where(xs < 0.00001, 1.0 - xs * xs / 4.0, near)
    far = _far(xp, xl, 25.0 / (xl * xl), _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, _PI_4, False)
    return xp.where(xp.isnan(x), x, xp.where(big, far, near))


def bessel_j1_array(xp, x):
    """The Bessel function of the first kind of order 1 (odd)."""
    ax = xp.abs(x)
    big = ax > 5.0
    xs = xp.where(big, 1.0, ax)
    xl = xp.where(big, ax, 10.0)
    z = xs * xs
    near = _polyval(_J1_RP, z) / _polyval(_J1_RQ, z) * xs
    near = near * (z - 1.46819706421238932572e01) * (z - 4.92184563216946036703e01)
    f = 5.0 / xl
    far = _far(xp, xl, f * f, _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, _3PI_4, False)
    out = xp.where(big, far, near)
    out = xp.where(x < 0, -out, out)
    return xp.where(xp.isnan(x), x, out)


def bessel_y0_array(xp, x):
    """The Bessel function of the second kind of order 0: ``-inf`` at 0, NaN below."""
    big = x > 5.0
    xs = xp.where(big | (x <= 0), 1.0, x)
    xl = xp.where(big, x, 10.0)
    z = xs * xs
    near = _polyval(_Y0_YP, z) / _polyval(_Y0_YQ, z)
    near = near + _2_PI * xp.log(xs) * bessel_j0_array(xp, xs)
    far = _far(xp, xl, 25.0 / (xl * xl), _Y0_PP, _Y0_PQ, _Y0_QP, _Y0_QQ, _PI_4, True)
    out = xp.where(big, far, near)
    out = xp.where(x == 0, -xp.inf, xp.where(x < 0, xp.nan, out))
    return xp.where(xp.isnan(x), x, out)


def bessel_y1_array(xp, x):
    """The Bessel function of the second kind of order 1: ``-inf`` at 0, NaN below."""
    big = x > 5.0
    xs = xp.where(big | (x <= 0), 1.0, x)
    xl = xp.where(big, x, 10.0)
    z = xs * xs
    near = xs * (_polyval(_Y1_YP, z) / _polyval(_Y1_YQ, z))
    near = near + _2_PI * (bessel_j1_array(xp, xs) * xp.log(xs) - 1.0 / xs)
    f = 5.0 / xl
    far = _far(xp, xl, f * f, _Y1_PP, _Y1_PQ, _Y1_QP, _Y1_QQ, _3PI_4, True)
    out = xp.where(big, far, near)
    out = xp.where(x == 0, -xp.inf, xp.where(x < 0, xp.nan, out))
    return xp.where(xp.isnan(x), x, out)


def _k(xp, x, a, b, order, scaled):
    """``K0``/``K1`` (``exp(x) K`` when ``scaled``): Cephes' series in ``x**2 - 2`` with
    the ``I`` term up to 2, the Chebyshev series in ``8 / x - 2`` above."""
    small = x <= 2.0
    xs = xp.where(small & (x > 0), x, 1.0)
    xl = xp.where(small, 4.0, x)
    c = chbevl(xp, xs * xs - 2.0, a)
    if order == 0:
        near = c - xp.log(0.5 * xs) * i0_array(xp, xs)
    else:
        near = xp.log(0.5 * xs) * i1_array(xp, xs) + c / xs
    far = chbevl(xp, 8.0 / xl - 2.0, b) / xp.sqrt(xl)
    if scaled:
        near = near * xp.exp(xs)
    else:
        far = xp.exp(-xl) * far
    out = xp.where(small, near, far)
    out = xp.where(x == 0, xp.inf, xp.where(x < 0, xp.nan, out))
    return xp.where(xp.isnan(x), x, out)


def modified_bessel_k0_array(xp, x):
    """The modified Bessel function of the second kind of order 0."""
    return _k(xp, x, _K0_A, _K0_B, 0, False)


def modified_bessel_k1_array(xp, x):
    """The modified Bessel function of the second kind of order 1."""
    return _k(xp, x, _K1_A, _K1_B, 1, False)


def scaled_modified_bessel_k0_array(xp, x):
    """``exp(x) K0(x)``."""
    return _k(xp, x, _K0_A, _K0_B, 0, True)


def scaled_modified_bessel_k1_array(xp, x):
    """``exp(x) K1(x)``."""
    return _k(xp, x, _K1_A, _K1_B, 1, True)


_SPH = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0, 1.0 / 120.0)


def spherical_bessel_j0_array(xp, x):
    """``sin(x) / x``, by its Taylor series below 0.5; 0 at ``+-inf``."""
    z = x * x
    acc = _SPH[0]
    for c in _SPH[1:]:
        acc = c + z * acc
    series = 1.0 + z * (-1.0 / 6.0 + z * acc)
    with np.errstate(all="ignore"):
        out = xp.where(xp.abs(x) < 0.5, series, xp.sin(x) / x)
    return xp.where(xp.isinf(x), 0.0, out)


def airy_ai_array(xp, x):
    """The Airy function ``Ai(x)`` (Cephes): its power series for ``|x| < 2.09``, the
    asymptotic forms outside; NaN at ``+-inf``, 0 above 103.892."""
    neg = x < -2.09
    pos = x >= 2.09
    xn = xp.where(neg, x, -3.0)
    r = -2.0 * xn * xp.sqrt(-xn) / 3.0
    z = 1.0 / r
    zz = z * z
    t = r + 0.25 * math.pi
    osc = (xp.sin(t) * (1.0 + zz * _polyval(_AIRY_AFN, zz) / _polyval(_AIRY_AFD, zz))) - (
        xp.cos(t) * (z * _polyval(_AIRY_AGN, zz) / _polyval(_AIRY_AGD, zz))
    )
    osc = 5.64189583547756286948e-01 / xp.sqrt(xp.sqrt(-xn)) * osc
    xp_ = xp.where(pos, xp.minimum(x, 103.892), 3.0)
    zeta = 2.0 * xp_ * xp.sqrt(xp_) / 3.0
    w = 1.0 / zeta
    decay = 5.64189583547756286948e-01 * (_polyval(_AIRY_AN, w) / _polyval(_AIRY_AD, w))
    decay = decay / (2.0 * xp.sqrt(xp.sqrt(xp_)) * xp.exp(zeta))
    xs = xp.where(neg | pos | xp.isnan(x), 0.0, x)
    f, g, k = xp.ones_like(xs), xs.copy(), 1.0
    m, n, z3 = xp.ones_like(xs), xs.copy(), xs * xs * xs
    live = xp.ones(xs.shape, dtype=bool)
    eps = float(np.finfo(np.float64).eps)
    for _ in range(200):
        m = m * z3
        k += 1.0
        m = m / k
        n = n * z3
        k += 1.0
        n = n / k
        m = m / k
        f = xp.where(live, f + m, f)
        k += 1.0
        n = n / k
        g = xp.where(live, g + n, g)
        live = live & (xp.abs(m / f) > eps)
        if not bool(live.any()):
            break
    series = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    out = xp.where(neg, osc, xp.where(pos, decay, series))
    out = xp.where(x > 103.892, 0.0, out)
    return xp.where(xp.isinf(x) | xp.isnan(x), xp.nan, out)


# ------------------------------------------------------------------ polynomials
def _degree(xp, n):
    """torch's ``static_cast<int64_t>(n)``: truncated; non-finite degrees count as -1."""
    return xp.where(xp.isfinite(n), xp.trunc(n), -1.0)


def _recurrence(xp, n, q, step, nan_stop=True):
    """Run ``r = step(i, p, q)`` for ``i = 0 .. n - 2`` from ``p = 1`` and ``q`` (each
    element up to its own ``n``; stopping at a NaN like torch's loops): the value at
    degree ``n`` for ``n >= 1``."""
    p = xp.ones_like(q)
    iters = n - 1.0
    top = float(xp.max(iters)) if iters.size else 0.0
    for i in range(int(top) if math.isfinite(top) else 0):
        live = i < iters
        if nan_stop:
            live = live & ~xp.isnan(q)
        if not bool(live.any()):
            break
        r = step(i, p, q)
        p, q = xp.where(live, q, p), xp.where(live, r, q)
    return q


def _chebyshev(kind, shifted):
    """The Chebyshev polynomial of ``kind`` (``'t'``, ``'u'``, ``'v'``, ``'w'``) of
    ``x`` (``2x - 1`` when ``shifted``), with torch's special cases: the values at the
    ends of ``[-1, 1]`` and trigonometric forms inside it for large degrees."""

    def fn(xp, x, n):
        x, n = xp.broadcast_arrays(x, _degree(xp, n))
        y = x + x - 1.0 if shifted else x
        two = y + y
        q1 = {"t": y, "u": two, "v": two - 1.0, "w": two + 1.0}[kind]
        out = _recurrence(xp, n, q1, lambda i, p, q: two * q - p)
        out = xp.where(n == 1, q1, out)
        out = xp.where(n == 0, 1.0, out)
        inside = xp.abs(y) < 1.0
        th = xp.arccos(xp.where(inside, y, 0.0))
        odd = n % 2 != 0
        if kind == "t":
            trig, limit = xp.cos(n * th), 6
        elif kind == "u":
            s = xp.sin(th)
            trig = xp.where(s != 0, xp.sin((n + 1) * th) / s, (n + 1) * xp.cos((n + 1) * th) / y)
            limit = 6 if shifted else 8
        elif kind == "v":
            trig = xp.where(
                xp.sin(th / 2.0) != 1.0,
                xp.cos((n + 0.5) * th) / xp.cos(th / 2.0),
                xp.where(odd, -(n + n + 1), n + n + 1),
            )
            limit = 6 if shifted else 8
        else:
            trig = xp.where(
                xp.cos(th / 2.0) != 1.0,
                xp.sin((n + 0.5) * th) / xp.sin(th / 2.0),
                xp.where(y > 0, n + n + 1, xp.where(odd, -1.0, 1.0)),
            )
            limit = 4 if shifted else 8
        out = xp.where((n > limit) & inside, trig, out)
        # the ends: x = 1 and x = -1 (x = 1 and x = 0 for the shifted ones)
        top, bottom = (x == 1.0, x == 0.0) if shifted else (x == 1.0, x == -1.0)
        sign = xp.where(odd, -1.0, 1.0)
        at_top = {"t": 1.0, "u": n + 1, "v": 1.0, "w": n + n + 1}[kind]
        at_bottom = {"t": sign, "u": sign * (n + 1), "v": sign * (n + n + 1), "w": sign}[kind]
        out = xp.where(top, at_top, xp.where(bottom, at_bottom, out))
        return xp.where(n < 0, 0.0, out)

    return fn


def _hermite(physicists):
    """Hermite ``H`` (physicists') or ``He`` (probabilists'); NaN above degree
    ``limit`` (512 for float64, 128 for float32, as torch)."""

    def fn(xp, x, n, limit=512):
        x, n = xp.broadcast_arrays(x, _degree(xp, n))
        if physicists:
            q1 = x + x
            out = _recurrence(xp, n, q1, lambda i, p, q: (x + x) * q - (2.0 * i + 2.0) * p, False)
        else:
            q1 = x
            out = _recurrence(xp, n, q1, lambda i, p, q: x * q - (i + 1.0) * p, False)
        out = xp.where(n > limit, xp.nan, out)
        out = xp.where(n == 1, q1, xp.where(n == 0, 1.0, out))
        return xp.where(n < 0, 0.0, out)

    return fn


def laguerre_polynomial_l_array(xp, x, n):
    """The Laguerre polynomial ``L_n(x)``; 1 at ``x = 0``."""
    x, n = xp.broadcast_arrays(x, _degree(xp, n))
    q1 = 1.0 - x
    out = _recurrence(
        xp, n, q1, lambda i, p, q: ((2.0 * (i + 1) + (1.0 - x)) * q - (i + 1) * p) / (i + 2)
    )
    out = xp.where(n == 1, q1, xp.where(n == 0, 1.0, out))
    out = xp.where(xp.abs(x) == 0.0, 1.0, out)
    return xp.where(n < 0, 0.0, out)


def legendre_polynomial_p_array(xp, x, n):
    """The Legendre polynomial ``P_n(x)``; ``+-1`` at ``x = +-1``."""
    x, n = xp.broadcast_arrays(x, _degree(xp, n))
    out = _recurrence(
        xp, n, x, lambda i, p, q: ((2.0 * (i + 1) + 1) * x * q - (i + 1) * p) / (i + 2)
    )
    out = xp.where(n == 1, x, xp.where(n == 0, 1.0, out))
    ends = xp.abs(x) == 1.0
    out = xp.where(ends, xp.where((x > 0) | (n % 2 == 0), 1.0, -1.0), out)
    return xp.where(n < 0, 0.0, out)


#: name -> kernel ``(xp, x, n)`` of the polynomial families of ``torch.special``.
POLYNOMIALS = {
    "chebyshev_polynomial_t": _chebyshev("t", False),
    "chebyshev_polynomial_u": _chebyshev("u", False),
    "chebyshev_polynomial_v": _chebyshev("v", False),
    "chebyshev_polynomial_w": _chebyshev("w", False),
    "shifted_chebyshev_polynomial_t": _chebyshev("t", True),
    "shifted_chebyshev_polynomial_u": _chebyshev("u", True),
    "shifted_chebyshev_polynomial_v": _chebyshev("v", True),
    "shifted_chebyshev_polynomial_w": _chebyshev("w", True),
    "hermite_polynomial_h": _hermite(True),
    "hermite_polynomial_he": _hermite(False),
    "laguerre_polynomial_l": laguerre_polynomial_l_array,
    "legendre_polynomial_p": legendre_polynomial_p_array,
}
