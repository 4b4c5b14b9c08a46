"""Activations: softmax / log_softmax (fused, stable), GELU, SiLU, ELU, leaky ReLU, ...

``softmax`` and ``log_softmax`` are dedicated Ops: one max-shifted kernel forward
and a two-op backward, where the composition would take five ops and an extra
``exp`` pass. The others are composed from elementwise primitives (STYLE §6), so
they need no backward of their own and support double backward for free.
``relu``, ``sigmoid``, ``tanh`` and ``softplus`` are the elementwise ops, re-exported.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import check_tensor, float_mat, wrap_dim
from nnkit.autograd.ops.elementwise import (
    Clamp,
    Softplus,
    clamp,
    erf,
    exp,
    expm1,
    relu,
    sigmoid,
    softplus,
    tanh,
    where,
)

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
    """``exp(x_i) / sum_j exp(x_j)`` along ``dim``, shifted by the maximum (no overflow).

    Args:
        input: any float tensor.
        dim: the dimension that sums to 1 (None: torch's legacy choice, 0 for 0-, 1- and
            3-d inputs, else 1).
        dtype: cast the input to this dtype first.

    Returns:
        A tensor of ``input``'s shape. A slice that is all ``-inf`` gives NaN.

    Example:
        >>> softmax(nnkit.tensor([1000.0, 1000.0]), dim=0).tolist()
        [0.5, 0.5]
    """
    check_tensor(input, "softmax")
    if dtype is not None:
        input = input.to(dtype)
    return Softmax.apply(input, _softmax_dim(input, dim, "softmax"))


def log_softmax(input, dim=None, dtype=None):
    """``x_i - log(sum_j exp(x_j))`` along ``dim``, computed stably in one kernel.

    The backward is ``g - softmax(x) * sum(g)``. Use it (or :func:`cross_entropy`) rather
    than ``log(softmax(x))``, which underflows to ``-inf``.

    Example:
        >>> log_softmax(nnkit.tensor([0.0, -1000.0]), dim=0).tolist()
        [0.0, -1000.0]
    """
    check_tensor(input, "log_softmax")
    if dtype is not None:
        input = input.to(dtype)
    return LogSoftmax.apply(input, _softmax_dim(input, dim, "log_softmax"))


def softmin(input, dim=None, dtype=None):
    """``softmax(-input, dim)``."""
    return softmax(-input, dim, dtype)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def gelu(input, approximate: str = "none"):
    """Gaussian error linear unit ``x * Phi(x)``.

    ``approximate='none'``: ``0.5 x (1 + erf(x / sqrt(2)))`` with an exact erf (a
    vectorised Cephes rational kernel, ~1e-16 relative error);
    ``approximate='tanh'``: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Raises:
        ValueError: for another ``approximate``.
    """
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * _SQRT_2_PI
        return input * (tanh(inner) + 1.0) * 0.5
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return input * (erf(input * _SQRT1_2) + 1.0) * 0.5


def silu(input):
    """Sigmoid linear unit (swish): ``x * sigmoid(x)``."""
    return input * sigmoid(input)


def mish(input):
    """``x * tanh(softplus(x))`` (softplus without a threshold, as torch's kernel)."""
    return input * tanh(Softplus.apply(input))


def leaky_relu(input, negative_slope: float = 0.01):
    """``x`` where ``x > 0`` else ``negative_slope * x``."""
    return where(input > 0, input, input * negative_slope)


def elu(input, alpha: float = 1.0):
    """``x`` where ``x > 0`` else ``alpha * (exp(x) - 1)`` (no overflow for large x).

    The gradient at 0 is ``alpha`` (the left branch's), as torch.
    """
    return where(input > 0, input, expm1(clamp(input, max=0.0)) * alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


class HardTanh(Clamp):
    """``clamp`` whose gradient is 0 at the bounds themselves (torch's hardtanh)."""

    strict = True


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0):
    """``clamp(x, min_val, max_val)``; the gradient is 1 strictly inside, 0 at and beyond
    the bounds (as torch; ``clamp``'s is 1 at the bounds)."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    return HardTanh.apply(input, min_val, max_val)


def relu6(input):
    """``min(max(x, 0), 6)``; the gradient is 0 at 0 and 6 (as torch)."""
    return hardtanh(input, 0.0, 6.0)


def logsigmoid(input):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for large ``|x|``."""
    return -Softplus.apply(-input)
