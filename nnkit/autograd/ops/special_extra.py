"""Special functions of issue 13 with gradients: the modified Bessel functions ``i0``,
``i0e``, ``i1``, ``i1e``, ``erfcx``, ``log_ndtr``, the Hurwitz ``zeta``, ``polygamma``,
``mvlgamma``, the regularized incomplete gamma functions ``igamma``/``igammac``, and
``frexp`` and the bit shifts.

Forward runs the array kernels of :mod:`nnkit.backends.special_kernels2` and
:mod:`nnkit.backends.igamma_kernels` (ports of PyTorch's, in float64, cast back);
backward is written in Tensor ops with torch's formulas, so double backward works.
Integer inputs give the default float dtype, as in torch. Where torch has no derivative
(``igamma``'s and ``zeta``'s first argument), the backward raises a ``RuntimeError``
naming the op.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import as_mat_pair, check_tensor, float_mat, float_pair, is_scalar
from nnkit.autograd.ops.elementwise import exp
from nnkit.autograd.ops.pointwise import exp2, sgn
from nnkit.autograd.ops.reduction import sum as _sum
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.shape import broadcast_shapes, unsqueeze
from nnkit.autograd.ops.shape import reduce_grad as _reduce
from nnkit.autograd.ops.special import lgamma
from nnkit.autograd.tensor import Tensor
from nnkit.backends import igamma_kernels as _ig
from nnkit.backends import special_kernels2 as _k

__all__ = [
    "i0",
    "polygamma",
    "mvlgamma",
    "igamma",
    "igammac",
    "frexp",
    "bitwise_left_shift",
    "bitwise_right_shift",
]

# Functions of __all__ that are not Tensor methods (their first argument is not a tensor).
NOT_METHODS = {"polygamma"}

_EPS64 = float(np.finfo(np.float64).eps)

frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


# ------------------------------------------------------------------ unary ops
def _unary_op(name, fn, grad):
    """A float unary Op running ``fn`` with backward ``grad(g, x, out)``."""

    def forward(ctx, x):
        x = float_mat(x)
        out = _k.map_float64(fn, x)
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, out)
        return out

    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        return grad(grad_output, x, out)

    cls = type(name, (Op,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    cls.__module__ = __name__
    return cls


def _tiny_safe(x):
    """``(not_tiny, safe)``: ``|x| > eps`` and ``x`` with the tiny values replaced by
    ``eps`` (torch's guard of ``i1``'s and ``i1e``'s gradient at 0, where it is 0.5)."""
    eps = _EPS64 if x.dtype.itemsize == 8 else float(np.finfo(np.float32).eps)
    big = x.abs() > eps
    return big, where(big, x, eps)


def _i1_grad(g, x, out):
    big, safe = _tiny_safe(x)
    return g * where(big, i0(safe) - out / safe, 0.5)


def _i1e_grad(g, x, out):
    big, safe = _tiny_safe(x)
    return g * where(big, i0e(safe) - out * (sgn(safe) + 1.0 / safe), 0.5)


_2_SQRT_PI = 2.0 / math.sqrt(math.pi)
I0 = _unary_op("I0", _k.i0_array, lambda g, x, out: g * i1(x))
I0e = _unary_op("I0e", _k.i0e_array, lambda g, x, out: g * (i1e(x) - sgn(x) * out))
I1 = _unary_op("I1", _k.i1_array, _i1_grad)
I1e = _unary_op("I1e", _k.i1e_array, _i1e_grad)
Erfcx = _unary_op("Erfcx", _k.erfcx_array, lambda g, x, out: g * (2.0 * x * out - _2_SQRT_PI))
LogNdtr = _unary_op(
    "LogNdtr",
    _k.log_ndtr_array,
    lambda g, x, out: g / math.sqrt(2.0 * math.pi) * exp(-(out + x * x / 2.0)),
)

_UNARY_DOC = """{summary}

Args:
    input: the input tensor; integer inputs give the default float dtype.

Returns:
    A tensor of ``input``'s shape.

Gradient: {grad}

Example:
    >>> nnkit.special.{name}(nnkit.tensor({example}))
    {result}
"""


def _unary_fn(cls, name, summary, grad, example, result):
    def fn(input):
        check_tensor(input, name)
        return cls.apply(input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _UNARY_DOC.format(
        summary=summary, grad=grad, name=name, example=example, result=result
    )
    return fn


i0 = _unary_fn(
    I0,
    "i0",
    "The modified Bessel function of the first kind of order 0, elementwise: ``I0(x) = "
    "sum_k (x/2)**(2k) / (k!)**2``; NaN at ``+-inf`` (as PyTorch's kernel). Also "
    "``nnkit.i0`` and ``special.modified_bessel_i0`` (the same values).",
    "``i1(x)``.",
    "[0.0, 1.0, 2.0]",
    "tensor([1.0000, 1.2661, 2.2796])",
)
i0e = _unary_fn(
    I0e,
    "i0e",
    "The exponentially scaled ``I0``, elementwise: ``i0e(x) = exp(-|x|) I0(x)`` (finite "
    "where ``I0`` overflows).",
    "``i1e(x) - sgn(x) i0e(x)``.",
    "[0.0, 1.0, 100.0]",
    "tensor([1.0000, 0.4658, 0.0399])",
)
i1 = _unary_fn(
    I1,
    "i1",
    "The modified Bessel function of the first kind of order 1, elementwise (odd in "
    "``x``; NaN at ``+-inf`` as PyTorch's kernel).",
    "``i0(x) - i1(x) / x``, and 0.5 where ``|x| <= eps`` (PyTorch's guard).",
    "[0.0, 1.0, -2.0]",
    "tensor([ 0.0000,  0.5652, -1.5906])",
)
i1e = _unary_fn(
    I1e,
    "i1e",
    "The exponentially scaled ``I1``, elementwise: ``i1e(x) = exp(-|x|) I1(x)``.",
    "``i0e(x) - i1e(x) (sgn(x) + 1 / x)``, and 0.5 where ``|x| <= eps``.",
    "[0.0, 1.0, -100.0]",
    "tensor([ 0.0000,  0.2079, -0.0397])",
)
erfcx = _unary_fn(
    Erfcx,
    "erfcx",
    "The scaled complementary error function, elementwise: ``erfcx(x) = exp(x**2) "
    "erfc(x)``, accurate for large ``x`` where ``erfc`` underflows; ``inf`` below about "
    "-26.7.",
    "``2 x erfcx(x) - 2 / sqrt(pi)``.",
    "[-1.0, 0.0, 30.0]",
    "tensor([5.0090, 1.0000, 0.0188])",
)
log_ndtr = _unary_fn(
    LogNdtr,
    "log_ndtr",
    "The log of the standard normal CDF, elementwise: ``log(ndtr(x))``, accurate in "
    "both tails (through ``erfcx`` below -1).",
    "``exp(-x**2 / 2 - log_ndtr(x)) / sqrt(2 pi)``.",
    "[-40.0, 0.0, 3.0]",
    "tensor([-804.6085,   -0.6931,   -0.0014])",
)


# -------------------------------------------------------------- binary ops
class Zeta(Op):
    @staticmethod
    def forward(ctx, x, q):
        x, q = float_pair(x, q, "special.zeta", ctx.needs_input_grad, same_dtype=True)
        ctx.meta = ((x.shape, x.dtype), (q.shape, q.dtype))
        if ctx.needs_input_grad:
            ctx.save_for_backward(x, q)
        return _k.map2_float64(_k.zeta_array, x, q)

    @staticmethod
    def backward(ctx, grad_output):
        x, q = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError("special.zeta: the derivative for 'self' (x) is not implemented")
        return None, _reduce(grad_output * -x * zeta(x + 1.0, q), ctx.meta[1])


def zeta(input, other):
    """The Hurwitz zeta function, elementwise: ``zeta(x, q) = sum_{k>=0} (k + q)**-x``.

    Args:
        input: the exponents ``x`` (a tensor or a number); ``x = 1`` gives ``inf`` and
            ``x < 1`` NaN.
        other: the shifts ``q`` (a tensor or a number), broadcast with ``input``; the
            poles ``q = 0, -1, ...`` give ``inf``. Integer inputs give the default float
            dtype.

    Returns:
        A tensor of the broadcast shape.

    Gradient: ``-x zeta(x + 1, q)`` for ``other``; for ``input`` PyTorch has none and
    the backward raises ``RuntimeError``.

    Example:
        >>> nnkit.special.zeta(nnkit.tensor([2.0, 4.0]), 1.0)
        tensor([1.6449, 1.0823])
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("special.zeta: expected at least one tensor operand")
    return Zeta.apply(input, other)


class Polygamma(Op):
    @staticmethod
    def forward(ctx, x, n):
        x = float_mat(x)
        ctx.n = n
        if ctx.needs_input_grad:
            ctx.save_for_backward(x)
        return _k.map_float64(_k.polygamma_array, x, n)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * Polygamma.apply(x, ctx.n + 1), None


def polygamma(n, input):
    """The ``n``-th derivative of :func:`digamma`, elementwise: ``psi^(n)(x)``;
    ``polygamma(0, x)`` is ``digamma(x)``; ``x.polygamma(n)`` is the method form.

    Args:
        n: the order, an int ``>= 0``.
        input: the input tensor; integer inputs give the default float dtype.

    Returns:
        A tensor of ``input``'s shape (``inf`` or NaN at the poles ``0, -1, ...``).

    Gradient: ``polygamma(n + 1, x)``.

    Raises:
        RuntimeError: for a negative ``n`` (as PyTorch); TypeError if ``n`` is not an int.

    Example:
        >>> nnkit.polygamma(2, nnkit.tensor([1.0, 2.0]))
        tensor([-2.4041, -0.4041])
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"polygamma: argument 'n' must be an int, got {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    check_tensor(input, "polygamma")
    return Polygamma.apply(input, int(n))


def _polygamma_method(self, n):
    return polygamma(n, self)


Tensor.polygamma = _polygamma_method  # torch's argument order: x.polygamma(n)


def mvlgamma(input, p):
    """The multivariate log-gamma function of dimension ``p``, elementwise:
    ``sum_{i<p} lgamma(x - i/2) + p (p - 1) / 4 log(pi)`` (``special.multigammaln``).

    Args:
        input: the input tensor; every element must exceed ``(p - 1) / 2``.
        p: the dimension, an int ``>= 1``.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: ``sum_{i<p} digamma(x - i/2)``.

    Raises:
        RuntimeError: if ``p < 1`` or an element is ``<= (p - 1) / 2`` (as PyTorch).

    Example:
        >>> nnkit.mvlgamma(nnkit.tensor([2.5, 3.0]), 2)
        tensor([0.8570, 1.5502])
    """
    check_tensor(input, "mvlgamma")
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
        raise TypeError(f"mvlgamma: argument 'p' must be an int, got {type(p).__name__}")
    if p < 1:
        raise RuntimeError("mvlgamma: p has to be greater than or equal to 1")
    x = input if input.dtype.is_floating_point else input.float()
    with no_grad():
        ok = bool((x > 0.5 * (p - 1)).all())
    if not ok:
        raise RuntimeError("mvlgamma: All elements must be greater than (p-1)/2")
    offsets = x.new_tensor([-0.5 * (p - 1) + 0.5 * i for i in range(p)])
    args = unsqueeze(x, -1) + offsets
    return _sum(lgamma(args), -1) + p * (p - 1) * math.log(math.pi) / 4


def _igamma_x_grad(g, a, x):
    return g * exp((a - 1.0) * x.log() - x - lgamma(a))


def _igamma_op(name, fn, sign):
    def forward(ctx, a, x):
        a, x = float_pair(a, x, name, ctx.needs_input_grad, same_dtype=True)
        ctx.meta = ((a.shape, a.dtype), (x.shape, x.dtype))
        if ctx.needs_input_grad:
            ctx.save_for_backward(a, x)
        return _k.map2_float64(fn, a, x)

    def backward(ctx, grad_output):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError(f"{name}: the derivative for 'input' (a) is not implemented")
        return None, _reduce(sign * _igamma_x_grad(grad_output, a, x), ctx.meta[1])

    cls = type(
        name.capitalize(),
        (Op,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )
    cls.__module__ = __name__
    return cls


Igamma = _igamma_op("igamma", _ig.igamma_array, 1.0)
Igammac = _igamma_op("igammac", _ig.igammac_array, -1.0)

_IGAMMA_DOC = """The regularized {which} incomplete gamma function, elementwise: ``{formula}``
(``special.{alias}``).

Args:
    input: the parameters ``a >= 0`` (a tensor).
    other: the limits ``x >= 0`` (a tensor), broadcast with ``input``. Negative values
        give NaN; ``a = 0`` gives {a0} for ``x > 0``; ``x = inf`` gives {xinf}.
        Integer inputs give the default float dtype.

Returns:
    A tensor of the broadcast shape.

Gradient: ``{sign}x**(a-1) exp(-x) / Gamma(a)`` for ``other``; for ``input`` PyTorch has
none and the backward raises ``RuntimeError``.

Example:
    >>> nnkit.{name}(nnkit.tensor([1.0, 2.0]), nnkit.tensor([1.0, 3.0]))
    {result}
"""


def _igamma_fn(cls, name, **fields):
    def fn(input, other):
        for arg, v in (("input", input), ("other", other)):
            check_tensor(v, name, arg)
        broadcast_shapes(tuple(input.shape), tuple(other.shape))
        return cls.apply(input, other)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _IGAMMA_DOC.format(name=name, **fields)
    return fn


igamma = _igamma_fn(
    Igamma,
    "igamma",
    which="lower",
    formula="P(a, x) = 1/Gamma(a) int_0^x t**(a-1) exp(-t) dt",
    alias="gammainc",
    a0="1",
    xinf="1",
    sign="",
    result="tensor([0.6321, 0.8009])",
)
igammac = _igamma_fn(
    Igammac,
    "igammac",
    which="upper",
    formula="Q(a, x) = 1 - P(a, x)",
    alias="gammaincc",
    a0="0",
    xinf="0",
    sign="-",
    result="tensor([0.3679, 0.1991])",
)


# ---------------------------------------------------------------- frexp
class _FrexpExponent(Op):
    @staticmethod
    def forward(ctx, x):
        return _k.frexp_mats(x)[1]

    @staticmethod
    def backward(ctx, grad_output):
        raise RuntimeError("frexp: the exponent is not differentiable")


class Mantissa(Op):
    @staticmethod
    def forward(ctx, x, e):
        if ctx.needs_input_grad:
            ctx.save_for_backward(e)
        return _k.frexp_mats(x)[0]

    @staticmethod
    def backward(ctx, grad_output):
        (e,) = ctx.saved_tensors
        return grad_output / exp2(e.to(grad_output.dtype)), None


def frexp(input):
    """Split floats into mantissa and exponent: ``input = mantissa * 2**exponent`` with
    ``0.5 <= |mantissa| < 1`` (0, ``inf`` and NaN come back as they are, exponent 0).

    Args:
        input: a floating-point tensor.

    Returns:
        A named tuple ``(mantissa, exponent)``: the mantissa has ``input``'s dtype, the
        exponent is int32.

    Gradient: ``1 / 2**exponent`` for the mantissa (the exponent carries none).

    Raises:
        RuntimeError: for an integer or bool tensor (as PyTorch).

    Example:
        >>> nnkit.frexp(nnkit.tensor([8.0, 0.75, -3.0]))
        frexp(mantissa=tensor([ 0.5000,  0.7500, -0.7500]), exponent=tensor([4, 0, 2], dtype=nnkit.int32))
    """  # noqa: E501
    check_tensor(input, "frexp")
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"frexp: only floating-point dtypes are supported (input has dtype {input.dtype})"
        )
    with no_grad():
        e = _FrexpExponent.apply(input)
    return frexp_result(Mantissa.apply(input, e), e)


# ------------------------------------------------------------- bit shifts
class _Shift(Op):
    @staticmethod
    def forward(ctx, a, b, name):
        a, b = as_mat_pair(a, b, name)
        for m in (a, b):
            if m.dtype.kind not in "iu":
                raise RuntimeError(
                    f"{name}: only integer tensors are supported, got dtype {m.dtype}"
                )
        if a.dtype != b.dtype:  # torch's promotion between integer dtypes
            wide = np.promote_types(a.dtype, b.dtype)
            a, b = a.astype(wide), b.astype(wide)
        return _k.shift_mats(a, b, name == "bitwise_left_shift")

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("bit shifts are not differentiable")


def _shift(input, other, name):
    for arg, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor) and not (is_scalar(v) and not isinstance(v, float)):
            raise TypeError(f"{name}: argument '{arg}' must be a Tensor or an int")
    with no_grad():
        return _Shift.apply(input, other, name)


def bitwise_left_shift(input, other):
    """``input << other`` elementwise: the bits of ``input`` moved ``other`` places left
    (``x * 2**n`` modulo the dtype's range); shifts outside ``[0, bits)`` give 0.

    Args:
        input: an integer tensor, or an int when ``other`` is a tensor.
        other: the shift amounts: an integer tensor or an int, broadcast with ``input``.

    Returns:
        A tensor of the broadcast shape and promoted integer dtype; no gradient.

    Raises:
        RuntimeError: for a floating or bool tensor (as PyTorch).

    Example:
        >>> nnkit.bitwise_left_shift(nnkit.tensor([1, -3, 5]), 2)
        tensor([  4, -12,  20])
    """
    return _shift(input, other, "bitwise_left_shift")


def bitwise_right_shift(input, other):
    """``input >> other`` elementwise: an arithmetic shift (the sign bit fills in, so
    ``-8 >> 1`` is -4); shifts outside ``[0, bits)`` give 0, or -1 for negative inputs.

    Args:
        input: an integer tensor, or an int when ``other`` is a tensor.
        other: the shift amounts: an integer tensor or an int, broadcast with ``input``.

    Returns:
        A tensor of the broadcast shape and promoted integer dtype; no gradient.

    Raises:
        RuntimeError: for a floating or bool tensor (as PyTorch).

    Example:
        >>> nnkit.bitwise_right_shift(nnkit.tensor([16, -8, 5]), 2)
        tensor([ 4, -2,  1])
    """
    return _shift(input, other, "bitwise_right_shift")
