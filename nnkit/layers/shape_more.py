"""More shape layers: pixel (un)shuffle, ``Upsample``, channel shuffle, 3-d and adaptive
max pooling, distances (``CosineSimilarity``, ``PairwiseDistance``) and ``Bilinear``."""

from __future__ import annotations

import math

from nnkit.autograd.factories import empty
from nnkit.autograd.ops.adaptive_max import (
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
)
from nnkit.autograd.ops.distance import cosine_similarity, pairwise_distance
from nnkit.autograd.ops.interpolate import interpolate
from nnkit.autograd.ops.nn_extra import bilinear, channel_shuffle, pixel_shuffle, pixel_unshuffle
from nnkit.autograd.ops.pool3d import adaptive_avg_pool3d, avg_pool3d, max_pool3d
from nnkit.autograd.tensor import Tensor
from nnkit.layers import initializers as init
from nnkit.layers.module import Module, Parameter

__all__ = [
    "PixelShuffle",
    "PixelUnshuffle",
    "Upsample",
    "ChannelShuffle",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "MaxPool3d",
    "AvgPool3d",
    "AdaptiveAvgPool3d",
    "CosineSimilarity",
    "PairwiseDistance",
    "Bilinear",
]


class PixelShuffle(Module):
    """Rearranges ``(*, C·r², H, W)`` into ``(*, C, H·r, W·r)`` (``r = upscale_factor``).

    Args:
        upscale_factor: the factor r by which height and width grow.

    Example:
        >>> PixelShuffle(2)(nnkit.randn(1, 8, 3, 3)).shape
        (1, 2, 6, 6)
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearranges ``(*, C, H·r, W·r)`` into ``(*, C·r², H, W)`` (``r = downscale_factor``).

    Args:
        downscale_factor: the factor r by which height and width shrink.

    Example:
        >>> PixelUnshuffle(2)(nnkit.randn(1, 2, 6, 6)).shape
        (1, 8, 3, 3)
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class Upsample(Module):
    """Upsamples ``(N, C, *spatial)`` inputs with ``F.interpolate``.

    Args:
        size: the output spatial size (give this or ``scale_factor``).
        scale_factor: the multiplier of the spatial size (stored as float).
        mode: ``'nearest'``, ``'linear'``, ``'bilinear'``, ``'bicubic'``, ``'trilinear'``
            (default ``'nearest'``).
        align_corners: align the corner pixels (linear modes only; default None).
        recompute_scale_factor: compute the scale from the output size (default None).

    Example:
        >>> Upsample(scale_factor=2)(nnkit.tensor([[[1.0, 2.0]]])).flatten()
        tensor([1.0, 1.0, 2.0, 2.0])
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class ChannelShuffle(Module):
    """Splits the channels ``(N, C, *)`` into ``groups`` and interleaves them.

    Args:
        groups: the number of groups; must divide C.

    Example:
        >>> ChannelShuffle(2)(nnkit.arange(4.0).reshape(1, 4, 1)).flatten()
        tensor([0.0, 2.0, 1.0, 3.0])
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class _AdaptiveMaxPoolNd(Module):
    _op = None

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor):
        return type(self)._op(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


_ADAPTIVE_MAX_DOC = """Adaptive max pooling of ``{shape}`` inputs to a fixed output size.

    Args:
        output_size: the target size (int, or a {n}-tuple whose None entries keep the input's).
        return_indices: also return the flat indices of the maxima (default False).

    Example:
        >>> {example}
        {result}
    """


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _op = staticmethod(adaptive_max_pool1d)
    __doc__ = _ADAPTIVE_MAX_DOC.format(
        shape="(N, C, L)",
        n=1,
        example="AdaptiveMaxPool1d(2)(nnkit.tensor([[[1.0, 5.0, 2.0, 3.0]]])).flatten()",
        result="tensor([5.0, 3.0])",
    )


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _op = staticmethod(adaptive_max_pool2d)
    __doc__ = _ADAPTIVE_MAX_DOC.format(
        shape="(N, C, H, W)",
        n=2,
        example="AdaptiveMaxPool2d((2, 3))(nnkit.randn(1, 3, 7, 9)).shape",
        result="(1, 3, 2, 3)",
    )


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _op = staticmethod(adaptive_max_pool3d)
    __doc__ = _ADAPTIVE_MAX_DOC.format(
        shape="(N, C, D, H, W)",
        n=3,
        example="AdaptiveMaxPool3d(2)(nnkit.randn(1, 3, 4, 5, 6)).shape",
        result="(1, 3, 2, 2, 2)",
    )


class MaxPool3d(Module):
    """The maximum over each ``kernel_size`` window of ``(N, C, D, H, W)`` inputs.

    Args:
        kernel_size: the window size (int or triple).
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit -inf padding on both sides (default 0).
        dilation: spacing between window elements (default 1).
        return_indices: also return the flat indices of the maxima (default False).
        ceil_mode: use ceil instead of floor to compute the output size (default False).

    Example:
        >>> MaxPool3d(2)(nnkit.randn(1, 2, 4, 4, 4)).shape
        (1, 2, 2, 2, 2)
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
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor):
        return max_pool3d(
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


class AvgPool3d(Module):
    """The mean over each ``kernel_size`` window of ``(N, C, D, H, W)`` inputs.

    Args:
        kernel_size: the window size (int or triple).
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit zero padding on both sides (default 0).
        ceil_mode: use ceil instead of floor to compute the output size (default False).
        count_include_pad: count the padding zeros in the mean (default True).
        divisor_override: divide by this instead of the window size (default None).

    Example:
        >>> AvgPool3d(2)(nnkit.ones(1, 1, 2, 2, 4)).flatten()
        tensor([1.0, 1.0])
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
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return avg_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3d(Module):
    """Adaptive average pooling of ``(N, C, D, H, W)`` inputs to a fixed output size.

    Args:
        output_size: the target size (int or triple; None entries keep the input's).

    Example:
        >>> AdaptiveAvgPool3d(1)(nnkit.randn(1, 3, 4, 5, 6)).shape
        (1, 3, 1, 1, 1)
    """

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return adaptive_avg_pool3d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class CosineSimilarity(Module):
    """Cosine similarity ``x1·x2 / max(‖x1‖·‖x2‖, eps)`` along ``dim``.

    Args:
        dim: the dimension reduced over (default 1).
        eps: the lower bound of the norm product (default 1e-8).

    Example:
        >>> CosineSimilarity()(nnkit.tensor([[1.0, 0.0]]), nnkit.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm distance ``‖x1 − x2 + eps‖_p`` over the last dimension.

    Args:
        p: the norm degree (default 2).
        eps: added to the difference to avoid division by zero (default 1e-6).
        keepdim: keep the reduced dimension (default False).

    Example:
        >>> PairwiseDistance()(nnkit.tensor([[0.0, 0.0]]), nnkit.tensor([[3.0, 4.0]]))
        tensor([5.0000])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Bilinear(Module):
    """Bilinear map ``y = x1ᵀ A x2 + b`` of two inputs ``(*, in1)`` and ``(*, in2)``.

    Args:
        in1_features: the size of each first input.
        in2_features: the size of each second input.
        out_features: the size of each output.
        bias: learn a bias of shape ``(out_features,)`` (default True).

    The weight has shape ``(out_features, in1_features, in2_features)``; weight and bias
    are drawn from U(±1/√in1_features), as in PyTorch.

    Example:
        >>> Bilinear(3, 4, 2)(nnkit.randn(5, 3), nnkit.randn(5, 4)).shape
        (5, 2)
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(
            empty((out_features, in1_features, in2_features), device=device, dtype=dtype)
        )
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight and bias from U(±1/√in1_features)."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
