"""Activations: softmax / log_softmax (fused, stable), GELU, SiLU, ELU, leaky ReLU, ...

``softmax`` and ``log_softmax`` are dedicated Ops: one max-shifted kernel forward
and a two-op backward, where the composition would take five ops and an extra
``exp`` pass. The others are composed from elementwise primitives (STYLE §6), so
they need no backward of their own and support double backward for free.
``sigmoid``, ``tanh`` and ``softplus`` are the elementwise ops, re-exported; ``relu``
adds the ``inplace`` flag to the elementwise op. ``inplace=True`` routes to the in-place
ops of ``ops/activation_inplace.py``.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import Op
from nnkit.autograd.ops import activation_inplace as _ip
from nnkit.autograd.ops._util import check_tensor, float_mat, wrap_dim
from nnkit.autograd.ops.elementwise import (
    Softplus,
    erf,
    exp,
    expm1,
    sigmoid,
    softplus,
    tanh,
)
from nnkit.autograd.ops.elementwise import relu as _relu
from nnkit.autograd.ops.inplace import _via_copy
from nnkit.autograd.ops.selection import Clamp, clamp, where

__all__ = [
    "softmax",
    "log_softmax",
    "softmin",
    "gelu",
    "silu",
    "leaky_relu",
    "elu",
    "selu",
    "softplus",
    "relu",
    "relu6",
    "sigmoid",
    "tanh",
    "hardtanh",
    "logsigmoid",
    "mish",
]


def _softmax_dim(input, dim, op):
    if dim is None:  # torch's legacy implicit choice
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return wrap_dim(dim, input.ndim, op)


class Softmax(Op):
    @staticmethod
    def forward(ctx, x, dim):
        out = float_mat(x).softmax(dim)
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        gx = grad_output * out
        return gx - out * gx.sum(ctx.dim, keepdim=True), None


class LogSoftmax(Op):
    @staticmethod
    def forward(ctx, x, dim):
        out = float_mat(x).log_softmax(dim)
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        return grad_output - exp(out) * grad_output.sum(ctx.dim, keepdim=True), None


def softmax(input, dim=None, dtype=None):
    """Softmax along ``dim``: ``softmax(x)_i = exp(x_i) / sum_j exp(x_j)``.

    Computed in one max-shifted kernel, so large inputs do not overflow.

    Args:
        input: the input tensor; unlike PyTorch (which refuses them), integer inputs give
            the default float dtype.
        dim: the dimension that sums to 1. None picks PyTorch's legacy implicit dimension
            (0 for 0-, 1- and 3-d inputs, else 1) without PyTorch's deprecation warning.
        dtype: cast the input to this dtype first (e.g. ``nnkit.float64``).

    Returns:
        A tensor of ``input``'s shape; a slice that is all ``-inf`` gives NaN (as PyTorch).

    Gradient: ``y * (g - sum(g * y, dim))`` with ``y`` the saved output.

    Example:
        >>> F.softmax(nnkit.tensor([[1.0, 2.0], [3.0, 5.0]]), dim=1)
        tensor([[0.2689, 0.7311],
                [0.1192, 0.8808]])
        >>> F.softmax(nnkit.tensor([1000.0, 1000.0]), dim=0)
        tensor([0.5000, 0.5000])
    """
    check_tensor(input, "softmax")
    if dtype is not None:
        input = input.to(dtype)
    return Softmax.apply(input, _softmax_dim(input, dim, "softmax"))


def log_softmax(input, dim=None, dtype=None):
    """Log-softmax along ``dim``: ``x_i - log(sum_j exp(x_j))``, computed stably in one kernel.

    Use it (or :func:`cross_entropy`) rather than ``log(softmax(x))``, which underflows to
    ``-inf``.

    Args:
        input: the input tensor; integer inputs give the default float dtype (PyTorch
            refuses them).
        dim: the dimension to normalise over; None as :func:`softmax` (no warning).
        dtype: cast the input to this dtype first.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``g - exp(y) * sum(g, dim)`` with ``y`` the saved output.

    Example:
        >>> F.log_softmax(nnkit.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([-2.4076, -1.4076, -0.4076])
        >>> F.log_softmax(nnkit.tensor([0.0, -1000.0]), dim=0).tolist()
        [0.0, -1000.0]
    """
    check_tensor(input, "log_softmax")
    if dtype is not None:
        input = input.to(dtype)
    return LogSoftmax.apply(input, _softmax_dim(input, dim, "log_softmax"))


def softmin(input, dim=None, dtype=None):
    """Softmin along ``dim``: ``softmax(-input, dim)``, so the smallest value gets the most
    weight.

    Args:
        input: the input tensor.
        dim: the dimension that sums to 1; None as :func:`softmax`.
        dtype: cast the (negated) input to this dtype first.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: that of :func:`softmax`, through the negation.

    Example:
        >>> F.softmin(nnkit.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([0.6652, 0.2447, 0.0900])
    """
    return softmax(-input, dim, dtype)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def gelu(input, approximate: str = "none"):
    """Gaussian error linear unit: ``gelu(x) = x * Phi(x)``, ``Phi`` the standard normal CDF.

    Args:
        input: the input tensor; integer inputs give the default float dtype (PyTorch
            refuses them).
        approximate: ``'none'`` (default): ``0.5 x (1 + erf(x / sqrt(2)))`` with an exact
            ``erf``; ``'tanh'``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))``.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``Phi(x) + x * phi(x)`` (``phi`` the normal density), or the derivative of
    the tanh form; both are compositions of differentiable ops.

    Raises:
        ValueError: for another ``approximate`` (PyTorch raises ``RuntimeError``).

    Example:
        >>> F.gelu(nnkit.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1587,  0.0000,  0.8413])
        >>> F.gelu(nnkit.tensor([-1.0, 0.0, 1.0]), approximate="tanh")
        tensor([-0.1588,  0.0000,  0.8412])
    """
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * _SQRT_2_PI
        return input * (tanh(inner) + 1.0) * 0.5
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return input * (erf(input * _SQRT1_2) + 1.0) * 0.5


def relu(input, inplace: bool = False):
    """Rectified linear unit: ``relu(x) = max(x, 0)`` (``nnkit.relu`` with ``inplace``).

    Args:
        input: the input tensor (floating or integer).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape and dtype (``input`` itself when ``inplace``).

    Gradient: 1 where ``x > 0``, else 0 (0 at ``x = 0``, as in PyTorch).

    Example:
        >>> F.relu(nnkit.tensor([-1.0, 2.0]))
        tensor([0.0, 2.0])
    """
    return _ip.relu_(input) if inplace else _relu(input)


def silu(input, inplace: bool = False):
    """Sigmoid linear unit (swish): ``silu(x) = x * sigmoid(x)``.

    Args:
        input: the input tensor; integer inputs give the default float dtype (PyTorch
            refuses them).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape (``input`` itself when ``inplace``).

    Gradient: ``sigmoid(x) * (1 + x * (1 - sigmoid(x)))`` (composed ops; in place, from
    a saved copy of the old value, as in PyTorch).

    Example:
        >>> F.silu(nnkit.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2689,  0.0000,  0.7311])
    """
    if inplace and not _ip.tracing():
        return _via_copy(input, "silu(inplace=True)", silu)
    return input * sigmoid(input)


def mish(input, inplace: bool = False):
    """Mish: ``mish(x) = x * tanh(softplus(x))``, with ``softplus(x) = log(1 + exp(x))``.

    The softplus has no linear threshold here, as in PyTorch's mish kernel.

    Args:
        input: the input tensor; integer inputs give the default float dtype (PyTorch
            refuses them).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape (``input`` itself when ``inplace``).

    Gradient: ``tanh(sp) + x * sigmoid(x) * (1 - tanh(sp)**2)`` with ``sp = softplus(x)``.

    Example:
        >>> F.mish(nnkit.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.3034,  0.0000,  0.8651])
    """
    if inplace and not _ip.tracing():
        return _via_copy(input, "mish(inplace=True)", mish)
    return input * tanh(Softplus.apply(input))


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    """Leaky ReLU: ``x`` where ``x > 0``, else ``negative_slope * x``.

    Args:
        input: the input tensor; integer inputs give the default float dtype (PyTorch
            refuses them).
        negative_slope: the slope for negative inputs (default 0.01).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).
            In place the input must be floating and, for backward, the slope >= 0.

    Returns:
        A tensor of ``input``'s shape (``input`` itself when ``inplace``).

    Gradient: 1 where ``x > 0``, else ``negative_slope`` (``negative_slope`` at ``x = 0``,
    as in PyTorch).

    Example:
        >>> F.leaky_relu(nnkit.tensor([-2.0, 0.0, 3.0]), 0.1)
        tensor([-0.2000,  0.0000,  3.0000])
    """
    if inplace:
        return _ip.leaky_relu_(input, negative_slope)
    return where(input > 0, input, input * negative_slope)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    """Exponential linear unit: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

    The negative branch uses ``expm1`` of ``min(x, 0)``, so large inputs do not overflow.

    Args:
        input: the input tensor; integer inputs give the default float dtype (PyTorch
            refuses them).
        alpha: the saturation value for large negative inputs (default 1.0).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape (``input`` itself when ``inplace``).

    Gradient: 1 where ``x > 0``, else ``alpha * exp(x)``; at ``x = 0`` it is ``alpha``
    (the left branch's), as in PyTorch.

    Example:
        >>> F.elu(nnkit.tensor([-2.0, 0.0, 3.0]))
        tensor([-0.8647,  0.0000,  3.0000])
    """
    if inplace:
        return _ip.elu_(input, alpha)
    return where(input > 0, input, expm1(clamp(input, max=0.0)) * alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace: bool = False):
    """Scaled ELU: ``selu(x) = scale * elu(x, alpha)`` with the self-normalising constants
    ``alpha = 1.6732632...`` and ``scale = 1.0507009...``.

    Args:
        input: the input tensor; integer inputs give the default float dtype (PyTorch
            refuses them).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape (``input`` itself when ``inplace``).

    Gradient: ``scale`` where ``x > 0``, else ``scale * alpha * exp(x)`` (so
    ``scale * alpha`` at ``x = 0``, as in PyTorch).

    Example:
        >>> F.selu(nnkit.tensor([-2.0, 0.0, 3.0]))
        tensor([-1.5202,  0.0000,  3.1521])
    """
    if inplace:
        return _ip.selu_(input)
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


class HardTanh(Clamp):
    """``clamp`` whose gradient is 0 at the bounds themselves (torch's hardtanh)."""

    strict = True


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """Hard tanh: ``clamp(x, min_val, max_val)``.

    Args:
        input: the input tensor; an integer tensor keeps its dtype (the bounds are cast to
            int, as in PyTorch).
        min_val: the lower bound (default -1.0).
        max_val: the upper bound (default 1.0).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape and dtype (``input`` itself when ``inplace``).

    Gradient: 1 strictly inside ``(min_val, max_val)``, 0 at and beyond the bounds, as in
    PyTorch (:func:`clamp`'s gradient is 1 at the bounds).

    Raises:
        ValueError: if ``min_val > max_val``.

    Example:
        >>> F.hardtanh(nnkit.tensor([-2.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    if not input.dtype.is_floating_point:  # as torch: integer tensors keep their dtype
        min_val, max_val = int(min_val), int(max_val)
    if inplace:
        return _ip.hardtanh_(input, min_val, max_val)
    return HardTanh.apply(input, min_val, max_val)


def relu6(input, inplace: bool = False):
    """ReLU capped at 6: ``relu6(x) = min(max(x, 0), 6)``, i.e. ``hardtanh(x, 0, 6)``.

    Args:
        input: the input tensor; an integer tensor keeps its dtype.
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape and dtype (``input`` itself when ``inplace``).

    Gradient: 1 strictly inside ``(0, 6)``, 0 elsewhere, including at 0 and 6 (as in
    PyTorch).

    Example:
        >>> F.relu6(nnkit.tensor([-2.0, 0.5, 8.0]))
        tensor([0.0000, 0.5000, 6.0000])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input):
    """Log-sigmoid: ``logsigmoid(x) = log(sigmoid(x)) = -softplus(-x)``, stable for large
    ``|x|``.

    Args:
        input: the input tensor; integer inputs give the default float dtype (PyTorch
            refuses them).

    Returns:
        A tensor of ``input``'s shape, with values ``<= 0``.

    Gradient: ``sigmoid(-x) = 1 - sigmoid(x)``.

    Example:
        >>> F.logsigmoid(nnkit.tensor([-1000.0, 0.0, 2.0]))
        tensor([-1000.0000,    -0.6931,    -0.1269])
    """
    return -Softplus.apply(-input)
