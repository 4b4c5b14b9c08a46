"""Sliding-window extraction: ``unfold`` (im2col) and its adjoint ``fold`` (col2im).

Both reuse the convolution kernels of :mod:`nnkit.backends.nn_kernels` (channels-last
columns ``(1, N * L, K * C)``) and reorder them to torch's ``(N, C * K, L)`` layout.
Each one's backward is the other (they are adjoint linear maps), so higher derivatives
work too.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import check_tensor

__all__ = ["unfold", "fold"]


def _pair(value, name, op):
    v = (value, value) if isinstance(value, int) else tuple(value)
    if len(v) != 2 or not all(isinstance(i, int) for i in v):
        raise ValueError(f"{op}: {name} must be an int or a pair of ints, got {value!r}")
    return v


def _blocks(size, kernel, stride, dilation, pads):
    return tuple(
        (s + 2 * p - d * (k - 1) - 1) // t + 1
        for s, k, t, d, (p, _) in zip(size, kernel, stride, dilation, pads)
    )


class Unfold(Op):
    @staticmethod
    def forward(ctx, x, geom):
        ctx.geom, ctx.size = geom, x.shape[2:]
        kernel, stride, dilation, pads, blocks = geom
        n, c = x.shape[:2]
        cols = x.conv_im2col(kernel, stride, dilation, pads, 1)
        k, l_ = math.prod(kernel), math.prod(blocks)
        cols = cols.reshape((n, l_, k, c)).transpose((0, 3, 2, 1))
        return cols.reshape((n, c * k, l_))

    @staticmethod
    def backward(ctx, g):
        return Fold.apply(g, ctx.size, ctx.geom), None


class Fold(Op):
    @staticmethod
    def forward(ctx, y, size, geom):
        ctx.geom = geom
        kernel, stride, dilation, pads, blocks = geom
        n, ck, l_ = y.shape
        k = math.prod(kernel)
        c = ck // k
        cols = y.reshape((n, c, k, l_)).transpose((0, 3, 2, 1)).contiguous()
        cols = cols.reshape((1, n * l_, k * c))
        return cols.conv_col2im((n, c) + tuple(size), blocks, kernel, stride, dilation, pads, 1)

    @staticmethod
    def backward(ctx, g):
        return Unfold.apply(g, ctx.geom), None, None


def _geom(size, kernel_size, dilation, padding, stride, op):
    kernel = _pair(kernel_size, "kernel_size", op)
    dilation, stride = _pair(dilation, "dilation", op), _pair(stride, "stride", op)
    pad = _pair(padding, "padding", op)
    if min(kernel + dilation + stride) < 1 or min(pad) < 0:
        raise ValueError(f"{op}: kernel_size, dilation and stride must be positive")
    pads = tuple((p, p) for p in pad)
    blocks = _blocks(size, kernel, stride, dilation, pads)
    if min(blocks) < 1:
        raise RuntimeError(f"{op}: the input {tuple(size)} is too small for the kernel")
    return kernel, stride, dilation, pads, blocks


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding blocks (im2col): ``(N, C, H, W)`` -> ``(N, C * kh * kw, L)``,
    each column one flattened ``C x kh x kw`` block, ``L`` the number of blocks.

    Args:
        input: a 4-D ``(N, C, H, W)`` or 3-D unbatched ``(C, H, W)`` tensor.
        kernel_size: the block size (int or pair).
        dilation: the spacing of a block's elements (default 1).
        padding: zeros added on both sides of each spatial dimension (default 0).
        stride: the step between blocks (default 1).

    Returns:
        ``(N, C * prod(kernel_size), L)`` (no batch dimension for a 3-D input).

    Example:
        >>> F.unfold(nnkit.arange(4.0).reshape(1, 1, 2, 2), 1).tolist()
        [[[0.0, 1.0, 2.0, 3.0]]]
    """
    check_tensor(input, "unfold", "input")
    if input.ndim not in (3, 4):
        raise ValueError(f"unfold: expects a 3-D or 4-D input, got shape {input.shape}")
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
    geom = _geom(input.shape[2:], kernel_size, dilation, padding, stride, "unfold")
    return Unfold.apply(input, geom)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding blocks into a tensor (col2im), summing overlaps: the adjoint of
    :func:`unfold`, ``(N, C * kh * kw, L)`` -> ``(N, C, *output_size)``.

    Args:
        input: ``(N, C * prod(kernel_size), L)`` or unbatched ``(C * prod(kernel_size), L)``;
            ``L`` must equal the number of blocks of ``output_size``.
        output_size: the spatial size ``(H, W)`` of the result (int or pair).
        kernel_size, dilation, padding, stride: as in :func:`unfold`.

    Returns:
        ``(N, C, H, W)`` (no batch dimension for a 2-D input).

    Example:
        >>> F.fold(nnkit.ones(1, 4, 4), (3, 3), 2)[0, 0]
        tensor([[1.0, 2.0, 1.0],
                [2.0, 4.0, 2.0],
                [1.0, 2.0, 1.0]])
    """
    check_tensor(input, "fold", "input")
    if input.ndim not in (2, 3):
        raise ValueError(f"fold: expects a 2-D or 3-D input, got shape {input.shape}")
    if input.ndim == 2:
        return fold(
            input.unsqueeze(0), output_size, kernel_size, dilation, padding, stride
        ).squeeze(0)
    size = _pair(output_size, "output_size", "fold")
    geom = _geom(size, kernel_size, dilation, padding, stride, "fold")
    k, blocks = math.prod(geom[0]), math.prod(geom[4])
    if input.shape[1] % k or input.shape[2] != blocks:
        raise RuntimeError(
            f"fold: expected input of shape (N, C * {k}, {blocks}), got {tuple(input.shape)}"
        )
    return Fold.apply(input, size, geom)
