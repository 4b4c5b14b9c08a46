"""Tensor's operators and op methods, attached by :func:`install_tensor_methods`.

``tensor.py`` sits below the ops and cannot import them; ``ops/__init__.py`` calls
:func:`install_tensor_methods` once its families are imported, with every function that
is also a method (``ops.TENSOR_METHODS``).
"""

from __future__ import annotations

from nnkit.autograd.ops import arithmetic as ar
from nnkit.autograd.ops import discrete as dc
from nnkit.autograd.ops import elementwise as ew
from nnkit.autograd.ops import indexing as ix
from nnkit.autograd.ops import special_extra as sx
from nnkit.autograd.ops._util import is_scalar
from nnkit.autograd.ops.inplace_math import add_, div_, mul_, sub_
from nnkit.autograd.ops.linalg import matmul
from nnkit.autograd.ops.shape import permute, transpose
from nnkit.autograd.tensor import Tensor

__all__ = ["install_tensor_methods"]


def install_tensor_methods(methods: dict) -> None:
    """Set each ``{name: function}`` of ``methods`` on Tensor, then the operators
    (``+``, ``@``, ``==``, ``x[i]``, ``+=``, ...) and the transposes ``T``/``mT``/``H``/``mH``."""
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    binary = {
        "add": ar.add,
        "sub": ar.sub,
        "mul": ar.mul,
        "truediv": ar.div,
        "floordiv": dc.floor_divide,
        "mod": dc.remainder,
        "pow": ar.pow,
        "matmul": matmul,
        "and": dc.bitwise_and,
        "or": dc.bitwise_or,
        "xor": dc.bitwise_xor,
        "lshift": sx.bitwise_left_shift,
        "rshift": sx.bitwise_right_shift,
    }
    for name, fn in binary.items():
        setattr(Tensor, f"__{name}__", fn)
        setattr(Tensor, f"__r{name}__", _reflected(fn))
    Tensor.__iadd__ = add_
    Tensor.__isub__ = sub_
    Tensor.__imul__ = mul_
    Tensor.__itruediv__ = div_
    Tensor.__neg__ = ar.neg
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = ew.abs
    Tensor.__invert__ = dc.bitwise_not
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(Tensor, f"__{name}__", _comparison(getattr(dc, name)))
    Tensor.__getitem__ = ix.getitem
    Tensor.__setitem__ = ix.setitem
    Tensor.T = property(lambda self: permute(self, tuple(range(self.ndim))[::-1]))
    Tensor.mT = property(lambda self: transpose(self, -2, -1))
    Tensor.H = property(_adjoint("H", (0, 2)))  # real tensors: the conjugate is a no-op
    Tensor.mH = property(_adjoint("mH", None))


def _adjoint(name, ndims):
    """``x.H`` (a matrix, or a 0-d tensor) / ``x.mH`` (matrices): the (batched) conjugate
    transpose, which for nnkit's real tensors is the transpose, as in torch."""

    def get(self):
        if self.ndim == 0:
            return self
        if (ndims is not None and self.ndim not in ndims) or self.ndim < 2:
            what = "matrices (2-D tensors)" if ndims else "matrices or batches of matrices"
            raise ValueError(f"tensor.{name} is only supported on {what}, got {self.ndim}-D")
        return transpose(self, -2, -1)

    return get


def _comparison(fn):
    def compare(self, other):
        if not (isinstance(other, Tensor) or is_scalar(other)):
            return NotImplemented
        return fn(self, other)

    compare.__name__ = fn.__name__
    return compare


def _reflected(fn):
    def reflected(self, other):
        return fn(other, self)

    reflected.__name__ = f"r{fn.__name__}"
    return reflected
