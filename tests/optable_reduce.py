"""The op table for reductions and norms (DESIGN §4): one ``OpSpec`` row per op.

Samples cover all/one/several dims, keepdim, negative dims, 0-d tensors with a dim
(torch gives the value back) and an empty ``dim`` (torch reduces everything). See
``tests/optable_core.py`` for the generators.
"""

from __future__ import annotations

import numpy as np

import nnkit
from nnkit.autograd.ops.reduction import LogSumExpGrad, Unreduce
from tests.opspec import OpSpec, Sample
from tests.optable_core import away, distinct, rn, unary_samples

OPS: list[OpSpec] = []


def row(name, fn, ref, samples, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


def _reduce_samples(gen=rn, extra=()):
    def samples(rng):
        return [
            Sample((gen(rng, 2, 3, 2),), {}, desc="all"),
            Sample((gen(rng, 2, 3, 2),), {"dim": 1}, desc="dim1"),
            Sample((gen(rng, 2, 3, 2),), {"dim": (0, 2), "keepdim": True}, desc="dims-keep"),
            Sample((gen(rng, 3, 4),), {"dim": -1, "keepdim": True}, desc="neg-keep"),
            Sample((gen(rng),), {}, desc="0d"),
            Sample((gen(rng),), {"dim": 0}, desc="0d-dim0"),
            Sample((gen(rng),), {"dim": -1, "keepdim": True}, desc="0d-neg-keep"),
            Sample((gen(rng, 2, 3),), {"dim": ()}, desc="empty-dims-all"),
        ] + [Sample((gen(rng, 3, 4),), dict(kw), desc=d) for d, kw in extra]

    return samples


def _np_reduce(f):
    def ref(x, dim=None, keepdim=False):
        if dim == () or x.ndim == 0:  # torch: an empty dim is every dim; 0-d: the value
            dim = None
        return f(x, axis=dim, keepdims=keepdim)

    return ref


row("sum", lambda x, **kw: x.sum(**kw), _np_reduce(np.sum), _reduce_samples())
row("mean", lambda x, **kw: x.mean(**kw), _np_reduce(np.mean), _reduce_samples())
row("amax", lambda x, **kw: x.amax(**kw), _np_reduce(np.max), _reduce_samples(distinct))
row("amin", lambda x, **kw: nnkit.amin(x, **kw), _np_reduce(np.min), _reduce_samples(distinct))
row("max_all", lambda x: x.max(), np.max, unary_samples(distinct))


def _np_unreduce(g, in_shape, dims, keepdim, scale):
    keep = tuple(1 if dims is None or k in dims else n for k, n in enumerate(in_shape))
    return np.broadcast_to(np.reshape(g, keep) * scale, in_shape)


# Unreduce: the backward of sum and mean as one op (its backward is sum), called directly.
row(
    "unreduce",
    lambda g, *a: Unreduce.apply(g, *a),
    _np_unreduce,
    lambda rng: [
        Sample((rn(rng, 2, 2), (2, 3, 2), (1,), False, 1), desc="sum-dim1"),
        Sample((rn(rng, 2, 1, 1), (2, 3, 4), (1, 2), True, 1), desc="sum-keep"),
        Sample((rn(rng), (3, 4), None, False, 0.25), desc="mean-all"),
        Sample((rn(rng, 3, 1), (3, 4), (1,), True, 0.25), desc="mean-keep"),
    ],
)
row("min_all", lambda x: nnkit.min(x), np.min, unary_samples(distinct))


def _dim_samples(rng):
    return [
        Sample((distinct(rng, 3, 4),), {"dim": 1}, desc="dim1"),
        Sample((distinct(rng, 3, 4),), {"dim": 0, "keepdim": True}, desc="dim0-keep"),
        Sample((distinct(rng, 2, 3, 2),), {"dim": -2}, desc="3d-neg"),
        Sample((distinct(rng, 5),), {"dim": 0}, desc="1d"),
        Sample((distinct(rng),), {"dim": 0}, desc="0d"),
    ]


def _np_maxmin(vf, af):
    def ref(x, dim, keepdim=False):
        if x.ndim == 0:
            return x, np.array(0)
        return vf(x, axis=dim, keepdims=keepdim), af(x, axis=dim, keepdims=keepdim)

    return ref


row("max_dim", lambda x, **kw: x.max(**kw), _np_maxmin(np.max, np.argmax), _dim_samples)
row("min_dim", lambda x, **kw: nnkit.min(x, **kw), _np_maxmin(np.min, np.argmin), _dim_samples)
row("max_dim_values", lambda x, **kw: x.max(**kw).values, _np_reduce(np.max), _dim_samples)


def _var_samples(rng):
    return [
        Sample((rn(rng, 2, 3, 2),), {}, desc="all"),
        Sample((rn(rng, 3, 4),), {"dim": 1}, desc="dim1"),
        Sample((rn(rng, 2, 3, 2),), {"dim": (0, 2), "keepdim": True}, desc="dims-keep"),
        Sample((rn(rng, 3, 4),), {"dim": 0, "correction": 0}, desc="corr0"),
        Sample((rn(rng, 5),), {"correction": 2}, desc="corr2"),
        Sample((rn(rng, 3, 4),), {"dim": 1, "correction": None}, desc="corr-none"),
        Sample(
            (rn(rng, 3, 4),), {"dim": 0, "unbiased": False, "keepdim": True}, desc="unbiased-kw"
        ),
        Sample(
            (np.array([[1.5, 1.5, 1.5], [0.3, -1.2, 2.0]]),),
            {"dim": 1},
            desc="constant-row",
            noncontig=False,
        ),
    ]


def _np_var(f):
    def ref(x, dim=None, correction=1, keepdim=False, unbiased=None):
        if unbiased is not None:
            correction = int(unbiased)
        return f(x, axis=dim, ddof=1 if correction is None else correction, keepdims=keepdim)

    return ref


row("var", lambda x, **kw: x.var(**kw), _np_var(np.var), _var_samples)
row("std", lambda x, **kw: x.std(**kw), _np_var(np.std), lambda rng: _var_samples(rng)[:-1])
# a constant slice: gradient 0 as torch (central differences agree); no second derivative
row(
    "std_constant_slice",
    lambda x, **kw: x.std(**kw),
    _np_var(np.std),
    lambda rng: _var_samples(rng)[-1:],
    gradgrad=False,
)
row(
    "var_unbiased_false",
    lambda x: nnkit.var(x, 1, unbiased=False),
    lambda x: np.var(x, axis=1),
    lambda rng: [Sample((rn(rng, 3, 4),))],
)
row(
    "var_positional_unbiased",
    lambda x, *a: x.var(*a),
    lambda x, *a: np.var(
        x,
        axis=None if isinstance(a[0], bool) else a[0],
        ddof=int(a[0] if isinstance(a[0], bool) else a[1]),
        keepdims=len(a) > 2 and a[2],
    ),
    lambda rng: [
        Sample((rn(rng, 3, 4), False), desc="unbiased-only"),
        Sample((rn(rng, 3, 4), 1, True), desc="dim-unbiased"),
        Sample((rn(rng, 3, 4), 0, False, True), desc="dim-unbiased-keepdim"),
    ],
)
row(
    "std_positional_unbiased",
    lambda x, u: x.std(u),
    lambda x, u: np.std(x, ddof=int(u)),
    lambda rng: [Sample((rn(rng, 3, 4), True))],
)


def _np_logsumexp(x, dim=None, keepdim=False):
    return np.log(np.sum(np.exp(x), axis=dim, keepdims=keepdim))


# LogSumExpGrad: logsumexp's backward g * exp(x - out) as one op, called directly.
row(
    "logsumexp_grad",
    lambda g, x, out: LogSumExpGrad.apply(g, x, out),
    lambda g, x, out: g * np.exp(x - out),
    lambda rng: [
        Sample((rn(rng, 3, 1), rn(rng, 3, 4), rn(rng, 3, 1)), desc="rows"),
        Sample((rn(rng, 1, 3, 1), rn(rng, 2, 3, 2), rn(rng, 2, 1, 2)), desc="3d"),
    ],
)
row(
    "logsumexp",
    lambda x, **kw: x.logsumexp(**kw),
    _np_logsumexp,
    lambda rng: [
        Sample((rn(rng, 3, 4),), {"dim": 1}, desc="dim1"),
        Sample((rn(rng, 2, 3, 2) * 50,), {"dim": (0, 2), "keepdim": True}, desc="large-keep"),
        Sample((rn(rng, 5),), {}, desc="all"),
        Sample((rn(rng),), {}, desc="0d"),
    ],
)


def _np_norm(x, p=2, dim=None, keepdim=False):
    a = np.abs(x)
    if p == "fro":
        p = 2
    if p == float("inf"):
        return np.max(a, axis=dim, keepdims=keepdim)
    if p == -float("inf"):
        return np.min(a, axis=dim, keepdims=keepdim)
    if p == 0:
        return np.sum(a != 0, axis=dim, keepdims=keepdim).astype(x.dtype)
    return np.sum(a**p, axis=dim, keepdims=keepdim) ** (1.0 / p)


row(
    "norm",
    lambda x, **kw: x.norm(**kw),
    _np_norm,
    lambda rng: [
        Sample((away(rng, 3, 4),), {}, desc="l2-all"),
        Sample((away(rng, 3, 4),), {"dim": 1}, desc="l2-dim"),
        Sample((away(rng, 3, 4),), {"p": 1, "dim": 0, "keepdim": True}, desc="l1"),
        Sample((away(rng, 3, 4) * distinct(rng, 3, 4),), {"p": float("inf")}, desc="inf"),
        Sample((away(rng, 2, 3),), {"p": 3, "dim": -1}, desc="p3"),
        Sample(
            (away(rng, 3, 4) * distinct(rng, 3, 4),), {"p": -float("inf"), "dim": 1}, desc="-inf"
        ),
        Sample((away(rng, 3, 4),), {"p": "fro", "dim": (0, 1)}, desc="fro"),
        Sample((away(rng, 3, 4),), {"p": 0.5, "dim": 0}, desc="p0.5"),
        Sample((away(rng, 3, 4),), {"p": 1.5}, desc="p1.5"),
        Sample((away(rng, 2, 3),), {"p": -1, "dim": 1, "keepdim": True}, desc="p-1"),
        Sample((away(rng),), {"dim": 0}, desc="0d-dim"),
    ],
)
row(
    "norm_p0",
    lambda x, **kw: x.norm(0, **kw),
    lambda x, **kw: _np_norm(x, 0, **kw),
    lambda rng: [Sample((rn(rng, 3, 4) * (rng.random((3, 4)) > 0.3),), {"dim": 1})],
)
