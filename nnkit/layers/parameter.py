"""``Parameter``, the Tensor that is a module weight, and ``NotBuiltError``."""

from __future__ import annotations

from nnkit.autograd.factories import as_tensor, empty
from nnkit.autograd.tensor import Tensor, TensorImpl

__all__ = ["Parameter", "NotBuiltError"]


class NotBuiltError(RuntimeError):
    """Raised when the weights of a lazily built layer are needed before its first call."""


class Parameter(Tensor):
    """A Tensor that is a module weight: a leaf that requires grad by default.

    Assigning a Parameter as a Module attribute registers it, so that it appears in
    ``parameters()`` and ``state_dict()``. It shares memory with ``data``.

    Args:
        data: a Tensor (or anything :func:`nnkit.as_tensor` accepts); empty if None.
        requires_grad: whether the parameter records gradients.

    Example:
        >>> w = Parameter(nnkit.randn(3, 4))
        >>> w.is_leaf, w.requires_grad
        (True, True)
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad: bool = True) -> "Parameter":
        data = empty(0) if data is None else as_tensor(data)
        p = object.__new__(cls)
        p._impl = TensorImpl(data._impl.data, False)
        p.requires_grad_(requires_grad)
        return p

    def __init__(self, data=None, requires_grad: bool = True) -> None:
        pass  # everything happens in __new__; Tensor.__init__ would copy the data

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> "Parameter":
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.detach().clone(), self.requires_grad)
        return memo[id(self)]
