"""The op table for the discrete elementwise ops (``nnkit/autograd/ops/discrete.py``):
comparisons, logic, rounding, arg-reductions (no gradient) and the remainders
(differentiable away from their jumps).
"""

from __future__ import annotations

import numpy as np

import nnkit
from tests.opspec import OpSpec, Sample
from tests.optable_core import away, distinct, ints, pos, rn

OPS: list[OpSpec] = []


def row(name, fn, ref, samples, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


# ============================================================ remainders
def _quotient_apart(rng, shape_a, shape_b, gap=0.1):
    """``a`` and ``b`` whose quotients stay ``gap`` away from every integer (where the
    remainders jump); ``b`` away from 0."""
    while True:
        a, b = rn(rng, *shape_a) * 3, away(rng, *shape_b, gap=0.5)
        q = a / b
        if np.all(np.abs(q - np.round(q)) > gap):
            return a, b


def _remainder_samples(rng):
    same = _quotient_apart(rng, (2, 3), (2, 3))
    bcast = _quotient_apart(rng, (2, 3), (3,))
    zero_d = _quotient_apart(rng, (), (2, 3))
    return [
        Sample(same, desc="same"),
        Sample(bcast, desc="bcast"),
        Sample(zero_d, desc="0d"),
        Sample((np.array([[0.3, -2.6, 5.9], [-7.2, 1.4, 3.3]]), 1.75), desc="scalar"),
        Sample((np.array([0.7, -1.3, 2.6]),), desc="rscalar"),
    ]


row(
    "remainder",
    lambda a, b=None: a % b if b is not None else 5.5 % a,
    lambda a, b=None: np.remainder(a, b) if b is not None else np.remainder(5.5, a),
    _remainder_samples,
)
row("fmod", lambda a, b: nnkit.fmod(a, b), np.fmod, lambda rng: _remainder_samples(rng)[:4])


# ==================================================== no gradient
def _cmp_samples(rng):
    return [
        Sample((ints(rng, 2, 3).astype(float), ints(rng, 2, 3).astype(float)), desc="same"),
        Sample((ints(rng, 3, 1).astype(float), ints(rng, 1, 4).astype(float)), desc="bcast"),
        Sample((ints(rng, 2, 3).astype(float), 1.0), desc="scalar"),
        Sample((ints(rng, 2, 3), ints(rng, 3)), desc="int"),
    ]


for _name, _op, _np in (
    ("eq", lambda a, b: a == b, np.equal),
    ("ne", lambda a, b: a != b, np.not_equal),
    ("lt", lambda a, b: a < b, np.less),
    ("le", lambda a, b: a <= b, np.less_equal),
    ("gt", lambda a, b: a > b, np.greater),
    ("ge", lambda a, b: a >= b, np.greater_equal),
):
    row(_name, _op, _np, _cmp_samples, differentiable=False)
    row(_name + "_fn", getattr(nnkit, _name), _np, _cmp_samples, differentiable=False)


def _bool_samples(rng):
    return [
        Sample((rng.random((2, 3)) > 0.5, rng.random((2, 3)) > 0.5), desc="bool"),
        Sample((rng.random((3, 1)) > 0.5, rng.random((1, 4)) > 0.5), desc="bcast"),
    ]


def _int_samples(rng):
    return [
        Sample((ints(rng, 2, 3, hi=8), ints(rng, 2, 3, hi=8)), desc="int"),
        Sample((ints(rng, 2, 3, hi=8), 5), desc="int-scalar"),
    ]


for _name, _op, _np in (
    ("logical_and", nnkit.logical_and, np.logical_and),
    ("logical_or", nnkit.logical_or, np.logical_or),
    ("logical_xor", nnkit.logical_xor, np.logical_xor),
):
    row(_name, _op, _np, _bool_samples, differentiable=False)
row(
    "logical_not",
    nnkit.logical_not,
    np.logical_not,
    lambda rng: [Sample((rng.random((2, 3)) > 0.5,)), Sample((ints(rng, 3),), desc="int")],
    differentiable=False,
)
for _name, _op, _np in (
    ("bitwise_and", lambda a, b: a & b, np.bitwise_and),
    ("bitwise_or", lambda a, b: a | b, np.bitwise_or),
    ("bitwise_xor", lambda a, b: a ^ b, np.bitwise_xor),
):
    row(_name, _op, _np, lambda rng: _bool_samples(rng) + _int_samples(rng), differentiable=False)
row(
    "bitwise_not",
    lambda a: ~a,
    np.invert,
    lambda rng: [Sample((rng.random((2, 3)) > 0.5,)), Sample((ints(rng, 2, 3, lo=-4, hi=4),))],
    differentiable=False,
)


def _float_nd_samples(rng):
    return [
        Sample((rn(rng, 2, 3) * 3,)),
        Sample((np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]),), desc="halves"),
        Sample((np.array(1.7),), desc="0d"),
    ]


for _name, _np in (
    ("floor", np.floor),
    ("ceil", np.ceil),
    ("round", np.round),
    ("trunc", np.trunc),
    ("sign", np.sign),
):
    row(_name, getattr(nnkit, _name), _np, _float_nd_samples, differentiable=False)
row(
    "round_decimals",
    lambda x: x.round(decimals=1),
    lambda x: np.round(x, 1),
    lambda rng: [Sample((rn(rng, 2, 3),))],
    differentiable=False,
)
row(
    "floor_divide",
    lambda a, b: a // b,
    np.floor_divide,
    lambda rng: [
        Sample((rn(rng, 2, 3) * 3, pos(rng, 2, 3))),
        Sample((ints(rng, 2, 3, hi=9), ints(rng, 3, lo=1, hi=4)), desc="int"),
    ],
    differentiable=False,
)
row(
    "remainder_int",
    lambda a, b: a % b,
    np.remainder,
    lambda rng: [
        Sample((ints(rng, 2, 3, hi=9), 4), desc="int-scalar"),
        Sample((ints(rng, 2, 3, lo=-9, hi=9), ints(rng, 3, lo=1, hi=4)), desc="int"),
    ],
    differentiable=False,
)
# The rounded divisions record a zero gradient for both operands (as torch): gradcheck
# holds with quotients away from the integers, where the result jumps.
row(
    "div_trunc",
    lambda a, b: nnkit.div(a, b, rounding_mode="trunc"),
    lambda a, b: np.trunc(a / b),
    lambda rng: _remainder_samples(rng)[:4],
)
row(
    "div_floor",
    lambda a, b: nnkit.div(a, b, rounding_mode="floor"),
    np.floor_divide,
    lambda rng: _remainder_samples(rng)[:4],
)


def _arg_samples(rng):
    return [
        Sample((distinct(rng, 3, 4),), desc="all"),
        Sample((distinct(rng, 3, 4),), {"dim": 1}, desc="dim1"),
        Sample((distinct(rng, 3, 4),), {"dim": 0, "keepdim": True}, desc="keep"),
        Sample((distinct(rng, 2, 3, 2),), {"dim": -1}, desc="3d"),
    ]


row(
    "argmax",
    lambda x, **kw: x.argmax(**kw),
    lambda x, dim=None, keepdim=False: np.argmax(x, axis=dim, keepdims=keepdim),
    _arg_samples,
    differentiable=False,
)
row(
    "argmin",
    lambda x, **kw: nnkit.argmin(x, **kw),
    lambda x, dim=None, keepdim=False: np.argmin(x, axis=dim, keepdims=keepdim),
    _arg_samples,
    differentiable=False,
)
_SPECIAL = np.array([1.0, np.nan, -np.inf, 0.0, np.inf, -2.0])
for _name, _np in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
    row(
        _name,
        getattr(nnkit, _name),
        _np,
        lambda rng: [Sample((_SPECIAL.copy(),), diff=()), Sample((rn(rng, 2, 3),))],
        differentiable=False,
    )
row(
    "all",
    lambda x, **kw: x.all(**kw),
    lambda x, dim=None, keepdim=False: np.all(x, axis=dim, keepdims=keepdim),
    lambda rng: [
        Sample((rng.random((3, 4)) > 0.2,)),
        Sample((rng.random((3, 4)) > 0.2,), {"dim": 1}),
    ],
    differentiable=False,
)
row(
    "any",
    lambda x, **kw: x.any(**kw),
    lambda x, dim=None, keepdim=False: np.any(x, axis=dim, keepdims=keepdim),
    lambda rng: [
        Sample((rng.random((3, 4)) > 0.8,)),
        Sample((rn(rng, 3, 4) > 1.0,), {"dim": 0, "keepdim": True}),
    ],
    differentiable=False,
)
row(
    "count_nonzero",
    lambda x, **kw: nnkit.count_nonzero(x, **kw),
    lambda x, dim=None: np.count_nonzero(x, axis=dim),
    lambda rng: [
        Sample((ints(rng, 3, 4).astype(float),)),
        Sample((ints(rng, 3, 4).astype(float),), {"dim": 1}),
    ],
    differentiable=False,
)
