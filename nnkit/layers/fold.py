"""``Unfold`` and ``Fold``: sliding-block extraction (im2col) and its adjoint (col2im)."""

from __future__ import annotations

from nnkit.autograd.ops.fold import fold, unfold
from nnkit.autograd.tensor import Tensor
from nnkit.layers.module import Module

__all__ = ["Unfold", "Fold"]


class Unfold(Module):
    """Extracts sliding blocks: ``(N, C, H, W)`` -> ``(N, C * kh * kw, L)`` (see
    :func:`nnkit.nn.functional.unfold`).

    Args:
        kernel_size: the block size (int or pair).
        dilation: the spacing of a block's elements (default 1).
        padding: zeros added on both sides of each spatial dimension (default 0).
        stride: the step between blocks (default 1).

    Example:
        >>> nn.Unfold(2)(nnkit.randn(1, 3, 4, 4)).shape
        (1, 12, 9)
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Module):
    """Sums sliding blocks back into a tensor: ``(N, C * kh * kw, L)`` ->
    ``(N, C, *output_size)`` (see :func:`nnkit.nn.functional.fold`).

    Args:
        output_size: the spatial size ``(H, W)`` of the result (int or pair).
        kernel_size, dilation, padding, stride: as in :class:`Unfold`.

    Example:
        >>> nn.Fold((3, 3), 2)(nnkit.ones(1, 4, 4))[0, 0, 1]
        tensor([2.0, 4.0, 2.0])
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )
