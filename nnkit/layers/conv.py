"""Convolution layers: ``Conv1d`` and ``Conv2d`` over ``F.conv1d``/``F.conv2d``."""

from __future__ import annotations

from nnkit.autograd.factories import empty
from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers import initializers as init
from nnkit.layers.module import Module, Parameter

__all__ = ["Conv1d", "Conv2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, n: int, name: str, layer: str) -> tuple:
    values = (value,) * n if isinstance(value, int) else tuple(value)
    if len(values) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ValueError(
            f"{layer}: {name} must be an int or a tuple of {n} ints. Received: {name}={value!r}"
        )
    return values


def check_channels(name: str, in_channels, out_channels, groups) -> None:
    """Refuse channel counts and groups that are not positive ints dividing both counts."""
    for arg, value in (
        ("in_channels", in_channels),
        ("out_channels", out_channels),
        ("groups", groups),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name}: {arg} must be a positive integer. Received: {arg}={value!r}")
    if in_channels % groups or out_channels % groups:
        raise ValueError(
            f"{name}: in_channels and out_channels must be divisible by groups. "
            f"Received: in_channels={in_channels}, out_channels={out_channels}, "
            f"groups={groups}"
        )


class _ConvNd(Module):
    """Shared construction of N-d convolutions (weight ``(out, in/groups, *kernel)``)."""

    _nd = 0

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        name, nd = type(self).__name__, self._nd
        check_channels(name, in_channels, out_channels, groups)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"{name}: padding_mode must be one of {_PADDING_MODES}. "
                f"Received: padding_mode={padding_mode!r}"
            )
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(
                f"{name}: padding must be an int, a tuple, 'same' or 'valid'. "
                f"Received: padding={padding!r}"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", name)
        self.stride = _ntuple(stride, nd, "stride", name)
        self.dilation = _ntuple(dilation, nd, "dilation", name)
        self.padding = (
            padding if isinstance(padding, str) else _ntuple(padding, nd, "padding", name)
        )
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError(
                f"{name}: padding='same' is not supported for strided "
                f"convolutions. Received: stride={stride}"
            )
        self.padding_mode = padding_mode
        self.weight = Parameter(
            empty(
                (out_channels, in_channels // groups) + self.kernel_size, device=device, dtype=dtype
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

    def _pad_amounts(self) -> tuple:
        """``F.pad`` amounts (last dimension first) for a non-zero padding mode."""
        if self.padding == "valid":
            return (0, 0) * self._nd
        if self.padding == "same":
            pairs = [
                (d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                for k, d in zip(self.kernel_size, self.dilation)
            ]
        else:
            pairs = [(p, p) for p in self.padding]
        return tuple(v for pair in reversed(pairs) for v in pair)

    def _conv_forward(self, input: Tensor, conv) -> Tensor:
        if self.padding_mode != "zeros":
            input = F.pad(input, self._pad_amounts(), mode=self.padding_mode)
            return conv(input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding!r}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-d convolution over inputs of shape ``(N, C_in, L)`` → ``(N, C_out, L_out)``.

    An unbatched input ``(C_in, L)`` gives ``(C_out, L_out)``, as in PyTorch.

    Args:
        in_channels: channels of the input.
        out_channels: channels produced.
        kernel_size: the kernel length (int or 1-tuple).
        stride: the step between windows.
        padding: an int, ``'valid'`` (none) or ``'same'`` (output length = input length).
        dilation: spacing between kernel elements.
        groups: blocked connections from input to output channels.
        bias: whether to learn a bias.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Example:
        >>> Conv1d(16, 33, 3, stride=2)(nnkit.randn(20, 16, 50)).shape
        (20, 33, 24)
    """

    _nd = 1

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv1d)


class Conv2d(_ConvNd):
    """2-d convolution over inputs of shape ``(N, C_in, H, W)`` → ``(N, C_out, H_out, W_out)``.

    H_out = ⌊(H + 2·padding − dilation·(kernel − 1) − 1) / stride⌋ + 1 (likewise W).
    An unbatched input ``(C_in, H, W)`` gives ``(C_out, H_out, W_out)``, as in PyTorch.

    Args:
        in_channels: channels of the input.
        out_channels: channels produced.
        kernel_size: an int or an (h, w) pair.
        stride: an int or a pair.
        padding: an int, a pair, ``'valid'`` or ``'same'``.
        dilation: an int or a pair.
        groups: blocked connections from input to output channels.
        bias: whether to learn a bias.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Attributes:
        weight: shape ``(out_channels, in_channels/groups, kh, kw)``, from
            ``kaiming_uniform_(a=√5)``.
        bias: shape ``(out_channels,)``, from U(±1/√fan_in).

    Example:
        >>> Conv2d(1, 8, 3, padding=1)(nnkit.randn(4, 1, 8, 8)).shape
        (4, 8, 8, 8)
    """

    _nd = 2

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv2d)
