"""More pooling layers: power-average pooling (``LPPool1d``, ``LPPool2d``) and max
unpooling (``MaxUnpool1d``, ``MaxUnpool2d``, ``MaxUnpool3d``), the module forms of
``F.lp_pool*d`` and ``F.max_unpool*d``."""

from __future__ import annotations

from nnkit.autograd.ops.pool_more import (
    lp_pool1d,
    lp_pool2d,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from nnkit.autograd.tensor import Tensor
from nnkit.layers.module import Module

__all__ = ["LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling over 1-d windows (see :func:`nnkit.nn.functional.lp_pool1d`).

    Args:
        norm_type: the power ``p``.
        kernel_size: the window length.
        stride: the window step (default ``kernel_size``).
        ceil_mode: keep a last partial window.

    Example:
        >>> nn.LPPool1d(2, 2)(nnkit.tensor([[[3.0, 4.0, 1.0, 0.0]]])).flatten()
        tensor([5.0, 1.0])
    """

    def forward(self, input: Tensor) -> Tensor:
        return lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over 2-d windows (see :func:`nnkit.nn.functional.lp_pool2d`).

    Args:
        norm_type: the power ``p``.
        kernel_size: the window size, an int or ``(kh, kw)``.
        stride: the window step (default ``kernel_size``).
        ceil_mode: keep last partial windows.

    Example:
        >>> nn.LPPool2d(2, 2)(nnkit.tensor([[[[1.0, 2.0], [2.0, 4.0]]]])).flatten()
        tensor([5.0])
    """

    def forward(self, input: Tensor) -> Tensor:
        return lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


def _ntuple(value, nd):
    """An int as ``nd`` copies (torch's ``_single``/``_pair``/``_triple``)."""
    return (value,) * nd if isinstance(value, int) else tuple(value)


class _MaxUnpoolNd(Module):
    _nd = 1

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.stride = self.kernel_size if stride is None else _ntuple(stride, self._nd)
        self.padding = _ntuple(padding, self._nd)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Undoes :class:`MaxPool1d` into zeros (see :func:`nnkit.nn.functional.max_unpool1d`).

    Args:
        kernel_size: the pooling window length.
        stride: the pooling step (default ``kernel_size``).
        padding: the pooling padding.

    Call it as ``unpool(input, indices, output_size=None)``.

    Example:
        >>> nn.MaxUnpool1d(2)(nnkit.tensor([[5.0, 7.0]]), nnkit.tensor([[1, 2]]))
        tensor([[0.0, 5.0, 7.0, 0.0]])
    """

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return max_unpool1d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class MaxUnpool2d(_MaxUnpoolNd):
    """Undoes :class:`MaxPool2d` into zeros (see :func:`nnkit.nn.functional.max_unpool2d`).

    Args:
        kernel_size: the pooling window, an int or a pair.
        stride: the pooling step (default ``kernel_size``).
        padding: the pooling padding.

    Call it as ``unpool(input, indices, output_size=None)``.

    Example:
        >>> x = nnkit.tensor([[[[1.0, 2.0], [4.0, 3.0]]]])
        >>> out, idx = F.max_pool2d(x, 2, return_indices=True)
        >>> nn.MaxUnpool2d(2)(out, idx)[0, 0]
        tensor([[0.0, 0.0],
                [4.0, 0.0]])
    """

    _nd = 2

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return max_unpool2d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class MaxUnpool3d(_MaxUnpoolNd):
    """Undoes :class:`MaxPool3d` into zeros (see :func:`nnkit.nn.functional.max_unpool3d`).

    Args:
        kernel_size: the pooling window, an int or a triple.
        stride: the pooling step (default ``kernel_size``).
        padding: the pooling padding.

    Call it as ``unpool(input, indices, output_size=None)``.

    Example:
        >>> x = nnkit.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> out, idx = F.max_pool3d(x, 2, return_indices=True)
        >>> nn.MaxUnpool3d(2)(out, idx).shape
        (1, 1, 2, 2, 2)
    """

    _nd = 3

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return max_unpool3d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )
