"""Fused layer-normalisation kernels, written against ``xp`` (NumPy and CuPy).

:func:`layer_norm_forward` is the composite's formula operation for operation (mean as
sum over count, ``x - mean``, the biased variance, ``1 / sqrt(var + eps)``, then the
affine map), so outputs are bitwise the composite's; it keeps ``xhat`` and ``rstd`` for
:func:`layer_norm_backward`, which forms the input's gradient
``rstd * (dxh - mean(dxh) - xhat * mean(dxh * xhat))`` (``dxh = g * weight``) with the
weight's and bias's gradients summed over the leading dimensions.
"""

from __future__ import annotations

__all__ = ["layer_norm_forward", "layer_norm_backward"]


def _axes(ndim: int, k: int) -> tuple:
    return tuple(range(ndim - k, ndim))


def layer_norm_forward(x, weight, bias, k: int, eps: float):
    """``(y, xhat, rstd)`` for Mat ``x`` normalised over its last ``k`` dimensions
    (``weight``/``bias`` Mats or None)."""
    a = x.array
    axes = _axes(a.ndim, k)
    n = 1
    for d in axes:
        n *= a.shape[d]
    xc = a - a.sum(axis=axes, keepdims=True) / n
    var = (xc * xc).sum(axis=axes, keepdims=True) / n
    rstd = 1 / x.xp.sqrt(var + eps)
    xc *= rstd  # xhat
    if weight is None:
        y = xc.copy() if bias is None else xc + bias.array
    else:
        y = xc * weight.array
        if bias is not None:
            y += bias.array
    return x._new(y), x._new(xc), x._new(rstd)


def layer_norm_backward(g, xhat, rstd, weight, k: int, need):
    """``(dx, dweight, dbias)`` for the output gradient Mat ``g``; ``need`` flags which
    of the three are wanted (the others are None)."""
    ga, xh = g.array, xhat.array
    axes = _axes(xh.ndim, k)
    lead = tuple(range(xh.ndim - k))
    if ga.shape != xh.shape:
        ga = g.xp.broadcast_to(ga, xh.shape)
    gw = gb = None
    if need[1]:
        gw = g._new((ga * xh).sum(axis=lead))
    if need[2]:
        gb = g._new(ga.sum(axis=lead))
    if not need[0]:
        return None, gw, gb
    n = 1
    for d in axes:
        n *= xh.shape[d]
    dxh = ga * weight.array if weight is not None else ga
    t = dxh * xh
    m2 = t.sum(axis=axes, keepdims=True) / n
    gx = dxh - dxh.sum(axis=axes, keepdims=True) / n
    g.xp.multiply(xh, m2, out=t)
    gx -= t
    gx *= rstd.array
    return g._new(gx), gw, gb
