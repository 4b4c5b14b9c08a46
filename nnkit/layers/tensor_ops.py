"""Tensor operators on symbolic tensors, recorded as small layers.

``a + b``, ``a - 1``, ``2 * a``, ``a / b``, ``a ** 2``, ``a @ w``, ``-a``, ``a[:, 0]`` and
``a.reshape(-1, 4, 4)`` on :class:`~nnkit.layers.symbolic.KerasTensor` objects each
become a call of one of these layers (Keras 3 records its ops the same way), so they
appear in a functional model's graph and in ``summary()`` as ``add (Add)``,
``multiply (Multiply)``, ... Their class names are Keras's op names; they are not the
merge layers of :mod:`nnkit.layers.merge` (which take a list of tensors).
"""

from __future__ import annotations

import operator
from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.layers.module import Module

__all__ = [
    "TensorOp",
    "Add",
    "Subtract",
    "Multiply",
    "TrueDivide",
    "Power",
    "Matmul",
    "Negative",
    "GetItem",
    "Reshape",
    "BINARY",
]


class TensorOp(Module):
    """A binary tensor operator as a layer: ``fn(x, y)``, or with a constant operand
    (``fn(x, constant)``; ``fn(constant, x)`` when ``reverse``).

    Args:
        constant: the other operand when it is not a tensor (a number), else None.
        reverse: the constant is the left operand.
    """

    fn = None

    def __init__(self, constant: Any = None, reverse: bool = False) -> None:
        super().__init__()
        self.constant = constant
        self.reverse = reverse

    def forward(self, x: Tensor, y: Any = None) -> Tensor:
        if y is None:
            y = self.constant
        a, b = (y, x) if self.reverse else (x, y)
        return type(self).fn(a, b)

    def extra_repr(self) -> str:
        if self.constant is None:
            return ""
        return f"constant={self.constant!r}" + (", reverse=True" if self.reverse else "")


class Add(TensorOp):
    """``x + y``."""

    fn = staticmethod(operator.add)


class Subtract(TensorOp):
    """``x - y``."""

    fn = staticmethod(operator.sub)


class Multiply(TensorOp):
    """``x * y``."""

    fn = staticmethod(operator.mul)


class TrueDivide(TensorOp):
    """``x / y``."""

    fn = staticmethod(operator.truediv)


class Power(TensorOp):
    """``x ** y``."""

    fn = staticmethod(operator.pow)


class Matmul(TensorOp):
    """``x @ y``."""

    fn = staticmethod(operator.matmul)


# The operator layers of KerasTensor's binary operators, by name.
BINARY = {
    "add": Add,
    "subtract": Subtract,
    "multiply": Multiply,
    "true_divide": TrueDivide,
    "power": Power,
    "matmul": Matmul,
}


class Negative(Module):
    """``-x``."""

    def forward(self, x: Tensor) -> Tensor:
        return -x


class GetItem(Module):
    """``x[key]`` (basic indexing: ints, slices, ``None``, ``...``).

    Args:
        key: the index.
    """

    def __init__(self, key: Any) -> None:
        super().__init__()
        self.key = key

    def forward(self, x: Tensor) -> Tensor:
        return x[self.key]

    def extra_repr(self) -> str:
        return f"key={self.key!r}"


class Reshape(Module):
    """``x.reshape(shape)`` (PyTorch semantics: the whole shape, ``-1`` inferred).

    Args:
        shape: the new shape, batch dimension included.
    """

    def __init__(self, shape: tuple) -> None:
        super().__init__()
        self.shape = tuple(shape)

    def forward(self, x: Tensor) -> Tensor:
        return x.reshape(self.shape)

    def extra_repr(self) -> str:
        return f"shape={self.shape}"
