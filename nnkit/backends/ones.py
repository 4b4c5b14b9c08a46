"""Vectors of ones for the fused kernels' sums as GEMVs (``a @ ones``), made once.

NumPy's reductions over a short axis cost several times their arithmetic, so the fused
kernels (linear, layer norm, attention) sum by BLAS instead, against a vector of ones;
making that vector anew costs about as much as a small sum. :func:`ones` keeps the
NumPy ones it made (read-only, a bounded number of sizes); other array modules get a
fresh one.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["ones"]


@functools.lru_cache(maxsize=64)
def _numpy_ones(shape: tuple, dtype: np.dtype):
    a = np.ones(shape, dtype)
    a.flags.writeable = False
    return a


def ones(xp, shape, dtype):
    """An array of ones of ``shape`` (an int or a tuple) and ``dtype``: for NumPy a
    shared read-only one, which the caller must not write."""
    if xp is np:
        return _numpy_ones(shape if isinstance(shape, tuple) else (shape,), np.dtype(dtype))
    return xp.ones(shape, dtype)
