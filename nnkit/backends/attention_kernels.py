"""Fused scaled-dot-product attention kernels, written against ``xp`` (NumPy and CuPy).

:func:`sdpa_forward` forms the scores transposed, ``k q^T`` (keys by queries), in one
batched GEMM and scales, masks and normalises them in place over the keys (the softmax
shifted by each query's maximum, ``exp`` computed once), then multiplies by ``v``: the
attention weights ``p`` (the ``(..., L, S)`` view of that array) are the only
``(..., L, S)`` array it allocates. The softmax's reductions run over the array's
second-last axis, where NumPy's reduction loops run along its contiguous last one (a
maximum over a short last axis costs about twice as much), and the sums over the keys
are GEMMs with a ones vector. The values are the composite's (``matmul``, ``* scale``,
``where``/``+ mask``, ``softmax``, ``matmul``) to float rounding (the sums add in
another order).

:func:`sdpa_backward` reuses the saved ``p``: ``dv = p^T g``, ``ds = p (dp - rowsum(dp
p))`` with ``dp = g v^T`` formed (transposed, as the scores) in place, ``dq = scale ds
k``, ``dk = scale ds^T q``. Without a gradient of the weights, ``rowsum(dp p)`` is
``rowsum(g * out)`` over the value dimension (``out = p v``, the forward's output), half
the work.

With ``heads`` (multi-head attention) q, k and v come as ``(N, L, E)`` arrays (or q as
the packed ``(N, L, 3E)`` projection, k and v None) and are read as ``(N, H, L, E/H)``
strided views; the output and the gradients are written by the GEMMs straight into
``(N, L, E)`` (``(N, L, 3E)``) buffers, so splitting and merging heads copies nothing.

Both take ``out=``, the Mats to write their results into (what a replay of a compiled
step passes, see :func:`~nnkit.backends.replay.writes_into`): the scores are formed in
the weights' buffer and the products written into the results', by the same
operations, so the values are the same.
"""

from __future__ import annotations

import numpy as np

from nnkit.backends.ones import ones
from nnkit.backends.replay import writes_into

__all__ = ["sdpa_forward", "sdpa_backward"]


def _split(a, heads):
    """``(N, L, E)`` -> the ``(N, H, L, E/H)`` view (a copy only if ``a``'s strides
    cannot be split)."""
    n, length, e = a.shape
    return a.reshape(n, length, heads, e // heads).transpose(0, 2, 1, 3)


def _split_packed(a, heads):
    """``(N, L, 3E)`` -> three ``(N, H, L, E/H)`` views: q, k and v."""
    n, length, e3 = a.shape
    v = a.reshape(n, length, 3, heads, e3 // (3 * heads)).transpose(2, 0, 3, 1, 4)
    return v[0], v[1], v[2]


def _heads_buffer(xp, n, length, parts, heads, d, dtype):
    """An ``(N, L, parts·H·D)`` buffer (owning its memory, as the result it becomes)
    and its ``(N, H, L, D)`` view per part."""
    buf = xp.empty((n, length, parts * heads * d), dtype=dtype)
    return buf, _heads_views(buf, parts, heads)


def _matmul_into(xp, a, b, out) -> None:
    if xp is np:
        np.matmul(a, b, out=out)
    else:  # a strided ``out`` through a temporary
        out[...] = xp.matmul(a, b)


def _t(a):
    """``a`` with its last two axes swapped (a view; a 0-d or 1-d ``a`` is first given
    leading axes of size 1): a ``(..., L, S)`` mask as the transposed scores'
    ``(..., S, L)``."""
    if a.ndim < 2:
        a = a.reshape((1,) * (2 - a.ndim) + a.shape)
    return a.swapaxes(-1, -2)


def _scores(xp, q, k, mask, scale, into=None):
    """The transposed scores ``k q^T * scale`` (``(..., S, L)``, keys by queries),
    masked: a boolean ``mask`` (broadcastable to ``(..., L, S)``) keeps where True
    (``-inf`` elsewhere), a float one is added; broadcast to the masked shape where
    needed. ``into``: the ``(..., S, L)`` array to leave the result in, or None."""
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    shape = batch + (k.shape[-2], q.shape[-2])
    direct = into is not None and (mask is None or mask.dtype != np.bool_)
    s = xp.matmul(k, q.swapaxes(-1, -2), out=into if direct and into.shape == shape else None)
    s *= scale
    if mask is None:
        return _into(xp, s, into)
    mask = _t(mask)
    shape = np.broadcast_shapes(s.shape, mask.shape)
    if shape != s.shape:
        if into is not None and mask.dtype != np.bool_:
            xp.copyto(into, xp.broadcast_to(s, shape))
            s = into
        else:
            s = xp.ascontiguousarray(xp.broadcast_to(s, shape))
    if mask.dtype == np.bool_:
        if into is None:
            return xp.where(mask, s, xp.asarray(-np.inf, dtype=s.dtype))
        xp.copyto(into, xp.asarray(-np.inf, dtype=s.dtype))
        xp.copyto(into, s, where=mask)
        return into
    s += mask
    return _into(xp, s, into)


def _into(xp, a, into):
    """``a``, or ``into`` holding it (copied where it is another array)."""
    if into is None or a is into:
        return a
    xp.copyto(into, a)
    return into


def _colsum(xp, a):
    """``a.sum(axis=-2, keepdims=True)`` as ``ones @ a``: GEMVs, where NumPy's
    reduction over a short axis costs several times the arithmetic."""
    return xp.matmul(ones(xp, (1, a.shape[-2]), a.dtype), a)


def _softmax_t(xp, s):
    """Softmax over the second-last axis (the keys of the transposed scores), in
    place; an all ``-inf`` column gives NaN (torch)."""
    m = s.max(axis=-2, keepdims=True)
    m = xp.where(m == -np.inf, xp.zeros((), s.dtype), m)
    s -= m
    xp.exp(s, out=s)
    t = _colsum(xp, s)
    s /= xp.where(t > 0, t, xp.asarray(np.nan, dtype=t.dtype))
    return s


def _rowdot(xp, a, b):
    """``(a * b).sum(-1)`` (``a`` and ``b`` of one shape and layout) with the sum as
    GEMVs (see :func:`_colsum`); the product keeps the operands' memory order (heads
    split from ``(N, L, E)`` arrays: one pass over them)."""
    return xp.matmul(a * b, ones(xp, a.shape[-1], a.dtype))


def _inputs(q, k, v, heads):
    if heads is None:
        return q.array, k.array, v.array
    if k is None:
        return _split_packed(q.array, heads)
    return _split(q.array, heads), _split(k.array, heads), _split(v.array, heads)


def _heads_views(out, parts, heads):
    """The ``(N, H, L, D)`` view per part of an ``(N, L, parts * E)`` result array
    (what :func:`_heads_buffer` made)."""
    n, length, e = out.shape
    buf = out.reshape(n, length, parts, heads, e // (parts * heads))
    return [buf[:, :, j].transpose(0, 2, 1, 3) for j in range(parts)]


@writes_into
def sdpa_forward(q, k, v, mask, scale: float, heads=None, *, out=None):
    """``(softmax(q k^T * scale + mask) v, p)`` for Mats ``q``, ``k``, ``v`` (``mask`` a
    Mat or None); the second result is the attention weights ``p``, a transposed view
    (its last two axes swapped) of a contiguous ``(..., S, L)`` array. With ``heads``
    the inputs are ``(N, L, E)`` (or q packed, k and v None) and so is the output.
    ``out``: the two Mats to write the results into."""
    xp = q.xp
    qa, ka, va = _inputs(q, k, v, heads)
    into = None if out is None else _t(out[1].array)
    s = _scores(xp, qa, ka, None if mask is None else mask.array, scale, into)
    p = _t(_softmax_t(xp, s) if s.size else s)  # an empty column has no maximum
    if out is not None:
        if heads is None:
            _matmul_into(xp, p, va, out[0].array)
        else:
            _matmul_into(xp, p, va, _heads_views(out[0].array, 1, heads)[0])
        return out
    if heads is None:
        return q._new(xp.matmul(p, va)), q._new(p)
    n, length, d = qa.shape[0], qa.shape[2], va.shape[3]
    buf, (view,) = _heads_buffer(xp, n, length, 1, heads, d, p.dtype)
    _matmul_into(xp, p, va, view)  # (N, H, L, D) products written as (N, L, H, D)
    return q._new(buf), q._new(p)


@writes_into
def sdpa_backward(g, gp, q, k, v, p, scale: float, need, heads=None, o=None, *, out=None):
    """The gradients ``(dq, dk, dv, ds)`` for the output gradient ``g`` (and ``gp``, the
    weights' gradient, or None); ``need`` flags which of q, k, v and the (float) mask
    are wanted; ``ds``, the scores' gradient, is the mask's (a transposed view, as
    ``p``). ``o``: the forward's output (None: ``rowsum(dp p)`` is formed from ``dp``).
    Unwanted results are None; the others have the broadcast batch shape (the caller
    sums them to the inputs'). With ``heads`` they have the inputs' ``(N, L, E)``
    shapes (packed: one ``dq`` of ``(N, L, 3E)``, dk and dv None). ``out``: the four
    results' Mats (None where unwanted) to write them into."""
    xp = g.xp
    qa, ka, va = _inputs(q, k, v, heads)
    ga = g.array if heads is None else _split(g.array, heads)
    pt = _t(p.array)  # (..., S, L), as the forward formed it
    packed = heads is not None and k is None
    if packed:
        need = (need[0], need[0], need[0], need[3])
    into = [None] * 4 if out is None else [None if m is None else m.array for m in out]
    views, bufs = [None] * 3, [None] * 3
    if heads is None:
        views = into[:3]
    elif packed and need[0]:  # dq, dk, dv written into one (N, L, 3E) buffer
        if into[0] is not None:
            views = _heads_views(into[0], 3, heads)
        else:
            bufs[0], views = _heads_buffer(
                xp, qa.shape[0], qa.shape[2], 3, heads, qa.shape[3], pt.dtype
            )
    else:  # each into an (N, L, E) buffer
        for j, a in enumerate((qa, ka, va)):
            if not need[j]:
                continue
            if into[j] is not None:
                (views[j],) = _heads_views(into[j], 1, heads)
            else:
                bufs[j], (views[j],) = _heads_buffer(
                    xp, a.shape[0], a.shape[2], 1, heads, a.shape[3], pt.dtype
                )

    def product(a, b, j):
        if views[j] is None:
            return xp.matmul(a, b)
        _matmul_into(xp, a, b, views[j])
        return views[j]

    dv = product(pt, ga, 2) if need[2] else None
    ds = None
    if need[0] or need[1] or need[3]:
        into_ds = _t(into[3]) if need[3] and into[3] is not None else None
        batch = np.broadcast_shapes(ga.shape[:-2], va.shape[:-2])
        shape = batch + (va.shape[-2], ga.shape[-2])
        direct = into_ds is not None and into_ds.shape == shape
        ds = xp.matmul(va, ga.swapaxes(-1, -2), out=into_ds if direct else None)
        if gp is not None:
            ds = xp.add(ds, _t(gp.array), out=ds if direct else None)
        if ds.shape != pt.shape:
            ds = xp.ascontiguousarray(xp.broadcast_to(ds, np.broadcast_shapes(ds.shape, pt.shape)))
        ds = _into(xp, ds, into_ds)
        if gp is None and o is not None:  # rowsum(dp p) = rowsum(g (p v))
            oa = o.array if heads is None else _split(o.array, heads)
            ds -= _rowdot(xp, ga, oa)[..., None, :]
        else:
            ds -= _colsum(xp, ds * pt)
        ds *= pt
        if not need[3]:  # scaled once here rather than dq and dk (strided heads) after
            ds *= scale
    dq = product(_t(ds), ka, 0) if need[0] else None
    dk = product(ds, qa, 1) if need[1] else None
    if need[3]:
        for t in (dq, dk):
            if t is not None:
                t *= scale
    if out is not None:
        return out
    dmask = None if not need[3] else q._new(_t(ds))
    if heads is None:
        return *[None if t is None else q._new(t) for t in (dq, dk, dv)], dmask
    res = [None if b is None else q._new(b) for b in bufs]
    return res[0], res[1], res[2], dmask
