"""``nnkit.special``'s Bessel functions, ``airy_ai`` and the orthogonal polynomial
families, without gradients as in PyTorch.

Forward runs the kernels of :mod:`nnkit.backends.bessel_kernels` (ports of torch's, in
float64, cast back to the input's floating dtype; integer inputs give the default float
dtype). PyTorch implements no derivative for any of these: the result records the op
like torch's, and a backward through it raises ``RuntimeError`` naming the op.
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import check_tensor, float_mat, float_pair, is_scalar
from nnkit.autograd.tensor import Tensor
from nnkit.backends import bessel_kernels as _b
from nnkit.backends import special_kernels2 as _k

__all__: list[str] = []  # exported by nnkit.special only

_DOC1 = """{summary}

Args:
    input: the input tensor; integer inputs give the default float dtype.

Returns:
    A tensor of ``input``'s shape.

Not differentiable (as in PyTorch): a backward through it raises ``RuntimeError``.

Example:
    >>> nnkit.special.{name}(nnkit.tensor({example}))
    {result}
"""


def _no_grad_op(name, n_inputs):
    def backward(ctx, *grads):
        raise RuntimeError(f"special.{name}: the derivative is not implemented (as in PyTorch)")

    if n_inputs == 1:

        def forward(ctx, x, fn):
            return _k.map_float64(fn, float_mat(x))
    else:

        def forward(ctx, x, n, fn):
            x, n = float_pair(x, n, f"special.{name}", same_dtype=True)
            if fn is _hermite[0] or fn is _hermite[1]:
                limit = 128 if x.dtype.itemsize == 4 else 512
                return _k.map2_float64(lambda xp, a, b: fn(xp, a, b, limit), x, n)
            return _k.map2_float64(fn, x, n)

    cls = type(
        "Special" + name.title().replace("_", ""),
        (Op,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )
    cls.__module__ = __name__
    return cls


def _unary(name, fn, summary, example, result):
    cls = _no_grad_op(name, 1)

    def op(input):
        check_tensor(input, f"special.{name}")
        return cls.apply(input, fn)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = _DOC1.format(summary=summary, name=name, example=example, result=result)
    return op


bessel_j0 = _unary(
    "bessel_j0",
    _b.bessel_j0_array,
    "The Bessel function of the first kind of order 0, elementwise: ``J0(x)`` (even).",
    "[0.0, 1.0, 10.0]",
    "tensor([ 1.0000,  0.7652, -0.2459])",
)
bessel_j1 = _unary(
    "bessel_j1",
    _b.bessel_j1_array,
    "The Bessel function of the first kind of order 1, elementwise: ``J1(x)`` (odd).",
    "[0.0, 1.0, -10.0]",
    "tensor([ 0.0000,  0.4401, -0.0435])",
)
bessel_y0 = _unary(
    "bessel_y0",
    _b.bessel_y0_array,
    "The Bessel function of the second kind of order 0, elementwise: ``Y0(x)``; ``-inf`` "
    "at 0 and NaN for negative ``x``.",
    "[0.0, 1.0, 10.0]",
    "tensor([   -inf,  0.0883,  0.0557])",
)
bessel_y1 = _unary(
    "bessel_y1",
    _b.bessel_y1_array,
    "The Bessel function of the second kind of order 1, elementwise: ``Y1(x)``; ``-inf`` "
    "at 0 and NaN for negative ``x``.",
    "[0.0, 1.0, 10.0]",
    "tensor([   -inf, -0.7812,  0.2490])",
)
modified_bessel_i0 = _unary(
    "modified_bessel_i0",
    _k.i0_array,
    "The modified Bessel function of the first kind of order 0, elementwise: ``I0(x)`` "
    "(the values of :func:`nnkit.special.i0`, which has a gradient).",
    "[0.0, 1.0, -2.0]",
    "tensor([1.0000, 1.2661, 2.2796])",
)
modified_bessel_i1 = _unary(
    "modified_bessel_i1",
    _k.i1_array,
    "The modified Bessel function of the first kind of order 1, elementwise: ``I1(x)`` "
    "(the values of :func:`nnkit.special.i1`, which has a gradient).",
    "[0.0, 1.0, -2.0]",
    "tensor([ 0.0000,  0.5652, -1.5906])",
)
modified_bessel_k0 = _unary(
    "modified_bessel_k0",
    _b.modified_bessel_k0_array,
    "The modified Bessel function of the second kind of order 0, elementwise: ``K0(x)``; "
    "``inf`` at 0 and NaN for negative ``x``.",
    "[0.0, 1.0, 10.0]",
    "tensor([       inf, 4.2102e-01, 1.7780e-05])",
)
modified_bessel_k1 = _unary(
    "modified_bessel_k1",
    _b.modified_bessel_k1_array,
    "The modified Bessel function of the second kind of order 1, elementwise: ``K1(x)``; "
    "``inf`` at 0 and NaN for negative ``x``.",
    "[0.0, 1.0, 10.0]",
    "tensor([       inf, 6.0191e-01, 1.8649e-05])",
)
scaled_modified_bessel_k0 = _unary(
    "scaled_modified_bessel_k0",
    _b.scaled_modified_bessel_k0_array,
    "The exponentially scaled ``K0``, elementwise: ``exp(x) K0(x)`` (finite where ``K0`` "
    "underflows).",
    "[0.5, 1.0, 1000.0]",
    "tensor([1.5241, 1.1445, 0.0396])",
)
scaled_modified_bessel_k1 = _unary(
    "scaled_modified_bessel_k1",
    _b.scaled_modified_bessel_k1_array,
    "The exponentially scaled ``K1``, elementwise: ``exp(x) K1(x)``.",
    "[0.5, 1.0, 1000.0]",
    "tensor([2.7310, 1.6362, 0.0396])",
)
spherical_bessel_j0 = _unary(
    "spherical_bessel_j0",
    _b.spherical_bessel_j0_array,
    "The spherical Bessel function of the first kind of order 0, elementwise: "
    "``j0(x) = sin(x) / x`` (1 at 0, 0 at ``+-inf``).",
    "[0.0, 1.0, 3.1416]",
    "tensor([ 1.0000e+00,  8.4147e-01, -2.3046e-06])",
)
airy_ai = _unary(
    "airy_ai",
    _b.airy_ai_array,
    "The Airy function of the first kind, elementwise: ``Ai(x)``, a solution of ``y'' = "
    "x y`` that decays for large ``x``; NaN at ``+-inf``.",
    "[-2.0, 0.0, 2.0]",
    "tensor([0.2274, 0.3550, 0.0349])",
)

_DOC2 = """{summary}

Args:
    input: the points ``x`` (a tensor or a number).
    n: the degrees (a tensor or a number), broadcast with ``input``; non-integer degrees
        are truncated and negative ones give 0. Integer inputs give the default float
        dtype.

Returns:
    A tensor of the broadcast shape.

{extra}Not differentiable (as in PyTorch): a backward through it raises ``RuntimeError``.

Example:
    >>> nnkit.special.{name}(nnkit.tensor([{example}]), 3)
    {result}
"""

_hermite = (_b.POLYNOMIALS["hermite_polynomial_h"], _b.POLYNOMIALS["hermite_polynomial_he"])


def _poly(name, summary, example, result, extra=""):
    cls = _no_grad_op(name, 2)
    fn = _b.POLYNOMIALS[name]

    def op(input, n):
        for arg, v in (("input", input), ("n", n)):
            if not isinstance(v, Tensor) and not is_scalar(v):
                raise TypeError(f"special.{name}: argument '{arg}' must be a Tensor or a number")
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special.{name}: expected at least one tensor operand")
        return cls.apply(input, n, fn)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = _DOC2.format(
        summary=summary, name=name, example=example, result=result, extra=extra
    )
    return op


_CHEB = "\n\nInside ``(-1, 1)`` large degrees use the trigonometric form, as PyTorch."
_SHIFT = " of ``2x - 1`` (orthogonal on ``[0, 1]``)"
chebyshev_polynomial_t = _poly(
    "chebyshev_polynomial_t",
    "The Chebyshev polynomial of the first kind, elementwise: ``T_n(x)``, with "
    "``T_n(cos t) = cos(n t)``." + _CHEB,
    "0.5, 2.0",
    "tensor([-1.0, 26.0])",
)
chebyshev_polynomial_u = _poly(
    "chebyshev_polynomial_u",
    "The Chebyshev polynomial of the second kind, elementwise: ``U_n(x)``, with "
    "``U_n(cos t) = sin((n+1) t) / sin(t)``." + _CHEB,
    "0.5, 2.0",
    "tensor([-1.0, 56.0])",
)
chebyshev_polynomial_v = _poly(
    "chebyshev_polynomial_v",
    "The Chebyshev polynomial of the third kind, elementwise: ``V_n(x)``, with "
    "``V_n(cos t) = cos((n+1/2) t) / cos(t/2)``." + _CHEB,
    "0.5, 2.0",
    "tensor([-1.0, 41.0])",
)
chebyshev_polynomial_w = _poly(
    "chebyshev_polynomial_w",
    "The Chebyshev polynomial of the fourth kind, elementwise: ``W_n(x)``, with "
    "``W_n(cos t) = sin((n+1/2) t) / sin(t/2)``." + _CHEB,
    "0.5, 2.0",
    "tensor([-1.0, 71.0])",
)
shifted_chebyshev_polynomial_t = _poly(
    "shifted_chebyshev_polynomial_t",
    "The shifted Chebyshev polynomial of the first kind, elementwise: ``T_n``" + _SHIFT + ".",
    "0.25, 1.5",
    "tensor([ 1.0, 26.0])",
)
shifted_chebyshev_polynomial_u = _poly(
    "shifted_chebyshev_polynomial_u",
    "The shifted Chebyshev polynomial of the second kind, elementwise: ``U_n``" + _SHIFT + ".",
    "0.25, 1.5",
    "tensor([ 1.0, 56.0])",
)
shifted_chebyshev_polynomial_v = _poly(
    "shifted_chebyshev_polynomial_v",
    "The shifted Chebyshev polynomial of the third kind, elementwise: ``V_n``" + _SHIFT + ".",
    "0.25, 1.5",
    "tensor([ 1.0, 41.0])",
)
shifted_chebyshev_polynomial_w = _poly(
    "shifted_chebyshev_polynomial_w",
    "The shifted Chebyshev polynomial of the fourth kind, elementwise: ``W_n``" + _SHIFT + ".",
    "0.25, 1.5",
    "tensor([ 1.0, 71.0])",
)
_LIMIT = "Degrees above 512 (128 in float32) give NaN, as PyTorch.\n\n"  # torch's cut-off
hermite_polynomial_h = _poly(
    "hermite_polynomial_h",
    "The physicists' Hermite polynomial, elementwise: ``H_n(x)`` (``H_3 = 8x**3 - 12x``).",
    "0.5, 2.0",
    "tensor([-5.0, 40.0])",
    _LIMIT,
)
hermite_polynomial_he = _poly(
    "hermite_polynomial_he",
    "The probabilists' Hermite polynomial, elementwise: ``He_n(x)`` (``He_3 = x**3 - 3x``).",
    "0.5, 2.0",
    "tensor([-1.3750,  2.0000])",
    _LIMIT,
)
laguerre_polynomial_l = _poly(
    "laguerre_polynomial_l",
    "The Laguerre polynomial, elementwise: ``L_n(x)`` (1 at ``x = 0``).",
    "0.5, 2.0",
    "tensor([-0.1458, -0.3333])",
)
legendre_polynomial_p = _poly(
    "legendre_polynomial_p",
    "The Legendre polynomial, elementwise: ``P_n(x)`` (``+-1`` at ``x = +-1``).",
    "0.5, 2.0",
    "tensor([-0.4375, 17.0000])",
)

#: The public functions of this module (re-exported by :mod:`nnkit.special`).
FUNCTIONS = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
    *_b.POLYNOMIALS,
]
