"""Discrete elementwise ops: comparisons, logic, bitwise, rounding, sign; the remainders.

Comparisons, logic, bitwise ops, ``floor``/``ceil``/``trunc``/``round``/``sign`` and
``floor_divide`` carry no gradient (boolean, integer or piecewise-constant results).
``remainder`` (``%``, Python's sign convention) and ``fmod`` (C's) are differentiable
almost everywhere: ``d/dx = 1`` and ``d/dy = -floor(x / y)`` (``-trunc(x / y)`` for
``fmod``), as in torch.
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import as_mat_pair
from nnkit.autograd.ops.shape import reduce_grad

__all__ = [
    "floor_divide",
    "remainder",
    "fmod",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "isnan",
    "isinf",
    "isfinite",
]


class _NonDiff(Op):
    """Ops whose result carries no gradient (integer, boolean or step-function outputs)."""

    method = ""

    @classmethod
    def forward(cls, ctx, *args):
        if len(args) == 1:
            return getattr(args[0], cls.method)()
        a, b = as_mat_pair(args[0], args[1], cls.method)
        return getattr(a, cls.method)(b)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("this op is not differentiable")

    @classmethod
    def call(cls, *args):
        with no_grad():
            return cls.apply(*args)


def _nondiff(method):
    cls = type(method.capitalize(), (_NonDiff,), {"method": method})
    cls.__module__ = __name__

    def fn(*args):
        return cls.call(*args)

    fn.__name__ = method
    fn.__doc__ = f"Elementwise ``{method}``; the result carries no gradient."
    return fn


eq, ne, lt, le, gt, ge = (_nondiff(m) for m in ("eq", "ne", "lt", "le", "gt", "ge"))
logical_and, logical_or, logical_xor = (
    _nondiff(m) for m in ("logical_and", "logical_or", "logical_xor")
)
logical_not = _nondiff("logical_not")
floor, ceil, trunc, sign = (_nondiff(m) for m in ("floor", "ceil", "trunc", "sign"))
isnan, isinf, isfinite = (_nondiff(m) for m in ("isnan", "isinf", "isfinite"))
floor_divide = _nondiff("floordiv")
_bitwise_and, _bitwise_or, _bitwise_xor = (
    _nondiff(m) for m in ("bitwise_and", "bitwise_or", "bitwise_xor")
)
_invert = _nondiff("invert")


def round(input, decimals: int = 0):
    """Round half to even; the result carries no gradient."""
    with no_grad():
        return _Round.apply(input, decimals)


class _Round(_NonDiff):
    @staticmethod
    def forward(ctx, x, decimals):
        return x.round(decimals)


def bitwise_and(input, other):
    """``&``: logical and for booleans, bitwise and for integers."""
    return _bitwise_and(input, other)


def bitwise_or(input, other):
    """``|``: logical or for booleans, bitwise or for integers."""
    return _bitwise_or(input, other)


def bitwise_xor(input, other):
    return _bitwise_xor(input, other)


def bitwise_not(input):
    """``~``: logical not for booleans, bitwise not for integers."""
    if input._impl.data.dtype.kind == "f":
        raise TypeError("bitwise_not (~): not supported for floating point tensors")
    return _invert(input)


# ------------------------------------------------------------------ remainders
class _Remainder(Op):
    """``x - q(x / y) * y`` with ``q`` = floor (``remainder``) or trunc (``fmod``)."""

    method = ""

    @classmethod
    def forward(cls, ctx, a, b):
        a, b = as_mat_pair(a, b, cls.method)
        if ctx.needs_input_grad:  # skipped when no graph is recorded
            ctx.meta = ((a.shape, a.dtype), (b.shape, b.dtype))
            ctx.save_for_backward(a, b)
        return getattr(a, cls.method)(b)

    @classmethod
    def backward(cls, ctx, grad_output):
        n = ctx.needs_input_grad
        ga = gb = None
        if n[0]:
            ga = reduce_grad(grad_output, ctx.meta[0])
        if n[1]:
            a, b = ctx.saved_tensors
            with no_grad():
                q = (floor if cls.method == "remainder" else trunc)(a / b)
            gb = reduce_grad(-grad_output * q, ctx.meta[1])
        return ga, gb


class Remainder(_Remainder):
    method = "remainder"


class Fmod(_Remainder):
    method = "fmod"


def remainder(input, other):
    """``input % other``: the remainder with the sign of ``other`` (Python's, torch's).

    Either operand may be a Python number. Differentiable in both (see the module
    docstring); the gradient jumps where ``input / other`` is an integer.
    """
    return Remainder.apply(input, other)


def fmod(input, other):
    """The remainder of ``input / other`` truncated towards 0 (sign of ``input``, as C)."""
    return Fmod.apply(input, other)
