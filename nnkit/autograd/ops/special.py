"""Special unary maths: inverse trigonometric and hyperbolic functions, ``erfc``/``erfinv``,
``lgamma``/``digamma``, ``logit``, ``frac`` and ``nan_to_num``.

Forward runs on Mats (kernels in :mod:`nnkit.backends.special_kernels`, which never
raise floating-point warnings); backward is written in Tensor ops with torch's formulas,
so double backward works (except through ``digamma``: its derivative ``trigamma`` has
no backward). Integer inputs give the default float dtype, as in torch. The binary
special functions are in :mod:`nnkit.autograd.ops.binary_math`, the activations of
issue 13 in :mod:`nnkit.autograd.ops.activation_extra`.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import check_tensor, float_mat, is_scalar
from nnkit.autograd.ops.discrete import isfinite
from nnkit.autograd.ops.elementwise import _unary as _unary_op
from nnkit.autograd.ops.elementwise import exp, rsqrt
from nnkit.autograd.ops.selection import where

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
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "logit",
    "frac",
    "nan_to_num",
]

# Functions of __all__ that are not Tensor methods (their first argument is not a tensor).
NOT_METHODS: set[str] = set()


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


_UNARY_DOC = """{summary}

Args:
    input: the input tensor{domain}. Integer inputs give the default float dtype, as in
        PyTorch.

Returns:
    A tensor of ``input``'s shape.

Gradient: {grad}

Example:
    >>> nnkit.{name}(nnkit.tensor({example}))
    {result}
"""


def _unary_fn(cls, name, summary, *, domain="", grad, example, result):
    """The public function of ``cls``, with its docstring filled from the fields."""

    def fn(input):
        check_tensor(input, name)
        return cls.apply(input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _UNARY_DOC.format(
        summary=summary, domain=domain, grad=grad, name=name, example=example, result=result
    )
    return fn


_OUTSIDE_1 = "; values outside ``[-1, 1]`` give NaN"

asin = _unary_fn(
    Asin,
    "asin",
    "Inverse sine, elementwise: ``asin(x)`` in ``[-pi/2, pi/2]``; ``arcsin`` is the same.",
    domain=_OUTSIDE_1,
    grad="``1 / sqrt(1 - x**2)``, ``inf`` at ``x = +-1`` (PyTorch's value).",
    example="[-1.0, 0.0, 0.5]",
    result="tensor([-1.5708,  0.0000,  0.5236])",
)
acos = _unary_fn(
    Acos,
    "acos",
    "Inverse cosine, elementwise: ``acos(x)`` in ``[0, pi]``; ``arccos`` is the same.",
    domain=_OUTSIDE_1,
    grad="``-1 / sqrt(1 - x**2)``, ``-inf`` at ``x = +-1`` (PyTorch's value).",
    example="[-1.0, 0.0, 0.5]",
    result="tensor([3.1416, 1.5708, 1.0472])",
)
atan = _unary_fn(
    Atan,
    "atan",
    "Inverse tangent, elementwise: ``atan(x)`` in ``(-pi/2, pi/2)``; ``arctan`` is the "
    "same.\n\nFor the angle of a point ``(x, y)`` in the right quadrant use :func:`atan2`.",
    grad="``1 / (1 + x**2)``.",
    example="[-1.0, 0.0, 10.0]",
    result="tensor([-0.7854,  0.0000,  1.4711])",
)
sinh = _unary_fn(
    Sinh,
    "sinh",
    "Hyperbolic sine, elementwise: ``sinh(x) = (exp(x) - exp(-x)) / 2``.",
    grad="``cosh(x)``.",
    example="[-1.0, 0.0, 2.0]",
    result="tensor([-1.1752,  0.0000,  3.6269])",
)
cosh = _unary_fn(
    Cosh,
    "cosh",
    "Hyperbolic cosine, elementwise: ``cosh(x) = (exp(x) + exp(-x)) / 2``.",
    grad="``sinh(x)``.",
    example="[-1.0, 0.0, 2.0]",
    result="tensor([1.5431, 1.0000, 3.7622])",
)
asinh = _unary_fn(
    Asinh,
    "asinh",
    "Inverse hyperbolic sine, elementwise: ``asinh(x) = log(x + sqrt(x**2 + 1))``; "
    "``arcsinh`` is the same.",
    grad="``1 / sqrt(x**2 + 1)``.",
    example="[-1.0, 0.0, 2.0]",
    result="tensor([-0.8814,  0.0000,  1.4436])",
)
acosh = _unary_fn(
    Acosh,
    "acosh",
    "Inverse hyperbolic cosine, elementwise: ``acosh(x) = log(x + sqrt(x**2 - 1))``; "
    "``arccosh`` is the same.",
    domain="; values below 1 give NaN, as in PyTorch",
    grad="``1 / sqrt(x**2 - 1)``, which is ``inf`` at ``x = 1`` (PyTorch's value).",
    example="[1.0, 2.0, 10.0]",
    result="tensor([0.0000, 1.3170, 2.9932])",
)
atanh = _unary_fn(
    Atanh,
    "atanh",
    "Inverse hyperbolic tangent, elementwise: ``atanh(x) = log((1 + x) / (1 - x)) / 2``; "
    "``arctanh`` is the same.",
    domain="; ``+-1`` give ``+-inf`` and values outside ``[-1, 1]`` NaN",
    grad="``1 / (1 - x**2)``, ``inf`` at ``x = +-1``.",
    example="[-0.5, 0.0, 1.0]",
    result="tensor([-0.5493,  0.0000,     inf])",
)
erfc = _unary_fn(
    Erfc,
    "erfc",
    "Complementary error function, elementwise: ``erfc(x) = 1 - erf(x)``, accurate in the "
    "tail where ``1 - erf(x)`` rounds to 0 (a Cephes kernel).",
    grad="``-2 / sqrt(pi) * exp(-x**2)``.",
    example="[0.0, 1.0, 5.0]",
    result="tensor([1.0000e+00, 1.5730e-01, 1.5375e-12])",
)
erfinv = _unary_fn(
    Erfinv,
    "erfinv",
    "Inverse error function, elementwise: ``erfinv(erf(x)) = x`` on ``(-1, 1)``.",
    domain="; ``+-1`` give ``+-inf`` and values outside ``[-1, 1]`` NaN",
    grad="``sqrt(pi) / 2 * exp(erfinv(x)**2)``, ``inf`` at ``x = +-1``.",
    example="[0.0, 0.5, -1.0]",
    result="tensor([0.0000, 0.4769,   -inf])",
)
lgamma = _unary_fn(
    Lgamma,
    "lgamma",
    "Log-gamma, elementwise: ``lgamma(x) = log|Gamma(x)|``.",
    domain="; the poles ``0, -1, -2, ...`` give ``inf``, 1 and 2 exactly 0 (as PyTorch)",
    grad="``digamma(x)`` (NaN or ``+-inf`` at the poles, as in PyTorch).",
    example="[0.5, 3.0, 10.0]",
    result="tensor([ 0.5724,  0.6931, 12.8018])",
)
digamma = _unary_fn(
    Digamma,
    "digamma",
    "Digamma, elementwise: ``digamma(x) = psi(x) = d/dx lgamma(x)``.",
    domain="; as in PyTorch, ``+0`` gives ``-inf``, ``-0`` gives ``inf`` and the negative "
    "integers NaN",
    grad="``trigamma(x)``. It has no backward itself (a second derivative raises "
    "``RuntimeError``); at the poles it is ``inf`` where PyTorch returns large finite values.",
    example="[0.5, 1.0, 10.0]",
    result="tensor([-1.9635, -0.5772,  2.2518])",
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
    """Log-odds, elementwise: ``logit(p) = log(p / (1 - p))``, the inverse of :func:`sigmoid`.

    Args:
        input: probabilities; 0 gives ``-inf``, 1 gives ``inf`` and values outside
            ``[0, 1]`` NaN. Integer inputs give the default float dtype.
        eps: None (default) or a float: ``p`` is first clamped to ``[eps, 1 - eps]``. A
            negative ``eps`` means no clamping, as in PyTorch.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``1 / (p (1 - p))``; NaN outside ``[0, 1]`` without ``eps``, and 0 outside
    ``[eps, 1 - eps]`` with it (PyTorch's conventions).

    Raises:
        TypeError: if ``eps`` is not a number or None.

    Example:
        >>> nnkit.logit(nnkit.tensor([0.25, 0.5, 0.9]))
        tensor([-1.0986,  0.0000,  2.1972])
        >>> nnkit.logit(nnkit.tensor([0.0, 0.5, 1.0]), eps=0.1)
        tensor([-2.1972,  0.0000,  2.1972])
    """
    check_tensor(input, "logit")
    if eps is not None and not is_scalar(eps):
        raise TypeError(f"logit: argument 'eps' must be a float or None, got {type(eps).__name__}")
    return Logit.apply(input, None if eps is None or eps < 0 else float(eps))


class Frac(Op):
    @staticmethod
    def forward(ctx, x):
        return x.frac()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def frac(input):
    """Fractional part, elementwise: ``frac(x) = x - trunc(x)``, with the sign of ``x``.

    Args:
        input: a floating-point tensor.

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: 1 everywhere (PyTorch's convention, also at the integers).

    Raises:
        RuntimeError: for an integer or bool tensor (PyTorch raises
            ``NotImplementedError``, a subclass of ``RuntimeError``).

    Example:
        >>> nnkit.frac(nnkit.tensor([-2.5, 3.75, 1.0]))
        tensor([-0.5000,  0.7500,  0.0000])
    """
    check_tensor(input, "frac")
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"frac: not implemented for integer or bool tensors (input has dtype {input.dtype})"
        )
    return Frac.apply(input)


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
    """Replace NaN, ``+inf`` and ``-inf`` by finite numbers, elementwise.

    Args:
        input: the input tensor (integer tensors are returned unchanged in value).
        nan: the value for NaN (default 0.0; None also means 0.0).
        posinf: the value for ``+inf``; None (default): the dtype's largest finite value.
        neginf: the value for ``-inf``; None (default): the dtype's smallest finite value.

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: ``g`` at the finite elements, 0 at the replaced ones (as in PyTorch).

    Raises:
        TypeError: if a replacement is neither a number nor None.

    Example:
        >>> x = nnkit.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
        >>> nnkit.nan_to_num(x)
        tensor([ 0.0000e+00,  3.4028e+38, -3.4028e+38,  1.0000e+00])
        >>> nnkit.nan_to_num(x, posinf=100.0, neginf=-100.0)
        tensor([   0.0,  100.0, -100.0,    1.0])
    """
    check_tensor(input, "nan_to_num")
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if v is not None and not is_scalar(v):
            raise TypeError(
                f"nan_to_num: argument '{name}' must be a number or None, got {type(v).__name__}"
            )
    return NanToNum.apply(input, 0.0 if nan is None else nan, posinf, neginf)
