"""More elementwise ops, as torch names them: the real-tensor identities (``positive``,
``conj``, ``real``...), angle conversions, ``exp2``, ``sinc``, sign tests, ``copysign``,
NaN-ignoring ``fmax``/``fmin``, ``logaddexp2``, ``ldexp``, ``float_power``, ``rsub`` and
the integer ``gcd``/``lcm``.

The differentiable ones are compositions of existing ops (so their gradients, and
second gradients, are those ops' gradients, matching torch's formulas, including its
conventions at ties and zeros, as noted per op); the predicates and integer ops run one
kernel (:mod:`nnkit.backends.extra_kernels`) and carry no gradient.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import as_mat_pair, check_tensor, is_scalar, promote_tensors
from nnkit.autograd.ops.selection import where
from nnkit.backends import dtypes as _dt
from nnkit.backends import extra_kernels as _k

__all__ = [
    "positive",
    "conj",
    "conj_physical",
    "resolve_conj",
    "resolve_neg",
    "real",
    "isreal",
    "deg2rad",
    "rad2deg",
    "exp2",
    "sinc",
    "sgn",
    "signbit",
    "isposinf",
    "isneginf",
    "copysign",
    "fmax",
    "fmin",
    "heaviside",
    "logaddexp2",
    "ldexp",
    "float_power",
    "rsub",
    "gcd",
    "lcm",
    "nextafter",
]

# Functions of __all__ that are not Tensor methods (torch's ``Tensor.real`` is a property).
NOT_METHODS: set[str] = {"real"}


class _Kernel(Op):
    """One kernel of :mod:`nnkit.backends.extra_kernels`; the result carries no gradient."""

    @staticmethod
    def forward(ctx, kernel, name, *args):
        if len(args) == 2:
            args = as_mat_pair(args[0], args[1], name)
        return kernel(*args)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("this op is not differentiable")


def _nondiff(kernel, name, *args):
    with no_grad():
        return _Kernel.apply(kernel, name, *args)


def _ufunc(name):
    return lambda *mats: _k.ufunc(name, *mats)


def _float(x):
    """``x`` in a floating dtype (integers and bools take the default float dtype)."""
    if x.dtype.is_floating_point:
        return x
    return x.to(_dt.get_default_dtype())


def _real(input, op):
    check_tensor(input, op)
    return input


def positive(input):
    """``input`` itself (``+input``); bool tensors are refused, as in torch.

    Example:
        >>> nnkit.positive(nnkit.tensor([-1.0, 2.0]))
        tensor([-1.0,  2.0])
    """
    check_tensor(input, "positive")
    if input.dtype == _dt.bool_:
        raise TypeError("positive: not supported for bool tensors")
    return input


def conj(input):
    """The complex conjugate: ``input`` itself, nnkit's tensors being real.

    Example:
        >>> nnkit.conj(nnkit.tensor([1.0, -2.0]))
        tensor([ 1.0, -2.0])
    """
    return _real(input, "conj")


def conj_physical(input):
    """The complex conjugate, materialised: ``input`` itself for real tensors.

    Example:
        >>> nnkit.conj_physical(nnkit.tensor([1.0]))
        tensor([1.0])
    """
    return _real(input, "conj_physical")


def resolve_conj(input):
    """``input`` with a lazy conjugation applied: ``input`` itself for real tensors.

    Example:
        >>> nnkit.resolve_conj(nnkit.tensor([1.0]))
        tensor([1.0])
    """
    return _real(input, "resolve_conj")


def resolve_neg(input):
    """``input`` with a lazy negation applied: ``input`` itself (nnkit negates eagerly).

    Example:
        >>> nnkit.resolve_neg(nnkit.tensor([1.0]))
        tensor([1.0])
    """
    return _real(input, "resolve_neg")


def real(input):
    """The real part: ``input`` itself for real tensors (as torch).

    Example:
        >>> nnkit.real(nnkit.tensor([1.5]))
        tensor([1.5000])
    """
    return _real(input, "real")


def isreal(input):
    """Whether each element is real: all True for nnkit's real tensors.

    Example:
        >>> nnkit.isreal(nnkit.tensor([1.0, float("nan")]))
        tensor([True, True])
    """
    check_tensor(input, "isreal")
    return (input == input) | (input != input)


def deg2rad(input):
    """Degrees to radians: ``input * pi / 180``; integers give the default float dtype.

    Example:
        >>> nnkit.deg2rad(nnkit.tensor([180.0, 90.0]))
        tensor([3.1416, 1.5708])
    """
    return _float(check_tensor(input, "deg2rad")) * (math.pi / 180.0)


def rad2deg(input):
    """Radians to degrees: ``input * 180 / pi``; integers give the default float dtype.

    Example:
        >>> nnkit.rad2deg(nnkit.tensor([math.pi]))
        tensor([180.0])
    """
    return _float(check_tensor(input, "rad2deg")) * (180.0 / math.pi)


def exp2(input):
    """``2 ** input``, elementwise; integers give the default float dtype.

    Gradient: ``log(2) * 2 ** input``.

    Example:
        >>> nnkit.exp2(nnkit.tensor([0.0, 3.0, -1.0]))
        tensor([1.0000, 8.0000, 0.5000])
    """
    return 2.0 ** _float(check_tensor(input, "exp2"))


def sinc(input):
    """The normalised sinc: ``sin(pi x) / (pi x)``, 1 at ``x = 0``.

    Gradient: ``(cos(pi x) - sinc(x)) / x``, 0 at ``x = 0`` (as torch).

    Example:
        >>> nnkit.sinc(nnkit.tensor([0.0, 0.5, 1.0]))
        tensor([ 1.0000e+00,  6.3662e-01, -2.7828e-08])
    """
    x = _float(check_tensor(input, "sinc"))
    zero = x == 0
    px = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, px.sin() / px)


def sgn(input):
    """The sign of each element (-1, 0 or 1): :func:`sign` for real tensors; no gradient
    (torch's gradient is 0 everywhere).

    Example:
        >>> nnkit.sgn(nnkit.tensor([-2.0, 0.0, 3.0]))
        tensor([-1.0,  0.0,  1.0])
    """
    return check_tensor(input, "sgn").sign()


def signbit(input):
    """Whether each element's sign bit is set (True for negatives, ``-0.0`` and
    negative NaNs). Returns a bool tensor, no gradient.

    Example:
        >>> nnkit.signbit(nnkit.tensor([-1.0, -0.0, 0.0, 2.0]))
        tensor([ True,  True, False, False])
    """
    return _nondiff(_ufunc("signbit"), "signbit", check_tensor(input, "signbit"))


def isposinf(input):
    """Whether each element is ``+inf`` (a bool tensor; always False for integers).

    Example:
        >>> nnkit.isposinf(nnkit.tensor([float("inf"), -float("inf"), 1.0]))
        tensor([ True, False, False])
    """
    return _nondiff(_ufunc("isposinf"), "isposinf", check_tensor(input, "isposinf"))


def isneginf(input):
    """Whether each element is ``-inf`` (a bool tensor; always False for integers).

    Example:
        >>> nnkit.isneginf(nnkit.tensor([float("inf"), -float("inf"), 1.0]))
        tensor([False,  True, False])
    """
    return _nondiff(_ufunc("isneginf"), "isneginf", check_tensor(input, "isneginf"))


def _signbit_of(other, like):
    if is_scalar(other):
        return math.copysign(1.0, other) < 0
    return signbit(check_tensor(other, "copysign", "other"))


def copysign(input, other):
    """``|input|`` with the sign of ``other`` (a tensor or number; ``-0.0`` counts as
    negative), broadcasting; integers give the default float dtype.

    Gradient: ``g * sign(input) * sign(result)`` for ``input`` (0 where ``input`` is
    0, as torch), 0 for ``other``.

    Example:
        >>> nnkit.copysign(nnkit.tensor([1.0, -2.0, 3.0]), nnkit.tensor([-1.0, 1.0, -0.0]))
        tensor([-1.0,  2.0, -3.0])
    """
    x = _float(check_tensor(input, "copysign"))
    if not is_scalar(other):  # the result dtype is both operands' (torch)
        x = promote_tensors(input, check_tensor(other, "copysign", "other"), floating=True)[0]
    neg = _signbit_of(other, x)
    if isinstance(neg, bool):
        return -x.abs() if neg else x.abs()
    a = x.abs()
    return where(neg, -a, a)


def _nan_pick(input, other, op, better):
    check_tensor(input, op)
    if is_scalar(other):
        raise TypeError(f"{op}: 'other' must be a Tensor, got {type(other).__name__}")
    check_tensor(other, op, "other")
    keep = better(input, other) | other.isnan()
    return where(keep, input, other)


def fmax(input, other):
    """Elementwise maximum that ignores NaN: where one side is NaN the other is taken
    (NaN only where both are), broadcasting.

    Gradient: all of ``g`` to ``input`` where it is taken (ties go to ``input``), the
    rest to ``other``, as torch.

    Example:
        >>> nnkit.fmax(nnkit.tensor([1.0, float("nan"), 3.0]), nnkit.tensor([2.0, 0.5, 1.0]))
        tensor([2.0000, 0.5000, 3.0000])
    """
    return _nan_pick(input, other, "fmax", lambda a, b: a >= b)


def fmin(input, other):
    """Elementwise minimum that ignores NaN (see :func:`fmax`); ties go to ``input``.

    Example:
        >>> nnkit.fmin(nnkit.tensor([1.0, float("nan"), 3.0]), nnkit.tensor([2.0, 0.5, 1.0]))
        tensor([1.0000, 0.5000, 1.0000])
    """
    return _nan_pick(input, other, "fmin", lambda a, b: a <= b)


def heaviside(input, values):
    """The step function: 0 where ``input < 0`` (and NaN), 1 where ``input > 0`` and
    ``values`` where ``input == 0``, broadcasting; no gradient (torch has none).

    Example:
        >>> nnkit.heaviside(nnkit.tensor([-1.0, 0.0, 2.0]), nnkit.tensor(0.5))
        tensor([0.0000, 0.5000, 1.0000])
    """
    check_tensor(input, "heaviside")
    check_tensor(values, "heaviside", "values")
    return _nondiff(_k.heaviside, "heaviside", input, values)


def logaddexp2(input, other):
    """``log2(2**input + 2**other)``, computed stably, broadcasting.

    Gradient: ``g * 2**input / (2**input + 2**other)`` (and symmetrically for ``other``).

    Example:
        >>> nnkit.logaddexp2(nnkit.tensor([1.0, 10.0]), nnkit.tensor([1.0, 0.0]))
        tensor([ 2.0000, 10.0014])
    """
    check_tensor(input, "logaddexp2")
    a, b = promote_tensors(input, check_tensor(other, "logaddexp2", "other"), floating=True)
    m = a.detach().maximum(b.detach())
    m = where(m.isinf(), 0.0, m)
    return m + (2.0 ** (a - m) + 2.0 ** (b - m)).log2()


def ldexp(input, other):
    """``input * 2 ** other``, broadcasting; the result is floating.

    Example:
        >>> nnkit.ldexp(nnkit.tensor([1.0, 3.0]), nnkit.tensor([3, -1]))
        tensor([8.0000, 1.5000])
    """
    x = check_tensor(input, "ldexp")
    e = check_tensor(other, "ldexp", "other")
    if not e.dtype.is_floating_point:  # torch: an integer exponent keeps input's dtype
        x = _float(x)
        return x * 2.0 ** e.to(x.dtype)
    return x * 2.0**e  # a float exponent promotes as ``*``


def float_power(input, exponent):
    """``input ** exponent`` computed in float64 (either may be a number); the result
    is float64 whatever the inputs' dtypes.

    Example:
        >>> nnkit.float_power(nnkit.tensor([2, 3]), 2).dtype
        nnkit.float64
    """
    if is_scalar(input):
        return float(input) ** check_tensor(exponent, "float_power", "exponent").double()
    x = check_tensor(input, "float_power").double()
    if is_scalar(exponent):
        return x ** float(exponent)
    return x ** check_tensor(exponent, "float_power", "exponent").double()


def rsub(input, other, alpha=1):
    """``other - alpha * input`` (``other`` may be a number): subtraction, reversed.

    Example:
        >>> nnkit.rsub(nnkit.tensor([1.0, 2.0]), 5.0)
        tensor([4.0, 3.0])
    """
    check_tensor(input, "rsub")
    return other - (input * alpha if alpha != 1 else input)


def _integer_pair(input, other, op):
    check_tensor(input, op)
    check_tensor(other, op, "other")
    for t in (input, other):
        if t.dtype.is_floating_point or t.dtype == _dt.bool_:
            raise TypeError(f"{op}: expects integer tensors, got {t.dtype}")
    return _nondiff(_ufunc(op), op, input, other)


def gcd(input, other):
    """The elementwise greatest common divisor of two integer tensors (non-negative;
    ``gcd(0, 0) = 0``), broadcasting.

    Example:
        >>> nnkit.gcd(nnkit.tensor([12, -9, 0]), nnkit.tensor([18, 6, 0]))
        tensor([6, 3, 0])
    """
    return _integer_pair(input, other, "gcd")


def lcm(input, other):
    """The elementwise least common multiple of two integer tensors (non-negative; 0
    where either is 0), broadcasting.

    Example:
        >>> nnkit.lcm(nnkit.tensor([4, -6, 0]), nnkit.tensor([6, 4, 5]))
        tensor([12, 12,  0])
    """
    return _integer_pair(input, other, "lcm")


def nextafter(input, other):
    """The next floating-point value after ``input`` towards ``other``, elementwise and
    broadcasting, in ``input``'s dtype.

    Gradient: ``g`` for ``input`` (as if the step were the identity), 0 for ``other``,
    as torch.

    Example:
        >>> (nnkit.nextafter(nnkit.tensor([1.0]), nnkit.tensor([2.0])) - 1).item() > 0
        True
    """
    check_tensor(input, "nextafter")
    check_tensor(other, "nextafter", "other")
    input, other = promote_tensors(input, other)
    if not (input.dtype.is_floating_point and other.dtype == input.dtype):
        raise TypeError(
            f"nextafter: expects two floating tensors of one dtype, got {input.dtype} "
            f"and {other.dtype}"
        )
    out = _nondiff(_ufunc("nextafter"), "nextafter", input, other)
    if not input.requires_grad:
        return out
    return input + (out - input.detach())  # torch: gradient g for input, 0 for other
