"""Transposed convolutions ``conv_transpose1d/2d/3d`` (the adjoint of ``conv``: what
torch calls "deconvolution").

A transposed convolution of ``x`` with ``weight`` is the gradient of the convolution
``conv(y, weight)`` with respect to its input ``y``, evaluated at ``x``: so it runs the
convolution's own input-gradient Op (:class:`ConvInputGrad`: GEMM then col2im, or
Winograd's adjoint transforms where that convolution would use Winograd) with that
convolution's geometry, and its gradients (and second gradients) are that Op's. Output
positions that ``output_padding`` adds beyond any window's reach are zeros (plus bias).
"""

from __future__ import annotations

from nnkit.autograd.function import ShapeError
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.conv import ConvGeometry, ConvInputGrad, _tuple, use_winograd
from nnkit.autograd.ops.nn_misc import pad

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd):
    op = f"conv_transpose{nd}d"
    check_tensor(input, op)
    check_tensor(weight, op, "weight")
    unbatched = input.ndim == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    if x.ndim != nd + 2 or weight.ndim != nd + 2:
        raise ShapeError(
            f"{op}: expected input (N, C, *{nd} dims) or (C, *) and weight "
            f"(in_channels, out_channels/groups, *kernel), got {tuple(input.shape)} and "
            f"{tuple(weight.shape)}"
        )
    if not isinstance(groups, int) or groups < 1 or x.shape[1] % groups:
        raise ValueError(f"{op}: groups={groups} must divide the {x.shape[1]} input channels")
    if weight.shape[0] != x.shape[1]:
        raise ShapeError(
            f"{op}: input has {x.shape[1]} channels but weight expects {weight.shape[0]}"
        )
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != x.dtype):
        raise RuntimeError(f"{op}: input, weight and bias must share a dtype")
    kernel = tuple(weight.shape[2:])
    stride = _tuple(stride, nd, "stride", op)
    padding = _tuple(padding, nd, "padding", op)
    output_padding = _tuple(output_padding, nd, "output_padding", op)
    dilation = _tuple(dilation, nd, "dilation", op)
    for op_, s, d in zip(output_padding, stride, dilation):
        if not (0 <= op_ < max(s, d)):
            raise ValueError(f"{op}: output_padding must be smaller than stride or dilation")
    size = tuple(
        (n - 1) * s - 2 * p + d * (k - 1) + o + 1
        for n, s, p, d, k, o in zip(x.shape[2:], stride, padding, dilation, kernel, output_padding)
    )
    if any(v < 1 for v in size):
        raise ShapeError(f"{op}: the output size {size} would not be positive")
    # The convolution this is the adjoint of: padding p before, and after just enough
    # (``hi``) that it has exactly one window per input position; positions that
    # output_padding adds beyond any window's reach (``extra``) are zeros.
    his = tuple(max(p - o, 0) for p, o in zip(padding, output_padding))
    extra = tuple(
        max(o - p + h - (s - 1), 0) for o, p, h, s in zip(output_padding, padding, his, stride)
    )
    reach = tuple(n - e for n, e in zip(size, extra))
    out_channels = weight.shape[1] * groups
    in_shape = (x.shape[0], out_channels, *reach)
    geom = ConvGeometry(
        in_shape,
        kernel,
        stride,
        dilation,
        tuple(zip(padding, his)),
        groups,
        tuple(x.shape[2:]),
        use_winograd(in_shape, kernel, stride, dilation, groups, x.shape[1], x.dtype),
    )
    out = ConvInputGrad.apply(x, weight, geom, None)
    if any(extra):
        out = pad(out, [v for e in reversed(extra) for v in (0, e)])
    if bias is not None:
        if tuple(bias.shape) != (out_channels,):
            raise ShapeError(f"{op}: bias must have shape ({out_channels},), got {bias.shape}")
        out = out + bias.reshape(out_channels, *([1] * nd))
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """1-d transposed convolution of ``(N, C_in, L)`` (or ``(C_in, L)``) inputs with a
    ``(C_in, C_out / groups, K)`` weight: output length
    ``(L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1``.

    Example:
        >>> F.conv_transpose1d(nnkit.ones(1, 1, 2), nnkit.ones(1, 1, 2)).flatten()
        tensor([1.0, 2.0, 1.0])
    """
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """2-d transposed convolution (see :func:`conv_transpose1d`; weight
    ``(C_in, C_out / groups, kH, kW)``).

    Example:
        >>> F.conv_transpose2d(nnkit.ones(1, 1, 2, 2), nnkit.ones(1, 3, 2, 2), stride=2).shape
        (1, 3, 4, 4)
    """
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2
    )


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """3-d transposed convolution (see :func:`conv_transpose1d`; weight
    ``(C_in, C_out / groups, kD, kH, kW)``).

    Example:
        >>> F.conv_transpose3d(nnkit.ones(1, 2, 1, 1, 1), nnkit.ones(2, 1, 1, 1, 1)).flatten()
        tensor([2.0])
    """
    return _conv_transpose(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 3
    )
