"""Pooling layers: ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``."""

from __future__ import annotations

from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers.module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"]


class MaxPool2d(Module):
    """The maximum over each ``kernel_size`` window of ``(N, C, H, W)`` inputs.

    Args:
        kernel_size: the window size (int or pair).
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit -inf padding on both sides.
        dilation: spacing between window elements.
        return_indices: also return the flat indices of the maxima.
        ceil_mode: use ceil instead of floor to compute the output size.

    Example:
        >>> MaxPool2d(2)(nnkit.randn(1, 3, 8, 8)).shape
        (1, 3, 4, 4)
    """

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor):
        return F.max_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool2d(Module):
    """The mean over each ``kernel_size`` window of ``(N, C, H, W)`` inputs.

    Args:
        kernel_size: the window size (int or pair).
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit zero padding on both sides.
        ceil_mode: use ceil instead of floor to compute the output size.
        count_include_pad: count the padding zeros in the mean.
        divisor_override: divide by this instead of the window size.
    """

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        kwargs = {}
        if self.divisor_override is not None:
            kwargs["divisor_override"] = self.divisor_override
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            ceil_mode=self.ceil_mode,
            count_include_pad=self.count_include_pad,
            **kwargs,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed ``output_size`` (int or (h, w); None keeps that size).

    Args:
        output_size: the output's (h, w), or one int for both; None in the pair keeps
            that input size.

    Example:
        >>> AdaptiveAvgPool2d(1)(nnkit.randn(2, 16, 7, 7)).shape
        (2, 16, 1, 1)
    """

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
