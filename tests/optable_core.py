"""The op table for the core tensor ops (DESIGN §3, §4): one ``OpSpec`` row per op.

Samples stay small (a few dozen elements at most) so the whole table runs fast;
they cover 0-d, broadcast, scalar-operand and dim/keepdim variants. Inputs of ops
with kinks (abs, relu, clamp, max, ...) are drawn away from the kink, so central
differences never straddle it. Reductions are in ``tests/optable_reduce.py``, the
discrete ops (comparisons, rounding, remainders) in ``tests/optable_discrete.py``;
both use the generators defined here.
"""

from __future__ import annotations

import math

import numpy as np

import nnkit
from nnkit.autograd.ops.indexing import GatherGrad
from nnkit.autograd.ops.linalg import MatMul
from tests.opspec import OpSpec, Sample

OPS: list[OpSpec] = []


def row(name, fn, ref, samples, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


# ------------------------------------------------------------------ generators
def rn(rng, *shape):
    return np.asarray(rng.standard_normal(shape))


def pos(rng, *shape):
    return np.asarray(rng.uniform(0.5, 2.0, shape))


def away(rng, *shape, at=0.0, gap=0.2):
    """Normal draws pushed at least ``gap`` away from ``at``."""
    x = rng.standard_normal(shape)
    return np.asarray(at + x + gap * np.where(x >= 0, 1.0, -1.0))


def distinct(rng, *shape, gap=0.1):
    """Values whose pairwise differences all exceed ``gap`` (no ties for max/sort)."""
    n = math.prod(shape)
    vals = (rng.permutation(n) + rng.uniform(-0.3, 0.3, n)) * (4.0 / max(n, 1)) - 2.0
    vals = np.sort(vals)
    vals += np.arange(n) * gap
    return np.asarray(rng.permutation(vals).reshape(shape))


def apart(rng, shape_a, shape_b, gap=0.2):
    """Two arrays that never tie after broadcasting (for maximum/minimum)."""
    a = rng.standard_normal(shape_a)
    b = rng.standard_normal(shape_b)
    while np.abs(np.subtract(a, b)).min() < gap:
        b = rng.standard_normal(shape_b)
    return a, b


def ints(rng, *shape, lo=0, hi=3):
    return np.asarray(rng.integers(lo, hi, shape))


# --------------------------------------------------------------- sample sets
def unary_samples(gen=rn, **kw):
    def samples(rng):
        return [
            Sample((gen(rng, 2, 3),), kw, desc="2x3"),
            Sample((gen(rng, 4),), kw, desc="1d"),
            Sample((gen(rng),), kw, desc="0d"),
            Sample((gen(rng, 2, 1, 3),), kw, desc="3d"),
        ]

    return samples


def binary_samples(gen_a=rn, gen_b=rn, scalar=1.7):
    def samples(rng):
        out = [
            Sample((gen_a(rng, 2, 3), gen_b(rng, 2, 3)), desc="same"),
            Sample((gen_a(rng, 3, 1), gen_b(rng, 1, 4)), desc="bcast31x14"),
            Sample((gen_a(rng, 2, 3), gen_b(rng, 3)), desc="bcast23x3"),
            Sample((gen_a(rng), gen_b(rng, 2, 3)), desc="0d"),
            Sample((gen_a(rng, 2, 3), scalar), desc="scalar"),
        ]
        return out

    return samples


# ================================================================ elementwise
row("add", lambda a, b: a + b, np.add, binary_samples())
row(
    "add_alpha", lambda a, b: nnkit.add(a, b, alpha=0.5), lambda a, b: a + 0.5 * b, binary_samples()
)
row("sub", lambda a, b: a - b, np.subtract, binary_samples())
row("sub_alpha", lambda a, b: nnkit.sub(a, b, alpha=2), lambda a, b: a - 2 * b, binary_samples())
row("mul", lambda a, b: a * b, np.multiply, binary_samples())
row("div", lambda a, b: a / b, np.divide, binary_samples(rn, pos))
row("pow_tensor", lambda a, b: a**b, np.power, binary_samples(pos, rn, scalar=2.5))
row("radd", lambda a: 1.5 + a, lambda a: 1.5 + a, unary_samples())
row("rsub", lambda a: 1.5 - a, lambda a: 1.5 - a, unary_samples())
row("rmul", lambda a: 1.5 * a, lambda a: 1.5 * a, unary_samples())
row("rdiv", lambda a: 1.5 / a, lambda a: 1.5 / a, unary_samples(pos))
row("rpow", lambda a: 1.5**a, lambda a: 1.5**a, unary_samples())


def _pow_scalar_samples(rng):
    return [
        Sample((rn(rng, 2, 3), 2), desc="int2"),
        Sample((rn(rng, 2, 3), 3), desc="int3"),
        Sample((pos(rng, 2, 3), 0.5), desc="half"),
        Sample((pos(rng, 4), -1.5), desc="neg"),
        Sample((pos(rng), 2.5), desc="0d"),
    ]


row("pow_scalar", lambda a, e: a**e, np.power, _pow_scalar_samples)


row("neg", lambda x: -x, np.negative, unary_samples())
row("exp", lambda x: x.exp(), np.exp, unary_samples())
row("log", lambda x: x.log(), np.log, unary_samples(pos))
row("log1p", lambda x: x.log1p(), np.log1p, unary_samples(pos))
row("expm1", lambda x: nnkit.expm1(x), np.expm1, unary_samples())
row("sqrt", lambda x: x.sqrt(), np.sqrt, unary_samples(pos))
row("rsqrt", lambda x: x.rsqrt(), lambda x: 1 / np.sqrt(x), unary_samples(pos))
row("sin", lambda x: x.sin(), np.sin, unary_samples())
row("cos", lambda x: x.cos(), np.cos, unary_samples())
row("tan", lambda x: nnkit.tan(x), np.tan, unary_samples(lambda rng, *s: rng.uniform(-1.0, 1.0, s)))
row("tanh", lambda x: x.tanh(), np.tanh, unary_samples())
row("sigmoid", lambda x: x.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), unary_samples())
row("relu", lambda x: x.relu(), lambda x: np.maximum(x, 0), unary_samples(away))
row("abs", lambda x: x.abs(), np.abs, unary_samples(away))
row("reciprocal", lambda x: x.reciprocal(), np.reciprocal, unary_samples(away))
row("softplus", lambda x: nnkit.softplus(x), lambda x: np.logaddexp(x, 0), unary_samples())
row(
    "softplus_beta",
    lambda x: nnkit.softplus(x, beta=2.0),
    lambda x: np.logaddexp(2 * x, 0) / 2,
    unary_samples(),
)
row("erf", lambda x: nnkit.erf(x), np.vectorize(math.erf), unary_samples())
row("square", lambda x: nnkit.square(x), np.square, unary_samples())


def _clamp_samples(rng):
    return [
        Sample((away(rng, 2, 3, at=-0.5),), {"min": -0.5}, desc="min"),
        Sample((away(rng, 2, 3, at=0.3),), {"max": 0.3}, desc="max"),
        Sample(
            (np.array([-1.7, -0.9, -0.2, 0.2, 0.9, 1.7]),), {"min": -0.5, "max": 0.5}, desc="both"
        ),
        Sample((np.array(2.0),), {"min": -1.0, "max": 1.0}, desc="0d"),
    ]


row(
    "clamp",
    lambda x, min=None, max=None: x.clamp(min=min, max=max),
    lambda x, min=None, max=None: np.clip(x, min, max),
    _clamp_samples,
)


def _clamp_tensor_samples(rng):
    x, lo = apart(rng, (2, 3), (3,))
    return [Sample((x, lo), desc="tensor-min")]


row("clamp_tensor", lambda x, lo: nnkit.clamp(x, min=lo), np.maximum, _clamp_tensor_samples)


def _pair_samples(rng):
    out = []
    for sa, sb, desc in (
        ((2, 3), (2, 3), "same"),
        ((3, 1), (1, 4), "bcast"),
        ((2, 3), (3,), "bcast-row"),
        ((), (2, 3), "0d"),
    ):
        a, b = apart(rng, sa, sb)
        out.append(Sample((a, b), desc=desc))
    out.append(Sample((away(rng, 2, 3, at=0.25), 0.25), desc="scalar"))
    return out


row("maximum", lambda a, b: nnkit.maximum(a, b), np.maximum, _pair_samples)
row("minimum", lambda a, b: nnkit.minimum(a, b), np.minimum, _pair_samples)


def _where_samples(rng):
    return [
        Sample((rng.random((2, 3)) > 0.5, rn(rng, 2, 3), rn(rng, 2, 3)), desc="same"),
        Sample((rng.random((3, 1)) > 0.5, rn(rng, 1, 4), rn(rng, 3, 4)), desc="bcast"),
        Sample((rng.random((2, 3)) > 0.5, rn(rng, 2, 3), 0.0), desc="scalar"),
        Sample((np.array(True), rn(rng), rn(rng, 3)), desc="0d"),
    ]


row("where", lambda c, a, b: nnkit.where(c, a, b), np.where, _where_samples)


def _masked_fill_samples(rng):
    return [
        Sample((rn(rng, 2, 3), rng.random((2, 3)) > 0.5, -1.5), desc="same"),
        Sample((rn(rng, 3, 4), rng.random((1, 4)) > 0.5, 2.0), desc="bcast"),
        Sample((rn(rng), np.array(False), 0.0), desc="0d"),
        Sample((rn(rng, 2, 3), rng.random((2, 3)) > 0.5, rn(rng)), desc="0d-tensor-value"),
        Sample((rn(rng, 3), rng.random((2, 3)) > 0.5, rn(rng)), desc="mask-larger"),
    ]


row(
    "masked_fill",
    lambda x, m, v: x.masked_fill(m, v),
    lambda x, m, v: np.where(m, v, x),
    _masked_fill_samples,
)


def _ternary_samples(gen_c=rn):
    def samples(rng):
        return [
            Sample((rn(rng, 2, 3), rn(rng, 2, 3), gen_c(rng, 2, 3)), desc="same"),
            Sample((rn(rng, 3, 1), rn(rng, 1, 4), gen_c(rng, 3, 4)), desc="bcast"),
            Sample((rn(rng), rn(rng, 3), gen_c(rng, 2, 3)), desc="0d"),
        ]

    return samples


row(
    "lerp", lambda a, b, w: nnkit.lerp(a, b, w), lambda a, b, w: a + w * (b - a), _ternary_samples()
)


def _lerp_scalar_samples(rng):
    return [Sample((rn(rng, 2, 3), rn(rng, 2, 3), 0.3), desc="scalar-weight")]


row(
    "lerp_scalar",
    lambda a, b, w: a.lerp(b, w),
    lambda a, b, w: a + w * (b - a),
    _lerp_scalar_samples,
)
row(
    "addcmul",
    lambda a, b, c, value=1: nnkit.addcmul(a, b, c, value=value),
    lambda a, b, c, value=1: a + value * b * c,
    _ternary_samples(),
)
row(
    "addcmul_value",
    lambda a, b, c: nnkit.addcmul(a, b, c, value=0.5),
    lambda a, b, c: a + 0.5 * b * c,
    _ternary_samples(),
)
row(
    "addcdiv",
    lambda a, b, c: nnkit.addcdiv(a, b, c, value=-2.0),
    lambda a, b, c: a - 2.0 * b / c,
    _ternary_samples(pos),
)


# ==================================================================== linalg
def _matmul_samples(rng):
    return [
        Sample((rn(rng, 3), rn(rng, 3)), desc="1d-1d"),
        Sample((rn(rng, 3), rn(rng, 3, 4)), desc="1d-2d"),
        Sample((rn(rng, 2, 3), rn(rng, 3)), desc="2d-1d"),
        Sample((rn(rng, 2, 3), rn(rng, 3, 4)), desc="2d-2d"),
        Sample((rn(rng, 2, 2, 3), rn(rng, 3, 4)), desc="3d-2d"),
        Sample((rn(rng, 2, 1, 2, 3), rn(rng, 3, 3, 2)), desc="4d-3d"),
        Sample((rn(rng, 2, 3), rn(rng, 2, 3, 2)), desc="2d-3d"),
    ]


row("matmul", lambda a, b: a @ b, np.matmul, _matmul_samples)
row(
    "matmul_fn",
    lambda a, b: nnkit.matmul(a, b),
    np.matmul,
    lambda rng: [Sample((rn(rng, 4, 3), rn(rng, 3, 2)))],
)
row("mm", lambda a, b: a.mm(b), np.matmul, lambda rng: [Sample((rn(rng, 2, 3), rn(rng, 3, 4)))])
row(
    "bmm",
    lambda a, b: nnkit.bmm(a, b),
    np.matmul,
    lambda rng: [Sample((rn(rng, 2, 2, 3), rn(rng, 2, 3, 2)))],
)
row("dot", lambda a, b: a.dot(b), np.dot, lambda rng: [Sample((rn(rng, 4), rn(rng, 4)))])


def _t(a, flag):
    return np.swapaxes(a, -1, -2) if flag else a


# MatMul with its transpose flags (what matmul's backward uses), called directly.
row(
    "matmul_flags",
    lambda a, b, **kw: MatMul.apply(a, b, **kw),
    lambda a, b, ta=False, tb=False: np.matmul(_t(a, ta), _t(b, tb)),
    lambda rng: [
        Sample((rn(rng, 3, 2), rn(rng, 3, 4)), {"ta": True}, desc="ta"),
        Sample((rn(rng, 2, 3), rn(rng, 4, 3)), {"tb": True}, desc="tb"),
        Sample((rn(rng, 3, 2), rn(rng, 4, 3)), {"ta": True, "tb": True}, desc="ta-tb"),
        Sample((rn(rng, 2, 3, 2), rn(rng, 4, 3)), {"ta": True, "tb": True}, desc="batch-ta-tb"),
        Sample((rn(rng, 3, 2), rn(rng, 2, 4, 3)), {"ta": True, "tb": True}, desc="ta-tb-batch"),
        Sample((rn(rng, 2, 1, 3, 2), rn(rng, 3, 3, 4)), {"ta": True}, desc="bcast-ta"),
        Sample((rn(rng, 2, 3), rn(rng, 2, 4, 3)), {"tb": True}, desc="bcast-tb"),
    ],
)
row(
    "outer",
    lambda a, b: nnkit.outer(a, b),
    np.outer,
    lambda rng: [Sample((rn(rng, 3), rn(rng, 4)))],
)

# ================================================================ shape ops
row(
    "reshape",
    lambda x, shape: x.reshape(shape),
    lambda x, shape: np.reshape(x, shape),
    lambda rng: [
        Sample((rn(rng, 2, 3), (3, 2)), desc="2d"),
        Sample((rn(rng, 2, 3, 2), (-1,)), desc="flat"),
        Sample((rn(rng, 2, 3), (1, 6, 1)), desc="pad1"),
        Sample((rn(rng), (1, 1)), desc="0d"),
        Sample((rn(rng, 1), ()), desc="to0d"),
    ],
)
row(
    "reshape_varargs",
    lambda x: x.reshape(3, -1),
    lambda x: x.reshape(3, -1),
    lambda rng: [Sample((rn(rng, 2, 3),))],
)
row(
    "view",
    lambda x, shape: x.view(shape),
    lambda x, shape: np.reshape(x, shape),
    lambda rng: [
        Sample((rn(rng, 2, 3), (6,)), desc="flat", noncontig=False),
        Sample((rn(rng, 2, 3), (2, 1, 3)), desc="strided-ok"),
        Sample((rn(rng, 2, 3, 2), (2, -1)), desc="infer", noncontig=False),
    ],
)
row(
    "flatten",
    lambda x, **kw: x.flatten(**kw),
    lambda x, start_dim=0, end_dim=-1: (
        x.reshape(x.shape[:start_dim] + (-1,) + x.shape[end_dim % x.ndim + 1 :])
        if x.ndim
        else x.reshape(1)
    ),
    lambda rng: [
        Sample((rn(rng, 2, 3, 2),), desc="all"),
        Sample((rn(rng, 2, 3, 2),), {"start_dim": 1}, desc="start1"),
        Sample((rn(rng, 2, 3, 2, 1),), {"start_dim": 0, "end_dim": -2}, desc="end"),
        Sample((rn(rng),), desc="0d"),
    ],
)
row(
    "unflatten",
    lambda x, dim, sizes: x.unflatten(dim, sizes),
    lambda x, dim, sizes: x.reshape(
        x.shape[: dim % x.ndim] + tuple(sizes) + x.shape[dim % x.ndim + 1 :]
    ),
    lambda rng: [
        Sample((rn(rng, 2, 6), 1, (2, 3))),
        Sample((rn(rng, 6, 2), 0, (3, 2))),
        Sample((rn(rng, 2, 6), -1, (3, 2))),
    ],
)
row(
    "squeeze",
    lambda x, **kw: x.squeeze(**kw),
    lambda x, dim=None: np.squeeze(x, dim) if dim is None or x.shape[dim] == 1 else x,
    lambda rng: [
        Sample((rn(rng, 2, 1, 3, 1),), desc="all"),
        Sample((rn(rng, 2, 1, 3),), {"dim": 1}, desc="dim"),
        Sample((rn(rng, 2, 3, 1),), {"dim": -1}, desc="neg"),
        Sample((rn(rng, 2, 3),), {"dim": 0}, desc="noop"),
        Sample((rn(rng, 1),), desc="to0d"),
    ],
)
row(
    "unsqueeze",
    lambda x, dim: x.unsqueeze(dim),
    lambda x, dim: np.expand_dims(x, dim),
    lambda rng: [
        Sample((rn(rng, 2, 3), 0)),
        Sample((rn(rng, 2, 3), -1)),
        Sample((rn(rng, 2, 3), 1)),
        Sample((rn(rng), 0), desc="0d"),
    ],
)
row(
    "permute",
    lambda x, dims: x.permute(*dims),
    lambda x, dims: np.transpose(x, dims),
    lambda rng: [
        Sample((rn(rng, 2, 3, 2), (2, 0, 1))),
        Sample((rn(rng, 2, 3), (1, 0))),
        Sample((rn(rng, 2, 3, 2), (-1, 0, 1)), desc="neg"),
    ],
)
row(
    "transpose",
    lambda x, a, b: x.transpose(a, b),
    lambda x, a, b: np.swapaxes(x, a, b),
    lambda rng: [
        Sample((rn(rng, 2, 3), 0, 1)),
        Sample((rn(rng, 2, 3, 2), 0, -1)),
        Sample((rn(rng, 2, 3, 2), 1, 1), desc="same"),
    ],
)
row(
    "T",
    lambda x: x.T,
    lambda x: x.T,
    lambda rng: [
        Sample((rn(rng, 2, 3),)),
        Sample((rn(rng, 4),), desc="1d"),
        Sample((rn(rng, 2, 3, 2),), desc="3d"),
    ],
)
row(
    "mT",
    lambda x: x.mT,
    lambda x: np.swapaxes(x, -1, -2),
    lambda rng: [Sample((rn(rng, 2, 3, 2),))],
)
row(
    "expand",
    lambda x, shape: x.expand(*shape),
    lambda x, shape: np.broadcast_to(
        x, tuple(n if n != -1 else x.shape[k - (len(shape) - x.ndim)] for k, n in enumerate(shape))
    ),
    lambda rng: [
        Sample((rn(rng, 3, 1), (3, 4))),
        Sample((rn(rng, 1, 3), (2, 2, 3)), desc="lead"),
        Sample((rn(rng, 3, 1), (-1, 4)), desc="minus1"),
        Sample((rn(rng), (2, 3)), desc="0d"),
    ],
)
row(
    "expand_as",
    lambda x, y: x.expand_as(y),
    lambda x, y: np.broadcast_to(x, y.shape),
    lambda rng: [Sample((rn(rng, 3, 1), rn(rng, 3, 4)), diff=(0,))],
)
row(
    "repeat",
    lambda x, reps: x.repeat(*reps),
    lambda x, reps: np.tile(x, reps),
    lambda rng: [
        Sample((rn(rng, 2, 3), (2, 1))),
        Sample((rn(rng, 3), (2, 2)), desc="lead"),
        Sample((rn(rng, 2, 2), (1, 3))),
        Sample((rn(rng, 0, 3), (2, 2)), desc="empty"),
        Sample((rn(rng, 3), (0,)), desc="zero-repeat"),
        Sample((rn(rng, 2), (0, 2)), desc="zero-repeat-lead"),
    ],
)


def _cat_samples(rng):
    return [
        Sample((rn(rng, 2, 3), rn(rng, 1, 3)), {"dim": 0}, desc="dim0"),
        Sample((rn(rng, 2, 3), rn(rng, 2, 2)), {"dim": 1}, desc="dim1"),
        Sample((rn(rng, 2, 3), rn(rng, 2, 1)), {"dim": -1}, desc="neg"),
        Sample((rn(rng, 3), rn(rng, 2)), {"dim": 0}, desc="1d"),
    ]


row(
    "cat",
    lambda a, b, dim: nnkit.cat([a, b], dim=dim),
    lambda a, b, dim: np.concatenate([a, b], axis=dim),
    _cat_samples,
)
row(
    "cat_three",
    lambda a, b, c: nnkit.cat((a, b, c), 1),
    lambda a, b, c: np.concatenate([a, b, c], 1),
    lambda rng: [Sample((rn(rng, 2, 1), rn(rng, 2, 2), rn(rng, 2, 3)), diff=(0, 2))],
)
row(
    "stack",
    lambda a, b, dim: nnkit.stack([a, b], dim),
    lambda a, b, dim: np.stack([a, b], dim),
    lambda rng: [
        Sample((rn(rng, 2, 3), rn(rng, 2, 3)), {"dim": 0}),
        Sample((rn(rng, 2, 3), rn(rng, 2, 3)), {"dim": -1}),
        Sample((rn(rng), rn(rng)), {"dim": 0}, desc="0d"),
    ],
)
row(
    "split",
    lambda x, s, dim=0: x.split(s, dim),
    lambda x, s, dim=0: np.split(
        x, np.cumsum(s)[:-1] if isinstance(s, list) else list(range(s, x.shape[dim], s)), axis=dim
    ),
    lambda rng: [
        Sample((rn(rng, 5, 2), 2), desc="size"),
        Sample((rn(rng, 2, 5), [1, 3, 1], 1), desc="sections"),
        Sample((rn(rng, 4, 3), 2, -1), desc="neg"),
    ],
)
row(
    "chunk",
    lambda x, n, dim=0: x.chunk(n, dim),
    lambda x, n, dim=0: np.array_split(
        x, list(range(-(-x.shape[dim] // n), x.shape[dim], -(-x.shape[dim] // n))), axis=dim
    ),
    lambda rng: [Sample((rn(rng, 6, 2), 3)), Sample((rn(rng, 2, 5), 2, 1), desc="uneven")],
)
row(
    "unbind",
    lambda x, dim=0: x.unbind(dim),
    lambda x, dim=0: [np.take(x, k, axis=dim) for k in range(x.shape[dim])],
    lambda rng: [Sample((rn(rng, 3, 2),)), Sample((rn(rng, 2, 3), 1))],
)
row(
    "flip",
    lambda x, dims: x.flip(dims),
    lambda x, dims: np.flip(x, dims),
    lambda rng: [
        Sample((rn(rng, 2, 3), 0)),
        Sample((rn(rng, 2, 3, 2), (0, 2))),
        Sample((rn(rng, 2, 3), [-1])),
    ],
)
row("clone", lambda x: x.clone(), np.copy, unary_samples())
row("contiguous", lambda x: x.contiguous() * 1, np.copy, unary_samples())
row("to_dtype", lambda x: x.to(nnkit.float64).to(x.dtype) * 1, lambda x: x, unary_samples())
row(
    "int_to_float",
    lambda x, i: x * i.to(x.dtype),
    lambda x, i: x * i,
    lambda rng: [Sample((rn(rng, 2, 3), ints(rng, 2, 3)))],
)

# ================================================================== indexing
_IDX = [
    (1, "int"),
    ((-1, slice(1, 3)), "neg-slice"),
    ((slice(None, None, 2), slice(None, None, -1)), "steps"),
    ((None, 1), "none"),
    ((Ellipsis, 1), "ellipsis"),
    ((1, Ellipsis, None), "int-ellipsis-none"),
    ((slice(-2, None), -1), "neg"),
]


def _getitem_basic(rng):
    return [Sample((rn(rng, 3, 4), idx), desc=d) for idx, d in _IDX] + [
        Sample((rn(rng, 2, 3, 2), (1, slice(None), 0)), desc="3d")
    ]


row("getitem_basic", lambda x, idx: x[idx], lambda x, idx: x[idx], _getitem_basic)


def _getitem_adv(rng):
    return [
        Sample((rn(rng, 3, 4), np.array([0, 2, 0])), desc="int-array-repeat"),
        Sample((rn(rng, 3, 4), ([0, 2, 0, 2], [1, 1, 3, 1])), desc="pair-lists-repeat"),
        Sample((rn(rng, 3, 4), (slice(1, None), [0, 2, 2])), desc="slice-list"),
        Sample((rn(rng, 3, 4), np.array([[0, 1], [2, 1]])), desc="2d-index"),
        Sample((rn(rng, 3, 4), np.array([-1, 0])), desc="negative"),
        Sample((rn(rng, 3, 4), rng.random((3, 4)) > 0.4), desc="bool-mask"),
        Sample((rn(rng, 3, 4), np.array([True, False, True])), desc="bool-rows"),
    ]


row("getitem_adv", lambda x, idx: x[idx], lambda x, idx: x[idx], _getitem_adv)


def _np_index_put(x, idx, v, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, idx, v)
    else:
        out[idx] = v
    return out


row(
    "index_put",
    lambda x, v, idx, accumulate=False: nnkit.index_put(x, idx, v, accumulate=accumulate),
    lambda x, v, idx, accumulate=False: _np_index_put(x, idx, v, accumulate),
    lambda rng: [
        Sample((rn(rng, 3, 4), rn(rng, 2), ([0, 2], [1, 3])), desc="pairs"),
        Sample((rn(rng, 3, 4), rn(rng, 4), (1,)), desc="row"),
        Sample((rn(rng, 3, 4), rn(rng, 1), (slice(None), 2)), desc="bcast-col"),
        Sample(
            (rn(rng, 3, 4), rn(rng, 3), ([0, 2, 0], [1, 1, 1])),
            {"accumulate": True},
            desc="accumulate-repeat",
        ),
    ],
)


def _np_gather(x, dim, index):
    return np.take_along_axis(x, index, dim)


row(
    "gather",
    lambda x, dim, index: x.gather(dim, index),
    _np_gather,
    lambda rng: [
        Sample((rn(rng, 3, 4), 1, rng.integers(0, 4, (3, 2))), desc="dim1"),
        Sample((rn(rng, 3, 4), 0, rng.integers(0, 3, (5, 4))), desc="dim0-repeat"),
        Sample((rn(rng, 2, 3, 2), -1, rng.integers(0, 2, (2, 3, 3))), desc="3d"),
    ],
)


def _np_gather_grad(g, shape, dim, index):
    return _np_scatter_add(np.zeros(shape), dim, index, g)


# GatherGrad: gather's backward (scatter_add into zeros) as one op, called directly.
row(
    "gather_grad",
    lambda g, shape, dim, index: GatherGrad.apply(g, shape, dim, index),
    _np_gather_grad,
    lambda rng: [
        Sample((rn(rng, 3, 2), (3, 4), 1, rng.integers(0, 4, (3, 2))), desc="dim1"),
        Sample((rn(rng, 5, 4), (3, 4), 0, rng.integers(0, 3, (5, 4))), desc="dim0-repeat"),
        Sample((rn(rng, 2, 3, 3), (2, 3, 2), 2, rng.integers(0, 2, (2, 3, 3))), desc="3d"),
    ],
)


def _np_scatter_add(x, dim, index, src):
    out = x.copy()
    grids = list(np.ogrid[tuple(slice(0, n) for n in index.shape)])
    grids[dim] = index
    np.add.at(out, tuple(grids), src[tuple(slice(0, n) for n in index.shape)])
    return out


row(
    "scatter_add",
    lambda x, dim, index, src: x.scatter_add(dim, index, src),
    _np_scatter_add,
    lambda rng: [
        Sample((rn(rng, 3, 4), 1, rng.integers(0, 4, (3, 3)), rn(rng, 3, 3)), desc="dim1"),
        Sample((rn(rng, 3, 4), 0, rng.integers(0, 3, (4, 4)), rn(rng, 4, 4)), desc="dim0-repeat"),
        Sample((rn(rng, 3, 4), 1, rng.integers(0, 4, (2, 2)), rn(rng, 3, 3)), desc="src-larger"),
    ],
)
row(
    "index_select",
    lambda x, dim, index: x.index_select(dim, index),
    lambda x, dim, index: x.copy() if x.ndim == 0 else np.take(x, index.reshape(-1), axis=dim),
    lambda rng: [
        Sample((rn(rng, 3, 4), 0, np.array([2, 0, 2])), desc="dim0-repeat"),
        Sample((rn(rng, 3, 4), 1, np.array([3, 1])), desc="dim1"),
        Sample((rn(rng, 3, 4), -1, np.array([0, 0, 0, 0])), desc="neg"),
        Sample((rn(rng), 0, np.array([0])), desc="0d"),
        Sample((rn(rng, 3), 0, np.array(2)), desc="0d-index"),
    ],
)


def _np_take_along_dim(x, index, dim=None):
    if dim is None:
        return np.take_along_axis(x.reshape(-1), index.reshape(-1), 0)
    shape = np.broadcast_shapes(np.delete(x.shape, dim), np.delete(index.shape, dim))
    x = np.broadcast_to(x, np.insert(shape, dim % x.ndim, x.shape[dim]))
    index = np.broadcast_to(index, np.insert(shape, dim % x.ndim, index.shape[dim]))
    return np.take_along_axis(x, index % x.shape[dim], dim)


row(
    "take_along_dim",
    lambda x, index, *a: nnkit.take_along_dim(x, index, *a),
    _np_take_along_dim,
    lambda rng: [
        Sample((rn(rng, 3, 3), np.array([[0, 2]]), 1), desc="index-broadcasts"),
        Sample((rn(rng, 1, 4), rng.integers(0, 4, (3, 2)), 1), desc="input-broadcasts"),
        Sample((rn(rng, 3, 4), rng.integers(-3, 3, (2, 4)), 0), desc="negative"),
        Sample((rn(rng, 3, 4), np.array([11, 0, 5, 5])), desc="flattened"),
    ],
)


def _np_index_add(x, dim, index, src, alpha=1):
    out = x.copy()
    np.add.at(out, (slice(None),) * (dim % x.ndim) + (index,), alpha * src)
    return out


row(
    "index_add",
    lambda x, dim, index, src, **kw: x.index_add(dim, index, src, **kw),
    _np_index_add,
    lambda rng: [
        Sample((rn(rng, 3, 4), 0, np.array([2, 0, 2]), rn(rng, 3, 4)), desc="repeat"),
        Sample((rn(rng, 3, 4), 1, np.array([3, 1]), rn(rng, 3, 2)), {"alpha": 2.0}, desc="alpha"),
    ],
)
row(
    "repeat_interleave",
    lambda x, r, **kw: x.repeat_interleave(r, **kw),
    lambda x, r, dim=None: np.repeat(x, r, axis=dim),
    lambda rng: [
        Sample((rn(rng, 2, 3), 2), desc="flat"),
        Sample((rn(rng, 2, 3), 2), {"dim": 1}, desc="dim1"),
        Sample((rn(rng, 3, 2), [1, 0, 2]), {"dim": 0}, desc="per-row"),
    ],
)
row(
    "tril",
    lambda x, **kw: x.tril(**kw),
    lambda x, diagonal=0: np.tril(x, diagonal),
    lambda rng: [
        Sample((rn(rng, 3, 4),)),
        Sample((rn(rng, 3, 4),), {"diagonal": 1}),
        Sample((rn(rng, 2, 3, 3),), {"diagonal": -1}, desc="batched"),
    ],
)
row(
    "triu",
    lambda x, **kw: x.triu(**kw),
    lambda x, diagonal=0: np.triu(x, diagonal),
    lambda rng: [
        Sample((rn(rng, 3, 4),)),
        Sample((rn(rng, 3, 4),), {"diagonal": -1}),
        Sample((rn(rng, 2, 3, 3),), {"diagonal": 1}, desc="batched"),
    ],
)
row(
    "masked_select",
    lambda x, m: x.masked_select(m),
    lambda x, m: np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape))[
        np.broadcast_to(m, np.broadcast_shapes(x.shape, m.shape))
    ],
    lambda rng: [
        Sample((rn(rng, 3, 4), rng.random((3, 4)) > 0.5), desc="same"),
        Sample((rn(rng, 3, 4), rng.random((1, 4)) > 0.5), desc="bcast"),
    ],
)
