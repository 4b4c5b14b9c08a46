"""Discrete elementwise ops: comparisons, logic, bitwise, rounding, sign; the remainders.

Comparisons, logic, bitwise ops, ``floor``/``ceil``/``trunc``/``round``/``sign`` and
``floor_divide`` carry no gradient (boolean, integer or piecewise-constant results).
``remainder`` (``%``, Python's sign convention) and ``fmod`` (C's) are differentiable
almost everywhere: ``d/dx = 1`` and ``d/dy = -floor(x / y)`` (``-trunc(x / y)`` for
``fmod``), as in torch.
"""

from __future__ import annotations

import inspect

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
        if cls.method == "floordiv":
            check_int_divisor(a, b, "floor_divide")
        return getattr(a, cls.method)(b)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("this op is not differentiable")

    @classmethod
    def call(cls, *args):
        with no_grad():
            return cls.apply(*args)


def check_int_divisor(a, b, name):
    """As PyTorch: an integer division (or remainder) by zero raises; NumPy would give 0
    with a RuntimeWarning. ``a`` and ``b`` are the operands' Mats."""
    if a.kind in "biu" and b.kind in "biu" and a.size and not b.all().item():
        raise RuntimeError(
            f"{name}: ZeroDivisionError: integer division by zero (argument 'other' holds 0)"
        )


def _nondiff(method, doc="", *, name=None, unary=False):
    """The public function of a non-differentiable op, with its docstring and signature."""
    cls = type(method.capitalize(), (_NonDiff,), {"method": method})
    cls.__module__ = __name__

    def fn(*args):
        return cls.call(*args)

    fn.__name__ = fn.__qualname__ = name or method
    fn.__doc__ = doc
    params = ("input",) if unary else ("input", "other")
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in params]
    )
    return fn


_NO_GRAD = """Not differentiable: the result never requires grad (PyTorch's result does, with
    a zero gradient)."""


def _cmp(name, sym, out):
    return _nondiff(
        name,
        f"""``input {sym} other`` elementwise, as a bool tensor (``torch.{name}``).

    Args:
        input: a tensor, or a Python number when ``other`` is a tensor.
        other: a tensor or a Python number; the two broadcast, and an integer operand
            meeting a floating one compares as floating. NaN compares unequal to all.

    Returns:
        A bool tensor of the broadcast shape; it carries no gradient.

    Example:
        >>> nnkit.{name}(nnkit.tensor([1, 2, 3]), 2)
        {out}
    """,
    )


eq = _cmp("eq", "==", "tensor([False,  True, False])")
ne = _cmp("ne", "!=", "tensor([ True, False,  True])")
lt = _cmp("lt", "<", "tensor([ True, False, False])")
le = _cmp("le", "<=", "tensor([ True,  True, False])")
gt = _cmp("gt", ">", "tensor([False, False,  True])")
ge = _cmp("ge", ">=", "tensor([False,  True,  True])")


def _logical(name, what, out):
    return _nondiff(
        name,
        f"""Elementwise logical {what} (``torch.{name}``): nonzero counts as True.

    Args:
        input: a tensor of any dtype.
        other: a tensor or a Python number, broadcast against ``input``.

    Returns:
        A bool tensor of the broadcast shape; it carries no gradient.

    Example:
        >>> nnkit.{name}(nnkit.tensor([0, 1, 2]), nnkit.tensor([0.0, 0.0, 1.0]))
        {out}
    """,
    )


logical_and = _logical("logical_and", "and", "tensor([False, False,  True])")
logical_or = _logical("logical_or", "or", "tensor([False,  True,  True])")
logical_xor = _logical("logical_xor", "exclusive or", "tensor([False,  True, False])")
logical_not = _nondiff(
    "logical_not",
    """Elementwise logical not (``torch.logical_not``): True where ``input`` is zero.

    Args:
        input: a tensor of any dtype.

    Returns:
        A bool tensor of ``input``'s shape; it carries no gradient.

    Example:
        >>> nnkit.logical_not(nnkit.tensor([0.0, 2.0]))
        tensor([ True, False])
    """,
    unary=True,
)


def _rounding(name, what, out):
    return _nondiff(
        name,
        f"""{what}, elementwise (``torch.{name}``).

    Args:
        input: the tensor; integer tensors come back unchanged (same dtype).

    Returns:
        A tensor of ``input``'s shape and dtype, holding whole numbers.

    {_NO_GRAD}

    Example:
        >>> nnkit.{name}(nnkit.tensor([-1.5, 1.5]))
        {out}
    """,
        unary=True,
    )


floor = _rounding("floor", "The largest integer ``<= input``", "tensor([-2.0,  1.0])")
ceil = _rounding("ceil", "The smallest integer ``>= input``", "tensor([-1.0,  2.0])")
trunc = _rounding("trunc", "``input`` rounded towards zero", "tensor([-1.0,  1.0])")
sign = _nondiff(
    "sign",
    f"""The sign of ``input``, elementwise: -1, 0 or 1 (``torch.sign``); NaN gives 0, as in
    PyTorch.

    Args:
        input: a floating or integer tensor (bool is not supported; PyTorch returns it).

    Returns:
        A tensor of ``input``'s shape and dtype.

    {_NO_GRAD}

    Example:
        >>> nnkit.sign(nnkit.tensor([-2.0, 0.0, 3.0]))
        tensor([-1.0,  0.0,  1.0])
    """,
    unary=True,
)


def _isclass(name, what, out):
    return _nondiff(
        name,
        f"""Where ``input`` is {what}, elementwise (``torch.{name}``).

    Args:
        input: a tensor; integer and bool elements are all finite.

    Returns:
        A bool tensor of ``input``'s shape; it carries no gradient.

    Example:
        >>> nnkit.{name}(nnkit.tensor([1.0, float("nan"), float("-inf")]))
        {out}
    """,
        unary=True,
    )


isnan = _isclass("isnan", "NaN", "tensor([False,  True, False])")
isinf = _isclass("isinf", "+inf or -inf", "tensor([False, False,  True])")
isfinite = _isclass("isfinite", "neither infinite nor NaN", "tensor([ True, False, False])")
floor_divide = _nondiff(
    "floordiv",
    """``input // other``: the quotient rounded down, ``floor(input / other)``, elementwise
    (``torch.floor_divide``, which rounds down too since PyTorch 1.13).

    Args:
        input: a tensor, or a Python number when ``other`` is a tensor.
        other: a tensor or a Python number; they broadcast, an integer operand meeting a
            floating one is converted. A float division by 0 gives ``+-inf`` or NaN.

    Returns:
        A tensor of the broadcast shape and promoted dtype.

    Raises:
        RuntimeError: ``ZeroDivisionError`` for an integer division by 0, as PyTorch.

    Not differentiable: the result never requires grad (PyTorch's does, but its
    backward raises).

    Example:
        >>> nnkit.floor_divide(nnkit.tensor([7, -7]), 2)
        tensor([ 3, -4])
    """,
    name="floor_divide",
)
_bitwise_and, _bitwise_or, _bitwise_xor = (
    _nondiff(m) for m in ("bitwise_and", "bitwise_or", "bitwise_xor")
)
_invert = _nondiff("invert", unary=True)


def round(input, decimals: int = 0):
    """Round ``input`` to ``decimals`` decimal places, halves to even (``torch.round``).

    Args:
        input: the tensor; integer tensors come back unchanged for ``decimals >= 0``.
        decimals: the number of decimals to keep (default 0); negative rounds to tens,
            hundreds, ... (PyTorch rejects integer inputs with ``decimals``).

    Returns:
        A tensor of ``input``'s shape and dtype.

    Not differentiable: the result never requires grad (PyTorch's result does, with a
    zero gradient).

    Example:
        >>> nnkit.round(nnkit.tensor([0.5, 1.5, 2.5, -0.5]))
        tensor([ 0.0,  2.0,  2.0, -0.0])
        >>> nnkit.round(nnkit.tensor([1.2345, 2.5]), decimals=2)
        tensor([1.2300, 2.5000])
    """
    with no_grad():
        return _Round.apply(input, decimals)


class _Round(_NonDiff):
    @staticmethod
    def forward(ctx, x, decimals):
        return x.round(decimals)


def bitwise_and(input, other):
    """``input & other`` elementwise (``torch.bitwise_and``): bitwise for integers, logical
    for bools.

    Args:
        input: an integer or bool tensor (floating tensors raise ``TypeError``).
        other: an integer or bool tensor or Python int, broadcast against ``input``.

    Returns:
        A tensor of the broadcast shape and promoted dtype; it carries no gradient.

    Example:
        >>> nnkit.bitwise_and(nnkit.tensor([12, 5]), 10)
        tensor([8, 0])
    """
    return _bitwise_and(input, other)


def bitwise_or(input, other):
    """``input | other`` elementwise (``torch.bitwise_or``): bitwise for integers, logical
    for bools.

    Args:
        input: an integer or bool tensor (floating tensors raise ``TypeError``).
        other: an integer or bool tensor or Python int, broadcast against ``input``.

    Returns:
        A tensor of the broadcast shape and promoted dtype; it carries no gradient.

    Example:
        >>> nnkit.bitwise_or(nnkit.tensor([12, 5]), 10)
        tensor([14, 15])
    """
    return _bitwise_or(input, other)


def bitwise_xor(input, other):
    """``input ^ other`` elementwise (``torch.bitwise_xor``): bitwise exclusive or for
    integers, logical for bools.

    Args:
        input: an integer or bool tensor (floating tensors raise ``TypeError``).
        other: an integer or bool tensor or Python int, broadcast against ``input``.

    Returns:
        A tensor of the broadcast shape and promoted dtype; it carries no gradient.

    Example:
        >>> nnkit.bitwise_xor(nnkit.tensor([12, 5]), 10)
        tensor([ 6, 15])
    """
    return _bitwise_xor(input, other)


def bitwise_not(input):
    """``~input`` elementwise (``torch.bitwise_not``): ``-input - 1`` for integers (two's
    complement), logical not for bools.

    Args:
        input: an integer or bool tensor.

    Returns:
        A tensor of ``input``'s shape and dtype; it carries no gradient.

    Raises:
        TypeError: for a floating tensor (PyTorch raises RuntimeError).

    Example:
        >>> nnkit.bitwise_not(nnkit.tensor([0, 5])), ~nnkit.tensor([True, False])
        (tensor([-1, -6]), tensor([False,  True]))
    """
    if input._impl.data.dtype.kind == "f":
        raise TypeError("bitwise_not (~): not supported for floating point tensors")
    return _invert(input)


# ------------------------------------------------------------------ remainders
class _Remainder(Op):
    """``x - q(x / y) * y`` with ``q`` = floor (``remainder``) or trunc (``fmod``)."""

    method = ""

    @classmethod
    def forward(cls, ctx, a, b):
        a, b = as_mat_pair(a, b, cls.method, ctx.needs_input_grad)
        check_int_divisor(a, b, cls.method)
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
    """``input % other``: ``input - floor(input / other) * other``, the remainder with the
    sign of ``other`` (Python's convention; ``torch.remainder``).

    Args:
        input: a tensor, or a Python number when ``other`` is a tensor.
        other: a tensor or a Python number; they broadcast and promote as ``+``.

    Returns:
        A tensor of the broadcast shape. A float remainder by 0 is NaN.

    Raises:
        RuntimeError: ``ZeroDivisionError`` for an integer remainder by 0, as PyTorch.

    Gradient: ``1`` for ``input`` and ``-floor(input / other)`` for ``other``, as in
    PyTorch; it jumps where ``input / other`` is an integer.

    Example:
        >>> nnkit.remainder(nnkit.tensor([-7.0, 7.0]), 2.5)
        tensor([0.5000, 2.0000])
    """
    return Remainder.apply(input, other)


def fmod(input, other):
    """``input - trunc(input / other) * other``: the remainder with the sign of ``input``
    (C's ``fmod``; ``torch.fmod``).

    Args:
        input: a tensor, or a Python number when ``other`` is a tensor.
        other: a tensor or a Python number; they broadcast and promote as ``+``.

    Returns:
        A tensor of the broadcast shape. A float ``fmod`` by 0 is NaN.

    Raises:
        RuntimeError: ``ZeroDivisionError`` for an integer ``fmod`` by 0, as PyTorch.

    Gradient: ``1`` for ``input`` and ``-trunc(input / other)`` for ``other``, as in
    PyTorch; it jumps where ``input / other`` is an integer.

    Example:
        >>> nnkit.fmod(nnkit.tensor([-7.0, 7.0]), 2.5)
        tensor([-2.0,  2.0])
    """
    return Fmod.apply(input, other)
