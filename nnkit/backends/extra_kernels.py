"""Kernels of the extra elementwise and distance ops (``signbit``, ``gcd``, ``heaviside``,
``nextafter``, ...), written against a Mat's array module ``xp`` (NumPy or CuPy).

Each takes and returns Mats; floating-point exceptions never warn (torch's kernels do
not).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ufunc", "heaviside", "scatter_reduce"]


def ufunc(name: str, *mats):
    """``xp.<name>`` applied to the Mats' arrays (broadcasting), as a new Mat."""
    first = mats[0]
    with np.errstate(all="ignore"):
        return first._new(getattr(first.xp, name)(*(m.array for m in mats)))


def heaviside(x, values):
    """``values`` where ``x == 0``, else ``x > 0`` (NaN counts as not positive, as torch)."""
    xp = x.xp
    a, v = x.array, values.array
    dtype = xp.result_type(a, v)
    with np.errstate(all="ignore"):
        out = xp.where(a == 0, v.astype(dtype), (a > 0).astype(dtype))
    return x._new(xp.asarray(out, dtype=dtype))


_AT = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def scatter_reduce(input, dim, index, src, reduce, include_self):
    """torch's ``scatter_reduce`` (``reduce`` one of sum, mean, prod, amax, amin)."""
    xp = input.xp
    out = input.array.copy()
    idx = list(xp.indices(index.shape, sparse=True))
    idx[dim] = index.array
    idx = tuple(idx)
    vals = src.array[tuple(slice(0, n) for n in index.shape)].astype(out.dtype, copy=False)
    if not include_self:
        if reduce in ("amax", "amin"):
            kind = xp.finfo if out.dtype.kind == "f" else xp.iinfo
            start = kind(out.dtype).min if reduce == "amax" else kind(out.dtype).max
            if out.dtype.kind == "f":
                start = -xp.inf if reduce == "amax" else xp.inf
        else:
            start = 1 if reduce == "prod" else 0
        out[idx] = start
    with np.errstate(all="ignore"):
        getattr(xp, _AT[reduce]).at(out, idx, vals)
        if reduce == "mean":
            count = xp.zeros(out.shape, dtype=out.dtype)
            xp.add.at(count, idx, 1)
            count = count + (1 if include_self else 0)
            safe = xp.where(count > 0, count, 1)
            div = out / safe if out.dtype.kind == "f" else out // safe
            out = xp.where(count > 0, div, out).astype(out.dtype, copy=False)
    return input._new(out)
