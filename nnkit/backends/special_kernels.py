"""Special-function kernels of a Mat: inverse trig/hyperbolic, erfc/erfinv, lgamma, digamma.

Written against ``xp`` like the rest of ``ArrayMat``; the special functions have no
array-module counterpart in NumPy, so they are vectorised here the way ``erf`` is in
:mod:`nnkit.backends.nn_kernels` (Cephes rational approximations, a Lanczos series,
asymptotic expansions with recurrences). They compute in float64 and cast back to the
input's floating dtype. Floating-point exceptions never warn (torch's kernels do not):
``acosh(0.5)`` is NaN, ``atanh(1)`` is ``inf``, silently.
"""

from __future__ import annotations

import math

import numpy as np

from nnkit.backends.nn_kernels import _ERFC_P, _ERFC_Q, _polyval, erf_array

__all__ = [
    "SpecialKernelsMixin",
    "erfc_array",
    "erfinv_array",
    "lgamma_array",
    "digamma_array",
    "trigamma_array",
]

_QUIET = {"all": "ignore"}


class SpecialKernelsMixin:
    """Elementwise special functions and helpers of a Mat (mixed into ``ArrayMat``)."""

    __slots__ = ()

    def _unary64(self, fn):
        a = self.array
        with np.errstate(**_QUIET):
            return self._new(
                fn(self.xp, a.astype(np.float64, copy=False)).astype(a.dtype, copy=False)
            )

    def _ufunc(self, name, *others):
        with np.errstate(**_QUIET):
            return self._new(getattr(self.xp, name)(self.array, *(o.array for o in others)))

    def asin(self):
        return self._ufunc("arcsin")

    def acos(self):
        return self._ufunc("arccos")

    def atan(self):
        return self._ufunc("arctan")

    def sinh(self):
        return self._ufunc("sinh")

    def cosh(self):
        return self._ufunc("cosh")

    def asinh(self):
        return self._ufunc("arcsinh")

    def acosh(self):
        return self._ufunc("arccosh")

    def atanh(self):
        return self._ufunc("arctanh")

    def atan2(self, other):
        return self._ufunc("arctan2", other)

    def hypot(self, other):
        return self._ufunc("hypot", other)

    def logaddexp(self, other):
        return self._ufunc("logaddexp", other)

    def xlogy(self, other):
        """``x * log(y)``, 0 where ``x == 0`` unless ``y`` is NaN (torch's rule)."""
        xp = self.xp
        x, y = self.array, other.array
        with np.errstate(**_QUIET):
            out = x * xp.log(y)
        return self._new(xp.where((x == 0) & ~xp.isnan(y), xp.zeros((), out.dtype), out))

    def logit(self, eps=None):
        xp = self.xp
        x = self.array
        with np.errstate(**_QUIET):
            if eps is not None:
                x = xp.clip(x, x.dtype.type(eps), x.dtype.type(1 - eps))
            return self._new(xp.log(x / (1 - x)).astype(self.array.dtype, copy=False))

    def frac(self):
        with np.errstate(**_QUIET):  # frac(+-inf) is NaN
            return self._new(self.array - self.xp.trunc(self.array))

    def celu(self, alpha):
        x = self.array
        with np.errstate(**_QUIET):
            neg = self.xp.expm1(self.xp.minimum(x, 0) / x.dtype.type(alpha)) * x.dtype.type(alpha)
        return self._new(self.xp.where(x <= 0, neg, x))

    def hardswish(self):
        x = self.array
        with np.errstate(**_QUIET):
            return self._new(x * self.xp.clip(x + 3, 0, 6) / 6)

    def erfc(self):
        return self._unary64(erfc_array)

    def erfinv(self):
        return self._unary64(erfinv_array)

    def lgamma(self):
        return self._unary64(lgamma_array)

    def digamma(self):
        return self._unary64(digamma_array)

    def trigamma(self):
        return self._unary64(trigamma_array)

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        a = self.array
        if a.dtype.kind != "f":
            return self.copy()
        return self._new(self.xp.nan_to_num(a, copy=True, nan=nan, posinf=posinf, neginf=neginf))

    def isclose(self, other, rtol, atol, equal_nan):
        xp = self.xp
        a, b = self.array, other.array
        with np.errstate(**_QUIET):
            if a.dtype.kind == "b":
                return self._new(xp.equal(a, b))
            close = a == b  # torch's rule: equal (infinities too), or a finite error
            if equal_nan and a.dtype.kind == "f":
                close = close | (xp.isnan(a) & xp.isnan(b))
            if rtol or atol:
                if a.dtype.kind != "f":  # integers: in float64, without overflow of a - b
                    a, b = a.astype(np.float64), b.astype(np.float64)
                err = xp.abs(a - b)
                close = close | (xp.isfinite(err) & (err <= atol + xp.abs(rtol * b)))
        return self._new(close)

    def array_equal(self, other) -> bool:
        a, b = self.array, other.array
        return a.shape == b.shape and bool(self.xp.all(a == b))


# ------------------------------------------------------------------ erfc, erfinv
# Cephes ndtr.c: erfc(x) = exp(-x^2) R(x) / S(x) for x >= 8.
_ERFC_R = (
    5.64189583547755073984e-1,
    1.27536670759978104416e0,
    5.01905042251180477414e0,
    6.16021097993053585195e0,
    7.40974269950448939160e0,
    2.97886665372100240670e0,
)
_ERFC_S = (
    1.0,
    2.26052863220117276590e0,
    9.39603524938001434673e0,
    1.20489539808096656605e1,
    1.70814450747565897222e1,
    9.60896809063285878198e0,
    3.36907645100081516050e0,
)
_TWO_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erfc_pos(xp, ax):
    """erfc of ``ax >= 1`` (float64), Cephes ``P/Q`` below 8 and ``R/S`` above."""
    c = xp.minimum(ax, 30.0)
    mid = _polyval(_ERFC_P, c) / _polyval(_ERFC_Q, c)
    far = _polyval(_ERFC_R, c) / _polyval(_ERFC_S, c)
    return xp.exp(-c * c) * xp.where(c < 8.0, mid, far)


def erfc_array(xp, x):
    """The complementary error function of a float64 array (relative error ~1e-15)."""
    ax = xp.abs(x)
    pos = _erfc_pos(xp, xp.maximum(ax, 1.0))
    pos = xp.where(ax < 1.0, 1.0 - erf_array(xp, ax), pos)
    out = xp.where(x < 0, 2.0 - pos, pos)
    return xp.where(xp.isnan(x), x, out)


_GILES_LO = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_GILES_HI = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def erfinv_array(xp, y):
    """The inverse error function of a float64 array.

    Giles' single-precision approximation, then Newton steps on ``erf`` (``erfc`` in
    the tails, where ``1 - |y|`` is exact) to double precision. ``±1`` give ``±inf``,
    ``|y| > 1`` NaN.
    """
    a = xp.abs(y)
    inside = a < 1.0
    s = xp.where(inside, a, 0.5)
    w = -xp.log((1.0 - s) * (1.0 + s))
    lo = _polyval(_GILES_LO, w - 2.5)
    hi = _polyval(_GILES_HI, xp.sqrt(w) - 3.0)
    x = xp.where(w < 5.0, lo, hi) * s
    tail = s > 0.5
    rest = 1.0 - s
    for _ in range(4):  # in the tail, Newton on log(erfc): nearly quadratic, fast
        d = _TWO_SQRT_PI * xp.exp(-x * x)
        c = erfc_array(xp, x)
        x = xp.where(tail, x + (xp.log(c) - xp.log(rest)) * c / d, x - (erf_array(xp, x) - s) / d)
    out = xp.where(inside, x, xp.where(a == 1.0, xp.inf, xp.nan))
    return xp.where(xp.isnan(y), y, xp.copysign(out, y))


# ------------------------------------------------------------ lgamma, digamma
_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _sinpi(xp, x):
    """``sin(pi x)`` with the argument reduced exactly (0 at the integers)."""
    r = x - 2.0 * xp.round(x / 2.0)  # in [-1, 1]
    return xp.where(r == xp.round(r), 0.0, xp.sin(math.pi * r))


def _lgamma_pos(xp, x):
    """log Gamma(x) for ``x >= 0.5`` (Lanczos, g = 7, n = 9)."""
    z = x - 1.0
    acc = xp.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        acc = acc + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    return _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(acc)


def lgamma_array(xp, x):
    """``log|Gamma(x)|`` of a float64 array; ``inf`` at the poles and at ``±inf``."""
    refl = x < 0.5
    fin = xp.isfinite(x)
    pos = _lgamma_pos(xp, xp.where(refl | ~fin, 1.0 - xp.where(fin, x, 0.0), x))
    sp = xp.abs(_sinpi(xp, xp.where(fin, x, 0.5)))
    neg = math.log(math.pi) - xp.log(sp) - pos
    out = xp.where(refl, neg, pos)
    out = xp.where(refl & (sp == 0.0), xp.inf, out)
    # The zeros at 1 and 2 exactly, as fdlibm purges them (torch's value): the Lanczos sum
    # is accurate to ~1e-15 absolute there, which would leave lgamma(1) = -8.9e-16.
    out = xp.where((x == 1.0) | (x == 2.0), 0.0, out)
    return xp.where(fin, out, xp.where(xp.isnan(x), x, xp.inf))


# Bernoulli terms of the asymptotic expansions, from the highest power down.
_PSI_ASYM = (-1.0 / 12, 1.0 / 120, -1.0 / 252, 1.0 / 240, -1.0 / 132, 691.0 / 32760, -1.0 / 12)[
    ::-1
]
_PSI1_ASYM = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6)[::-1]
_SHIFT = 10


def _shifted(xp, y, power):
    """``y`` moved up to ``>= _SHIFT`` and the recurrence's sum of ``1 / y**power``."""
    acc = xp.zeros_like(y)
    for _ in range(_SHIFT):
        low = y < _SHIFT
        acc = acc + xp.where(low, 1.0 / y**power, 0.0)
        y = xp.where(low, y + 1.0, y)
    return y, acc


def _digamma_pos(xp, y):
    y, acc = _shifted(xp, y, 1)
    z = 1.0 / (y * y)
    return xp.log(y) - 0.5 / y + z * _polyval(_PSI_ASYM, z) - acc


def digamma_array(xp, x):
    """psi(x) of a float64 array: ``-inf`` at +0, ``inf`` at -0, NaN at the negative
    integers and at ``-inf`` (torch's conventions)."""
    fin = xp.isfinite(x)
    refl = x < 0.5
    xs = xp.where(fin, x, 1.0)
    y = xp.where(refl, 1.0 - xs, xs)
    y = xp.where(y > 0, y, 1.0)
    pos = _digamma_pos(xp, y)
    r = xs - xp.round(xs)  # tan has period pi: reduce exactly to [-1/2, 1/2]
    neg = pos - math.pi / xp.tan(math.pi * r)
    out = xp.where(refl, neg, pos)
    out = xp.where(refl & (r == 0.0), xp.nan, out)
    out = xp.where(x == 0.0, xp.copysign(xp.inf, -x), out)
    return xp.where(fin, out, xp.where(x > 0, xp.inf, xp.nan))


def trigamma_array(xp, x):
    """psi'(x) of a float64 array (``inf`` at the poles)."""
    fin = xp.isfinite(x)
    refl = x < 0.5
    xs = xp.where(fin, x, 1.0)
    y = xp.where(refl, 1.0 - xs, xs)
    y, acc = _shifted(xp, y, 2)
    z = 1.0 / (y * y)
    pos = 1.0 / y + 0.5 * z + z / y * _polyval(_PSI1_ASYM, z) + acc
    sp = _sinpi(xp, xs)
    neg = (math.pi * math.pi) / (sp * sp) - pos
    out = xp.where(refl, neg, pos)
    out = xp.where(refl & (sp == 0.0), xp.inf, out)
    return xp.where(fin, out, xp.where(x > 0, 0.0, xp.nan))
