"""Rounded-division kernels of a Mat (``div(..., rounding_mode='trunc'|'floor')``,
``floor_divide``, ``//``), written against its array module ``xp`` (NumPy or CuPy), with
PyTorch's results.

Integer operands give the exact quotient in their dtype (no round trip through a float, so
large int64 values stay exact); the caller refuses an integer division by zero, as PyTorch
does. Floating operands give ``trunc(a / b)`` and Python's floor division (the algorithm
NumPy and PyTorch share), with IEEE ``inf``/NaN for a zero divisor and no warning.
"""

from __future__ import annotations

import numpy as np

__all__ = ["div_rounded"]


def div_rounded(a, b, mode: str):
    """``a / b`` rounded toward zero (``mode='trunc'``) or down (``'floor'``), as a Mat.

    ``a`` and ``b`` are Mats of one category (both floating, or both integer/bool: the
    caller promotes); they broadcast. Two bool operands raise ``TypeError`` (PyTorch has
    no bool kernel either).
    """
    xp = a.xp
    x, y = a.array, b.array
    if x.dtype.kind == "f" or y.dtype.kind == "f":
        with np.errstate(all="ignore"):
            if mode == "floor":
                return a._new(xp.floor_divide(x, y))
            return a._new(xp.trunc(xp.true_divide(x, y)))
    if x.dtype.kind == "b" and y.dtype.kind == "b":
        raise TypeError(f"rounding_mode={mode!r} division is not implemented for bool tensors")
    with np.errstate(all="ignore"):
        q = xp.floor_divide(x, y)
        if mode == "trunc":  # the floor quotient, one up where it rounded a negative down
            q = q + ((xp.remainder(x, y) != 0) & ((x < 0) != (y < 0)))
    return a._new(q)
