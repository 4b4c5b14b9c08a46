"""Unary elementwise maths: exponentials and logarithms, roots, trigonometry, ``tanh``,
``sigmoid``, ``relu``, ``abs``, ``reciprocal``, ``softplus``, ``erf``.

Each op is one ``Op`` (``log2``, ``log10`` and ``softplus``'s ``beta``/``threshold``
are compositions) whose forward runs on the Mat (integer inputs give the default float
dtype, as in torch; ``relu`` and ``abs`` keep the dtype) and whose backward is written
in Tensor ops, so double backward works. The inverse trigonometric and other
special functions are in :mod:`nnkit.autograd.ops.special`.

Deviation from PyTorch: on the NumPy backend, inputs outside an op's domain or that
overflow (``log(0)``, ``sqrt(-1)``, ``exp(1000)``, ``1 / 0``, also inside a backward such
as ``sqrt``'s at 0) give PyTorch's ``inf``/NaN values but NumPy also issues a
``RuntimeWarning``, which ``filterwarnings = error`` turns into an exception.
"""

from __future__ import annotations

from nnkit.autograd.function import NO_GRAPH, Op
from nnkit.autograd.ops._util import float_mat
from nnkit.autograd.ops.discrete import sign
from nnkit.autograd.ops.selection import where

__all__ = [
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "relu",
    "abs",
    "reciprocal",
    "softplus",
    "erf",
]


def _unary(name, method, grad_fn, save="out", doc="", mat_grad=None):
    """Build a float unary Op whose backward is ``grad_fn(grad_output, saved)``; where
    ``mat_grad`` names a fused Mat kernel, ``backward_mat`` is ``g.<mat_grad>(saved)``."""

    save_out = save == "out"

    def forward(ctx, x):
        if x.dtype.kind != "f":
            x = float_mat(x)
        out = getattr(x, method)()
        if ctx.needs_input_grad:  # a graph is recorded
            ctx.save_for_backward(out if save_out else x)
        return out

    def backward(ctx, grad_output):
        (saved,) = ctx.saved_tensors
        return grad_fn(grad_output, saved)

    body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    if mat_grad is not None:

        def backward_mat(ctx, grad_output):
            (saved,) = ctx.saved_mats
            return getattr(grad_output, mat_grad)(saved)

        body["backward_mat"] = staticmethod(backward_mat)
    cls = type(name, (Op,), body)
    cls.__module__ = __name__
    return cls


Exp = _unary("Exp", "exp", lambda g, out: g * out)
Expm1 = _unary("Expm1", "expm1", lambda g, out: g * (out + 1))
Log = _unary("Log", "log", lambda g, x: g / x, save="in")
Log1p = _unary("Log1p", "log1p", lambda g, x: g / (x + 1), save="in")
Sqrt = _unary("Sqrt", "sqrt", lambda g, out: g / (out * 2))
Rsqrt = _unary("Rsqrt", "rsqrt", lambda g, out: g * (-0.5) * out * out * out)
Sin = _unary("Sin", "sin", lambda g, x: g * cos(x), save="in")
Cos = _unary("Cos", "cos", lambda g, x: -g * sin(x), save="in")
Tan = _unary("Tan", "tan", lambda g, out: g * (out * out + 1))
# tanh and sigmoid: one fused kernel (TanhGrad's, SigmoidGrad's forward) either way
Tanh = _unary("Tanh", "tanh", lambda g, out: TanhGrad.apply(g, out), mat_grad="tanh_grad")
Sigmoid = _unary(
    "Sigmoid", "sigmoid", lambda g, out: SigmoidGrad.apply(g, out), mat_grad="sigmoid_grad"
)
Reciprocal = _unary("Reciprocal", "reciprocal", lambda g, out: -g * out * out)
Softplus = _unary("Softplus", "softplus", lambda g, x: g * sigmoid(x), save="in")
Erf = _unary("Erf", "erf", lambda g, x: g * 1.1283791670955126 * exp(-(x * x)), save="in")


def exp(input):
    """Exponential, elementwise: ``exp(x) = e**x``.

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape; large inputs overflow to ``inf``.

    Gradient: ``exp(x)`` (the saved output).

    Example:
        >>> nnkit.exp(nnkit.tensor([0.0, 1.0, -1.0]))
        tensor([1.0000, 2.7183, 0.3679])
    """
    return Exp.apply(input)


def expm1(input):
    """``exp(x) - 1``, elementwise, accurate near 0 (where ``exp(x) - 1`` cancels).

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``exp(x)``, i.e. ``expm1(x) + 1``.

    Example:
        >>> nnkit.expm1(nnkit.tensor([1e-10, 1.0]))
        tensor([1.0000e-10, 1.7183e+00])
    """
    return Expm1.apply(input)


def log(input):
    """Natural logarithm, elementwise: ``log(x)``.

    Args:
        input: the input tensor; 0 gives ``-inf`` and negative values NaN, as in PyTorch
            (NumPy also issues a ``RuntimeWarning`` for them). Integer inputs give the
            default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``1 / x`` (``inf`` at ``x = 0``).

    Example:
        >>> nnkit.log(nnkit.tensor([1.0, 2.0, 10.0]))
        tensor([0.0000, 0.6931, 2.3026])
    """
    return Log.apply(input)


def log1p(input):
    """``log(1 + x)``, elementwise, accurate near 0 (where ``1 + x`` rounds away ``x``).

    Args:
        input: the input tensor; ``-1`` gives ``-inf`` and values below it NaN. Integer
            inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``1 / (1 + x)``.

    Example:
        >>> nnkit.log1p(nnkit.tensor([1e-10, 1.0]))
        tensor([1.0000e-10, 6.9315e-01])
    """
    return Log1p.apply(input)


def log2(input):
    """Base-2 logarithm, elementwise: ``log2(x) = log(x) / log(2)``.

    Computed as ``log(x) * (1 / log 2)``, so it is a composition of :func:`log` and a
    multiplication (exact powers of two may differ from PyTorch's dedicated kernel in the
    last bit).

    Args:
        input: the input tensor; 0 gives ``-inf``, negative values NaN. Integer inputs give
            the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``1 / (x log 2)``.

    Example:
        >>> nnkit.log2(nnkit.tensor([1.0, 8.0, 10.0]))
        tensor([0.0000, 3.0000, 3.3219])
    """
    return log(input) * 1.4426950408889634


def log10(input):
    """Base-10 logarithm, elementwise: ``log10(x) = log(x) / log(10)``.

    Computed as ``log(x) * (1 / log 10)`` (a composition of :func:`log` and a
    multiplication; results may differ from PyTorch's dedicated kernel in the last bit).

    Args:
        input: the input tensor; 0 gives ``-inf``, negative values NaN. Integer inputs give
            the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``1 / (x log 10)``.

    Example:
        >>> nnkit.log10(nnkit.tensor([1.0, 100.0, 5.0]))
        tensor([0.0000, 2.0000, 0.6990])
    """
    return log(input) * 0.4342944819032518


def sqrt(input):
    """Square root, elementwise: ``sqrt(x)``.

    Args:
        input: the input tensor; negative values give NaN. Integer inputs give the default
            float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``1 / (2 sqrt(x))``, which is ``inf`` at ``x = 0`` (PyTorch's value).

    Example:
        >>> nnkit.sqrt(nnkit.tensor([4.0, 2.0, 0.0]))
        tensor([2.0000, 1.4142, 0.0000])
    """
    return Sqrt.apply(input)


def rsqrt(input):
    """Reciprocal square root, elementwise: ``rsqrt(x) = 1 / sqrt(x)``.

    Args:
        input: the input tensor; 0 gives ``inf``, negative values NaN. Integer inputs give
            the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``-rsqrt(x)**3 / 2`` (``-inf`` at ``x = 0``).

    Example:
        >>> nnkit.rsqrt(nnkit.tensor([4.0, 2.0, 0.25]))
        tensor([0.5000, 0.7071, 2.0000])
    """
    return Rsqrt.apply(input)


def sin(input):
    """Sine, elementwise (``input`` in radians).

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``cos(x)``.

    Example:
        >>> nnkit.sin(nnkit.tensor([0.0, 0.5, -2.0]))
        tensor([ 0.0000,  0.4794, -0.9093])
    """
    return Sin.apply(input)


def cos(input):
    """Cosine, elementwise (``input`` in radians).

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``-sin(x)``.

    Example:
        >>> nnkit.cos(nnkit.tensor([0.0, 0.5, -2.0]))
        tensor([ 1.0000,  0.8776, -0.4161])
    """
    return Cos.apply(input)


def tan(input):
    """Tangent, elementwise (``input`` in radians).

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``1 + tan(x)**2`` (from the saved output).

    Example:
        >>> nnkit.tan(nnkit.tensor([0.0, 0.5, -1.0]))
        tensor([ 0.0000,  0.5463, -1.5574])
    """
    return Tan.apply(input)


def tanh(input):
    """Hyperbolic tangent, elementwise: ``tanh(x) = (e**x - e**-x) / (e**x + e**-x)``.

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape, with values in ``[-1, 1]``.

    Gradient: ``1 - tanh(x)**2``, computed from the saved output in one fused kernel
    (``TanhGrad``, itself differentiable).

    Example:
        >>> nnkit.tanh(nnkit.tensor([-2.0, 0.0, 0.5]))
        tensor([-0.9640,  0.0000,  0.4621])
    """
    return Tanh.apply(input)


def sigmoid(input):
    """Logistic sigmoid, elementwise: ``sigmoid(x) = 1 / (1 + exp(-x))``, without overflow.

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape, with values in ``[0, 1]``.

    Gradient: ``sigmoid(x) * (1 - sigmoid(x))``, from the saved output in one fused kernel
    (``SigmoidGrad``, itself differentiable).

    Example:
        >>> nnkit.sigmoid(nnkit.tensor([-1000.0, 0.0, 2.0]))
        tensor([0.0000, 0.5000, 0.8808])
    """
    return Sigmoid.apply(input)


def reciprocal(input):
    """Reciprocal, elementwise: ``1 / x``.

    Args:
        input: the input tensor; 0 gives ``inf``. Integer inputs give the default float
            dtype (as in PyTorch).

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``-1 / x**2`` (``-inf`` at ``x = 0``).

    Example:
        >>> nnkit.reciprocal(nnkit.tensor([2.0, -4.0, 0.5]))
        tensor([ 0.5000, -0.2500,  2.0000])
    """
    return Reciprocal.apply(input)


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """Softplus, elementwise: ``softplus(x) = log(1 + exp(beta * x)) / beta``.

    Computed stably (no overflow for large ``x``). Where ``beta * x > threshold`` the result
    is ``x`` itself, as in PyTorch's ``nn.functional.softplus``.

    Args:
        input: the input tensor. Unlike PyTorch (which refuses integer tensors), integer
            inputs give the default float dtype.
        beta: the sharpness (default 1.0).
        threshold: above this value of ``beta * x`` the op is linear (default 20.0).

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``sigmoid(beta * x)``, and exactly 1 in the linear region.

    Example:
        >>> nnkit.softplus(nnkit.tensor([-1.0, 0.0, 30.0]))
        tensor([ 0.3133,  0.6931, 30.0000])
    """
    xb = input if beta == 1.0 else input * beta
    soft = Softplus.apply(xb) if beta == 1.0 else Softplus.apply(xb) / beta
    return where(xb > threshold, input, soft)


def erf(input):
    """Gauss error function, elementwise: ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t**2) dt``.

    Args:
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape, with values in ``[-1, 1]``.

    Gradient: ``2/sqrt(pi) * exp(-x**2)``.

    Example:
        >>> nnkit.erf(nnkit.tensor([0.0, 0.5, -2.0]))
        tensor([ 0.0000,  0.5205, -0.9953])
    """
    return Erf.apply(input)


class ReLU(Op):
    @staticmethod
    def forward(ctx, x):
        out = x.relu()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        return ReLUGrad.apply(grad_output, out)

    @staticmethod
    def backward_mat(ctx, g):
        (out,) = ctx.saved_mats
        return ReLUGrad.forward(NO_GRAPH, g, out)


class TanhGrad(Op):
    """``g * (1 - y²)``: tanh's backward as one kernel (y = tanh's output)."""

    @staticmethod
    def forward(ctx, g, y):
        if ctx.needs_input_grad:  # a graph is recorded (double backward)
            ctx.save_for_backward(g, y)
        return g.tanh_grad(y)

    @staticmethod
    def backward(ctx, grad_output):
        g, y = ctx.saved_tensors
        return grad_output * (1 - y * y), grad_output * g * y * -2


class SigmoidGrad(Op):
    """``g * y * (1 - y)``: sigmoid's backward as one kernel (y = sigmoid's output)."""

    @staticmethod
    def forward(ctx, g, y):
        if ctx.needs_input_grad:  # a graph is recorded (double backward)
            ctx.save_for_backward(g, y)
        return g.sigmoid_grad(y)

    @staticmethod
    def backward(ctx, grad_output):
        g, y = ctx.saved_tensors
        return grad_output * y * (1 - y), grad_output * g * (1 - y * 2)


class ReLUGrad(Op):
    """``g * (y > 0)``: relu's backward as one kernel (y = relu's output)."""

    @staticmethod
    def forward(ctx, g, y):
        ctx.save_for_backward(y)
        return g.relu_grad(y)

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (y > 0), None


def relu(input):
    """Rectified linear unit, elementwise: ``relu(x) = max(x, 0)``.

    Args:
        input: the input tensor; integer tensors stay integer (the dtype is kept).

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: 1 where ``x > 0``, else 0 (0 at ``x = 0``, as in PyTorch), from the saved
    output in one fused kernel (``ReLUGrad``).

    Example:
        >>> nnkit.relu(nnkit.tensor([-1.5, 0.0, 2.0]))
        tensor([0.0, 0.0, 2.0])
    """
    return ReLU.apply(input)


class Abs(Op):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.abs()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * sign(x)


def abs(input):
    """Absolute value, elementwise: ``|x|`` (also ``abs(tensor)``).

    Args:
        input: the input tensor; the dtype is kept (integers stay integer).

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: ``sign(x)``, so 0 at ``x = 0`` (PyTorch's convention).

    Example:
        >>> nnkit.abs(nnkit.tensor([-1.5, 0.0, 2.0]))
        tensor([1.5000, 0.0000, 2.0000])
    """
    return Abs.apply(input)
