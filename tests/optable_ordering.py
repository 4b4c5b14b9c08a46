"""Op-table rows for nnkit/autograd/ops/ordering.py (see tests/opspec.py).

Selections are sampled on distinct values (``distinct``): with ties the selected index,
and so the gradient, is not a smooth function of the input and finite differences do
not apply. Ties, NaN and torch's index choices are checked against torch itself in
``tests/autograd/test_ordering_torch.py``.
"""

from __future__ import annotations

import numpy as np

import nnkit
from nnkit.autograd.ops.scan import CumProd, CumSum, LogCumSumExp
from tests.opspec import OpSpec, Sample
from tests.optable_core import distinct, rn

OPS: list[OpSpec] = []


def row(name, fn, ref, samples, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


def _scan_samples(gen=rn):
    def samples(rng):
        return [
            Sample((gen(rng, 3, 4),), {"dim": 1}, desc="dim1"),
            Sample((gen(rng, 3, 4),), {"dim": 0}, desc="dim0"),
            Sample((gen(rng, 2, 3, 2),), {"dim": -2}, desc="3d-neg"),
            Sample((gen(rng, 5),), {"dim": 0}, desc="1d"),
            Sample((gen(rng),), {"dim": 0}, desc="0d"),
            Sample((gen(rng, 0, 3),), {"dim": 0}, desc="empty"),
        ]

    return samples


def _np_scan(f):
    def ref(x, dim):
        return x.copy() if x.ndim == 0 else f(x, axis=dim)

    return ref


def _np_logcumsumexp(x, dim):
    return x.copy() if x.ndim == 0 else np.log(np.cumsum(np.exp(x), axis=dim))


def _with_zeros(rng):
    x = rn(rng, 3, 5)
    x[0, 1] = 0.0  # one zero
    x[1, 0] = x[1, 3] = 0.0  # two zeros
    x[2, 4] = 0.0  # a zero at the end
    return [
        Sample((x,), {"dim": 1}, desc="zeros"),
        Sample((x.T.copy(),), {"dim": 0}, desc="zeros-dim0"),
    ]


row("cumsum", lambda x, **kw: x.cumsum(**kw), _np_scan(np.cumsum), _scan_samples())
row("cumprod", lambda x, **kw: x.cumprod(**kw), _np_scan(np.cumprod), _scan_samples())
row("cumprod_zeros", lambda x, **kw: nnkit.cumprod(x, **kw), _np_scan(np.cumprod), _with_zeros)
row("logcumsumexp", lambda x, **kw: x.logcumsumexp(**kw), _np_logcumsumexp, _scan_samples())
# The scans in reverse (the backward of the forward scans), called directly.
row(
    "cumsum_reverse",
    lambda x: CumSum.apply(x, 1, True),
    lambda x: np.flip(np.cumsum(np.flip(x, 1), 1), 1),
    lambda rng: [Sample((rn(rng, 3, 4),))],
)
row(
    "cumprod_reverse",
    lambda x: CumProd.apply(x, 0, True),
    lambda x: np.flip(np.cumprod(np.flip(x, 0), 0), 0),
    lambda rng: [Sample((rn(rng, 4, 3),)), Sample(_with_zeros(rng)[1].args, desc="zeros")],
)
row(
    "logcumsumexp_reverse",
    lambda x: LogCumSumExp.apply(x, 1, True),
    lambda x: np.flip(np.log(np.cumsum(np.exp(np.flip(x, 1)), 1)), 1),
    lambda rng: [Sample((rn(rng, 3, 4),))],
)


def _np_cumext(f):
    def ref(x, dim):
        if x.ndim == 0:
            return x, np.array(0)
        v = f.accumulate(x, axis=dim)
        n = x.shape[dim]
        pos = np.arange(n).reshape([n if k == dim % x.ndim else 1 for k in range(x.ndim)])
        return v, np.maximum.accumulate(np.where(x == v, pos, 0), axis=dim)

    return ref


row("cummax", lambda x, **kw: x.cummax(**kw), _np_cumext(np.maximum), _scan_samples(distinct))
row(
    "cummin", lambda x, **kw: nnkit.cummin(x, **kw), _np_cumext(np.minimum), _scan_samples(distinct)
)


def _sort_samples(rng):
    return [
        Sample((distinct(rng, 3, 4),), {}, desc="last"),
        Sample((distinct(rng, 3, 4),), {"dim": 0, "descending": True}, desc="dim0-desc"),
        Sample((distinct(rng, 2, 3, 2),), {"dim": -2, "stable": True}, desc="3d"),
        Sample((distinct(rng),), {}, desc="0d"),
        Sample((distinct(rng, 0, 3),), {"dim": 0}, desc="empty"),
    ]


def _np_sort(x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return x, np.array(0)
    idx = np.argsort(-x if descending else x, axis=dim, kind="stable")
    return np.take_along_axis(x, idx, dim), idx


row("sort", lambda x, **kw: x.sort(**kw), _np_sort, _sort_samples)
row(
    "argsort",
    lambda x, **kw: x.argsort(**kw),
    lambda x, **kw: _np_sort(x, **kw)[1],
    _sort_samples,
    differentiable=False,
)


def _np_topk(x, k, dim=-1, largest=True, sorted=True):
    if x.ndim == 0:
        return x[()] if k else np.zeros(0), np.array(0) if k else np.zeros(0, int)
    idx = np.argsort(-x if largest else x, axis=dim, kind="stable")
    idx = np.take(idx, np.arange(k), axis=dim)
    return np.take_along_axis(x, idx, dim), idx


row(
    "topk",
    lambda x, *a, **kw: x.topk(*a, **kw),
    _np_topk,
    lambda rng: [
        Sample((distinct(rng, 3, 5), 2), desc="last"),
        Sample((distinct(rng, 4, 3), 3), {"dim": 0, "largest": False}, desc="small"),
        Sample((distinct(rng, 2, 3, 2), 0), {"dim": 1}, desc="k0"),
        Sample((distinct(rng, 6), 6), {"sorted": False}, desc="all"),
        Sample((distinct(rng), 1), desc="0d"),
    ],
)


def _np_nth(pick):
    def ref(x, *a, dim=-1, keepdim=False):
        if x.ndim == 0:
            return x, np.array(0)
        idx = np.argsort(x, axis=dim, kind="stable")
        idx = np.take(idx, [pick(x.shape[dim], *a)], axis=dim)
        v = np.take_along_axis(x, idx, dim)
        return (v, idx) if keepdim else (v.squeeze(dim), idx.squeeze(dim))

    return ref


def _nth_samples(*a):
    def samples(rng):
        return [
            Sample((distinct(rng, 3, 5), *a), desc="last"),
            Sample((distinct(rng, 4, 3), *a), {"dim": 0, "keepdim": True}, desc="keep"),
            Sample((distinct(rng, 2, 3, 4), *a), {"dim": -2}, desc="3d"),
            Sample((distinct(rng),) + ((1,) if a else ()), {"dim": 0}, desc="0d"),
        ]

    return samples


row(
    "kthvalue", lambda x, k, **kw: x.kthvalue(k, **kw), _np_nth(lambda n, k: k - 1), _nth_samples(2)
)
row(
    "median_dim",
    lambda x, **kw: x.median(**kw),
    _np_nth(lambda n: (n - 1) // 2),
    lambda rng: [Sample(s.args, {"dim": -1, **s.kwargs}, desc=s.desc) for s in _nth_samples()(rng)],
)
row(
    "mode_distinct",
    lambda x, **kw: x.mode(**kw),
    _np_nth(lambda n: 0),
    lambda rng: [Sample(s.args, {"dim": -1, **s.kwargs}, desc=s.desc) for s in _nth_samples()(rng)],
)


def _np_median_all(x):
    return np.sort(x.reshape(-1))[(x.size - 1) // 2]


row(
    "median_all",
    lambda x: x.median(),
    _np_median_all,
    lambda rng: [
        Sample((distinct(rng, 3, 4),)),
        Sample((distinct(rng, 4),), desc="even"),
        Sample((distinct(rng),), desc="0d"),
    ],
)


def _np_nanmedian_dim(x, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x, np.array(0)
    idx = np.argsort(x, axis=dim, kind="stable")
    k = np.maximum(np.sum(~np.isnan(x), axis=dim, keepdims=True) - 1, 0) // 2
    idx = np.take_along_axis(idx, k, dim)
    v = np.take_along_axis(x, idx, dim)
    return (v, idx) if keepdim else (v.squeeze(dim), idx.squeeze(dim))


def _nanmedian_samples(rng):
    return [
        Sample((_nan_distinct(rng, 3, 5),), {"dim": 1}, desc="dim1"),
        Sample((_nan_distinct(rng, 4, 3),), {"dim": 0, "keepdim": True}, desc="keep"),
        Sample((distinct(rng, 2, 3, 4),), {"dim": -2}, desc="no-nan"),
        Sample((distinct(rng),), {"dim": 0}, desc="0d"),
    ]


row("nanmedian_dim", lambda x, **kw: x.nanmedian(**kw), _np_nanmedian_dim, _nanmedian_samples)
row(
    "nanmedian_all",
    lambda x: x.nanmedian(),
    lambda x: np.sort(x.reshape(-1))[(np.sum(~np.isnan(x)) - 1) // 2],
    lambda rng: [
        Sample((_nan_distinct(rng, 3, 4),)),
        Sample((distinct(rng, 4),), desc="no-nan"),
        Sample((distinct(rng),), desc="0d"),
    ],
)


def _with_nan(rng, *shape):
    x = rn(rng, *shape)
    x.reshape(-1)[[1, 4]] = np.nan
    return x


def _np_red(f):
    def ref(x, dim=None, keepdim=False):
        return f(x, axis=dim, keepdims=keepdim)

    return ref


def _nan_samples(rng):
    return [
        Sample((_with_nan(rng, 3, 4),), {}, desc="all"),
        Sample((_with_nan(rng, 3, 4),), {"dim": 1}, desc="dim1"),
        Sample((_with_nan(rng, 2, 3, 2),), {"dim": (0, 2), "keepdim": True}, desc="dims-keep"),
        Sample((rn(rng, 3, 4),), {"dim": 0}, desc="no-nan"),
    ]


row("nansum", lambda x, **kw: x.nansum(**kw), _np_red(np.nansum), _nan_samples)
row("nanmean", lambda x, **kw: x.nanmean(**kw), _np_red(np.nanmean), _nan_samples)


def _np_prod(x, dim=None, keepdim=False):
    return np.prod(x, axis=None if x.ndim == 0 else dim, keepdims=keepdim)


def _prod_samples(rng):
    z1 = rn(rng, 3, 4)
    z1[1, 2] = 0.0
    z2 = rn(rng, 3, 4)
    z2[0, 1] = z2[0, 3] = z2[2, 0] = 0.0
    return [
        Sample((rn(rng, 2, 3),), {}, desc="all"),
        Sample((rn(rng, 3, 4),), {"dim": 1}, desc="dim1"),
        Sample((rn(rng, 2, 3, 2),), {"dim": -2, "keepdim": True}, desc="neg-keep"),
        Sample((z1,), {}, desc="one-zero-all"),
        Sample((z1,), {"dim": 1}, desc="one-zero-dim"),
        Sample((z2,), {"dim": 1, "keepdim": True}, desc="two-zeros"),
        Sample((z2,), {}, desc="zeros-all"),
        Sample((rn(rng),), {"dim": 0}, desc="0d"),
        Sample((rn(rng, 0, 3),), {"dim": 0}, desc="empty"),
    ]


row("prod", lambda x, **kw: x.prod(**kw), _np_prod, _prod_samples)


def _np_quantile(f):
    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        q = np.asarray(q)
        return f(x, q, axis=dim, keepdims=keepdim, method=interpolation)

    return ref


def _q_samples(gen):
    def samples(rng):
        return [
            Sample((gen(rng, 3, 5), 0.3), desc="all"),
            Sample((gen(rng, 3, 5), np.array([0.1, 0.55, 0.9])), {"dim": 1}, desc="q-tensor"),
            Sample((gen(rng, 4, 3), np.array(0.35)), {"dim": 0, "keepdim": True}, desc="q-0d-keep"),
            Sample(
                (gen(rng, 2, 3, 4), 0.7), {"dim": -1, "interpolation": "midpoint"}, desc="midpoint"
            ),
            Sample((gen(rng, 3, 4), 0.4), {"dim": 1, "interpolation": "lower"}, desc="lower"),
            Sample((gen(rng, 3, 4), 0.4), {"dim": 0, "interpolation": "higher"}, desc="higher"),
            Sample((gen(rng, 3, 6), 0.5), {"dim": 1, "interpolation": "nearest"}, desc="nearest"),
            Sample((gen(rng, 3, 4), 0.25), {"keepdim": True}, desc="all-keep"),
        ]

    return samples


def _nan_distinct(rng, *shape):
    x = distinct(rng, *shape)
    x.reshape(-1)[[0, 5]] = np.nan
    return x


row(
    "quantile",
    lambda x, q, **kw: x.quantile(q, **kw),
    _np_quantile(np.quantile),
    _q_samples(distinct),
)
row(
    "nanquantile",
    lambda x, q, **kw: x.nanquantile(q, **kw),
    _np_quantile(np.nanquantile),
    _q_samples(_nan_distinct),
)


def _np_var_mean(f):
    def ref(x, dim=None, correction=1, keepdim=False):
        return (
            f(x, axis=dim, ddof=correction, keepdims=keepdim),
            np.mean(x, axis=dim, keepdims=keepdim),
        )

    return ref


def _vm_samples(rng):
    return [
        Sample((rn(rng, 3, 4),), {}, desc="all"),
        Sample((rn(rng, 3, 4),), {"dim": 1}, desc="dim1"),
        Sample(
            (rn(rng, 2, 3, 2),), {"dim": (0, 2), "keepdim": True, "correction": 0}, desc="dims-keep"
        ),
    ]


row("var_mean", lambda x, **kw: nnkit.var_mean(x, **kw), _np_var_mean(np.var), _vm_samples)
row("std_mean", lambda x, **kw: nnkit.std_mean(x, **kw), _np_var_mean(np.std), _vm_samples)
