"""In-place arithmetic and math (trailing underscore): ``add_``, ``mul_``, ``clamp_``,
``sqrt_``, ``sigmoid_``, ...

Each writes its result into ``x``'s memory and returns ``x``, through
:func:`~nnkit.autograd.ops.inplace.apply_inplace` (which bumps the version counter and,
while recording, rebases ``x``'s history onto the op, as PyTorch does). The result
keeps ``x``'s shape, dtype and device: ``other`` must broadcast to ``x``, and a
floating result is not written into an integer tensor. On a leaf that requires grad
they raise RuntimeError (use ``no_grad()`` or a ``clone()``), as in PyTorch.
"""

from __future__ import annotations

from nnkit.autograd import function as _fn
from nnkit.autograd.ops import activation_inplace as act
from nnkit.autograd.ops import arithmetic as ar
from nnkit.autograd.ops import elementwise as ew
from nnkit.autograd.ops import selection as sel
from nnkit.autograd.ops.inplace import _check_binary, _mat, _via_copy, apply_inplace

__all__ = [
    "add_",
    "sub_",
    "mul_",
    "div_",
    "clamp_",
    "clip_",
    "addcmul_",
    "addcdiv_",
    "lerp_",
    "sqrt_",
    "exp_",
    "neg_",
    "pow_",
    "relu_",
    "sigmoid_",
    "tanh_",
]


def add_(x, other, *, alpha=1):
    """``x += alpha * other`` in place (``torch.Tensor.add_``).

    Args:
        x: the tensor written into.
        other: a tensor that broadcasts to ``x``'s shape, or a number (no float into an
            integer ``x``).
        alpha: the multiplier of ``other`` (default 1).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.add`.

    Example:
        >>> nnkit.tensor([1.0, 2.0]).add_(nnkit.tensor([10.0, 20.0]), alpha=2)
        tensor([21.0, 42.0])
    """
    _check_binary(x, other, "add_")
    if alpha != 1:
        return apply_inplace(
            x,
            "add_",
            lambda old: ar.add(old, other, alpha=alpha),
            lambda m: m.iaxpy(alpha, _mat(x, other)),
            (other,),
        )
    return apply_inplace(
        x, "add_", lambda old: ar.add(old, other), lambda m: m.iadd(_mat(x, other)), (other,)
    )


def sub_(x, other, *, alpha=1):
    """``x -= alpha * other`` in place (``torch.Tensor.sub_``).

    Args:
        x: the tensor written into.
        other: a tensor that broadcasts to ``x``'s shape, or a number (no float into an
            integer ``x``).
        alpha: the multiplier of ``other`` (default 1).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.sub`.

    Example:
        >>> nnkit.tensor([1.0, 2.0]).sub_(1)
        tensor([0.0, 1.0])
    """
    _check_binary(x, other, "sub_")
    if alpha != 1:
        return apply_inplace(
            x,
            "sub_",
            lambda old: ar.sub(old, other, alpha=alpha),
            lambda m: m.iaxpy(-alpha, _mat(x, other)),
            (other,),
        )
    return apply_inplace(
        x, "sub_", lambda old: ar.sub(old, other), lambda m: m.isub(_mat(x, other)), (other,)
    )


def mul_(x, other):
    """``x *= other`` in place (``torch.Tensor.mul_``).

    Args:
        x: the tensor written into.
        other: a tensor that broadcasts to ``x``'s shape, or a number (no float into an
            integer ``x``).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.mul`.

    Example:
        >>> nnkit.tensor([1, 2]).mul_(3)
        tensor([3, 6])
    """
    _check_binary(x, other, "mul_")
    return apply_inplace(
        x,
        "mul_",
        lambda old: ar.mul(old, other),
        lambda m: m.imul(_mat(x, other)),
        (other,),
        clone_self=True,
    )


def div_(x, other):
    """``x /= other`` in place (``torch.Tensor.div_``, true division).

    Args:
        x: a floating tensor (an integer one raises RuntimeError, as in PyTorch).
        other: a tensor that broadcasts to ``x``'s shape, or a number.

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.div`.

    Example:
        >>> nnkit.tensor([1.0, 2.0]).div_(2)
        tensor([0.5000, 1.0000])
    """
    if x._impl.data.dtype.kind != "f":
        raise RuntimeError(
            f"div_: result type float can't be cast to the in-place output type {x.dtype}"
        )
    _check_binary(x, other, "div_")
    return apply_inplace(
        x,
        "div_",
        lambda old: ar.div(old, other),
        lambda m: m.idiv(_mat(x, other)),
        (other,),
        clone_self=True,
    )


def _check_bounds(x, lo, hi):
    """As PyTorch: a float bound does not fit an integer or bool ``x``, nor an integer
    bound a bool ``x`` (the result type could not be written back)."""
    xk = x._impl.data.dtype.kind
    if xk == "f":
        return
    for arg, b in (("min", lo), ("max", hi)):
        if isinstance(b, _fn.Tensor):
            bk, name = b._impl.data.dtype.kind, str(b.dtype)
        elif isinstance(b, float) or (isinstance(b, int) and not isinstance(b, bool)):
            bk, name = ("f", "float") if isinstance(b, float) else ("i", "int64")
        else:
            continue
        if bk == "f" or (xk == "b" and bk in "iu"):
            raise RuntimeError(
                f"clamp_: argument '{arg}' gives result type {name}, which can't be cast "
                f"to the in-place output type {x.dtype}"
            )


def clamp_(x, min=None, max=None):
    """Clamp ``x`` into ``[min, max]`` in place (``torch.Tensor.clamp_``).

    Args:
        x: the tensor written into.
        min: the lower bound (a number or a tensor broadcasting to ``x``), or None.
        max: the upper bound, or None; at least one bound must be given.

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.clamp`.

    Example:
        >>> nnkit.tensor([-1.0, 0.5, 2.0]).clamp_(0, 1)
        tensor([0.0000, 0.5000, 1.0000])
    """
    _check_bounds(x, min, max)
    if isinstance(min, _fn.Tensor) or isinstance(max, _fn.Tensor):
        return _via_copy(x, "clamp_", lambda old: sel.clamp(old, min, max), (min, max))
    if min is None and max is None:
        raise ValueError("clamp_: at least one of 'min' or 'max' must not be None")
    return apply_inplace(
        x,
        "clamp_",
        lambda old: sel.clamp(old, min, max),
        lambda m: m.iclip(min, max),
        clone_self=True,
    )


def clip_(x, min=None, max=None):
    """Another name of :func:`clamp_`: ``x`` clamped into ``[min, max]`` in place.

    Args:
        x: the tensor written into.
        min: the lower bound (a number or a tensor broadcasting to ``x``), or None.
        max: the upper bound, or None; at least one bound must be given.

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.clamp`.

    Example:
        >>> nnkit.tensor([-1.0, 0.5, 2.0]).clip_(max=1)
        tensor([-1.0000,  0.5000,  1.0000])
    """
    return clamp_(x, min, max)


def addcmul_(x, tensor1, tensor2, *, value=1):
    """``x += value * tensor1 * tensor2`` in place (``torch.Tensor.addcmul_``).

    Args:
        x: the tensor written into.
        tensor1: a tensor; ``tensor1 * tensor2`` must broadcast to ``x``'s shape.
        tensor2: a tensor.
        value: the multiplier (default 1).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.addcmul`.

    Example:
        >>> t1, t2 = nnkit.tensor([2.0, 3.0]), nnkit.tensor([4.0, 5.0])
        >>> nnkit.tensor([1.0, 1.0]).addcmul_(t1, t2, value=0.5)
        tensor([5.0000, 8.5000])
    """
    return _via_copy(
        x,
        "addcmul_",
        lambda old: ar.addcmul(old, tensor1, tensor2, value=value),
        (tensor1, tensor2),
        clone_self=False,
    )


def addcdiv_(x, tensor1, tensor2, *, value=1):
    """``x += value * tensor1 / tensor2`` in place (``torch.Tensor.addcdiv_``).

    Args:
        x: the tensor written into.
        tensor1: a tensor; ``tensor1 / tensor2`` must broadcast to ``x``'s shape.
        tensor2: a tensor.
        value: the multiplier (default 1).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.addcdiv`.

    Example:
        >>> t1, t2 = nnkit.tensor([2.0, 3.0]), nnkit.tensor([4.0, 5.0])
        >>> nnkit.tensor([1.0, 1.0]).addcdiv_(t1, t2, value=2)
        tensor([2.0000, 2.2000])
    """
    return _via_copy(
        x,
        "addcdiv_",
        lambda old: ar.addcdiv(old, tensor1, tensor2, value=value),
        (tensor1, tensor2),
        clone_self=False,
    )


def lerp_(x, end, weight):
    """``x += weight * (end - x)`` in place: linear interpolation (``torch.Tensor.lerp_``).

    Args:
        x: a floating tensor, written into.
        end: the tensor to move towards, broadcasting to ``x``'s shape.
        weight: a number or a tensor; 0 keeps ``x``, 1 gives ``end``.

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.lerp`.

    Example:
        >>> nnkit.tensor([0.0, 10.0]).lerp_(nnkit.tensor([10.0, 20.0]), 0.5)
        tensor([ 5.0, 15.0])
    """
    return _via_copy(x, "lerp_", lambda old: ar.lerp(old, end, weight), (end, weight))


def sqrt_(x):
    """``x = sqrt(x)`` in place (``torch.Tensor.sqrt_``); negative values give NaN.

    Args:
        x: a floating tensor (an integer one raises RuntimeError, as in PyTorch).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.sqrt`.

    Example:
        >>> nnkit.tensor([4.0, 9.0]).sqrt_()
        tensor([2.0, 3.0])
    """
    return _via_copy(x, "sqrt_", ew.sqrt)


def exp_(x):
    """``x = exp(x)`` in place (``torch.Tensor.exp_``).

    Args:
        x: a floating tensor (an integer one raises RuntimeError, as in PyTorch).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.exp`.

    Example:
        >>> nnkit.tensor([0.0, 1.0]).exp_()
        tensor([1.0000, 2.7183])
    """
    return _via_copy(x, "exp_", ew.exp)


def neg_(x):
    """``x = -x`` in place (``torch.Tensor.neg_``).

    Args:
        x: a floating or integer tensor.

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.neg`.

    Example:
        >>> nnkit.tensor([1, -2]).neg_()
        tensor([-1,  2])
    """
    return _via_copy(x, "neg_", ar.neg, clone_self=False)


def pow_(x, exponent):
    """``x = x ** exponent`` in place (``torch.Tensor.pow_``).

    Args:
        x: the tensor written into.
        exponent: a number or a tensor broadcasting to ``x``'s shape (a float one needs
            a floating ``x``).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.pow`.

    Example:
        >>> nnkit.tensor([2, 3]).pow_(2)
        tensor([4, 9])
    """
    return _via_copy(x, "pow_", lambda old: ar.pow(old, exponent), (exponent,))


def relu_(x):
    """``x = max(x, 0)`` in place (``torch.relu_``).

    Args:
        x: a floating or integer tensor.

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.relu` (gradient 0 at ``x = 0``), from the result saved without a
        copy (so writing into ``x`` again before backward is caught there).

    Example:
        >>> nnkit.tensor([-1.0, 2.0]).relu_()
        tensor([0.0, 2.0])
    """
    return act.relu_(x)


def sigmoid_(x):
    """``x = 1 / (1 + exp(-x))`` in place (``torch.Tensor.sigmoid_``).

    Args:
        x: a floating tensor (an integer one raises RuntimeError, as in PyTorch).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.sigmoid`.

    Example:
        >>> nnkit.tensor([0.0, 2.0]).sigmoid_()
        tensor([0.5000, 0.8808])
    """
    return _via_copy(x, "sigmoid_", ew.sigmoid)


def tanh_(x):
    """``x = tanh(x)`` in place (``torch.Tensor.tanh_``).

    Args:
        x: a floating tensor (an integer one raises RuntimeError, as in PyTorch).

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.tanh`.

    Example:
        >>> nnkit.tensor([0.0, 1.0]).tanh_()
        tensor([0.0000, 0.7616])
    """
    return _via_copy(x, "tanh_", ew.tanh)
