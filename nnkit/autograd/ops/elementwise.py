"""Elementwise ops: arithmetic, unary maths, comparisons, logic and ``where``.

Binary ops broadcast NumPy-style; each backward ends with :func:`sum_to` so the
gradient has its input's shape (and is cast back to its input's dtype). A Python
scalar operand takes the tensor's dtype (a float scalar never upcasts float32).
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad as _no_grad
from nnkit.autograd.ops._util import as_mat_pair, float_mat, is_scalar
from nnkit.autograd.ops.discrete import floor_divide, logical_and, sign, trunc
from nnkit.autograd.ops.shape import reduce_grad as _reduce

__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "true_divide",
    "pow",
    "neg",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "square",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "relu",
    "abs",
    "reciprocal",
    "clamp",
    "clip",
    "maximum",
    "minimum",
    "where",
    "masked_fill",
    "softplus",
    "erf",
    "lerp",
    "addcmul",
    "addcdiv",
]


def _meta(a, b, ctx):
    if ctx.needs_input_grad:  # skipped when no graph is recorded
        ctx.meta = ((a.array.shape, a.array.dtype), (b.array.shape, b.array.dtype))


# ---------------------------------------------------------------- arithmetic
class Add(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "add")
        _meta(a, b, ctx)
        return a.add(b)

    @staticmethod
    def backward(ctx, grad_output):
        n = ctx.needs_input_grad
        return (
            _reduce(grad_output, ctx.meta[0]) if n[0] else None,
            _reduce(grad_output, ctx.meta[1]) if n[1] else None,
        )


def add(input, other, *, alpha=1):
    """``input + alpha * other``, broadcasting.

    Raises:
        ShapeError: if the shapes do not broadcast (the message names both).
    """
    if alpha != 1:
        other = other * alpha if is_scalar(other) else mul(other, alpha)
    return Add.apply(input, other)


class Sub(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "sub")
        _meta(a, b, ctx)
        return a.sub(b)

    @staticmethod
    def backward(ctx, grad_output):
        n = ctx.needs_input_grad
        return (
            _reduce(grad_output, ctx.meta[0]) if n[0] else None,
            _reduce(-grad_output, ctx.meta[1]) if n[1] else None,
        )


def sub(input, other, *, alpha=1):
    """``input - alpha * other``, broadcasting."""
    if alpha != 1:
        other = other * alpha if is_scalar(other) else mul(other, alpha)
    return Sub.apply(input, other)


class Mul(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "mul")
        _meta(a, b, ctx)
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


def mul(input, other):
    """``input * other``, elementwise with broadcasting."""
    return Mul.apply(input, other)


class Div(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "div")
        if a.dtype.kind != "f" and b.dtype.kind != "f":
            a, b = float_mat(a), float_mat(b)
        _meta(a, b, ctx)
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


def div(input, other, *, rounding_mode=None):
    """``input / other`` (true division; integers give the default float dtype).

    Args:
        rounding_mode: None, ``'floor'`` or ``'trunc'`` (the latter two are not
            differentiable).
    """
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        return trunc(Div.apply(input, other))
    return Div.apply(input, other)


true_divide = div


class Pow(Op):
    @staticmethod
    def forward(ctx, a, b):
        e = b if is_scalar(b) else None  # a Python exponent: its gradient is plain maths
        a, b = as_mat_pair(a, b, "pow")
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
    """``input ** exponent``, elementwise (either may be a scalar).

    An integer tensor to a negative integer power gives torch's integer results (1 for 1,
    +-1 for -1, else 0); a negative Python int exponent of an integer tensor is refused,
    as in torch.

    Raises:
        RuntimeError: for an integer tensor to a negative Python int power.
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
    from nnkit.autograd.tensor import Tensor

    return isinstance(x, Tensor) and x._impl.data.dtype.kind in "iub"


class Neg(Op):
    @staticmethod
    def forward(ctx, x):
        return x.neg()

    @staticmethod
    def backward(ctx, grad_output):
        return -grad_output


def neg(input):
    """``-input``."""
    return Neg.apply(input)


def _unary(name, method, grad_fn, save="out", doc=""):
    """Build a float unary Op whose backward is ``grad_fn(grad_output, saved)``."""

    def forward(ctx, x):
        x = float_mat(x)
        out = getattr(x, method)()
        ctx.save_for_backward(out if save == "out" else x)
        return out

    def backward(ctx, grad_output):
        (saved,) = ctx.saved_tensors
        return grad_fn(grad_output, saved)

    cls = type(name, (Op,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})
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
Tanh = _unary("Tanh", "tanh", lambda g, out: TanhGrad.apply(g, out))
Sigmoid = _unary("Sigmoid", "sigmoid", lambda g, out: SigmoidGrad.apply(g, out))
Reciprocal = _unary("Reciprocal", "reciprocal", lambda g, out: -g * out * out)
Softplus = _unary("Softplus", "softplus", lambda g, x: g * sigmoid(x), save="in")
Erf = _unary("Erf", "erf", lambda g, x: g * 1.1283791670955126 * exp(-(x * x)), save="in")


def exp(input):
    """``e ** input``."""
    return Exp.apply(input)


def expm1(input):
    """``exp(input) - 1``, accurate near 0."""
    return Expm1.apply(input)


def log(input):
    """Natural logarithm."""
    return Log.apply(input)


def log1p(input):
    """``log(1 + input)``, accurate near 0."""
    return Log1p.apply(input)


def log2(input):
    return log(input) * 1.4426950408889634


def log10(input):
    return log(input) * 0.4342944819032518


def sqrt(input):
    """Square root."""
    return Sqrt.apply(input)


def rsqrt(input):
    """``1 / sqrt(input)``."""
    return Rsqrt.apply(input)


def square(input):
    return mul(input, input)


def sin(input):
    return Sin.apply(input)


def cos(input):
    return Cos.apply(input)


def tan(input):
    return Tan.apply(input)


def tanh(input):
    """Hyperbolic tangent."""
    return Tanh.apply(input)


def sigmoid(input):
    """``1 / (1 + exp(-input))``, computed without overflow."""
    return Sigmoid.apply(input)


def reciprocal(input):
    """``1 / input``."""
    return Reciprocal.apply(input)


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """``log(1 + exp(beta * x)) / beta``, stable for large inputs; ``x`` itself where
    ``beta * x > threshold`` (gradient 1 there), as torch."""
    xb = input if beta == 1.0 else input * beta
    soft = Softplus.apply(xb) if beta == 1.0 else Softplus.apply(xb) / beta
    return where(xb > threshold, input, soft)


def erf(input):
    """The Gauss error function."""
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


class TanhGrad(Op):
    """``g * (1 - y²)``: tanh's backward as one kernel (y = tanh's output)."""

    @staticmethod
    def forward(ctx, g, y):
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
    """``max(input, 0)``; the gradient at 0 is 0."""
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
    """``|input|``; the gradient at 0 is 0."""
    return Abs.apply(input)


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
        return grad_output * mask, None, None


def clamp(input, min=None, max=None):
    """Clamp into ``[min, max]`` (either bound may be None; bounds are numbers or tensors)."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' or 'max' must not be None")
    from nnkit.autograd.tensor import Tensor

    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    return Clamp.apply(input, min, max)


clip = clamp


class Maximum(Op):
    @staticmethod
    def forward(ctx, a, b):
        a, b = as_mat_pair(a, b, "maximum")
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
        a, b = as_mat_pair(a, b, "minimum")
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
    """Elementwise maximum (ties split the gradient evenly)."""
    return Maximum.apply(input, other)


def minimum(input, other):
    """Elementwise minimum (ties split the gradient evenly)."""
    return Minimum.apply(input, other)


# --------------------------------------------------------------------- where
class Where(Op):
    @staticmethod
    def forward(ctx, cond, a, b):
        a, b = as_mat_pair(a, b, "where")
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
    """``input`` where ``condition`` holds, else ``other`` (broadcasting; scalars allowed)."""
    from nnkit.autograd.tensor import Tensor

    if not isinstance(condition, Tensor):
        raise TypeError("where: condition must be a boolean Tensor")
    if condition.dtype.name != "bool":
        raise TypeError(
            f"where: condition must be a boolean tensor, got {condition.dtype} "
            "(compare it, e.g. cond != 0)"
        )
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from nnkit.autograd.factories import tensor

        input = tensor(input, device=condition.device)
    return Where.apply(condition, input, other)


def masked_fill(input, mask, value):
    """``input`` with ``value`` where the boolean ``mask`` is True (broadcasting, as torch).

    ``value`` is a number or a 0-d tensor (differentiable: its gradient is the sum of the
    gradient over the filled positions); either way it takes ``input``'s dtype.

    Raises:
        TypeError: if ``mask`` is not boolean.
        RuntimeError: if ``value`` is a tensor with dimensions.
    """
    from nnkit.autograd.tensor import Tensor

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
        from nnkit.autograd.factories import tensor

        value = tensor(value, dtype=input.dtype, device=input.device)
    return where(mask, value, input)


def lerp(input, end, weight):
    """``input + weight * (end - input)``."""
    return input + (end - input) * weight


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    return input + tensor1 * tensor2 * value


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    return input + tensor1 / tensor2 * value
