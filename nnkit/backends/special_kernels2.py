"""Kernels of the special functions of issue 13 (``nnkit.special``'s Bessel ``I`` family,
``erfcx``, ``log_ndtr``, the Hurwitz ``zeta``, ``polygamma``) and of the bit shifts; the
incomplete gamma functions are in :mod:`nnkit.backends.igamma_kernels`.

Each ``*_array(xp, ...)`` works on float64 arrays of NumPy or CuPy (``xp``) and is
vectorised with masks. They port PyTorch's own kernels (``aten/src/ATen/native/Math.h``,
themselves from Cephes and SciPy): the same Chebyshev series, rational approximations,
series and continued fractions, so the values agree with torch's to about 1e-15
relative. Floating-point exceptions are silenced by the callers (``np.errstate``).
"""

from __future__ import annotations

import math

import numpy as np

from nnkit.backends.nn_kernels import _ERFC_P, _ERFC_Q, _polyval, erf_array
from nnkit.backends.special_kernels import (
    _ERFC_R,
    _ERFC_S,
    digamma_array,
    erfc_array,
    trigamma_array,
)

__all__ = [
    "i0_array",
    "i0e_array",
    "i1_array",
    "i1e_array",
    "erfcx_array",
    "log_ndtr_array",
    "zeta_array",
    "polygamma_array",
    "shift_array",
    "map_float64",
    "map2_float64",
    "frexp_mats",
    "shift_mats",
]

_MACHEP = 1.11022302462515654042e-16

# ------------------------------------------------------------- Bessel I0, I1
# Cephes' Chebyshev coefficients (torch's chebyshev_coefficients_i0e_A/B, i1e_A/B):
# exp(-x) I(x) on [0, 8] (A), exp(-x) sqrt(x) I(x) on [8, inf) (B).
# fmt: off
_I0E_A = (
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
    1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14,
    -4.856446783111929e-13, 2.95505266312964e-12, -1.726826291441556e-11, 9.675809035373237e-11,
    -5.189795601635263e-10, 2.6598237246823866e-09, -1.300025009986248e-08,
    6.046995022541919e-08, -2.670793853940612e-07, 1.1173875391201037e-06,
    -4.4167383584587505e-06, 1.6448448070728896e-05, -5.754195010082104e-05,
    0.00018850288509584165, -0.0005763755745385824, 0.0016394756169413357,
    -0.004324309995050576, 0.010546460394594998, -0.02373741480589947, 0.04930528423967071,
    -0.09490109704804764, 0.17162090152220877, -0.3046826723431984, 0.6767952744094761,
)
_I0E_B = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17, 3.461222867697461e-17,
    -2.8276239805165836e-16, -3.425485619677219e-16, 1.7725601330565263e-15,
    3.8116806693526224e-15, -9.554846698828307e-15, -4.150569347287222e-14,
    1.54008621752141e-14, 3.8527783827421426e-13, 7.180124451383666e-13,
    -1.7941785315068062e-12, -1.3215811840447713e-11, -3.1499165279632416e-11,
    1.1889147107846439e-11, 4.94060238822497e-10, 3.3962320257083865e-09, 2.266668990498178e-08,
    2.0489185894690638e-07, 2.8913705208347567e-06, 6.889758346916825e-05,
    0.0033691164782556943, 0.8044904110141088,
)
_I1E_A = (
    2.7779141127610464e-18, -2.111421214358166e-17, 1.5536319577362005e-16,
    -1.1055969477353862e-15, 7.600684294735408e-15, -5.042185504727912e-14,
    3.223793365945575e-13, -1.9839743977649436e-12, 1.1736186298890901e-11,
    -6.663489723502027e-11, 3.625590281552117e-10, -1.8872497517228294e-09,
    9.381537386495773e-09, -4.445059128796328e-08, 2.0032947535521353e-07,
    -8.568720264695455e-07, 3.4702513081376785e-06, -1.3273163656039436e-05,
    4.781565107550054e-05, -0.00016176081582589674, 0.0005122859561685758,
    -0.0015135724506312532, 0.004156422944312888, -0.010564084894626197, 0.024726449030626516,
    -0.05294598120809499, 0.1026436586898471, -0.17641651835783406, 0.25258718644363365,
)
_I1E_B = (
    7.517296310842105e-18, 4.414348323071708e-18, -4.6503053684893586e-17,
    -3.209525921993424e-17, 2.96262899764595e-16, 3.3082023109209285e-16,
    -1.8803547755107825e-15, -3.8144030724370075e-15, 1.0420276984128802e-14,
    4.272440016711951e-14, -2.1015418427726643e-14, -4.0835511110921974e-13,
    -7.198551776245908e-13, 2.0356285441470896e-12, 1.4125807436613782e-11,
    3.2526035830154884e-11, -1.8974958123505413e-11, -5.589743462196584e-10,
    -3.835380385964237e-09, -2.6314688468895196e-08, -2.512236237870209e-07,
    -3.882564808877691e-06, -0.00011058893876262371, -0.009761097491361469, 0.7785762350182801,
)
# fmt: on


def chbevl(xp, x, coeffs):
    """Cephes' ``chbevl``: the Chebyshev series of ``coeffs`` (highest order first) at
    ``x / 2``."""
    b0 = xp.full_like(x, coeffs[0])
    b1 = xp.zeros_like(x)
    b2 = b1
    for c in coeffs[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _i_parts(xp, x, a, b):
    """``(ax, small, series)``: ``|x|``, ``|x| <= 8`` and the Chebyshev series of each
    element (``a`` on [0, 8], ``b`` divided by ``sqrt(|x|)`` above)."""
    ax = xp.abs(x)
    small = ax <= 8.0
    lo = chbevl(xp, ax / 2.0 - 2.0, a)
    hi = chbevl(xp, 32.0 / xp.where(small, 32.0, ax) - 2.0, b)
    return ax, small, lo, hi


def i0e_array(xp, x):
    """``exp(-|x|) I0(x)``."""
    ax, small, lo, hi = _i_parts(xp, x, _I0E_A, _I0E_B)
    return xp.where(small, lo, hi / xp.sqrt(ax))


def i0_array(xp, x):
    """The modified Bessel function ``I0(x)`` (NaN at ``+-inf``, as torch's kernel)."""
    ax, small, lo, hi = _i_parts(xp, x, _I0E_A, _I0E_B)
    e = xp.exp(ax)
    return xp.where(small, e * lo, e * hi / xp.sqrt(ax))


def i1e_array(xp, x):
    """``exp(-|x|) I1(x)``."""
    ax, small, lo, hi = _i_parts(xp, x, _I1E_A, _I1E_B)
    out = xp.where(small, lo * ax, hi / xp.sqrt(ax))
    return xp.where(x < 0, -out, out)


def i1_array(xp, x):
    """The modified Bessel function ``I1(x)`` (NaN at ``+-inf``, as torch's kernel)."""
    ax, small, lo, hi = _i_parts(xp, x, _I1E_A, _I1E_B)
    e = xp.exp(ax)
    out = xp.where(small, e * ax * lo, e * hi / xp.sqrt(ax))
    return xp.where(x < 0, -out, out)


# --------------------------------------------------------- erfcx, log_ndtr
_ISPI = 0.56418958354775628694807945156  # 1 / sqrt(pi)


def erfcx_array(xp, x):
    """The scaled complementary error function ``exp(x**2) erfc(x)``.

    For ``x >= 1`` it is Cephes' rational factor of ``erfc`` itself (``erfc(x) =
    exp(-x**2) P(x)/Q(x)``), so no ``exp`` is taken; below, ``exp(x**2) (1 - erf(x))``;
    for ``x < 0``, ``2 exp(x**2) - erfcx(-x)`` (``inf`` below -26.7, as torch).
    """
    ax = xp.abs(x)
    c = xp.clip(ax, 1.0, 5e7)
    mid = _polyval(_ERFC_P, c) / _polyval(_ERFC_Q, c)
    far = _polyval(_ERFC_R, c) / _polyval(_ERFC_S, c)
    big = xp.where(c < 8.0, mid, far)
    small = xp.exp(ax * ax) * (1.0 - erf_array(xp, xp.minimum(ax, 1.0)))
    pos = xp.where(ax < 1.0, small, xp.where(ax > 5e7, _ISPI / ax, big))
    e2 = 2.0 * xp.exp(x * x)
    neg = xp.where(x < -26.7, xp.inf, xp.where(x < -6.1, e2, e2 - pos))
    out = xp.where(x >= 0, pos, neg)
    return xp.where(xp.isnan(x), x, out)


def log_ndtr_array(xp, x):
    """``log(ndtr(x))``: ``log(erfcx(-t) / 2) - t**2`` below -1 (``t = x / sqrt(2)``),
    else ``log1p(-erfc(t) / 2)`` (torch's and SciPy's split)."""
    t = x * (1.0 / math.sqrt(2.0))
    low = xp.log(erfcx_array(xp, -t) / 2.0) - t * t
    high = xp.log1p(-erfc_array(xp, t) / 2.0)
    return xp.where(x < -1.0, low, high)


# ------------------------------------------------------------ zeta, polygamma
_ZETA_A = (
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18,
)  # fmt: skip


def zeta_array(xp, x, q):
    """The Hurwitz zeta function ``sum_k (k + q) ** -x`` (Cephes' ``zeta``, as torch).

    ``inf`` at ``x == 1`` and at the poles ``q = 0, -1, ...``; NaN for ``x < 1`` and for a
    negative non-integer ``q`` with non-integer ``x``. Direct summation until the terms
    are negligible or ``q + k > 9``, then the Euler-Maclaurin tail.
    """
    x, q = xp.broadcast_arrays(x, q)
    bad_q = (q <= 0) & (q == xp.floor(q))
    nan = (x < 1) | xp.isnan(x) | xp.isnan(q) | ((q <= 0) & ~bad_q & (x != xp.floor(x)))
    ok = ~nan & ~bad_q & (x != 1)
    xs = xp.where(ok, x, 2.0)
    qs = xp.where(ok, q, 1.0)
    s = qs**-xs
    a = qs.copy()
    b = xp.zeros_like(s)
    done = ~ok
    lowest = float(xp.min(qs)) if qs.size else 1.0
    steps = max(9, int(math.ceil(9.0 - lowest)) + 1) if math.isfinite(lowest) else 9
    for i in range(steps):
        live = ~done & ((i < 9) | (a <= 9.0))
        if not bool(live.any()):
            break
        a = xp.where(live, a + 1.0, a)
        bb = xp.where(live, a**-xs, b)
        b = bb
        s = xp.where(live, s + bb, s)
        done = done | (live & (-_MACHEP * s < bb) & (bb < _MACHEP * s))
    w = a
    tail = ~done
    s = xp.where(tail, s + b * w / (xs - 1.0) - 0.5 * b, s)
    acc = xp.ones_like(s)
    k = 0.0
    for coef in _ZETA_A:
        acc = acc * (xs + k)
        b = b / w
        t = acc * b / coef
        s_new = s + t
        s = xp.where(tail, s_new, s)
        tail = tail & ~(xp.abs(t / s_new) < _MACHEP)
        k += 1.0
        acc = acc * (xs + k)
        b = b / w
        k += 1.0
    out = xp.where(x == 1, xp.inf, s)
    out = xp.where(bad_q & ~nan & (x != 1), xp.inf, out)
    return xp.where(nan, xp.nan, out)


def polygamma_array(xp, n, x):
    """The ``n``-th derivative of digamma (``n >= 0`` a Python int): digamma and trigamma
    for 0 and 1, else ``(-1)**(n+1) n! zeta(n + 1, x)`` (torch's formula)."""
    if n == 0:
        return digamma_array(xp, x)
    if n == 1:
        return trigamma_array(xp, x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.exp(math.lgamma(n + 1.0)) * zeta_array(xp, xp.full_like(x, n + 1.0), x)


# ------------------------------------------------------------------ bit shifts
def shift_array(xp, a, b, left):
    """``a << b`` or ``a >> b`` of integer arrays as torch: shifts outside
    ``[0, bits)`` give 0 (left) or the sign fill, 0 or -1 (right)."""
    bits = a.dtype.itemsize * 8
    b64 = b.astype(np.int64)
    valid = (b64 >= 0) & (b64 < bits)
    amount = xp.where(valid, b64, 0).astype(a.dtype)
    if left:
        return xp.where(valid, xp.left_shift(a, amount), xp.zeros((), a.dtype))
    fill = xp.where(a < 0, -1, 0).astype(a.dtype) if a.dtype.kind == "i" else 0
    return xp.where(valid, xp.right_shift(a, amount), fill).astype(a.dtype)


# ------------------------------------------------------------ on Mats (the ops')
def map_float64(fn, x, *args):
    """``fn(xp, *args, x64)`` of a float Mat, computed in float64 and cast back."""
    a = x.array
    with np.errstate(all="ignore"):
        out = fn(x.xp, *args, a.astype(np.float64, copy=False))
    return x._new(out.astype(a.dtype, copy=False))


def map2_float64(fn, a, b):
    """``fn(xp, a64, b64)`` of two float Mats of one dtype, broadcast."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    with np.errstate(all="ignore"):
        out = fn(a.xp, a.array.astype(np.float64), b.array.astype(np.float64))
    return a._new(out.reshape(shape).astype(a.dtype, copy=False))


def frexp_mats(x):
    """``(mantissa, exponent)`` Mats of a float Mat (the exponent int32, as torch)."""
    m, e = x.xp.frexp(x.array)
    return x._new(m), x._new(e.astype(np.int32, copy=False))


def shift_mats(a, b, left):
    """:func:`shift_array` of two integer Mats of one dtype, as a Mat."""
    with np.errstate(all="ignore"):
        return a._new(shift_array(a.xp, a.array, b.array, left))
