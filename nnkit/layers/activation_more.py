"""More activation layers of PyTorch with an ``inplace`` flag: ``Hardtanh``, ``ReLU6``,
``SELU`` and ``RReLU`` (thin Modules over :mod:`nnkit.nn.functional`)."""

from __future__ import annotations

from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers.activation import _inplace
from nnkit.layers.module import Module

__all__ = ["Hardtanh", "ReLU6", "SELU", "RReLU"]


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``; gradient 1 strictly between the bounds, else 0.

    Args:
        min_val: the lower bound.
        max_val: the upper bound.
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Raises:
        ValueError: if ``min_val > max_val``.

    Example:
        >>> Hardtanh(-0.5, 0.5)(nnkit.tensor([-1.0, 0.25, 2.0]))
        tensor([-0.5000,  0.2500,  0.5000])
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self, f"min_val={self.min_val}, max_val={self.max_val}")


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``: :class:`Hardtanh` with the bounds 0 and 6.

    Args:
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> ReLU6(inplace=True)
        ReLU6(inplace=True)
        >>> ReLU6()(nnkit.tensor([-1.0, 0.5, 8.0]))
        tensor([0.0000, 0.5000, 6.0000])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace(self)


class SELU(Module):
    """``scale * (x if x > 0 else alpha * (exp(x) - 1))`` with the self-normalising
    constants ``alpha = 1.6732632...``, ``scale = 1.0507009...``.

    Args:
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> SELU()(nnkit.tensor([-1.0, 0.5, 2.0]))
        tensor([-1.1113,  0.5254,  2.1014])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self)


class RReLU(Module):
    """Randomized leaky ReLU: ``x`` for ``x > 0``, else ``a * x``, with ``a`` drawn
    uniformly from ``[lower, upper]`` per element while training (nnkit's global
    generator) and ``(lower + upper) / 2`` in evaluation.

    Args:
        lower: the lower bound of the slope.
        upper: the upper bound of the slope.
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> RReLU(0.2, 0.4).eval()(nnkit.tensor([-2.0, 3.0]))
        tensor([-0.6000,  3.0000])
    """

    def __init__(
        self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False
    ) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self, f"lower={self.lower}, upper={self.upper}")
