"""Special elementwise maths and the remaining activations (issue 13).

Inverse trig/hyperbolic functions, ``erfc``/``erfinv``, ``lgamma``/``digamma``, ``logit``,
``xlogy``, ``logaddexp``, ``hypot``, ``atan2``, ``frac``, ``clamp_min``/``clamp_max``,
``nan_to_num``, ``isclose``/``allclose``/``equal``; and the activations ``hardswish``,
``hardsigmoid``, ``glu``, ``prelu``, ``celu``, ``softsign``, ``threshold``,
``hardshrink``, ``softshrink``, ``tanhshrink`` (re-exported by ``nnkit.nn.functional``).

Forward runs on Mats (kernels in :mod:`nnkit.backends.special_kernels`, which never
raise floating-point warnings); backward is written in Tensor ops with torch's formulas,
so double backward works (except through ``digamma``: its derivative ``trigamma`` has
no backward). Integer inputs give the default float dtype, as in torch.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import as_mat_pair, check_tensor, float_mat, is_scalar, wrap_dim
from nnkit.autograd.ops.activation import hardtanh
from nnkit.autograd.ops.discrete import isfinite
from nnkit.autograd.ops.elementwise import _unary as _unary_op
from nnkit.autograd.ops.elementwise import abs as _abs
from nnkit.autograd.ops.elementwise import clamp, exp, rsqrt, sigmoid, tanh, where
from nnkit.autograd.ops.shape import broadcast_shapes, chunk
from nnkit.autograd.ops.shape import reduce_grad as _reduce
from nnkit.backends import dtypes as _dt

__all__ = [
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "atan2",
    "arctan2",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "logit",
    "xlogy",
    "logaddexp",
    "hypot",
    "frac",
    "clamp_min",
    "clamp_max",
    "nan_to_num",
    "isclose",
    "allclose",
    "equal",
]

# Functions of __all__ that are not Tensor methods (their first argument is not a tensor).
NOT_METHODS: set[str] = set()

# Activations: functional forms only (``nnkit.nn.functional``), not Tensor methods.
ACTIVATIONS = [
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


# --------------------------------------------------------------------- unary
def _unary(name, method, grad_fn, save="in"):
    """A float unary Op (elementwise's builder; these save the input by default)."""
    cls = _unary_op(name, method, grad_fn, save=save)
    cls.__module__ = __name__
    return cls


_SQRT_PI = math.sqrt(math.pi)

Asin = _unary("Asin", "asin", lambda g, x: g * rsqrt(-x * x + 1))
Acos = _unary("Acos", "acos", lambda g, x: g * -rsqrt(-x * x + 1))
Atan = _unary("Atan", "atan", lambda g, x: g / (x * x + 1))
Sinh = _unary("Sinh", "sinh", lambda g, x: g * cosh(x))
Cosh = _unary("Cosh", "cosh", lambda g, x: g * sinh(x))
Asinh = _unary("Asinh", "asinh", lambda g, x: g * rsqrt(x * x + 1))
Acosh = _unary("Acosh", "acosh", lambda g, x: g * rsqrt(x * x - 1))
Atanh = _unary("Atanh", "atanh", lambda g, x: g * (1 / (-x * x + 1)))
Erfc = _unary("Erfc", "erfc", lambda g, x: g * (-2 / _SQRT_PI) * exp(-(x * x)))
Erfinv = _unary(
    "Erfinv", "erfinv", lambda g, out: g * (0.5 * _SQRT_PI) * exp(out * out), save="out"
)
Lgamma = _unary("Lgamma", "lgamma", lambda g, x: g * digamma(x))


class Digamma(Op):
    @staticmethod
    def forward(ctx, x):
        x = float_mat(x)
        ctx.save_for_backward(x)
        return x.digamma()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * Trigamma.apply(x)


class Trigamma(Op):
    @staticmethod
    def forward(ctx, x):
        return x.trigamma()

    @staticmethod
    def backward(ctx, grad_output):
        raise RuntimeError(
            "digamma: the second derivative (the derivative of trigamma) is not implemented"
        )


def _unary_fn(cls, name, doc):
    def fn(input):
        check_tensor(input, name)
        return cls.apply(input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


asin = _unary_fn(Asin, "asin", "``arcsin``; NaN outside [-1, 1]; gradient ``1/sqrt(1-x^2)``.")
acos = _unary_fn(Acos, "acos", "``arccos``; NaN outside [-1, 1].")
atan = _unary_fn(Atan, "atan", "``arctan``.")
sinh = _unary_fn(Sinh, "sinh", "Hyperbolic sine.")
cosh = _unary_fn(Cosh, "cosh", "Hyperbolic cosine.")
asinh = _unary_fn(Asinh, "asinh", "Inverse hyperbolic sine.")
acosh = _unary_fn(Acosh, "acosh", "Inverse hyperbolic cosine; NaN below 1, gradient inf at 1.")
atanh = _unary_fn(Atanh, "atanh", "Inverse hyperbolic tangent; +-inf at +-1 (gradient inf).")
erfc = _unary_fn(Erfc, "erfc", "``1 - erf(x)``, accurate in the tail (Cephes).")
erfinv = _unary_fn(Erfinv, "erfinv", "Inverse of ``erf``: +-inf at +-1, NaN outside [-1, 1].")
lgamma = _unary_fn(Lgamma, "lgamma", "``log|Gamma(x)|``; inf at the poles (0, -1, ...).")
digamma = _unary_fn(
    Digamma,
    "digamma",
    "``psi(x) = d/dx lgamma(x)``: -inf at +0, inf at -0 "
    "and NaN at the negative integers, as torch.",
)
arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh


class Logit(Op):
    @staticmethod
    def forward(ctx, x, eps):
        x = float_mat(x)
        ctx.eps = eps
        ctx.save_for_backward(x)
        return x.logit(eps)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        eps = ctx.eps
        g = grad_output / (x * (-x + 1))
        if eps is None:
            return where((x < 0) | (x > 1), math.nan, g), None
        return where((x < eps) | (x > 1 - eps), 0.0, g), None


def logit(input, eps=None):
    """``log(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]``
    (the gradient is 0 outside that interval). A negative ``eps`` is no clamp (torch)."""
    check_tensor(input, "logit")
    if eps is not None and not is_scalar(eps):
        raise TypeError(f"logit: argument 'eps' must be a float or None, got {type(eps).__name__}")
    return Logit.apply(input, None if eps is None or eps < 0 else float(eps))


# -------------------------------------------------------------------- binary
def _float_pair(a, b, op):
    a, b = as_mat_pair(a, b, op)
    if a.dtype.kind != "f":
        a, b = float_mat(a), float_mat(b)
    return a, b


def _meta(ctx, a, b):
    ctx.meta = ((a.shape, a.dtype), (b.shape, b.dtype))


def _grads(ctx, ga, gb):
    n = ctx.needs_input_grad
    return (
        _reduce(ga(), ctx.meta[0]) if n[0] else None,
        _reduce(gb(), ctx.meta[1]) if n[1] else None,
    )


def _binary(name, method, grads, save_out=False):
    def forward(ctx, a, b):
        a, b = _float_pair(a, b, name.lower())
        _meta(ctx, a, b)
        out = getattr(a, method)(b)
        ctx.save_for_backward(a, b, out) if save_out else ctx.save_for_backward(a, b)
        return out

    def backward(ctx, grad_output):
        return _grads(ctx, *grads(grad_output, *ctx.saved_tensors))

    cls = type(name, (Op,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    cls.__module__ = __name__
    return cls


def _atan2_grads(g, a, b):
    den = a * a + b * b
    zero = den == 0  # torch: the gradient at the origin is 0
    r = where(zero, 0.0, g / where(zero, 1.0, den))
    return (lambda: r * b, lambda: r * -a)


Atan2 = _binary("Atan2", "atan2", _atan2_grads)
Hypot = _binary(
    "Hypot", "hypot", lambda g, a, b, out: (lambda: g * a / out, lambda: g * b / out), save_out=True
)
LogAddExp = _binary(
    "LogAddExp",
    "logaddexp",
    lambda g, a, b: (lambda: g * sigmoid(a - b), lambda: g * sigmoid(b - a)),
)
XLogY = _binary(
    "XLogY",
    "xlogy",
    lambda g, a, b: (lambda: where((a == 0) & (b <= 0), 0.0, xlogy(g, b)), lambda: g * a / b),
)


def _check_pair(input, other, op, scalars=False):
    from nnkit.autograd.tensor import Tensor

    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor) and not (scalars and is_scalar(v)):
            raise TypeError(
                f"{op}: argument '{name}' must be a Tensor"
                f"{' or a number' if scalars else ''}, got {type(v).__name__}"
            )
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        broadcast_shapes(tuple(input.shape), tuple(other.shape))


def atan2(input, other):
    """The angle of ``(other, input)``, i.e. ``arctan(input / other)`` in the right
    quadrant, broadcasting."""
    _check_pair(input, other, "atan2")
    return Atan2.apply(input, other)


arctan2 = atan2


def hypot(input, other):
    """``sqrt(input**2 + other**2)`` without overflow, broadcasting."""
    _check_pair(input, other, "hypot")
    return Hypot.apply(input, other)


def logaddexp(input, other):
    """``log(exp(input) + exp(other))``, stable, broadcasting."""
    _check_pair(input, other, "logaddexp")
    return LogAddExp.apply(input, other)


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is NaN). Either
    argument may be a number."""
    _check_pair(input, other, "xlogy", scalars=True)
    return XLogY.apply(input, other)


# -------------------------------------------------------------- piecewise
class Frac(Op):
    @staticmethod
    def forward(ctx, x):
        return x.frac()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def frac(input):
    """``input - trunc(input)`` (the sign of ``input``); gradient 1.

    Raises:
        RuntimeError: for an integer or bool tensor (as torch).
    """
    check_tensor(input, "frac")
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"frac: not implemented for integer or bool tensors (input has dtype {input.dtype})"
        )
    return Frac.apply(input)


def clamp_min(input, min):
    """``clamp(input, min=min)``."""
    check_tensor(input, "clamp_min")
    if min is None:
        raise TypeError("clamp_min: argument 'min' must be a number or a Tensor, got None")
    return clamp(_float_for(input, min), min=min)


def clamp_max(input, max):
    """``clamp(input, max=max)``."""
    check_tensor(input, "clamp_max")
    if max is None:
        raise TypeError("clamp_max: argument 'max' must be a number or a Tensor, got None")
    return clamp(_float_for(input, max), max=max)


def _float_for(input, bound):
    """An integer ``input`` clamped by a float number takes the default float dtype."""
    if isinstance(bound, float) and not input.dtype.is_floating_point:
        return input.to(_dt.get_default_dtype())
    return input


class NanToNum(Op):
    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        ctx.save_for_backward(x)
        return x.nan_to_num(nan, posinf, neginf)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * isfinite(x), None, None, None


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, ``+inf`` to ``posinf`` and ``-inf`` to ``neginf`` (None: the
    dtype's largest/smallest finite value). The gradient is 0 at the replaced elements."""
    check_tensor(input, "nan_to_num")
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and not is_scalar(v):
            raise TypeError(
                f"nan_to_num: argument '{name}' must be a number or None, got {type(v).__name__}"
            )
    return NanToNum.apply(input, 0.0 if nan is None else nan, posinf, neginf)


# -------------------------------------------------------------- comparisons
class _IsClose(Op):
    @staticmethod
    def forward(ctx, a, b, rtol, atol, equal_nan):
        return a.isclose(b, rtol, atol, equal_nan)

    @staticmethod
    def backward(ctx, grad_output):
        raise RuntimeError("isclose is not differentiable")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (equal infinities are
    close; NaNs only with ``equal_nan``). A bool tensor, no gradient.

    Raises:
        RuntimeError: if the dtypes differ or a tolerance is negative (as torch).
    """
    _check_pair(input, other, "isclose")
    if input.dtype != other.dtype:
        raise RuntimeError(
            f"isclose: input ({input.dtype}) and other ({other.dtype}) must have the same dtype"
        )
    for name, v in (("rtol", rtol), ("atol", atol)):
        if v < 0:
            raise RuntimeError(
                f"isclose: {name} must be greater than or equal to zero, but got {v}"
            )
    with no_grad():
        return _IsClose.apply(input, other, float(rtol), float(atol), bool(equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of ``isclose(input, other, ...)`` holds (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """Whether ``input`` and ``other`` have the same shape and the same values (NaN is
    never equal). A Python bool."""
    from nnkit.autograd.tensor import Tensor

    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"equal: argument '{name}' must be a Tensor, got {type(v).__name__}")
    return input._impl.data.array_equal(other._impl.data)


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
    """``x * relu6(x + 3) / 6``; the gradient at -3 is 0 and at 3 is 1 (as torch).
    ``inplace`` is accepted for compatibility: the result is always a new tensor."""
    check_tensor(input, "hardswish")
    return Hardswish.apply(input)


def hardsigmoid(input, inplace: bool = False):
    """``relu6(x + 3) / 6``; the gradient is 1/6 strictly inside (-3, 3), else 0."""
    check_tensor(input, "hardsigmoid")
    return hardtanh(input + 3.0, 0.0, 6.0) / 6.0


def glu(input, dim: int = -1):
    """Gated linear unit: ``a * sigmoid(b)`` for the halves ``a, b`` of ``input`` along
    ``dim``.

    Raises:
        RuntimeError: for a 0-d input or an odd size along ``dim``.
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
    """``x`` where ``x > 0`` else ``weight * x``; ``weight`` has 1 element or one per
    channel (dimension 1 of ``input``).

    Raises:
        RuntimeError: if ``weight`` is not 0-d/1-d or its size does not match.
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
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Raises:
        RuntimeError: for ``alpha == 0`` (as torch).
    """
    check_tensor(input, "celu")
    if alpha == 0:
        raise RuntimeError("celu: argument 'alpha' must not be 0 (ZeroDivisionError)")
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
    """``x / (1 + |x|)``."""
    check_tensor(input, "softsign")
    return input / (_abs(input) + 1)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """``value`` where ``input <= threshold``, else ``input`` (NaN stays NaN)."""
    check_tensor(input, "threshold")
    out = where(input <= threshold, value, input)
    return out if out.dtype == input.dtype else out.to(input.dtype)  # ints stay ints


def hardshrink(input, lambd: float = 0.5):
    """0 on ``[-lambd, lambd]``, ``x`` elsewhere."""
    check_tensor(input, "hardshrink")
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


def softshrink(input, lambd: float = 0.5):
    """0 on ``[-lambd, lambd]``, else ``x`` moved ``lambd`` towards 0.

    Raises:
        RuntimeError: for a negative ``lambd`` (as torch).
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
    """``x - tanh(x)``."""
    check_tensor(input, "tanhshrink")
    return input - tanh(input)
