"""Op-table rows for nnkit/autograd/ops/special.py (see tests/opspec.py).

Samples keep away from singular points (``asin`` at +-1, ``acosh`` at 1, the poles of
``lgamma``) and from kinks (``hardswish`` at +-3, ``hardshrink`` at +-lambd), so central
differences never straddle one. The values at those points are compared with torch in
``tests/autograd/test_special_torch.py``.
"""

from __future__ import annotations

import math

import numpy as np

import nnkit
import nnkit.nn.functional as F
from tests.opspec import OpSpec, Sample
from tests.optable_core import away, binary_samples, pos, rn, unary_samples

OPS: list[OpSpec] = []


def row(name, fn, ref, samples, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


def uni(lo, hi):
    def gen(rng, *shape):
        return np.asarray(rng.uniform(lo, hi, shape))

    return gen


def off(*kinks, gap=0.15, scale=2.5):
    """Normal draws (times ``scale``) at least ``gap`` away from every kink."""

    def gen(rng, *shape):
        x = np.asarray(rng.standard_normal(shape) * scale)
        for k in kinks:
            near = np.abs(x - k) < gap
            x = np.where(near, k + np.where(x >= k, gap, -gap) * 2, x)
        return np.asarray(x)

    return gen


def pairs(gen_a=rn, gen_b=rn):
    """``binary_samples`` without the Python-scalar operand (torch wants two tensors)."""

    def samples(rng):
        return binary_samples(gen_a, gen_b)(rng)[:-1]

    return samples


def _vec(fn):
    return np.vectorize(fn, otypes=[np.float64])


# ------------------------------------------------------- trig and hyperbolic
row("asin", nnkit.asin, np.arcsin, unary_samples(uni(-0.8, 0.8)))
row("acos", nnkit.acos, np.arccos, unary_samples(uni(-0.8, 0.8)))
row("atan", nnkit.atan, np.arctan, unary_samples())
row("sinh", nnkit.sinh, np.sinh, unary_samples())
row("cosh", nnkit.cosh, np.cosh, unary_samples())
row("asinh", nnkit.asinh, np.arcsinh, unary_samples())
row("acosh", nnkit.acosh, np.arccosh, unary_samples(uni(1.3, 3.0)))
row("atanh", nnkit.atanh, np.arctanh, unary_samples(uni(-0.8, 0.8)))
row("atan2", nnkit.atan2, np.arctan2, pairs(away, away))
row("hypot", nnkit.hypot, np.hypot, pairs(away, away))

# ------------------------------------------------------------ special functions
row("erfc", nnkit.erfc, _vec(math.erfc), unary_samples())
row("erfinv", nnkit.erfinv, None, unary_samples(uni(-0.8, 0.8)))
row(
    "erfinv_roundtrip",
    lambda x: nnkit.erf(nnkit.erfinv(x)),
    lambda x: x,
    unary_samples(uni(-0.9, 0.9)),
)
row("lgamma", nnkit.lgamma, _vec(math.lgamma), unary_samples(pos))
row("lgamma_negative", nnkit.lgamma, _vec(math.lgamma), unary_samples(uni(-2.8, -2.2)))
row("digamma", nnkit.digamma, None, unary_samples(pos), gradgrad=False)
row("digamma_negative", nnkit.digamma, None, unary_samples(uni(-1.8, -1.2)), gradgrad=False)


def _logit_ref(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def _logit_eps_samples(rng):
    return [
        Sample((np.array([0.03, 0.3, 0.55, 0.97]),), {"eps": 0.1}, desc="eps-outside"),
        Sample((uni(0.2, 0.8)(rng, 2, 3),), {"eps": 1e-6}, desc="eps-inside"),
    ]


row("logit", nnkit.logit, _logit_ref, unary_samples(uni(0.1, 0.9)))
row("logit_eps", nnkit.logit, _logit_ref, _logit_eps_samples)


def _xlogy_ref(x, y):
    return np.where(x == 0, 0.0, x * np.log(y))


def _xlogy_samples(rng):
    zeros = rn(rng, 2, 3)
    zeros[0, 1] = 0.0
    return binary_samples(rn, pos)(rng) + [
        Sample((zeros, pos(rng, 2, 3)), desc="zeros"),
        Sample((1.5, pos(rng, 2, 3)), desc="scalar-input"),
    ]


row("xlogy", nnkit.xlogy, _xlogy_ref, _xlogy_samples)
row("logaddexp", nnkit.logaddexp, np.logaddexp, pairs())
row(
    "logaddexp_far",
    nnkit.logaddexp,
    np.logaddexp,
    lambda rng: [Sample((rn(rng, 2, 3) * 40, rn(rng, 2, 3) * 40), desc="far")],
)

# -------------------------------------------------------------------- piecewise
row("frac", nnkit.frac, lambda x: x - np.trunc(x), unary_samples(off(-2, -1, 0, 1, 2)))
row(
    "clamp_min",
    lambda x: nnkit.clamp_min(x, 0.3),
    lambda x: np.maximum(x, 0.3),
    unary_samples(off(0.3)),
)
row(
    "clamp_max",
    lambda x: nnkit.clamp_max(x, -0.2),
    lambda x: np.minimum(x, -0.2),
    unary_samples(off(-0.2)),
)
row(
    "clamp_min_tensor",
    nnkit.clamp_min,
    np.maximum,
    lambda rng: [Sample((off(0.0)(rng, 2, 3), np.zeros(3)), desc="bcast")],
)


def _bounds_apart(rng, shape_x, shape_lo, shape_hi, gap=0.2):
    """``x``, ``lo`` and ``hi`` pairwise ``gap`` apart after broadcasting (no ties, where
    the gradient moves between them); some places have ``lo > hi`` (the result is ``hi``)."""
    while True:
        x, lo, hi = rn(rng, *shape_x) * 2, rn(rng, *shape_lo), rn(rng, *shape_hi)
        if all(np.abs(np.subtract(a, b)).min() > gap for a, b in ((x, lo), (x, hi), (lo, hi))):
            return x, lo, hi


def _clamp_bounds_samples(rng):
    x, lo, hi = _bounds_apart(rng, (2, 3), (), ())
    return [
        Sample(_bounds_apart(rng, (2, 3), (2, 3), (2, 3)), desc="same"),
        Sample(_bounds_apart(rng, (2, 3), (3,), (2, 1)), desc="bcast"),
        Sample(_bounds_apart(rng, (3,), (2, 3), ()), desc="x-bcast"),
        Sample((x, float(lo), hi), desc="number-min"),
    ]


row(
    "clamp_tensor_bounds",
    nnkit.clamp,
    lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    _clamp_bounds_samples,
)
row(
    "clamp_max_tensor",
    nnkit.clamp_max,
    np.minimum,
    lambda rng: [
        Sample(_bounds_apart(rng, (2, 3), (3,), ())[:2], desc="bcast"),
        Sample(_bounds_apart(rng, (3,), (2, 3), ())[:2], desc="x-bcast"),
    ],
)
row(
    "clamp_tensor_max_only",
    lambda x, hi: nnkit.clamp(x, max=hi),
    np.minimum,
    lambda rng: [Sample(_bounds_apart(rng, (2, 3), (2, 1), ())[:2], desc="bcast")],
)
row("nan_to_num", nnkit.nan_to_num, np.nan_to_num, unary_samples())
row(
    "nan_to_num_kw",
    lambda x: nnkit.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
    lambda x: np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
    unary_samples(),
)


def _isclose_samples(rng):
    a = rn(rng, 2, 3)
    b = a + np.array([0.0, 1e-3, 0.1])
    return [
        Sample((a, b), desc="near"),
        Sample((a, b), {"atol": 1e-2}, desc="atol"),
        Sample((a[:1], b), {"rtol": 0.0, "atol": 0.0}, desc="bcast-exact"),
    ]


row("isclose", nnkit.isclose, np.isclose, _isclose_samples, differentiable=False)

# ------------------------------------------------------------------ activations
_KINKS3 = off(-3.0, 3.0, scale=3.0)
row("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, unary_samples(_KINKS3))
row("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, unary_samples(_KINKS3))


def _glu_ref(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a / (1 + np.exp(-b))


row(
    "glu",
    F.glu,
    _glu_ref,
    lambda rng: [
        Sample((rn(rng, 2, 4),), desc="last"),
        Sample((rn(rng, 4, 3),), {"dim": 0}, desc="dim0"),
        Sample((rn(rng, 2, 6, 2),), {"dim": 1}, desc="3d"),
    ],
)


def _prelu_ref(x, w):
    if w.size > 1:
        w = w.reshape((w.size,) + (1,) * (x.ndim - 2))
    else:
        w = w.reshape(())
    return np.where(x > 0, x, w * x)


row(
    "prelu",
    F.prelu,
    _prelu_ref,
    lambda rng: [
        Sample((away(rng, 2, 3, 4), uni(0.1, 0.5)(rng, 3)), desc="channels"),
        Sample((away(rng, 2, 3), uni(0.1, 0.5)(rng, 1)), desc="shared"),
        Sample((away(rng), uni(0.1, 0.5)(rng, 1)), desc="0d"),
        Sample((away(rng, 4, 2, 3, 3), uni(0.1, 0.5)(rng, 2)), desc="4d"),
    ],
)


def _celu_ref(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) / alpha))


row("celu", F.celu, _celu_ref, unary_samples(away))
row("celu_alpha", lambda x: F.celu(x, alpha=0.5), lambda x: _celu_ref(x, 0.5), unary_samples(away))
row("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), unary_samples(away))
row(
    "threshold",
    lambda x: F.threshold(x, 0.1, 20.0),
    lambda x: np.where(x <= 0.1, 20.0, x),
    unary_samples(off(0.1)),
)
_KINKS05 = off(-0.5, 0.5, gap=0.1, scale=1.0)
row(
    "hardshrink",
    F.hardshrink,
    lambda x: np.where(np.abs(x) <= 0.5, 0.0, x),
    unary_samples(_KINKS05),
)
row(
    "softshrink",
    F.softshrink,
    lambda x: np.where(np.abs(x) <= 0.5, 0.0, x - np.sign(x) * 0.5),
    unary_samples(_KINKS05),
)
row(
    "softshrink_lambd",
    lambda x: F.softshrink(x, lambd=1.0),
    lambda x: np.where(np.abs(x) <= 1.0, 0.0, x - np.sign(x) * 1.0),
    unary_samples(off(-1.0, 1.0, gap=0.1)),
)
row("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), unary_samples())

# ------------------------------------------------ special_extra.py (issue 13)
try:  # references of high precision; mpmath comes with torch's sympy
    import mpmath
except ImportError:  # pragma: no cover
    mpmath = None


def _mp(fn):
    """A float64 NumPy reference from an mpmath function (None without mpmath)."""
    return None if mpmath is None else _vec(lambda *v: float(fn(*v)))


def _i1e_ref(x):
    return mpmath.besseli(1, x) * mpmath.exp(-abs(x))


def _log_ndtr_ref(x):
    return mpmath.log(mpmath.ncdf(x))


def _mvlgamma3_ref(x):
    return sum(mpmath.loggamma(x - i / 2) for i in range(3)) + 1.5 * mpmath.log(mpmath.pi)


row("i0", nnkit.i0, np.i0, unary_samples(uni(-9.0, 9.0)))
row(
    "special.i0e",
    nnkit.special.i0e,
    lambda x: np.exp(-np.abs(x)) * np.i0(x),
    unary_samples(uni(-12.0, 12.0)),
)
row(
    "special.i1",
    nnkit.special.i1,
    _mp(lambda x: mpmath.besseli(1, x)),
    unary_samples(uni(-9.0, 9.0)),
)
row("special.i1e", nnkit.special.i1e, _mp(_i1e_ref), unary_samples(uni(-12.0, 12.0)))
row(
    "special.erfcx",
    nnkit.special.erfcx,
    _mp(lambda x: mpmath.exp(x * x) * mpmath.erfc(x)),
    unary_samples(uni(-3.0, 12.0)),
)
row("special.log_ndtr", nnkit.special.log_ndtr, _mp(_log_ndtr_ref), unary_samples(uni(-12.0, 5.0)))
row(
    "polygamma_3",
    lambda x: nnkit.polygamma(3, x),
    _mp(lambda x: mpmath.polygamma(3, x)),
    unary_samples(uni(0.3, 4.0)),
)
row(
    "polygamma_neg",
    lambda x: nnkit.polygamma(2, x),
    _mp(lambda x: mpmath.polygamma(2, x)),
    unary_samples(uni(-1.8, -1.2)),
)
row("mvlgamma_3", lambda x: nnkit.mvlgamma(x, 3), _mp(_mvlgamma3_ref), unary_samples(uni(1.2, 4.0)))
row(
    "special.zeta_q",
    lambda q: nnkit.special.zeta(3.0, q),
    _mp(lambda q: mpmath.zeta(3.0, q)),
    unary_samples(uni(0.5, 3.0)),
)
row(
    "igamma_x",
    lambda x: nnkit.igamma(nnkit.tensor(2.5, dtype=x.dtype, device=x.device), x),
    _mp(lambda x: mpmath.gammainc(2.5, 0, x, regularized=True)),
    unary_samples(uni(0.2, 6.0)),
)
row(
    "igammac_x",
    lambda x: nnkit.igammac(nnkit.tensor([0.7, 3.0, 25.0], device=x.device), x),
    None
    if mpmath is None
    else lambda x: _vec(lambda a, v: float(mpmath.gammainc(a, v, regularized=True)))(
        np.array([0.7, 3.0, 25.0]), x
    ),
    lambda rng: [Sample((uni(0.2, 30.0)(rng, 2, 3),), desc="2x3")],
)
row(
    "frexp_mantissa",
    lambda x: nnkit.frexp(x)[0],
    lambda x: np.frexp(x)[0],
    unary_samples(uni(1.1, 1.9)),
)
