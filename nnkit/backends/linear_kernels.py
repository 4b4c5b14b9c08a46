"""Fused kernels of ``linear`` (``x W^T + b``), written against ``xp`` (NumPy and CuPy).

:func:`linear_forward` runs one GEMM over the input's leading dimensions folded into
rows (a view where the strides allow it) and adds the bias in place into the fresh
product: the values of ``x @ W^T`` and ``+= b`` on the folded input.

Where the output is at least twice as wide as the input and there are at least
:data:`ONES_COLUMN_MIN_ROWS` rows (NumPy, float32 or float64) the bias rides in the GEMM
instead: the rows get a column of ones (``x1 = [x | 1]``, kept for the backward) and the
weight the bias as a column (``[W | b]``), so the product carries the bias with no pass
over the wider output, and the backward's ``g^T x1`` is ``[g^T x | the bias's
gradient]`` with no sum over ``g`` either; copying the narrower input costs less. The
bias then joins the GEMM's sum (the same to float rounding).

:func:`linear_backward` forms the three gradients in one call: ``g W`` (shaped as the
input), ``g^T x`` (in the weight's own ``(out, in)`` layout, no transposed copy) and the
bias's, the column sums of ``g``: from ``g^T x1``, or a GEMV with a ones vector for
float32 and float64 (NumPy's reduction over the rows costs about twice as much; the
sums add in BLAS's order, so they are the reduction's to float rounding).

Both take ``out=``, the Mats to write their results into (what a replay of a compiled
step passes, see :func:`~nnkit.backends.replay.writes_into`): the same operations.
"""

from __future__ import annotations

import math

import numpy as np

from nnkit.backends.ones import ones
from nnkit.backends.replay import writes_into

__all__ = ["linear_forward", "linear_backward"]


def _rows(a, n: int):
    """``a`` ``(..., n)`` as ``(rows, n)``: a view where its strides allow one, else a
    copy; an array broadcast along its rows (stride 0, which BLAS cannot read) is
    copied."""
    v = a.reshape(math.prod(a.shape[:-1]), n)
    return v.copy() if 0 in v.strides and v.size else v


def _matmul(xp, a, b, out):
    """``a @ b``, into ``out`` (a 2-d array, or None for a new one)."""
    if out is None or xp is np:
        return xp.matmul(a, b, out=out)
    out[...] = xp.matmul(a, b)  # (CuPy: an ``out`` of any strides through a temporary)
    return out


#: The fewest input rows for which the bias rides in the GEMM: below it the copies of
#: ``[x | 1]`` and ``[W | b]`` and the extra NumPy calls cost more than the bias's pass
#: over the output saves (batch 32, 64 -> 128: 35 vs 28 us forward + backward; from
#: about 256 rows on the two are even, or the ones column wins by up to ~20 %).
ONES_COLUMN_MIN_ROWS = 256


def _ones_column(x, w, b) -> bool:
    """Whether :func:`linear_forward` carries the bias in its GEMM (see the module)."""
    n_out, n_in = w.shape
    a = x.array
    return (
        b is not None
        and x.xp is np
        and (x.dtype == np.float32 or x.dtype == np.float64)
        and n_out >= 2 * n_in
        and a.size >= ONES_COLUMN_MIN_ROWS * n_in
        and a.size > 0
    )


@writes_into
def linear_forward(x, w, b, *, out=None):
    """``(y, x1)``: ``y = x @ w^T + b`` for Mats ``x`` ``(..., in)``, ``w``
    ``(out, in)`` and ``b`` ``(out,)`` (or None), shaped ``(..., out)``; ``x1`` the
    input's rows with a column of ones where the bias rides in the GEMM (the backward
    wants it), else None. ``out``: the two Mats (None where ``x1`` is) to write into."""
    xp = x.xp
    a = x.array
    n_out, n_in = w.shape
    rows = _rows(a, n_in)
    # the result made in its own shape (owning its memory), the GEMM writing its rows
    res = xp.empty(a.shape[:-1] + (n_out,), a.dtype) if out is None else out[0].array
    into = _rows(res, n_out)
    x1 = None
    if _ones_column(x, w, b):
        x1 = np.empty((rows.shape[0], n_in + 1), a.dtype) if out is None else out[1].array
        x1[:, :n_in] = rows
        x1[:, n_in] = 1
        w1 = np.empty((n_out, n_in + 1), a.dtype)
        w1[:, :n_in] = w.array
        w1[:, n_in] = b.array
        y = np.matmul(x1, w1.T, out=into)
    else:
        y = _matmul(xp, rows, w.array.T, into)
        if b is not None:
            y += b.array
    if out is not None:
        return out
    return x._new(res), None if x1 is None else x._new(x1)


@writes_into
def linear_backward(g, x, w, need, x1=None, *, out=None):
    """``(dx, dw, db)`` for the output gradient Mat ``g`` of :func:`linear_forward`
    (``x1`` its second result); ``need`` flags which are wanted (the others are None).
    ``out``: their Mats (None where not wanted) to write them into."""
    xp = g.xp
    into = [None] * 3 if out is None else [None if m is None else m.array for m in out]
    n_out, n_in = w.shape
    ga = _rows(g.array, n_out)
    gx = gw = gb = None
    if need[0]:  # made in the input's shape, the GEMM writing its rows
        gx = xp.empty(x.shape, ga.dtype) if into[0] is None else into[0]
        _matmul(xp, ga, w.array, _rows(gx, n_in))
    if need[1] and x1 is not None:  # [g^T x | column sums of g] in one GEMM
        both = xp.matmul(ga.T, x1.array)
        if into[1] is None:
            gw = np.ascontiguousarray(both[:, :n_in])
        else:
            gw = _copy(into[1], both[:, :n_in])
        if need[2]:
            gb = both[:, n_in].copy() if into[2] is None else _copy(into[2], both[:, n_in])
    elif need[1]:
        gw = _matmul(xp, ga.T, _rows(x.array, n_in), into[1])
    if need[2] and gb is None:
        if ga.dtype == np.float32 or ga.dtype == np.float64:
            gb = _matmul(xp, ones(xp, ga.shape[0], ga.dtype), ga, into[2])
        else:
            gb = ga.sum(axis=0, out=into[2])
    if out is not None:
        return out
    return tuple(None if r is None else g._new(r) for r in (gx, gw, gb))


def _copy(dst, src):
    np.copyto(dst, src)
    return dst
