"""Pooling: max / average pooling (1-d, 2-d) and adaptive average pooling.

Max pooling saves the arg-max offset of each window; its backward scatters the
gradient there (:class:`MaxPoolScatter`), whose backward gathers at the same offsets
(:class:`MaxPoolGather`), and back again: the pair makes double backward work.
Average pooling is a window sum (:class:`WindowSum`, adjoint :class:`WindowSumAdjoint`)
divided by the window sizes. Adaptive average pooling is two small matrix products.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from nnkit.autograd.factories import zeros
from nnkit.autograd.function import NO_GRAPH, Op, ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.tensor import Tensor

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
]


class PoolGeometry(NamedTuple):
    in_shape: tuple
    kernel: tuple
    stride: tuple
    dilation: tuple
    pads: tuple  # (lo, hi) per spatial dim; hi includes the ceil_mode extension

    @property
    def args(self):
        return self.kernel, self.stride, self.dilation, self.pads


class MaxPoolNd(Op):
    @staticmethod
    def forward(ctx, x, geom):
        out, idx = x.pool_max(*geom.args)
        ctx.geom, ctx.idx = geom, idx
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return MaxPoolScatter.apply(grad_output, ctx.idx, ctx.geom), None

    @staticmethod
    def backward_mat(ctx, g):
        return MaxPoolScatter.forward(NO_GRAPH, g, ctx.idx, ctx.geom), None


class MaxPoolScatter(Op):
    """Each window's gradient sent to its arg-max (the backward of max pooling)."""

    @staticmethod
    def forward(ctx, grad, idx, geom):
        ctx.geom, ctx.idx = geom, idx
        return grad.pool_scatter(idx, geom.in_shape, *geom.args)

    @staticmethod
    def backward(ctx, grad_output):
        return MaxPoolGather.apply(grad_output, ctx.idx, ctx.geom), None, None


class MaxPoolGather(Op):
    """The value at each window's arg-max (the adjoint of :class:`MaxPoolScatter`)."""

    @staticmethod
    def forward(ctx, x, idx, geom):
        ctx.geom, ctx.idx = geom, idx
        return x.pool_gather(idx, *geom.args)

    @staticmethod
    def backward(ctx, grad_output):
        return MaxPoolScatter.apply(grad_output, ctx.idx, ctx.geom), None, None


class WindowSum(Op):
    """Sum over each (zero-padded) pooling window."""

    @staticmethod
    def forward(ctx, x, geom):
        ctx.geom = geom
        return x.pool_sum(*geom.args)

    @staticmethod
    def backward(ctx, grad_output):
        return WindowSumAdjoint.apply(grad_output, ctx.geom), None


class WindowSumAdjoint(Op):
    """Every window's value added to all of its elements (the backward of a window sum)."""

    @staticmethod
    def forward(ctx, grad, geom):
        ctx.geom = geom
        return grad.pool_scatter(None, geom.in_shape, *geom.args)

    @staticmethod
    def backward(ctx, grad_output):
        return WindowSum.apply(grad_output, ctx.geom), None


# ------------------------------------------------------------------ arguments
def _tuple(value, nd, name, op):
    if isinstance(value, int):
        return (value,) * nd
    value = tuple(value)
    if len(value) == 1:
        value = value * nd
    if len(value) != nd or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{op}: {name} must be an int or a tuple of {nd} ints, got {value}")
    return value


def _out_size(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside
        out -= 1
    return out


_LAYOUT = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def _geometry(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op):
    check_tensor(input, op)
    if input.ndim not in (nd + 1, nd + 2):
        raise ShapeError(
            f"{op}: expected input with {nd + 2} dimensions {_LAYOUT[nd]} (or "
            f"{nd + 1} without the batch), got shape {tuple(input.shape)}"
        )
    kernel = _tuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None or stride == () else _tuple(stride, nd, "stride", op)
    pad = _tuple(padding, nd, "padding", op)
    dil = _tuple(dilation, nd, "dilation", op)
    if min(kernel + stride + dil) < 1 or min(pad) < 0:
        raise ValueError(
            f"{op}: kernel_size, stride and dilation must be positive and "
            f"padding non-negative, got kernel_size={kernel}, stride={stride}, "
            f"padding={pad}, dilation={dil}"
        )
    if any(p > (d * (k - 1) + 1) // 2 for p, k, d in zip(pad, kernel, dil)):
        raise ValueError(
            f"{op}: padding should be at most half of the effective kernel "
            f"size, got padding={pad} for kernel_size={kernel}"
        )
    spatial = input.shape[-nd:]
    out = tuple(_out_size(*a, ceil_mode) for a in zip(spatial, kernel, stride, pad, dil))
    if any(o < 1 for o in out):
        raise ShapeError(
            f"{op}: input {tuple(input.shape)} is too small for kernel_size="
            f"{kernel} (padding={pad}, dilation={dil}); output size would be "
            f"{out}"
        )
    pads = tuple(
        (p, max(p, (o - 1) * s + d * (k - 1) + 1 - n - p))
        for n, k, s, p, d, o in zip(spatial, kernel, stride, pad, dil, out)
    )
    shape = tuple(input.shape) if input.ndim == nd + 2 else (1,) + tuple(input.shape)
    return PoolGeometry(shape, kernel, stride, dil, pads), pad


def _batched(input, nd):
    return input if input.ndim == nd + 2 else input.unsqueeze(0)


def _unbatched(out, input, nd):
    return out if input.ndim == nd + 2 else out.squeeze(0)


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, op):
    geom, _ = _geometry(input, kernel_size, stride, padding, dilation, ceil_mode, nd, op)
    x = _batched(input, nd)
    res = MaxPoolNd.apply(x, geom)
    out = _unbatched(res, input, nd)
    if not return_indices:
        return out

    if res.grad_fn is not None:
        idx = res.grad_fn.idx
    else:  # no graph recorded: recompute the offsets
        idx = x._impl.data.pool_max(*geom.args)[1]
    flat = idx.pool_flat_indices(geom.in_shape[2:], *geom.args)
    return out, _unbatched(Tensor._from_mat(flat), input, nd)


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """2-d max pooling over ``(N, C, H, W)`` (or ``(C, H, W)``) inputs: the maximum of each
    window of the ``-inf``-padded input.

    Args:
        input: a 4-d or 3-d (unbatched) floating-point tensor.
        kernel_size: the window, an int or one int per spatial dimension.
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit ``-inf`` padding on both sides, at most half the kernel.
        dilation: spacing between window elements (default 1).
        ceil_mode: round the output size up (the last window may hang over the edge;
            a window starting in the right padding is dropped, as in PyTorch).
        return_indices: also return the flat index (into the unpadded spatial
            positions) of each maximum.

    Returns:
        ``(N, C, H_out, W_out)`` with ``H_out = (H + 2 pH - dH (kH - 1) - 1) // sH + 1``
        (rounded up with ``ceil_mode``), plus int64 indices of that shape if asked.

    Gradient: to the first maximum of each window (ties: the first in row-major order),
    summed where windows overlap; NaN counts as the maximum.

    Raises:
        ShapeError: for an input of the wrong rank or smaller than the window.
        ValueError: for a padding over half the kernel.

    Example:
        >>> x = nnkit.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.max_pool2d(x, 2)[0, 0]
        tensor([[ 5.0,  7.0],
                [13.0, 15.0]])
        >>> F.max_pool2d(x, 3, stride=1, return_indices=True)[1][0, 0]
        tensor([[10, 11],
                [14, 15]])
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d"
    )


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """1-d max pooling over ``(N, C, L)`` (or ``(C, L)``) inputs: the maximum of each window
    of the ``-inf``-padded input; see :func:`max_pool2d`.

    Args:
        input: a 3-d or 2-d (unbatched) floating-point tensor.
        kernel_size: the window, an int or one int per spatial dimension.
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit ``-inf`` padding on both sides, at most half the kernel.
        dilation: spacing between window elements (default 1).
        ceil_mode: round the output size up (the last window may hang over the edge;
            a window starting in the right padding is dropped, as in PyTorch).
        return_indices: also return the flat index (into the unpadded spatial
            positions) of each maximum.

    Returns:
        ``(N, C, L_out)`` with ``L_out = (L + 2 p - d (k - 1) - 1) // s + 1`` (rounded up
        with ``ceil_mode``), plus int64 indices of that shape if asked.

    Gradient: to the first maximum of each window, summed where windows overlap.

    Raises:
        ShapeError: for an input of the wrong rank or smaller than the window.

    Example:
        >>> F.max_pool1d(nnkit.tensor([[1.0, 5.0, 2.0, 0.0, 3.0]]), 2, ceil_mode=True)
        tensor([[5.0, 2.0, 3.0]])
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d"
    )


def _divisor(geom, pad, count_include_pad, mat):
    """Per-window element counts ``(1, 1, *out)``, or None when all windows are full."""
    full_cover = all(lo == hi == p for (lo, hi), p in zip(geom.pads, pad))
    if full_cover and (count_include_pad or not any(pad)):
        return None
    spatial = geom.in_shape[2:]
    if count_include_pad:  # padding counts, the ceil_mode overhang does not
        ones = type(mat).ones((1, 1) + tuple(n + 2 * p for n, p in zip(spatial, pad)), mat.dtype)
        pads = tuple((0, hi - p) for (lo, hi), p in zip(geom.pads, pad))
    else:
        ones = type(mat).ones((1, 1) + tuple(spatial), mat.dtype)
        pads = geom.pads
    return ones.pool_sum(geom.kernel, geom.stride, geom.dilation, pads)


def _avg_pool(
    input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, op
):
    geom, pad = _geometry(input, kernel_size, stride, padding, 1, ceil_mode, nd, op)
    if not input.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input, got {input.dtype}")
    total = WindowSum.apply(_batched(input, nd), geom)
    if divisor_override:
        out = total * (1.0 / divisor_override)
    else:
        div = _divisor(geom, pad, count_include_pad, input._impl.data)
        out = (
            total * (1.0 / math.prod(geom.kernel)) if div is None else total / Tensor._from_mat(div)
        )
    return _unbatched(out, input, nd)


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """2-d average pooling over ``(N, C, H, W)`` (or ``(C, H, W)``) inputs:
    ``out = sum(window) / size``, where ``size`` counts the zero padding when
    ``count_include_pad`` (never the ``ceil_mode`` overhang), as in PyTorch.

    Args:
        input: a 4-d or 3-d (unbatched) floating-point tensor.
        kernel_size: the window, an int or one int per spatial dimension.
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit zero padding on both sides, at most half the kernel.
        ceil_mode: round the output size up (the last window may hang over the edge).
        count_include_pad: count the padded zeros in the divisor (default True; the
            ``ceil_mode`` overhang is never counted, as in PyTorch).
        divisor_override: divide every window by this number instead.

    Returns:
        ``(N, C, H_out, W_out)``, sized as in :func:`max_pool2d` (dilation 1).

    Gradient: each output's gradient spread evenly (over the divisor) across its window.

    Raises:
        TypeError: for an integer input.
        ShapeError: for an input of the wrong rank or smaller than the window.

    Example:
        >>> x = nnkit.arange(16.0).reshape(1, 4, 4)
        >>> F.avg_pool2d(x, 2)[0]
        tensor([[ 2.5000,  4.5000],
                [10.5000, 12.5000]])
        >>> F.avg_pool2d(nnkit.ones(1, 2, 2), 2, padding=1, count_include_pad=False)[0]
        tensor([[1.0, 1.0],
                [1.0, 1.0]])
    """
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        2,
        "avg_pool2d",
    )


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-d average pooling over ``(N, C, L)`` (or ``(C, L)``) inputs: ``sum(window) / size``;
    see :func:`avg_pool2d`.

    Args:
        input: a 3-d or 2-d (unbatched) floating-point tensor.
        kernel_size: the window, an int or one int per spatial dimension.
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit zero padding on both sides, at most half the kernel.
        ceil_mode: round the output size up (the last window may hang over the edge).
        count_include_pad: count the padded zeros in the divisor (default True; the
            ``ceil_mode`` overhang is never counted, as in PyTorch).

    Returns:
        ``(N, C, L_out)``, sized as in :func:`max_pool1d` (dilation 1).

    Gradient: each output's gradient spread evenly across its window.

    Example:
        >>> F.avg_pool1d(nnkit.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]), 2, padding=1)
        tensor([[0.5000, 2.5000, 4.5000]])
    """
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d"
    )


def _adaptive_matrix(n_in, n_out, like):
    """``(n_out, n_in)`` averaging matrix of adaptive pooling's windows."""
    with no_grad():
        m = zeros(n_out, n_in, dtype=like.dtype, device=like.device)
        for i in range(n_out):  # n_out rows, not pixels: tiny
            lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
            m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def _adaptive_avg(input, output_size, nd, op):
    check_tensor(input, op)
    if input.ndim not in (nd + 1, nd + 2):
        raise ShapeError(
            f"{op}: expected input with {nd + 2} dimensions {_LAYOUT[nd]} (or "
            f"{nd + 1}), got shape {tuple(input.shape)}"
        )
    sizes = (
        (output_size,) * nd
        if isinstance(output_size, int) or output_size is None
        else tuple(output_size)
    )
    spatial = input.shape[-nd:]
    sizes = tuple(n if s is None else s for s, n in zip(sizes, spatial))
    if len(sizes) != nd or any(s < 1 for s in sizes):
        raise ValueError(f"{op}: output_size must be {nd} positive ints, got {output_size}")
    out = input
    for k, (n_in, n_out) in enumerate(zip(spatial, sizes)):
        if n_in == n_out:
            continue
        m = _adaptive_matrix(n_in, n_out, input)
        axis = input.ndim - nd + k
        moved = out.transpose(axis, -1)  # average along the last axis, then move back
        out = (moved @ m.mT).transpose(axis, -1)
    return out


def adaptive_avg_pool2d(input, output_size):
    """Average pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) inputs to a fixed
    ``(H_out, W_out)`` whatever the input size.

    Window ``i`` along a dimension of size ``n`` covers
    ``[floor(i n / out), ceil((i + 1) n / out))``, as in PyTorch; windows may overlap.

    Args:
        input: a 4-d or 3-d tensor.
        output_size: an int (square) or ``(H_out, W_out)``; ``None`` in a position keeps
            that input size.

    Returns:
        ``(N, C, H_out, W_out)``.

    Gradient: each output's gradient spread evenly across its window.

    Raises:
        ShapeError: for an input of the wrong rank.
        ValueError: for sizes that are not positive ints.

    Example:
        >>> x = nnkit.arange(6.0).reshape(1, 2, 3)
        >>> F.adaptive_avg_pool2d(x, (1, 2))[0]
        tensor([[2.0, 3.0]])
        >>> F.adaptive_avg_pool2d(nnkit.randn(2, 3, 7, 5), 1).shape
        (2, 3, 1, 1)
    """
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool1d(input, output_size):
    """Average pooling of ``(N, C, L)`` (or ``(C, L)``) inputs to a fixed length ``L_out``;
    window ``i`` covers ``[floor(i L / L_out), ceil((i + 1) L / L_out))``.

    Args:
        input: a 3-d or 2-d tensor.
        output_size: ``L_out``, a positive int (or a 1-tuple).

    Returns:
        ``(N, C, L_out)``.

    Gradient: each output's gradient spread evenly across its window.

    Example:
        >>> F.adaptive_avg_pool1d(nnkit.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]), 2)
        tensor([[2.0, 4.0]])
    """
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")
