"""Transposed convolutions: ``ConvTranspose1d/2d/3d`` over ``F.conv_transpose1d/2d/3d``."""

from __future__ import annotations

from nnkit.autograd.factories import empty
from nnkit.autograd.ops.conv_transpose import (
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
)
from nnkit.autograd.tensor import Tensor
from nnkit.layers import initializers as init
from nnkit.layers.conv import _ntuple, check_channels
from nnkit.layers.module import Module, Parameter

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvTransposeNd(Module):
    """Shared construction of N-d transposed convolutions (weight ``(in, out/groups, *k)``)."""

    _nd = 0
    _op = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        name, nd = type(self).__name__, self._nd
        check_channels(name, in_channels, out_channels, groups)
        if padding_mode != "zeros":
            raise ValueError(
                f"{name}: only padding_mode='zeros' is supported (as in PyTorch). "
                f"Received: padding_mode={padding_mode!r}"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", name)
        self.stride = _ntuple(stride, nd, "stride", name)
        self.padding = _ntuple(padding, nd, "padding", name)
        self.output_padding = _ntuple(output_padding, nd, "output_padding", name)
        self.dilation = _ntuple(dilation, nd, "dilation", name)
        self.padding_mode = padding_mode
        self.weight = Parameter(
            empty(
                (in_channels, out_channels // groups) + self.kernel_size, device=device, dtype=dtype
            )
        )
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: weight from kaiming_uniform_(a=√5), bias from U(±1/√fan_in)."""
        init.torch_default_(self.weight, self.bias)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """The ``output_padding`` that gives ``output_size`` (PyTorch's rule)."""
        if output_size is None:
            return self.output_padding
        nd = self._nd
        sizes = [int(s) for s in output_size]
        if len(sizes) not in (nd, nd + 2):
            raise ValueError(
                f"{type(self).__name__}: output_size must have {nd} or {nd + 2} elements. "
                f"Received: output_size={tuple(output_size)}"
            )
        padding = []
        for d, size in enumerate(sizes[-nd:]):
            low = (
                (input.shape[input.ndim - nd + d] - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            if not low <= size < low + self.stride[d]:
                raise ValueError(
                    f"{type(self).__name__}: requested an output size of {sizes[-nd:]}, but "
                    f"dimension {d} can only be in [{low}, {low + self.stride[d] - 1}]"
                )
            padding.append(size - low)
        return tuple(padding)

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        """Applies the transposed convolution; ``output_size`` (the spatial size, or the
        full shape) picks ``output_padding`` where the stride makes it ambiguous."""
        return type(self)._op(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
        )

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution: ``(N, C_in, L)`` → ``(N, C_out, L_out)``.

    ``L_out = (L − 1)·stride − 2·padding + dilation·(kernel_size − 1) + output_padding + 1``.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel size (int or 1-tuple).
        stride: the step of the underlying convolution (default 1).
        padding: ``dilation·(kernel_size − 1) − padding`` zeros pad each side (default 0).
        output_padding: extra size added to one side of the output (default 0).
        groups: blocked connections from input to output channels (default 1).
        bias: learn a bias of shape ``(out_channels,)`` (default True).
        dilation: spacing between kernel elements (default 1).
        padding_mode: only ``'zeros'``, as in PyTorch.

    The weight has shape ``(in_channels, out_channels // groups, kernel_size)``.

    Example:
        >>> ConvTranspose1d(4, 2, 3, stride=2)(nnkit.randn(1, 4, 5)).shape
        (1, 2, 11)
    """

    _nd = 1
    _op = staticmethod(conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution: ``(N, C_in, H, W)`` → ``(N, C_out, H_out, W_out)``.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel size (int or pair).
        stride: the step of the underlying convolution (default 1).
        padding: ``dilation·(kernel_size − 1) − padding`` zeros pad each side (default 0).
        output_padding: extra size added to one side of each output dimension (default 0).
        groups: blocked connections from input to output channels (default 1).
        bias: learn a bias of shape ``(out_channels,)`` (default True).
        dilation: spacing between kernel elements (default 1).
        padding_mode: only ``'zeros'``, as in PyTorch.

    The weight has shape ``(in_channels, out_channels // groups, kH, kW)``.

    Example:
        >>> ConvTranspose2d(4, 2, 3, stride=2, padding=1)(nnkit.randn(1, 4, 5, 5)).shape
        (1, 2, 9, 9)
    """

    _nd = 2
    _op = staticmethod(conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution: ``(N, C_in, D, H, W)`` → ``(N, C_out, D_out, H_out, W_out)``.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: the kernel size (int or triple).
        stride: the step of the underlying convolution (default 1).
        padding: ``dilation·(kernel_size − 1) − padding`` zeros pad each side (default 0).
        output_padding: extra size added to one side of each output dimension (default 0).
        groups: blocked connections from input to output channels (default 1).
        bias: learn a bias of shape ``(out_channels,)`` (default True).
        dilation: spacing between kernel elements (default 1).
        padding_mode: only ``'zeros'``, as in PyTorch.

    The weight has shape ``(in_channels, out_channels // groups, kD, kH, kW)``.

    Example:
        >>> ConvTranspose3d(2, 3, 2, stride=2)(nnkit.randn(1, 2, 2, 3, 4)).shape
        (1, 3, 4, 6, 8)
    """

    _nd = 3
    _op = staticmethod(conv_transpose3d)
