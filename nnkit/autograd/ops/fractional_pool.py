"""Fractional max pooling (Graham, 2014): ``F.fractional_max_pool2d`` / ``3d``.

Each plane's pooling windows start at pseudo-random offsets, from one sample ``u`` in
``[0, 1)`` per spatial dim (torch's ``generate_intervals``, in the input's dtype):
``start[i] = int((i + u) * alpha) - int(u * alpha)`` with ``alpha = (in - k) / (out -
1)``, the last window ending at the input's edge. The samples are drawn from nnkit's
generator unless ``_random_samples`` (``(N, C, dims)``; 2-d reads ``(w, h)``, 3-d
``(t, h, w)``, as torch) is given. The maximum of each window (the first one; a NaN,
the last one, wins, as torch) is gathered, so the gradient goes to its position.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.factories import tensor
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.indexing import gather
from nnkit.autograd.ops.selection import where
from nnkit.autograd.random_factories import rand

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
]


def _tuple(v, nd):
    return tuple(int(i) for i in v) if isinstance(v, (tuple, list)) else (int(v),) * nd


def _intervals(samples, size, out, k, dtype):
    """``(B, out)`` window starts from ``samples`` (``(B,)``), in ``dtype``'s arithmetic."""
    seq = np.zeros((samples.shape[0], out), dtype=np.int64)
    if out > 1:
        alpha = dtype.type(size - k) / dtype.type(out - 1)
        i = np.arange(out - 1, dtype=dtype)[None, :]
        u = samples.astype(dtype)[:, None]
        seq[:, :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if out > 0:
        seq[:, -1] = size - k
    return seq


def _pool(input, kernel_size, output_size, output_ratio, return_indices, samples, nd):
    op = f"fractional_max_pool{nd}d"
    check_tensor(input, op)
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{op}: expected {nd + 1}D or {nd + 2}D input, got {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating input, got {input.dtype}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c = x.shape[:2]
    sizes = tuple(x.shape[2:])
    k = _tuple(kernel_size, nd)
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = tuple(float(r) for r in _tuple_f(output_ratio, nd))
        out = tuple(int(s * r) for s, r in zip(sizes, ratio))
    else:
        out = _tuple(output_size, nd)
    for s, o, kk in zip(sizes, out, k):
        if kk <= 0 or o < 0 or o + kk - 1 > s:
            raise ValueError(
                f"{op}: kernel_size {k} and output_size {out} do not fit the input's "
                f"spatial size {sizes} (need output + kernel - 1 <= input)"
            )
    with no_grad():
        if samples is None:
            samples = rand(n, c, nd, dtype=input.dtype, device=input.device)
        check_tensor(samples, op, "_random_samples")
        if samples.dtype != input.dtype:
            raise TypeError(f"{op}: expected _random_samples to have the same dtype as input")
        if tuple(samples.shape) != (n, c, nd):
            raise ValueError(
                f"{op}: expected _random_samples of shape {(n, c, nd)}, got {tuple(samples.shape)}"
            )
        u = np.asarray(samples.detach().cpu().tolist(), dtype=input.dtype.np).reshape(-1, nd)
        order = (1, 0) if nd == 2 else (0, 1, 2)  # which sample drives each spatial dim
        starts = [
            _intervals(u[:, order[d]], sizes[d], out[d], k[d], input.dtype.np) for d in range(nd)
        ]
        strides = np.cumprod((1,) + sizes[::-1])[:-1][::-1]
        # candidate flat indices (B, *out, *k) into each plane
        cand = np.zeros((n * c,) + out + k, dtype=np.int64)
        for d in range(nd):
            pos = starts[d].reshape((n * c,) + tuple(out[d] if e == d else 1 for e in range(nd)))
            pos = pos.reshape(pos.shape + (1,) * nd)
            off = np.arange(k[d]).reshape(
                (1,) * (1 + nd) + tuple(k[d] if e == d else 1 for e in range(nd))
            )
            cand = cand + (pos + off) * int(strides[d])
        p, kk, plane = int(np.prod(out)), int(np.prod(k)), int(np.prod(sizes))
        cand_t = tensor(cand.reshape(n, c, p * kk), device=input.device)
        flat = x.detach().reshape(n, c, plane)
        vals = gather(flat, 2, cand_t).reshape(n, c, p, kk)
        nan = vals.isnan()
        last_nan = (kk - 1) - nan.flip(-1).long().argmax(-1)
        first_max = where(nan, float("-inf"), vals).argmax(-1)
        pick = where(nan.any(-1), last_nan, first_max)
        idx = gather(cand_t.reshape(n, c, p, kk), 3, pick.unsqueeze(-1)).reshape(n, c, p)
    outv = gather(x.reshape(n, c, plane), 2, idx).reshape((n, c) + out)
    idx = idx.reshape((n, c) + out)
    if not batched:
        outv, idx = outv.squeeze(0), idx.squeeze(0)
    return (outv, idx) if return_indices else outv


def _tuple_f(v, nd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd


def fractional_max_pool2d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """2-d fractional max pooling: the maximum over ``kernel_size`` windows placed at
    pseudo-random fractional strides, to reach ``output_size``.

    Args:
        input: floating ``(N, C, H, W)`` or ``(C, H, W)``.
        kernel_size: the window, an int or ``(kh, kw)``.
        output_size: the output ``(Ho, Wo)`` (an int for both), or None to use
            ``output_ratio``.
        output_ratio: ``(rh, rw)`` in ``(0, 1)``: ``Ho = int(H * rh)`` (as torch).
        return_indices: also return each maximum's flat index in its ``H * W`` plane.
        _random_samples: ``(N, C, 2)`` samples in ``[0, 1)`` (``[..., 0]`` places the
            columns, ``[..., 1]`` the rows); drawn from nnkit's generator if None.

    Returns:
        ``(N, C, Ho, Wo)`` (and int64 indices of that shape with ``return_indices``).

    Gradient: each output's gradient goes to its maximum's position.

    Example:
        >>> x = nnkit.arange(16.0).reshape(1, 1, 4, 4)
        >>> y = F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=nnkit.zeros(1, 1, 2))
        >>> y.flatten()
        tensor([ 5.0,  7.0, 13.0, 15.0])
    """
    return _pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """3-d fractional max pooling (see :func:`fractional_max_pool2d`).

    Args:
        input: floating ``(N, C, T, H, W)`` or ``(C, T, H, W)``.
        kernel_size: an int or ``(kt, kh, kw)``.
        output_size: ``(To, Ho, Wo)`` (an int for all), or None to use ``output_ratio``.
        output_ratio: ``(rt, rh, rw)`` in ``(0, 1)``.
        return_indices: also return each maximum's flat index in its ``T * H * W`` volume.
        _random_samples: ``(N, C, 3)`` samples in ``[0, 1)`` for ``(t, h, w)``.

    Returns:
        ``(N, C, To, Ho, Wo)`` (and int64 indices with ``return_indices``).

    Gradient: each output's gradient goes to its maximum's position.

    Example:
        >>> x = nnkit.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> y = F.fractional_max_pool3d(x, 1, output_size=1, _random_samples=nnkit.zeros(1, 1, 3))
        >>> y.tolist()
        [[[[[7.0]]]]]
    """
    return _pool(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)


def fractional_max_pool2d_with_indices(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """:func:`fractional_max_pool2d` returning ``(output, indices)`` always.

    Example:
        >>> x = nnkit.arange(4.0).reshape(1, 1, 2, 2)
        >>> F.fractional_max_pool2d_with_indices(x, 2, output_size=1)[1].tolist()
        [[[[3]]]]
    """
    return _pool(input, kernel_size, output_size, output_ratio, True, _random_samples, 2)


def fractional_max_pool3d_with_indices(
    input,
    kernel_size,
    output_size=None,
    output_ratio=None,
    return_indices=False,
    _random_samples=None,
):
    """:func:`fractional_max_pool3d` returning ``(output, indices)`` always.

    Example:
        >>> x = nnkit.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> F.fractional_max_pool3d_with_indices(x, 2, output_size=1)[1].tolist()
        [[[[[7]]]]]
    """
    return _pool(input, kernel_size, output_size, output_ratio, True, _random_samples, 3)
