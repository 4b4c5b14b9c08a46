"""Binary elementwise maths (``atan2``, ``hypot``, ``logaddexp``, ``xlogy``) and the
closeness tests ``isclose``, ``allclose`` and ``equal``.

The four maths ops broadcast; forward runs on Mats (kernels in
:mod:`nnkit.backends.special_kernels`) and backward is written in Tensor ops with
torch's formulas, so double backward works. Integer inputs give the default float
dtype, as in torch.
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import float_pair, is_scalar
from nnkit.autograd.ops.elementwise import sigmoid
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.shape import broadcast_shapes
from nnkit.autograd.ops.shape import reduce_grad as _reduce
from nnkit.autograd.tensor import Tensor

__all__ = [
    "atan2",
    "arctan2",
    "hypot",
    "logaddexp",
    "xlogy",
    "isclose",
    "allclose",
    "equal",
]


# -------------------------------------------------------------------- binary
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
        a, b = float_pair(a, b, name.lower(), ctx.needs_input_grad)
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
    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor) and not (scalars and is_scalar(v)):
            raise TypeError(
                f"{op}: argument '{name}' must be a Tensor"
                f"{' or a number' if scalars else ''}, got {type(v).__name__}"
            )
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        broadcast_shapes(tuple(input.shape), tuple(other.shape))


def atan2(input, other):
    """Four-quadrant inverse tangent, elementwise: the angle of the point ``(other, input)``.

    ``atan2(y, x)`` is ``atan(y / x)`` moved into the right quadrant, in ``[-pi, pi]``;
    ``arctan2`` is the same function.

    Args:
        input: the ``y`` coordinates (a tensor).
        other: the ``x`` coordinates (a tensor), broadcasting with ``input``. Integer
            inputs give the default float dtype.

    Returns:
        A tensor of the broadcast shape.

    Gradient: ``x / (x**2 + y**2)`` for ``input`` and ``-y / (x**2 + y**2)`` for
    ``other``; 0 for both at the origin, as in PyTorch.

    Raises:
        TypeError: if either argument is not a tensor (PyTorch refuses numbers too).
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.atan2(nnkit.tensor([1.0, 1.0, -1.0]), nnkit.tensor([1.0, -1.0, 0.0]))
        tensor([ 0.7854,  2.3562, -1.5708])
    """
    _check_pair(input, other, "atan2")
    return Atan2.apply(input, other)


arctan2 = atan2


def hypot(input, other):
    """Hypotenuse, elementwise: ``hypot(x, y) = sqrt(x**2 + y**2)``, without overflow.

    Args:
        input: a tensor.
        other: a tensor, broadcasting with ``input``. Integer inputs give the default
            float dtype.

    Returns:
        A tensor of the broadcast shape.

    Gradient: ``x / hypot(x, y)`` and ``y / hypot(x, y)``; NaN at the origin, as in
    PyTorch.

    Raises:
        TypeError: if either argument is not a tensor.
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.hypot(nnkit.tensor([3.0, 1e30]), nnkit.tensor([4.0, 1e30]))
        tensor([5.0000e+00, 1.4142e+30])
    """
    _check_pair(input, other, "hypot")
    return Hypot.apply(input, other)


def logaddexp(input, other):
    """``log(exp(input) + exp(other))``, elementwise and stable (no overflow), broadcasting.

    Args:
        input: a tensor.
        other: a tensor, broadcasting with ``input``. Unlike PyTorch (which refuses
            them), integer inputs give the default float dtype.

    Returns:
        A tensor of the broadcast shape.

    Gradient: ``sigmoid(input - other)`` for ``input`` and ``sigmoid(other - input)`` for
    ``other``.

    Raises:
        TypeError: if either argument is not a tensor.
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.logaddexp(nnkit.tensor([0.0, 1000.0]), nnkit.tensor([0.0, 1000.0]))
        tensor([   0.6931, 1000.6932])
    """
    _check_pair(input, other, "logaddexp")
    return LogAddExp.apply(input, other)


def xlogy(input, other):
    """``input * log(other)``, elementwise, with ``0 * log(0) = 0``, broadcasting.

    The result is 0 wherever ``input == 0``, unless ``other`` is NaN (then NaN), as in
    PyTorch; useful for entropies.

    Args:
        input: a tensor or a number.
        other: a tensor or a number (at least one of the two is a tensor). Integer inputs
            give the default float dtype.

    Returns:
        A tensor of the broadcast shape.

    Gradient: ``log(other)`` for ``input`` (0 where ``input == 0`` and ``other <= 0``)
    and ``input / other`` for ``other`` (so NaN at ``0 / 0``, as in PyTorch).

    Raises:
        TypeError: if an argument is neither a tensor nor a number.
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.xlogy(nnkit.tensor([0.0, 2.0, 1.0]), nnkit.tensor([0.0, 3.0, 1.0]))
        tensor([0.0000, 2.1972, 0.0000])
    """
    _check_pair(input, other, "xlogy", scalars=True)
    return XLogY.apply(input, other)


# -------------------------------------------------------------- comparisons
class _IsClose(Op):
    @staticmethod
    def forward(ctx, a, b, rtol, atol, equal_nan):
        return a.isclose(b, rtol, atol, equal_nan)

    @staticmethod
    def backward(ctx, grad_output):
        raise RuntimeError("isclose is not differentiable")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise closeness: ``|input - other| <= atol + rtol * |other|``, broadcasting.

    Equal infinities are close; NaNs are close only with ``equal_nan``.

    Args:
        input: a tensor.
        other: a tensor of the same dtype.
        rtol: the relative tolerance (default 1e-05).
        atol: the absolute tolerance (default 1e-08).
        equal_nan: whether two NaNs count as close (default False).

    Returns:
        A bool tensor of the broadcast shape (no gradient).

    Raises:
        RuntimeError: if the dtypes differ or a tolerance is negative (as in PyTorch).
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nan = float("nan")
        >>> nnkit.isclose(nnkit.tensor([1.0, 1.0, nan]), nnkit.tensor([1.000001, 1.1, nan]))
        tensor([ True, False, False])
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
    """Whether every element of :func:`isclose` holds: a Python bool.

    Args:
        input: a tensor.
        other: a tensor of the same dtype, broadcasting with ``input``.
        rtol: the relative tolerance (default 1e-05).
        atol: the absolute tolerance (default 1e-08).
        equal_nan: whether two NaNs count as close (default False).

    Returns:
        ``True`` if ``|input - other| <= atol + rtol * |other|`` everywhere, else ``False``.

    Raises:
        RuntimeError: if the dtypes differ or a tolerance is negative.
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.allclose(nnkit.tensor([1.0, 2.0]), nnkit.tensor([1.0, 2.000001]))
        True
    """
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """Whether two tensors have the same shape and the same values: a Python bool.

    Values are compared after type promotion (``1.0 == 1``); NaN is never equal, and no
    broadcasting happens (different shapes give ``False``).

    Args:
        input: a tensor.
        other: a tensor.

    Returns:
        ``True`` or ``False``.

    Raises:
        TypeError: if either argument is not a tensor.

    Example:
        >>> nnkit.equal(nnkit.tensor([1.0, 2.0]), nnkit.tensor([1, 2]))
        True
        >>> nnkit.equal(nnkit.tensor([1.0]), nnkit.tensor([1.0, 1.0]))
        False
    """
    for name, v in (("input", input), ("other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"equal: argument '{name}' must be a Tensor, got {type(v).__name__}")
    return input._impl.data.array_equal(other._impl.data)
