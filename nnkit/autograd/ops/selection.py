"""Elementwise selection: ``where``, ``masked_fill``, ``clamp``/``clip``, ``clamp_min``,
``clamp_max``, ``maximum``, ``minimum``.

Binary ops broadcast NumPy-style; each backward ends with :func:`sum_to` so the gradient
has its input's shape. Where two inputs tie (``maximum``/``minimum``) the gradient is
split evenly between them, as in PyTorch; ``clamp`` gives a tie to ``input`` (PyTorch's
rule for its bounds, tensors or numbers).
"""

from __future__ import annotations

from nnkit.autograd.factories import tensor
from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import as_mat_pair, check_tensor, result_dtype
from nnkit.autograd.ops.discrete import logical_and, logical_or
from nnkit.autograd.ops.shape import reduce_grad as _reduce
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.backends.mat import ArrayMat

__all__ = ["clamp", "clip", "clamp_min", "clamp_max", "maximum", "minimum", "where", "masked_fill"]


def _meta(a, b, ctx):
    if ctx.needs_input_grad:  # skipped when no graph is recorded
        ctx.meta = ((a.shape, a.dtype), (b.shape, b.dtype))


class Clamp(Op):
    strict = False  # True: the gradient is 0 at the bounds too (hardtanh)

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clip(lo, hi)

    @classmethod
    def backward(cls, ctx, grad_output):
        (x,) = ctx.saved_tensors
        mask = None
        if ctx.lo is not None:
            mask = x > ctx.lo if cls.strict else x >= ctx.lo
        if ctx.hi is not None:
            upper = x < ctx.hi if cls.strict else x <= ctx.hi
            mask = upper if mask is None else logical_and(mask, upper)
        # where, not a product: a NaN gradient stays out of the clamped places (torch)
        return where(mask, grad_output, 0.0), None, None


class ClampTensor(Op):
    """``clamp`` with a tensor bound (torch's ``clamp.Tensor``): ``min(max(x, lo), hi)``
    with NaN from any operand propagating; either bound may be None or a number."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        dt = result_dtype(x, lo, hi)  # torch's, over the three (0-d bounds included)
        out, lo_m, hi_m = (
            m.astype(dt) if isinstance(m, ArrayMat) and m.dtype != dt else m for m in (x, lo, hi)
        )
        if lo is not None:
            out, lo_m = as_mat_pair(out, lo_m, "clamp")
            out = out.maximum(lo_m)
        if hi is not None:
            out, hi_m = as_mat_pair(out, hi_m, "clamp")
            out = out.minimum(hi_m)
        if ctx.needs_input_grad:
            args = (x, lo, hi)
            ctx.meta = [(m.shape, m.dtype) if isinstance(m, ArrayMat) else None for m in args]
            ctx.numbers = [None if isinstance(m, ArrayMat) else m for m in args]
            ctx.save_for_backward(*(m if isinstance(m, ArrayMat) else None for m in args))
        return out

    @staticmethod
    def backward(ctx, grad_output):
        # torch's clamp_backward_min_max: x keeps the gradient where lo <= x <= hi (ties
        # included), a bound takes it where it is the result; NaN anywhere gives 0 to all
        x, lo, hi = (n if t is None else t for t, n in zip(ctx.saved_tensors, ctx.numbers))
        if lo is None:
            masks = (x <= hi, None, x > hi)
        elif hi is None:
            masks = (x >= lo, x < lo, None)
        else:
            masks = (
                logical_and(x >= lo, x <= hi),
                logical_and(x < lo, lo < hi),
                logical_or(x > hi, hi < lo),
            )
        return tuple(
            _reduce(where(m, grad_output, 0.0), meta) if need else None
            for m, meta, need in zip(masks, ctx.meta, ctx.needs_input_grad)
        )


def clamp(input, min=None, max=None):
    """Clamp every element into ``[min, max]``: ``out = min(max(input, min), max)``.

    ``clip`` is the same function.

    Args:
        input: the input tensor.
        min: the lower bound: a number, a tensor (broadcasting) or None (no lower bound).
            Unlike PyTorch, one bound may be a number while the other is a tensor.
        max: the upper bound: a number, a tensor or None. Where ``min > max`` the result
            is ``max``, as in PyTorch. An integer ``input`` with a float number bound gives
            the default float dtype, a tensor bound promotes as :func:`maximum`; NaN in
            ``input`` or in a tensor bound gives NaN.

    Returns:
        A tensor of ``input``'s shape (the broadcast shape for tensor bounds).

    Gradient (PyTorch's): ``g`` for ``input`` where ``min <= x <= max`` (ties included),
    else 0; for a tensor ``min`` where ``x < min < max``, for a tensor ``max`` where
    ``x > max`` or ``max < min``; none of them gets it where a NaN is involved, and a NaN
    ``g`` stays out of the clamped places.

    Raises:
        ValueError: if both bounds are None (PyTorch raises ``RuntimeError``).

    Example:
        >>> nnkit.clamp(nnkit.tensor([-2.0, 0.5, 3.0]), -1, 1)
        tensor([-1.0000,  0.5000,  1.0000])
        >>> nnkit.clamp(nnkit.tensor([1, 5, 9]), max=7)
        tensor([1, 5, 7])
        >>> nnkit.clamp(nnkit.tensor([-2.0, 0.5, 3.0]), nnkit.tensor([0.0, 1.0, 4.0]), 2.0)
        tensor([0.0, 1.0, 2.0])
    """
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")

    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return ClampTensor.apply(input, min, max)
    if not input.dtype.is_floating_point and (isinstance(min, float) or isinstance(max, float)):
        input = input.to(_dt.get_default_dtype())  # as torch: not NumPy's float64
    return Clamp.apply(input, min, max)


clip = clamp


def clamp_min(input, min):
    """Clamp from below, elementwise: ``clamp(input, min=min)``, i.e. ``max(input, min)``.

    Args:
        input: the input tensor.
        min: the lower bound: a number or a tensor (broadcasting). An integer ``input``
            with a float number bound gives the default float dtype, as in PyTorch.

    Returns:
        A tensor of ``input``'s shape (the broadcast shape for a tensor bound).

    Gradient: that of :func:`clamp`: ``g`` for ``input`` where ``x >= min`` (ties
    included), else 0; for a tensor ``min`` where ``x < min``; 0 for both at a NaN.

    Raises:
        TypeError: if ``min`` is None.

    Example:
        >>> nnkit.clamp_min(nnkit.tensor([-1.0, 0.5, 2.0]), 0.0)
        tensor([0.0000, 0.5000, 2.0000])
    """
    check_tensor(input, "clamp_min")
    if min is None:
        raise TypeError("clamp_min: argument 'min' must be a number or a Tensor, got None")
    return clamp(input, min=min)


def clamp_max(input, max):
    """Clamp from above, elementwise: ``clamp(input, max=max)``, i.e. ``min(input, max)``.

    Args:
        input: the input tensor.
        max: the upper bound: a number or a tensor (broadcasting). An integer ``input``
            with a float number bound gives the default float dtype, as in PyTorch.

    Returns:
        A tensor of ``input``'s shape (the broadcast shape for a tensor bound).

    Gradient: that of :func:`clamp`: ``g`` for ``input`` where ``x <= max`` (ties
    included), else 0; for a tensor ``max`` where ``x > max``; 0 for both at a NaN.

    Raises:
        TypeError: if ``max`` is None.

    Example:
        >>> nnkit.clamp_max(nnkit.tensor([-1.0, 0.5, 2.0]), 1.0)
        tensor([-1.0000,  0.5000,  1.0000])
    """
    check_tensor(input, "clamp_max")
    if max is None:
        raise TypeError("clamp_max: argument 'max' must be a number or a Tensor, got None")
    return clamp(input, max=max)


class Maximum(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "maximum", ctx.needs_input_grad)
        _meta(a, b, ctx)
        ctx.save_for_backward(a, b)
        return a.maximum(b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        wa = (a > b) + (a == b) * 0.5  # ties split the gradient evenly, as in PyTorch
        return _pair_grads(ctx, grad_output, wa)


class Minimum(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "minimum", ctx.needs_input_grad)
        _meta(a, b, ctx)
        ctx.save_for_backward(a, b)
        return a.minimum(b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        wa = (a < b) + (a == b) * 0.5
        return _pair_grads(ctx, grad_output, wa)


def _pair_grads(ctx, grad_output, wa):
    n = ctx.needs_input_grad
    return (
        _reduce(grad_output * wa, ctx.meta[0]) if n[0] else None,
        _reduce(grad_output * (1 - wa), ctx.meta[1]) if n[1] else None,
    )


def maximum(input, other):
    """Elementwise maximum of two tensors, broadcasting; NaN in either gives NaN.

    Args:
        input: a tensor.
        other: a tensor (dtypes promote), or, unlike PyTorch, a Python number.

    Returns:
        A tensor of the broadcast shape and the promoted dtype.

    Gradient: ``g`` to the larger operand; where they tie it is split evenly (``g / 2``
    each), as in PyTorch.

    Raises:
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.maximum(nnkit.tensor([1.0, 5.0, 3.0]), nnkit.tensor([2.0, 0.0, 3.0]))
        tensor([2.0, 5.0, 3.0])
    """
    return Maximum.apply(input, other)


def minimum(input, other):
    """Elementwise minimum of two tensors, broadcasting; NaN in either gives NaN.

    Args:
        input: a tensor.
        other: a tensor (dtypes promote), or, unlike PyTorch, a Python number.

    Returns:
        A tensor of the broadcast shape and the promoted dtype.

    Gradient: ``g`` to the smaller operand; where they tie it is split evenly (``g / 2``
    each), as in PyTorch.

    Raises:
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.minimum(nnkit.tensor([1, 5]), nnkit.tensor([2.0, 0.0]))
        tensor([1.0, 0.0])
    """
    return Minimum.apply(input, other)


# --------------------------------------------------------------------- where
class Where(Op):
    @staticmethod
    def forward(ctx, cond, a, b):
        a, b = as_mat_pair(a, b, "where", ctx.needs_input_grad)
        if cond.dtype.kind != "b":
            cond = cond.astype(bool)
        _meta(a, b, ctx)
        ctx.save_for_backward(cond)
        return cond.where(a, b)

    @staticmethod
    def backward(ctx, grad_output):
        (cond,) = ctx.saved_tensors
        n = ctx.needs_input_grad
        # a literal 0, not grad_output * 0: a NaN gradient stays out of the unselected
        # branch, as in torch
        return (
            None,
            _reduce(where(cond, grad_output, 0.0), ctx.meta[0]) if n[1] else None,
            _reduce(where(cond, 0.0, grad_output), ctx.meta[1]) if n[2] else None,
        )


def where(condition, input, other):
    """Select elementwise: ``out[i] = input[i] if condition[i] else other[i]``, broadcasting.

    Args:
        condition: a boolean tensor.
        input: the values where ``condition`` holds: a tensor or a number.
        other: the values elsewhere: a tensor or a number (dtypes promote as in PyTorch).

    Returns:
        A tensor of the broadcast shape of the three arguments.

    Gradient: ``g`` where selected, 0 elsewhere, for ``input`` and ``other`` (a NaN
    gradient never leaks into the unselected branch); none for ``condition``.

    Raises:
        TypeError: if ``condition`` is not a boolean tensor (PyTorch raises
            ``RuntimeError``).

    Example:
        >>> nnkit.where(nnkit.tensor([True, False]), nnkit.tensor([1.0, 2.0]), 0.5)
        tensor([1.0000, 0.5000])
    """
    if not isinstance(condition, Tensor):
        raise TypeError("where: condition must be a boolean Tensor")
    if condition.dtype.name != "bool":
        raise TypeError(
            f"where: condition must be a boolean tensor, got {condition.dtype} "
            "(compare it, e.g. cond != 0)"
        )
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = tensor(input, device=condition.device)
    return Where.apply(condition, input, other)


def masked_fill(input, mask, value):
    """``input`` with ``value`` written where the boolean ``mask`` is True (out of place).

    Args:
        input: the input tensor.
        mask: a boolean tensor that broadcasts to ``input``'s shape.
        value: a number or a 0-d tensor; it takes ``input``'s dtype (0.5 into an integer
            tensor gives 0, as in PyTorch).

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: ``g`` where ``mask`` is False for ``input``; for a tensor ``value``, the sum
    of ``g`` over the filled positions.

    Raises:
        TypeError: if ``mask`` is not boolean (PyTorch raises ``RuntimeError``).
        RuntimeError: if ``value`` is a tensor with dimensions.

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nnkit.masked_fill(x, nnkit.tensor([True, False]), -1.0)
        tensor([[-1.0,  2.0],
                [-1.0,  4.0]])
    """
    if mask._impl.data.dtype.kind != "b":
        raise TypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype}")
    kind = input._impl.data.dtype.kind
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(
                f"masked_fill: only supports a 0-dimensional value tensor, but "
                f"got one of shape {tuple(value.shape)}"
            )
        if value.dtype != input.dtype:
            value = value.to(input.dtype)
    elif not (
        kind == "f" or isinstance(value, bool) or (kind in "iu" and isinstance(value, int))
    ):  # a number the scalar rules would promote: take input's dtype
        value = tensor(value, dtype=input.dtype, device=input.device)
    return where(mask, value, input)
