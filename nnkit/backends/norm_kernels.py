"""Fused layer-normalisation kernels, written against ``xp`` (NumPy and CuPy).

:func:`layer_norm_forward` is the composite's formula operation for operation (mean as
sum over count, ``x - mean``, the biased variance, ``1 / sqrt(var + eps)``, then the
affine map), so outputs are bitwise the composite's; it keeps ``xhat`` and ``rstd`` for
:func:`layer_norm_backward`, which forms the input's gradient
``rstd * (dxh - mean(dxh) - xhat * mean(dxh * xhat))`` (``dxh = g * weight``) with the
weight's and bias's gradients summed over the leading dimensions.

Both take ``out=``, the Mats to write their results into (what a replay of a compiled
step passes, see :func:`~nnkit.backends.replay.writes_into`): the same operations, so
the same values, with nothing to copy afterwards.
"""

from __future__ import annotations

from nnkit.backends.replay import writes_into

__all__ = ["layer_norm_forward", "layer_norm_backward"]


def _axes(ndim: int, k: int) -> tuple:
    return tuple(range(ndim - k, ndim))


@writes_into
def layer_norm_forward(x, weight, bias, k: int, eps: float, *, out=None):
    """``(y, xhat, rstd)`` for Mat ``x`` normalised over its last ``k`` dimensions
    (``weight``/``bias`` Mats or None). ``out``: the three Mats to write the results
    into (a replay's recorded buffers), the same operations on the same values."""
    a = x.array
    xp = x.xp
    axes = _axes(a.ndim, k)
    n = 1
    for d in axes:
        n *= a.shape[d]
    mean = a.sum(axis=axes, keepdims=True) / n
    if out is None:
        xc = a - mean
        var = (xc * xc).sum(axis=axes, keepdims=True) / n
        rstd = 1 / xp.sqrt(var + eps)
        xc *= rstd  # xhat
        if weight is None:
            y = xc.copy() if bias is None else xc + bias.array
        else:
            y = xc * weight.array
            if bias is not None:
                y += bias.array
        return x._new(y), x._new(xc), x._new(rstd)
    y, xc, rstd = (m.array for m in out)
    xp.subtract(a, mean, out=xc)
    # the squares in y (scratch) where it has xc's layout, as eager's temporary has, so
    # that the sum runs in the same order
    squares = xp.multiply(xc, xc, out=y if y.strides == xc.strides else None)
    var = squares.sum(axis=axes, keepdims=True) / n
    xp.true_divide(1, xp.sqrt(var + eps), out=rstd)
    xp.multiply(xc, rstd, out=xc)  # xhat
    if weight is None:
        if bias is None:
            xp.copyto(y, xc)
        else:
            xp.add(xc, bias.array, out=y)
    else:
        xp.multiply(xc, weight.array, out=y)
        if bias is not None:
            xp.add(y, bias.array, out=y)
    return out


@writes_into
def layer_norm_backward(g, xhat, rstd, weight, k: int, need, *, out=None):
    """``(dx, dweight, dbias)`` for the output gradient Mat ``g``; ``need`` flags which
    of the three are wanted (the others are None). ``out``: Mats (None where not
    wanted) to write them into."""
    xp = g.xp
    ga, xh = g.array, xhat.array
    axes = _axes(xh.ndim, k)
    lead = tuple(range(xh.ndim - k))
    if ga.shape != xh.shape:
        ga = xp.broadcast_to(ga, xh.shape)
    into = [None] * 3 if out is None else [None if m is None else m.array for m in out]
    gw = gb = None
    if need[1]:
        gw = (ga * xh).sum(axis=lead, out=into[1])
    if need[2]:
        gb = ga.sum(axis=lead, out=into[2])
    if need[0]:
        n = 1
        for d in axes:
            n *= xh.shape[d]
        dxh = ga * weight.array if weight is not None else ga
        t = dxh * xh
        m2 = t.sum(axis=axes, keepdims=True) / n
        mean = dxh.sum(axis=axes, keepdims=True) / n
        gx = xp.subtract(dxh, mean, out=into[0])
        xp.multiply(xh, m2, out=t)
        gx -= t
        gx *= rstd.array
    if out is not None:
        return out
    return tuple(None if r is None else g._new(r) for r in (gx if need[0] else None, gw, gb))
