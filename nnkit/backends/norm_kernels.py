"""Fused layer-normalisation kernels, written against ``xp`` (NumPy and CuPy).

:func:`layer_norm_forward` is the composite's formula (mean as sum over count,
``x - mean``, the biased variance, ``1 / sqrt(var + eps)``, then the affine map); it
keeps ``xhat`` and ``rstd`` for :func:`layer_norm_backward`, which forms the input's
gradient ``rstd * (dxh - mean(dxh) - xhat * mean(dxh * xhat))`` (``dxh = g * weight``)
with the weight's and bias's gradients summed over the leading dimensions.

The sums over a row (the normalised dimensions) and over the leading dimensions are
GEMVs with a ones vector for float32 and float64 (NumPy's reductions over a short last
axis cost several times their arithmetic); ``mean(dxh * xhat)`` is ``(g * xhat) @
weight`` and ``mean(dxh)`` a GEMV of ``dxh``, so ``g * xhat``, formed once, also gives
the weight's gradient. Their values are the composite's to float rounding (the sums add
in BLAS's order); other dtypes sum with the reductions.

Both take ``out=``, the Mats to write their results into (what a replay of a compiled
step passes, see :func:`~nnkit.backends.replay.writes_into`): the same operations, so
the same values, with nothing to copy afterwards.
"""

from __future__ import annotations

import numpy as np

from nnkit.backends.ones import ones
from nnkit.backends.replay import writes_into

__all__ = ["layer_norm_forward", "layer_norm_backward"]


def _axes(ndim: int, k: int) -> tuple:
    return tuple(range(ndim - k, ndim))


def _blas(a) -> bool:
    return a.dtype == np.float32 or a.dtype == np.float64


def _rows(a, n: int):
    """``a`` as ``(rows, n)`` (``n`` the size of its trailing dimensions): a view where
    its strides allow one, else a copy."""
    return a.reshape(a.size // n, n)


def _row_sums(xp, a, k: int, n: int, vec=None):
    """The sums of ``a`` (times ``vec``, a Mat's array of the row shape, where given)
    over its last ``k`` dimensions of ``n`` elements, kept as size-1 dimensions."""
    keep = a.shape[: a.ndim - k] + (1,) * k
    if _blas(a) and n:
        v = ones(xp, n, a.dtype) if vec is None else vec.reshape(n)
        return xp.matmul(_rows(a, n), v).reshape(keep)
    b = a if vec is None else a * vec
    return b.sum(axis=_axes(a.ndim, k), keepdims=True)


def _lead_sums(xp, a, k: int, n: int, out=None):
    """The sums of ``a`` over its leading dimensions (all but the last ``k``)."""
    if _blas(a) and n and a.strides.count(0) == 0:
        r = xp.matmul(ones(xp, a.size // n, a.dtype), _rows(a, n))
        if k > 1:
            r = r.reshape(a.shape[a.ndim - k :])
        if out is None:
            return r
        xp.copyto(out, r)
        return out
    return a.sum(axis=tuple(range(a.ndim - k)), out=out)


@writes_into
def layer_norm_forward(x, weight, bias, k: int, eps: float, *, out=None):
    """``(y, xhat, rstd)`` for Mat ``x`` normalised over its last ``k`` dimensions
    (``weight``/``bias`` Mats or None). ``out``: the three Mats to write the results
    into (a replay's recorded buffers), the same operations on the same values."""
    a = x.array
    xp = x.xp
    n = 1
    for d in _axes(a.ndim, k):
        n *= a.shape[d]
    y, xc, rstd = (None, None, None) if out is None else (m.array for m in out)
    mean = _row_sums(xp, a, k, n) / n
    xc = xp.subtract(a, mean, out=xc)
    # the squares in y (scratch) where it has xc's layout, so that they sum the same way
    squares = xp.multiply(xc, xc, out=y if y is not None and y.strides == xc.strides else None)
    var = _row_sums(xp, squares, k, n) / n
    rstd = xp.true_divide(1, xp.sqrt(var + eps), out=rstd)
    xp.multiply(xc, rstd, out=xc)  # xhat
    if weight is None:
        if bias is None:
            y = xc.copy() if y is None else _copy(xp, y, xc)
        else:
            y = xp.add(xc, bias.array, out=y)
    else:
        y = xp.multiply(xc, weight.array, out=y)
        if bias is not None:
            xp.add(y, bias.array, out=y)
    if out is not None:
        return out
    return x._new(y), x._new(xc), x._new(rstd)


def _copy(xp, dst, src):
    xp.copyto(dst, src)
    return dst


@writes_into
def layer_norm_backward(g, xhat, rstd, weight, k: int, need, *, out=None):
    """``(dx, dweight, dbias)`` for the output gradient Mat ``g``; ``need`` flags which
    of the three are wanted (the others are None). ``out``: Mats (None where not
    wanted) to write them into."""
    xp = g.xp
    ga, xh = g.array, xhat.array
    n = 1
    for d in _axes(xh.ndim, k):
        n *= xh.shape[d]
    if ga.shape != xh.shape:
        ga = xp.broadcast_to(ga, xh.shape)
    into = [None] * 3 if out is None else [None if m is None else m.array for m in out]
    w = None if weight is None else weight.array
    gx = gw = gb = None
    u = ga * xh if need[0] or need[1] else None  # g * xhat
    if need[1]:
        gw = _lead_sums(xp, u, k, n, into[1])
    if need[2]:
        gb = _lead_sums(xp, ga, k, n, into[2])
    if need[0]:
        if w is None:
            gx = xp.subtract(ga, _row_sums(xp, ga, k, n) / n, out=into[0])
        else:
            gx = xp.multiply(ga, w, out=into[0])  # dxh
            gx -= _row_sums(xp, gx, k, n) / n
        m2 = _row_sums(xp, u, k, n, w) / n  # mean(dxh * xhat)
        gx -= xp.multiply(xh, m2, out=u)
        gx *= rstd.array
    if out is not None:
        return out
    return tuple(None if r is None else g._new(r) for r in (gx, gw, gb))
