"""Counting and searching kernels of a Mat (``bincount``, ``searchsorted``, ``histc``,
``isin``, ``unique``, ``unique_consecutive``), written against ``xp``. Each takes Mats
and returns a Mat (or a tuple of Mats); none is differentiable.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bincount", "searchsorted", "histc", "isin", "unique", "unique_consecutive"]


def bincount(x, weights, minlength):
    xp = x.xp
    w = None if weights is None else weights.array
    out = xp.bincount(x.array, weights=w, minlength=minlength)
    if weights is not None:
        wd = weights.array.dtype
        out = out.astype(wd if wd.kind == "f" else np.float64, copy=False)
    return x._new(xp.asarray(out))


def searchsorted(seq, values, side, sorter, out_dtype):
    """Row by row over the leading dimensions of ``seq`` (1-D ``seq``: one row)."""
    xp = seq.xp
    s, v = seq.array, values.array
    if sorter is not None:
        s = xp.take_along_axis(s, sorter.array, axis=-1)
    if s.ndim == 1:
        out = xp.searchsorted(s, v, side=side)
    elif v.size == 0 or s.size == 0:
        out = xp.zeros(v.shape, dtype=out_dtype)
    else:
        rows_s = s.reshape(-1, s.shape[-1])
        rows_v = v.reshape(-1, v.shape[-1])
        out = xp.stack([xp.searchsorted(a, b, side=side) for a, b in zip(rows_s, rows_v)])
        out = out.reshape(v.shape)
    return seq._new(xp.asarray(out, dtype=out_dtype))


def histc(x, bins, lo, hi):
    """torch's histc: ``bins`` equal bins over ``[lo, hi]`` (in ``x``'s dtype); values
    outside (and NaN) are ignored, ``hi`` falls in the last bin."""
    xp = x.xp
    a = x.array.reshape(-1)
    dt = a.dtype
    left, right = dt.type(lo), dt.type(hi)
    with np.errstate(all="ignore"):
        keep = (a >= left) & (a <= right)
        a = a[keep]
        pos = ((a - left) * dt.type(bins) / (right - left)).astype(np.int64)
    pos = xp.where(pos == bins, bins - 1, pos)
    return x._new(xp.bincount(pos, minlength=bins)[:bins].astype(dt))


def isin(elements, test, invert):
    xp = elements.xp
    return elements._new(xp.asarray(xp.isin(elements.array, test.array, invert=invert)))


def unique(x, dim):
    """``(values, inverse, counts)``, sorted (lexicographically along ``dim`` if given)."""
    xp = x.xp
    a = x.array if dim is not None else x.array.reshape(-1)
    vals, inv, counts = xp.unique(a, return_inverse=True, return_counts=True, axis=dim)
    inv = inv.reshape(x.shape if dim is None else (x.shape[dim],))
    return x._new(vals), x._new(inv.astype(np.int64)), x._new(counts.astype(np.int64))


def unique_consecutive(x, dim):
    """``(values, inverse, counts)`` of the runs of equal elements (slices along ``dim``)."""
    xp = x.xp
    a = x.array.reshape(-1) if dim is None else xp.moveaxis(x.array, dim, 0)
    n = a.shape[0]
    if n == 0:
        change = xp.zeros(0, dtype=bool)
    else:
        diff = (a[1:] != a[:-1]).reshape(n - 1, int(np.prod(a.shape[1:]))).any(axis=1)
        change = xp.concatenate([xp.ones(1, dtype=bool), diff])
    starts = xp.nonzero(change)[0]
    inv = xp.cumsum(change) - 1
    counts = xp.diff(xp.concatenate([starts, xp.asarray([n])]))
    vals = a[starts]
    if dim is not None:
        vals = xp.moveaxis(vals, 0, dim)
    else:
        inv = inv.reshape(x.shape)
    return x._new(vals), x._new(inv.astype(np.int64)), x._new(counts.astype(np.int64))
