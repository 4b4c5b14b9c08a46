"""Elementwise arithmetic: ``add``, ``sub``, ``mul``, ``div``, ``pow``, ``neg``, ``square``,
``lerp``, ``addcmul``, ``addcdiv`` (the Tensor operators ``+ - * / **`` and unary ``-``).

Binary ops broadcast NumPy-style; each backward ends with :func:`sum_to` so the
gradient has its input's shape (and is cast back to its input's dtype). A Python
scalar operand takes the tensor's dtype (a float scalar never upcasts float32); so does
a 0-d tensor of a dimensioned operand's category (float32 tensor + float64 0-d tensor
is float32, uint8 tensor + int64 0-d tensor is uint8), as PyTorch's ``result_type``.
"""

from __future__ import annotations

from nnkit.autograd.function import NO_GRAPH, Op
from nnkit.autograd.grad_mode import no_grad as _no_grad
from nnkit.autograd.ops._util import as_mat_pair, float_mat, is_scalar, result_dtype
from nnkit.autograd.ops.discrete import check_int_divisor
from nnkit.autograd.ops.elementwise import log
from nnkit.autograd.ops.selection import _meta, where
from nnkit.autograd.ops.shape import reduce_grad as _reduce
from nnkit.autograd.ops.shape import reduce_grad_mat as _reduce_mat
from nnkit.autograd.tensor import Tensor
from nnkit.backends.division_kernels import div_rounded

__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "true_divide",
    "pow",
    "neg",
    "square",
    "lerp",
    "addcmul",
    "addcdiv",
]


# ---------------------------------------------------------------- arithmetic
class Add(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "add", ctx.needs_input_grad)
        if ctx.needs_input_grad:  # a graph is recorded (inline _meta: a hot op)
            ctx.meta = ((a.shape, a.dtype), (b.shape, b.dtype))
        return a.add(b)

    @staticmethod
    def backward(ctx, grad_output):
        n = ctx.needs_input_grad
        return (
            _reduce(grad_output, ctx.meta[0]) if n[0] else None,
            _reduce(grad_output, ctx.meta[1]) if n[1] else None,
        )

    @staticmethod
    def backward_mat(ctx, g):
        n = ctx.needs_input_grad
        ma, mb = ctx.meta
        return (
            (g if g.shape == ma[0] and g.dtype == ma[1] else _reduce_mat(g, ma)) if n[0] else None,
            (g if g.shape == mb[0] and g.dtype == mb[1] else _reduce_mat(g, mb)) if n[1] else None,
        )


def add(input, other, *, alpha=1):
    """Elementwise sum: ``out = input + alpha * other``, broadcasting (the ``+`` operator).

    Args:
        input: a tensor (or a number, when ``other`` is a tensor).
        other: a tensor or a Python number; a number takes the tensor's dtype unless it is
            a float added to an integer tensor (then the default float dtype), and so does
            a 0-d tensor of a dimensioned tensor's category (bool < integer < floating).
        alpha: the multiplier of ``other`` (keyword-only, default 1).

    Returns:
        A tensor of the broadcast shape and the promoted dtype.

    Gradient: ``g`` for ``input`` and ``alpha * g`` for ``other``, each summed back to its
    operand's shape.

    Raises:
        ShapeError: if the shapes do not broadcast (the message names both; a subclass of
            ``RuntimeError``, which PyTorch raises).

    Example:
        >>> nnkit.add(nnkit.tensor([1.0, 2.0]), nnkit.tensor([10.0, 20.0]), alpha=2)
        tensor([21.0, 42.0])
    """
    if alpha != 1:
        other = other * alpha if is_scalar(other) else _scaled(input, other, alpha)
    return Add.apply(input, other)


def _scaled(input, other, alpha):
    """``alpha * other`` for ``add``/``sub``, in the dtype of the sum (as torch's fused
    ``alpha``: a bool or 0-d ``other`` does not promote the result through the product)."""
    if isinstance(input, Tensor):
        dt = result_dtype(input._impl.data, other._impl.data)
        if dt != other._impl.data.dtype:
            other = other.to(dtype=dt)
    return mul(other, alpha)


class Sub(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "sub", ctx.needs_input_grad)
        if ctx.needs_input_grad:  # a graph is recorded (inline _meta: a hot op)
            ctx.meta = ((a.shape, a.dtype), (b.shape, b.dtype))
        return a.sub(b)

    @staticmethod
    def backward(ctx, grad_output):
        n = ctx.needs_input_grad
        return (
            _reduce(grad_output, ctx.meta[0]) if n[0] else None,
            _reduce(-grad_output, ctx.meta[1]) if n[1] else None,
        )

    @staticmethod
    def backward_mat(ctx, g):
        n = ctx.needs_input_grad
        ma, mb = ctx.meta
        if n[1]:
            gb = g.neg()
            if gb.shape != mb[0] or gb.dtype != mb[1]:
                gb = _reduce_mat(gb, mb)
        else:
            gb = None
        return (
            (g if g.shape == ma[0] and g.dtype == ma[1] else _reduce_mat(g, ma)) if n[0] else None,
            gb,
        )


def sub(input, other, *, alpha=1):
    """Elementwise difference: ``out = input - alpha * other``, broadcasting (``-``).

    Args:
        input: a tensor (or a number, when ``other`` is a tensor).
        other: a tensor or a Python number (scalar dtype rules as :func:`add`).
        alpha: the multiplier of ``other`` (keyword-only, default 1).

    Returns:
        A tensor of the broadcast shape and the promoted dtype.

    Gradient: ``g`` for ``input`` and ``-alpha * g`` for ``other``, summed to each shape.

    Raises:
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.sub(nnkit.tensor([1.0, 2.0]), nnkit.tensor(1.0), alpha=3)
        tensor([-2.0, -1.0])
    """
    if alpha != 1:
        other = other * alpha if is_scalar(other) else _scaled(input, other, alpha)
    return Sub.apply(input, other)


class Mul(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "mul", ctx.needs_input_grad)
        if ctx.needs_input_grad:  # a graph is recorded (inline _meta: a hot op)
            ctx.meta = ((a.shape, a.dtype), (b.shape, b.dtype))
            ctx.save_for_backward(a, b)
        return a.mul(b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        n = ctx.needs_input_grad
        return (
            _reduce(grad_output * b, ctx.meta[0]) if n[0] else None,
            _reduce(grad_output * a, ctx.meta[1]) if n[1] else None,
        )

    @staticmethod
    def backward_mat(ctx, g):
        a, b = ctx.saved_mats
        n = ctx.needs_input_grad
        ma, mb = ctx.meta
        if n[0]:  # g * b as Mul's forward computes it (as_mat_pair, inline when trivial)
            ga = g.mul(b) if g.dtype is b.dtype else Mul.forward(NO_GRAPH, g, b)
            if ga.shape != ma[0] or ga.dtype != ma[1]:
                ga = _reduce_mat(ga, ma)
        else:
            ga = None
        if n[1]:
            gb = g.mul(a) if g.dtype is a.dtype else Mul.forward(NO_GRAPH, g, a)
            if gb.shape != mb[0] or gb.dtype != mb[1]:
                gb = _reduce_mat(gb, mb)
        else:
            gb = None
        return ga, gb


def mul(input, other):
    """Elementwise product: ``out = input * other``, broadcasting (the ``*`` operator).

    Args:
        input: a tensor (or a number, when ``other`` is a tensor).
        other: a tensor or a Python number (scalar dtype rules as :func:`add`); two bool
            tensors give a bool tensor (logical and).

    Returns:
        A tensor of the broadcast shape and the promoted dtype.

    Gradient: ``g * other`` for ``input`` and ``g * input`` for ``other``, summed to each
    operand's shape.

    Raises:
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.mul(nnkit.tensor([1, 2]), 0.5)
        tensor([0.5000, 1.0000])
    """
    return Mul.apply(input, other)


class Div(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "div", ctx.needs_input_grad)
        if a.dtype.kind != "f" and b.dtype.kind != "f":
            a, b = float_mat(a), float_mat(b)
        if ctx.needs_input_grad:  # a graph is recorded (inline _meta: a hot op)
            ctx.meta = ((a.shape, a.dtype), (b.shape, b.dtype))
            ctx.save_for_backward(a, b)
        return a.div(b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        n = ctx.needs_input_grad
        ga = grad_output / b
        return (
            _reduce(ga, ctx.meta[0]) if n[0] else None,
            _reduce(-ga * a / b, ctx.meta[1]) if n[1] else None,
        )


class DivRounded(Op):
    """``div`` with ``rounding_mode='trunc'`` or ``'floor'``: a piecewise-constant result
    whose gradient is zero for both operands, as torch's."""

    @staticmethod
    def forward(ctx, a, b, mode):
        a, b = as_mat_pair(a, b, "div", ctx.needs_input_grad)
        check_int_divisor(a, b, "div")
        _meta(a, b, ctx)
        return div_rounded(a, b, mode)

    @staticmethod
    def backward(ctx, grad_output):
        return tuple(
            grad_output.new_zeros(meta[0], dtype=meta[1]) if need else None
            for meta, need in zip(ctx.meta, ctx.needs_input_grad)
        ) + (None,)


def div(input, other, *, rounding_mode=None):
    """Elementwise quotient ``input / other``, broadcasting (the ``/`` operator).

    ``true_divide`` is the same function.

    Args:
        input: a tensor (or a number, when ``other`` is a tensor).
        other: a tensor or a Python number; division by 0 gives ``inf``/NaN as IEEE.
        rounding_mode: ``None`` (true division: two integer operands give the default
            float dtype), ``'floor'`` (rounded down, as :func:`floor_divide`) or
            ``'trunc'`` (rounded toward 0). The rounded modes keep the promoted dtype, as
            PyTorch: integer operands give their exact integer quotient (large int64
            values included), a float operand a float result.

    Returns:
        A tensor of the broadcast shape.

    Gradient: ``g / other`` and ``-g * input / other**2`` for true division. The rounded
    modes record a zero gradient for both operands (their result requires grad where an
    operand does), as in PyTorch.

    Raises:
        ShapeError: if the shapes do not broadcast.
        RuntimeError: for a rounded integer division by 0, as PyTorch.
        TypeError: for a rounded division of two bool tensors (PyTorch raises
            ``NotImplementedError``).
        ValueError: for another ``rounding_mode`` (PyTorch raises ``RuntimeError``).

    Example:
        >>> nnkit.div(nnkit.tensor([7, -7]), 2)
        tensor([ 3.5000, -3.5000])
        >>> nnkit.div(nnkit.tensor([7, -7]), 2, rounding_mode="floor")
        tensor([ 3, -4])
        >>> nnkit.div(nnkit.tensor([7, -7]), 2, rounding_mode="trunc")
        tensor([ 3, -3])
    """
    if rounding_mode is None:
        return Div.apply(input, other)
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(
            f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
        )
    return DivRounded.apply(input, other, rounding_mode)


true_divide = div


class Pow(Op):
    @staticmethod
    def forward(ctx, a, b):
        e = b if is_scalar(b) else None  # a Python exponent: its gradient is plain maths
        a, b = as_mat_pair(a, b, "pow", ctx.needs_input_grad)
        _meta(a, b, ctx)
        out = a.pow(b)
        ctx.e = e
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        # torch's conventions: d/da is 0 where b == 0 (also at 0**0); d/db is 0 where
        # a == 0 and b >= 0, -inf where a == 0 and b < 0, NaN where a < 0.
        a, b, out = ctx.saved_tensors
        n = ctx.needs_input_grad
        ga = gb = None
        if n[0]:
            e = ctx.e
            if e is not None:
                ga = (
                    grad_output * e * pow(a, e - 1)
                    if e != 0
                    else grad_output.new_zeros(grad_output.shape)
                )
            else:  # b * a**(b-1), with the exponent 1 where b == 0 (no 0 * inf)
                ga = grad_output * b * pow(a, where(b == 0, 1.0, b) - 1)
            ga = _reduce(ga, ctx.meta[0])
        if n[1]:
            pos = a > 0
            lg = where(pos, out, 0.0) * log(where(pos, a, 1.0))
            with _no_grad():
                edge = where(a == 0, where(b >= 0, 0.0, float("-inf")), float("nan"))
            gb = _reduce(grad_output * where(pos, lg, edge.to(lg.dtype)), ctx.meta[1])
        return ga, gb


def pow(input, exponent):
    """Elementwise power ``input ** exponent``, broadcasting (the ``**`` operator).

    Args:
        input: a tensor, or a number when ``exponent`` is a tensor.
        exponent: a tensor or a number. An integer tensor to a negative integer tensor
            power gives PyTorch's integer results (1 for base 1, +-1 for base -1, else 0).
            A negative base to a fractional power gives NaN; ``0 ** 0`` is 1.

    Returns:
        A tensor of the broadcast shape and the promoted dtype (an integer tensor to a
        float exponent gives the default float dtype).

    Gradient (PyTorch's conventions): ``exponent * input**(exponent - 1)`` for
    ``input``, 0 where ``exponent == 0`` (also at ``0 ** 0``); ``out * log(input)`` for
    ``exponent``, which is 0 where ``input == 0`` and ``exponent >= 0``, ``-inf`` where
    ``input == 0`` and ``exponent < 0``, NaN where ``input < 0``.

    Raises:
        RuntimeError: for an integer tensor to a negative Python int power, as in PyTorch.

    Example:
        >>> nnkit.pow(nnkit.tensor([2, 3]), 2)
        tensor([4, 9])
        >>> nnkit.pow(nnkit.tensor([1.0, 2.0]), nnkit.tensor([3.0, 0.5]))
        tensor([1.0000, 1.4142])
    """
    if (
        isinstance(exponent, int)
        and exponent < 0
        and not isinstance(exponent, bool)
        and _is_integer_tensor(input)
    ):
        raise RuntimeError(
            "pow: integers to negative integer powers are not allowed "
            f"(exponent {exponent}); use a float exponent such as "
            f"{float(exponent)}"
        )
    return Pow.apply(input, exponent)


def _is_integer_tensor(x) -> bool:
    return isinstance(x, Tensor) and x._impl.data.dtype.kind in "iub"


class Neg(Op):
    @staticmethod
    def forward(ctx, x):
        return x.neg()

    @staticmethod
    def backward(ctx, grad_output):
        return -grad_output

    @staticmethod
    def backward_mat(ctx, g):
        return g.neg()


def neg(input):
    """Elementwise negation ``-input`` (the unary ``-`` operator).

    Args:
        input: the input tensor; the dtype is kept.

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: ``-g``.

    Example:
        >>> nnkit.neg(nnkit.tensor([1, -2]))
        tensor([-1,  2])
    """
    return Neg.apply(input)


def square(input):
    """Elementwise square ``input * input``.

    Args:
        input: the input tensor; the dtype is kept (integers stay integer, as in PyTorch).

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: ``2 * input * g`` (through :func:`mul`).

    Example:
        >>> nnkit.square(nnkit.tensor([2, -3]))
        tensor([4, 9])
    """
    return mul(input, input)


def lerp(input, end, weight):
    """Linear interpolation ``input + weight * (end - input)``, broadcasting.

    Args:
        input: the start tensor.
        end: the end tensor.
        weight: a number or a tensor (0 gives ``input``, 1 gives ``end``). Deviation from
            PyTorch, which refuses integer tensors: integer ``input``/``end`` with a float
            weight give the default float dtype.

    Returns:
        A tensor of the broadcast shape.

    Gradient: ``(1 - weight) * g`` for ``input``, ``weight * g`` for ``end`` and
    ``(end - input) * g`` for a tensor ``weight`` (a composition of differentiable ops).

    Example:
        >>> nnkit.lerp(nnkit.tensor([0.0, 10.0]), nnkit.tensor([10.0, 20.0]), 0.25)
        tensor([ 2.5000, 12.5000])
    """
    return input + (end - input) * weight


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``, elementwise with broadcasting.

    Args:
        input: the tensor added to.
        tensor1: the first factor.
        tensor2: the second factor.
        value: the scale of the product (keyword-only, default 1).

    Returns:
        A tensor of the broadcast shape and the promoted dtype (integers stay integer).

    Gradient: ``g``, ``value * tensor2 * g`` and ``value * tensor1 * g`` (composed ops).

    Example:
        >>> nnkit.addcmul(nnkit.tensor([1.0, 1.0]), nnkit.tensor([2.0, 3.0]),
        ...               nnkit.tensor([4.0, 5.0]), value=0.5)
        tensor([5.0000, 8.5000])
    """
    return input + tensor1 * tensor2 * value


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``, elementwise with broadcasting.

    Args:
        input: the tensor added to.
        tensor1: the numerator.
        tensor2: the denominator.
        value: the scale of the quotient (keyword-only, default 1).

    Returns:
        A tensor of the broadcast shape. Deviation from PyTorch, which refuses integer
        ``tensor1``/``tensor2``: they are true-divided (the default float dtype).

    Gradient: ``g``, ``value * g / tensor2`` and ``-value * g * tensor1 / tensor2**2``
    (composed ops).

    Example:
        >>> nnkit.addcdiv(nnkit.tensor([1.0, 1.0]), nnkit.tensor([2.0, 3.0]),
        ...               nnkit.tensor([4.0, 5.0]), value=2)
        tensor([2.0000, 2.2000])
    """
    return input + tensor1 / tensor2 * value
