"""The activations of issue 13: ``hardswish``, ``hardsigmoid``, ``glu``, ``prelu``,
``celu``, ``softsign``, ``threshold``, ``hardshrink``, ``softshrink``, ``tanhshrink``.

Functional forms only (re-exported by ``nnkit.nn.functional``), not Tensor methods.
``hardswish`` and ``celu`` are ``Op`` classes with torch's gradients at the kinks; the
others are compositions of differentiable ops.
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.ops import activation_inplace as _ip
from nnkit.autograd.ops._util import check_tensor, float_mat, wrap_dim
from nnkit.autograd.ops.activation import hardtanh
from nnkit.autograd.ops.elementwise import abs as _abs
from nnkit.autograd.ops.elementwise import exp, sigmoid, tanh
from nnkit.autograd.ops.inplace import _via_copy
from nnkit.autograd.ops.joining import chunk
from nnkit.autograd.ops.selection import clamp, where

__all__ = [
    "hardswish",
    "hardsigmoid",
    "glu",
    "prelu",
    "celu",
    "softsign",
    "threshold",
    "hardshrink",
    "softshrink",
    "tanhshrink",
]


# -------------------------------------------------------------- activations
class Hardswish(Op):
    @staticmethod
    def forward(ctx, x):
        x = float_mat(x)
        ctx.save_for_backward(x)
        return x.hardswish()

    @staticmethod
    def backward(ctx, grad_output):
        # torch: 0 up to -3 (included), x/3 + 1/2 on (-3, 3), 1 from 3 on (included).
        (x,) = ctx.saved_tensors
        return grad_output * where(x <= -3.0, 0.0, where(x < 3.0, x / 3.0 + 0.5, 1.0))


def hardswish(input, inplace: bool = False):
    """Hard swish: ``hardswish(x) = x * relu6(x + 3) / 6``.

    Args:
        input: the input tensor; unlike PyTorch (which refuses them), integer inputs give
            the default float dtype.
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape.

    Gradient: 0 up to ``-3`` (included), ``x / 3 + 1/2`` on ``(-3, 3)``, 1 from ``3`` on
    (included), as in PyTorch.

    Example:
        >>> F.hardswish(nnkit.tensor([-4.0, -1.0, 0.0, 1.0, 4.0]))
        tensor([-0.0000, -0.3333,  0.0000,  0.6667,  4.0000])
    """
    check_tensor(input, "hardswish")
    if inplace and not _ip.tracing():  # backward reads a saved copy of the old value
        return _via_copy(input, "hardswish(inplace=True)", Hardswish.apply)
    return Hardswish.apply(input)


def hardsigmoid(input, inplace: bool = False):
    """Hard sigmoid: ``hardsigmoid(x) = relu6(x + 3) / 6``, piecewise linear from 0 to 1.

    Args:
        input: the input tensor; unlike PyTorch, integer inputs give a float tensor.
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape, with values in ``[0, 1]``.

    Gradient: ``1/6`` strictly inside ``(-3, 3)``, else 0 (0 at ``+-3``, as in PyTorch).

    Example:
        >>> F.hardsigmoid(nnkit.tensor([-4.0, -1.0, 0.0, 1.0, 4.0]))
        tensor([0.0000, 0.3333, 0.5000, 0.6667, 1.0000])
    """
    check_tensor(input, "hardsigmoid")
    if inplace and not _ip.tracing():
        return _via_copy(input, "hardsigmoid(inplace=True)", hardsigmoid)
    return hardtanh(input + 3.0, 0.0, 6.0) / 6.0


def glu(input, dim: int = -1):
    """Gated linear unit: ``glu(x) = a * sigmoid(b)``, with ``a, b`` the two halves of
    ``input`` along ``dim``.

    Args:
        input: a tensor whose size along ``dim`` is even.
        dim: the dimension to halve (default -1).

    Returns:
        A tensor of ``input``'s shape with ``dim`` halved.

    Gradient: ``sigmoid(b) * g`` for ``a`` and ``a * sigmoid(b) * (1 - sigmoid(b)) * g``
    for ``b`` (composed ops).

    Raises:
        RuntimeError: for a 0-d input or an odd size along ``dim``.

    Example:
        >>> F.glu(nnkit.tensor([[1.0, 2.0, 0.0, 100.0]]))
        tensor([[0.5000, 2.0000]])
    """
    check_tensor(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu: does not support 0-d input (halving size must be even)")
    d = wrap_dim(dim, input.ndim, "glu")
    if input.shape[d] % 2:
        raise RuntimeError(
            f"glu: halving dimension must be even, but dimension {d} is size {input.shape[d]}"
        )
    a, b = chunk(input, 2, d)
    return a * sigmoid(b)


def prelu(input, weight):
    """Parametric ReLU: ``x`` where ``x > 0``, else ``weight * x``, with a learned slope.

    Args:
        input: the input tensor; its channels are dimension 1 (or the only dimension of a
            1-d input).
        weight: the slopes: a tensor of one element (shared) or a 1-d tensor with one
            slope per channel.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: 1 where ``x > 0``, else ``weight`` (``weight`` at ``x = 0``, as in PyTorch),
    for ``input``; ``x * g`` where ``x <= 0``, summed per channel, for ``weight``.

    Raises:
        RuntimeError: if ``weight`` is not 0-d/1-d or its size matches neither 1 nor the
            number of channels.

    Example:
        >>> x = nnkit.tensor([[-2.0, -2.0], [1.0, -1.0]])
        >>> F.prelu(x, nnkit.tensor([0.1, 0.5]))
        tensor([[-0.2000, -1.0000],
                [ 1.0000, -0.5000]])
    """
    check_tensor(input, "prelu")
    check_tensor(weight, "prelu", "weight")
    if weight.ndim > 1:
        raise RuntimeError(
            f"prelu: expected 'weight' to be a scalar or 1-d tensor, got ndim = {weight.ndim}"
        )
    n = weight.numel()
    if n == 1:
        w = weight.reshape(())
    else:
        if input.ndim == 0:
            raise RuntimeError("prelu: a 0-d input needs a 'weight' of one element")
        channels = input.shape[1] if input.ndim > 1 else 1
        if channels != n:
            raise RuntimeError(
                f"prelu: 'weight' has {n} elements but the input has "
                f"{channels} channel(s) (its dimension 1)"
            )
        w = weight.reshape((n,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, w * input)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """Continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        input: the input tensor; unlike PyTorch, integer inputs give the default float
            dtype.
        alpha: the saturation value for large negative inputs (default 1.0).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape.

    Gradient: 1 where ``x > 0``, else ``exp(x / alpha)`` (so 1 at ``x = 0``; NaN takes the
    linear branch), as in PyTorch.

    Raises:
        RuntimeError: for ``alpha == 0`` (as in PyTorch).

    Example:
        >>> F.celu(nnkit.tensor([-2.0, 0.0, 3.0]), alpha=2.0)
        tensor([-1.2642,  0.0000,  3.0000])
    """
    check_tensor(input, "celu")
    if alpha == 0:
        raise RuntimeError("celu: argument 'alpha' must not be 0 (ZeroDivisionError)")
    if inplace:
        return _ip.celu_(input, alpha)
    return Celu.apply(input, float(alpha))


class Celu(Op):
    @staticmethod
    def forward(ctx, x, alpha):
        x = float_mat(x)
        ctx.alpha = alpha
        ctx.save_for_backward(x)
        return x.celu(alpha)

    @staticmethod
    def backward(ctx, grad_output):
        # torch: exp(x / alpha) where x <= 0, else 1 (NaN takes the linear branch).
        (x,) = ctx.saved_tensors
        slope = exp(clamp(x, max=0.0) / ctx.alpha)
        return grad_output * where(x <= 0, slope, 1.0), None


def softsign(input):
    """Softsign: ``softsign(x) = x / (1 + |x|)``, with values in ``(-1, 1)``.

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``1 / (1 + |x|)**2`` (composed ops).

    Example:
        >>> F.softsign(nnkit.tensor([-3.0, 0.0, 1.0]))
        tensor([-0.7500,  0.0000,  0.5000])
    """
    check_tensor(input, "softsign")
    return input / (_abs(input) + 1)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """Threshold: ``value`` where ``input <= threshold``, else ``input`` (NaN stays NaN).

    Args:
        input: the input tensor; an integer tensor keeps its dtype (as in PyTorch).
        threshold: the cut-off value.
        value: the replacement for elements at or below ``threshold``.
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: 1 where ``x > threshold``, else 0 (0 at ``x == threshold``, as in PyTorch).

    Example:
        >>> F.threshold(nnkit.tensor([-1.0, 0.5, 2.0]), 0.5, -9.0)
        tensor([-9.0, -9.0,  2.0])
    """
    check_tensor(input, "threshold")
    if inplace:
        return _ip.threshold_(input, threshold, value)
    out = where(input <= threshold, value, input)
    return out if out.dtype == input.dtype else out.to(input.dtype)  # ints stay ints


def hardshrink(input, lambd: float = 0.5):
    """Hard shrinkage: 0 on ``[-lambd, lambd]``, ``x`` elsewhere.

    Args:
        input: the input tensor; unlike PyTorch, integer inputs give a float tensor.
        lambd: the half-width of the zeroed band (default 0.5).

    Returns:
        A tensor of ``input``'s shape.

    Gradient: 1 outside ``[-lambd, lambd]``, 0 inside it, including its ends.

    Example:
        >>> F.hardshrink(nnkit.tensor([-1.0, -0.5, 0.2, 0.7]))
        tensor([-1.0000,  0.0000,  0.0000,  0.7000])
    """
    check_tensor(input, "hardshrink")
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


def softshrink(input, lambd: float = 0.5):
    """Soft shrinkage: 0 on ``[-lambd, lambd]``, else ``x`` moved ``lambd`` towards 0.

    Args:
        input: the input tensor; unlike PyTorch, integer inputs give a float tensor.
        lambd: the half-width of the zeroed band, ``>= 0`` (default 0.5).

    Returns:
        A tensor of ``input``'s shape.

    Gradient: 1 outside ``[-lambd, lambd]``, 0 inside it, including its ends.

    Raises:
        RuntimeError: for a negative ``lambd`` (as in PyTorch).

    Example:
        >>> F.softshrink(nnkit.tensor([-1.0, -0.5, 0.2, 0.7]))
        tensor([-0.5000,  0.0000,  0.0000,  0.2000])
    """
    check_tensor(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(
            f"softshrink: argument 'lambd' must be greater or equal to 0, but found to be {lambd}"
        )
    return where(
        (input >= -lambd) & (input <= lambd), 0.0, where(input > 0, input - lambd, input + lambd)
    )


def tanhshrink(input):
    """Tanh shrinkage: ``tanhshrink(x) = x - tanh(x)``.

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``tanh(x)**2``.

    Example:
        >>> F.tanhshrink(nnkit.tensor([-1.0, 0.0, 2.0]))
        tensor([-0.2384,  0.0000,  1.0360])
    """
    check_tensor(input, "tanhshrink")
    return input - tanh(input)
