"""Elementwise ops: arithmetic, unary maths, comparisons, logic and ``where``.

Binary ops broadcast NumPy-style; each backward ends with :func:`sum_to` so the
gradient has its input's shape (and is cast back to its input's dtype). A Python
scalar operand takes the tensor's dtype (a float scalar never upcasts float32).
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import as_mat_pair, float_mat, is_scalar
from nnkit.autograd.ops.shape import cast, sum_to

__all__ = ["add", "sub", "mul", "div", "true_divide", "pow", "neg", "exp", "expm1", "log",
           "log1p", "log2", "log10", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "tanh",
           "sigmoid", "relu", "abs", "sign", "reciprocal", "clamp", "clip", "maximum",
           "minimum", "floor_divide", "remainder", "floor", "ceil", "round", "trunc", "eq",
           "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
           "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "where",
           "masked_fill", "isnan", "isinf", "isfinite", "softplus", "erf", "lerp", "addcmul",
           "addcdiv"]


def _reduce(grad, meta):
    """Bring ``grad`` back to an input's (shape, dtype)."""
    shape, dtype = meta
    m = grad._impl.data
    if m.shape == shape and m.dtype == dtype:  # the common case: nothing to do
        return grad
    g = sum_to(grad, shape)
    return g if g._impl.data.dtype == dtype else cast(g, dtype)


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
        return (_reduce(grad_output, ctx.meta[0]) if n[0] else None,
                _reduce(grad_output, ctx.meta[1]) if n[1] else None)


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
        return (_reduce(grad_output, ctx.meta[0]) if n[0] else None,
                _reduce(-grad_output, ctx.meta[1]) if n[1] else None)


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
        return (_reduce(grad_output * b, ctx.meta[0]) if n[0] else None,
                _reduce(grad_output * a, ctx.meta[1]) if n[1] else None)


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
        return (_reduce(ga, ctx.meta[0]) if n[0] else None,
                _reduce(-ga * a / b, ctx.meta[1]) if n[1] else None)


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
        a, b = as_mat_pair(a, b, "pow")
        if b.dtype.kind in "iu" and a.dtype.kind in "iu" and (b.array < 0).any():
            raise ValueError("pow: integers to negative integer powers are not allowed")
        _meta(a, b, ctx)
        out = a.pow(b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        a, b, out = ctx.saved_tensors
        n = ctx.needs_input_grad
        ga = gb = None
        if n[0]:
            ga = _reduce(grad_output * b * pow(a, b - 1), ctx.meta[0])
        if n[1]:
            safe = where(a > 0, a, 1.0)
            gb = _reduce(grad_output * out * where(a > 0, log(safe), 0.0), ctx.meta[1])
        return ga, gb


def pow(input, exponent):
    """``input ** exponent``, elementwise (either may be a scalar)."""
    return Pow.apply(input, exponent)


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

    cls = type(name, (Op,), {"forward": staticmethod(forward),
                             "backward": staticmethod(backward)})
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
Erf = _unary("Erf", "erf",
             lambda g, x: g * 1.1283791670955126 * exp(-(x * x)), save="in")


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
    """``log(1 + exp(beta * x)) / beta``, stable for large inputs."""
    if beta == 1.0:
        return Softplus.apply(input)
    return Softplus.apply(input * beta) / beta


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
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clip(lo, hi)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        mask = None
        if ctx.lo is not None:
            mask = x >= ctx.lo
        if ctx.hi is not None:
            upper = x <= ctx.hi
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
    return (_reduce(grad_output * wa, ctx.meta[0]) if n[0] else None,
            _reduce(grad_output * (1 - wa), ctx.meta[1]) if n[1] else None)


def maximum(input, other):
    """Elementwise maximum (ties split the gradient evenly)."""
    return Maximum.apply(input, other)


def minimum(input, other):
    """Elementwise minimum (ties split the gradient evenly)."""
    return Minimum.apply(input, other)


# ------------------------------------------------- non-differentiable elementwise
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
        from nnkit.autograd.grad_mode import no_grad

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
    _nondiff(m) for m in ("logical_and", "logical_or", "logical_xor"))
logical_not = _nondiff("logical_not")
floor, ceil, trunc, sign = (_nondiff(m) for m in ("floor", "ceil", "trunc", "sign"))
isnan, isinf, isfinite = (_nondiff(m) for m in ("isnan", "isinf", "isfinite"))
floor_divide = _nondiff("floordiv")
remainder = _nondiff("remainder")
_bitwise_and, _bitwise_or, _bitwise_xor = (
    _nondiff(m) for m in ("bitwise_and", "bitwise_or", "bitwise_xor"))
_invert = _nondiff("invert")


def round(input, decimals: int = 0):
    """Round half to even; the result carries no gradient."""
    from nnkit.autograd.grad_mode import no_grad

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
        zero = grad_output * 0
        return (None,
                _reduce(where(cond, grad_output, zero), ctx.meta[0]) if n[1] else None,
                _reduce(where(cond, zero, grad_output), ctx.meta[1]) if n[2] else None)


def where(condition, input, other):
    """``input`` where ``condition`` holds, else ``other`` (broadcasting; scalars allowed)."""
    from nnkit.autograd.tensor import Tensor

    if not isinstance(condition, Tensor):
        raise TypeError("where: condition must be a boolean Tensor")
    if condition.dtype.name != "bool":
        raise TypeError(f"where: condition must be a boolean tensor, got {condition.dtype} "
                        "(compare it, e.g. cond != 0)")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from nnkit.autograd.factories import tensor

        input = tensor(input, device=condition.device)
    return Where.apply(condition, input, other)


def masked_fill(input, mask, value):
    """``input`` with ``value`` where the boolean ``mask`` (broadcast) is True."""
    if mask._impl.data.dtype.kind != "b":
        raise TypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype}")
    if not isinstance(value, (int, float, bool)):
        value = value.item() if value.numel() == 1 else value
    out = where(mask, value, input)
    return out if out.shape == input.shape else out.expand(input.shape)


def lerp(input, end, weight):
    """``input + weight * (end - input)``."""
    return input + (end - input) * weight


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    return input + tensor1 * tensor2 * value


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    return input + tensor1 / tensor2 * value

