"""Reductions: sum, mean, max/min (with indices), argmax, var/std, logsumexp, norms.

``dim`` may be None (all dimensions), an int or a tuple; ``keepdim`` keeps reduced
dimensions as size 1. ``var``/``std``/``logsumexp`` are composed from primitives.
"""

from __future__ import annotations

import builtins
import math

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import float_mat, reduce_dims, scalar_mat, wrap_dim
from nnkit.autograd.ops.discrete import sign
from nnkit.autograd.ops.elementwise import abs as _abs
from nnkit.autograd.ops.elementwise import exp, where
from nnkit.autograd.ops.shape import expand, reshape, sum_to
from nnkit.backends import dtypes as _dt

__all__ = [
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "var",
    "std",
    "logsumexp",
    "all",
    "any",
    "norm",
    "count_nonzero",
]


def _keep_shape(in_shape, dims):
    """``in_shape`` with the reduced ``dims`` set to 1 (dims None: all)."""
    if dims is None:
        return (1,) * len(in_shape)
    return tuple(1 if k in dims else n for k, n in enumerate(in_shape))


def _unreduce(grad, in_shape, dims, keepdim):
    """Broadcast a reduced gradient back to ``in_shape``."""
    if not keepdim:
        grad = reshape(grad, _keep_shape(in_shape, dims))
    return expand(grad, in_shape)


class Unreduce(Op):
    """The backward of sum and mean as one op: the gradient of the reduced tensor,
    times ``scale`` (1, or 1/count for mean), broadcast back to ``in_shape`` (a view).

    Its own backward is the sum over the same ``dims``, times ``scale``.
    """

    _view_op = True  # with scale 1 the output views the input's memory

    @staticmethod
    def forward(ctx, g, in_shape, dims, keepdim, scale):
        ctx.dims, ctx.keepdim, ctx.scale = dims, keepdim, scale
        return g.unreduce(None if keepdim else _keep_shape(in_shape, dims), in_shape, scale)

    @staticmethod
    def backward(ctx, grad_output):
        g = Sum.apply(grad_output, ctx.dims, ctx.keepdim, None)
        return (g if ctx.scale == 1 else g * ctx.scale), None, None, None, None


class Sum(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.in_dtype = x.dtype
        if dtype is None and x.dtype.kind in "bi" and x.dtype.itemsize < 8:
            dtype = "int64"  # as PyTorch: integer sums accumulate in int64
        return x.sum(axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, grad_output):
        g = Unreduce.apply(grad_output, ctx.in_shape, ctx.dims, ctx.keepdim, 1)
        return (g if g.dtype == ctx.in_dtype else g.to(_dt.from_np(ctx.in_dtype))), None, None, None


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Sum of elements over ``dim`` (all when None).

    Example:
        >>> nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]).sum(dim=0)   # [4.0, 6.0]
    """
    dims = reduce_dims(dim, input.ndim, "sum")
    npd = None if dtype is None else _dt.to_dtype(dtype).np
    return Sum.apply(input, dims, keepdim, npd)


class Mean(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        x = float_mat(x)
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.count = x.size if dims is None else math.prod(x.shape[d] for d in dims)
        return x.mean(axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad_output):
        scale = 1 / ctx.count if ctx.count else 1.0  # no count: an empty gradient anyway
        return Unreduce.apply(grad_output, ctx.in_shape, ctx.dims, ctx.keepdim, scale), None, None


def mean(input, dim=None, keepdim: bool = False):
    """Arithmetic mean over ``dim`` (all when None)."""
    return Mean.apply(input, reduce_dims(dim, input.ndim, "mean"), keepdim)


class _Extreme(Op):
    """amax/amin: the gradient is split evenly between tied extremes (as PyTorch)."""

    is_max = True

    @classmethod
    def forward(cls, ctx, x, dims, keepdim):
        if x.size == 0:
            raise RuntimeError(f"{'amax' if cls.is_max else 'amin'}: cannot reduce an empty tensor")
        out = (x.amax if cls.is_max else x.amin)(axis=dims, keepdims=True)
        ctx.save_for_backward(x, out)
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return out if keepdim else out.reshape(_drop(x.shape, dims))

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        mask = x == out
        count = mask.sum(ctx.dims, keepdim=True)
        g = _unreduce(grad_output, ctx.in_shape, ctx.dims, ctx.keepdim)
        return g * mask / count, None, None


class AMax(_Extreme):
    is_max = True


class AMin(_Extreme):
    is_max = False


def _drop(shape, dims):
    if dims is None:
        return ()
    return tuple(n for k, n in enumerate(shape) if k not in dims)


def amax(input, dim=None, keepdim: bool = False):
    """Maximum over ``dim`` (all when None); ties share the gradient."""
    return AMax.apply(input, reduce_dims(dim, input.ndim, "amax"), keepdim)


def amin(input, dim=None, keepdim: bool = False):
    """Minimum over ``dim`` (all when None); ties share the gradient."""
    return AMin.apply(input, reduce_dims(dim, input.ndim, "amin"), keepdim)


class _ArgExtreme(Op):
    is_max = True

    @classmethod
    def forward(cls, ctx, x, dim, keepdim):
        if x.size == 0 and (dim is None or x.shape[dim] == 0):  # torch: (0, 3) -> (0,)
            raise RuntimeError("argmax/argmin: cannot reduce an empty tensor")
        f = x.argmax if cls.is_max else x.argmin
        if dim is None:
            return f().astype("int64")
        return f(axis=dim, keepdims=keepdim).astype("int64")


class ArgMax(_ArgExtreme):
    is_max = True


class ArgMin(_ArgExtreme):
    is_max = False


def _arg_dim(input, dim, op):
    if dim is None:
        return None
    d = wrap_dim(dim, input.ndim, op)
    return None if input.ndim == 0 else d  # a 0-d tensor's only index is 0


def argmax(input, dim=None, keepdim: bool = False):
    """Index of the maximum (flattened when ``dim`` is None); no gradient."""
    d = _arg_dim(input, dim, "argmax")
    with no_grad():
        return ArgMax.apply(input, d, keepdim)


def argmin(input, dim=None, keepdim: bool = False):
    """Index of the minimum (flattened when ``dim`` is None); no gradient."""
    d = _arg_dim(input, dim, "argmin")
    with no_grad():
        return ArgMin.apply(input, d, keepdim)


class _ReturnTypes(tuple):
    """``(values, indices)`` that also answers ``.values`` and ``.indices``."""

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


def _max_min(input, dim, keepdim, is_max, other):
    from nnkit.autograd.ops.elementwise import maximum, minimum
    from nnkit.autograd.ops.indexing import gather
    from nnkit.autograd.tensor import Tensor

    if isinstance(dim, Tensor):
        return (maximum if is_max else minimum)(input, dim)
    if dim is None:
        return (amax if is_max else amin)(input)
    d = wrap_dim(dim, input.ndim, "max" if is_max else "min")
    if input.ndim == 0:  # the value itself, at index 0 (as torch)
        from nnkit.autograd.ops.shape import clone

        with no_grad():
            idx = argmax(input)
        return _ReturnTypes((clone(input), idx))
    idx = (argmax if is_max else argmin)(input, d, keepdim=True)
    values = gather(input, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return _ReturnTypes((values, idx))


def max(input, dim=None, keepdim: bool = False):
    """``max()``: the maximum; ``max(dim)``: ``(values, indices)``; ``max(tensor)``:
    elementwise maximum (as PyTorch)."""
    return _max_min(input, dim, keepdim, True, None)


def min(input, dim=None, keepdim: bool = False):
    """``min()``: the minimum; ``min(dim)``: ``(values, indices)``; ``min(tensor)``:
    elementwise minimum."""
    return _max_min(input, dim, keepdim, False, None)


def _correction(op, dim, unbiased, correction):
    """torch's three spellings: ``var(dim, *, correction)``, ``var(dim, unbiased)`` and
    ``var(unbiased)`` (a bool in ``dim``'s place); None means the default, 1."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise TypeError(f"{op}: got unbiased twice (positionally as {dim} and as {unbiased})")
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{op}: pass either unbiased or correction, not both")
        correction = 1 if unbiased else 0
    return dim, 1 if correction is None else correction


def var(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """Variance over ``dim`` (all when None), with Bessel's ``correction`` (default 1,
    unbiased, as torch); ``var(True)`` / ``var(dim, unbiased, keepdim)`` also work.

    ``sum((x - mean)**2) / max(N - correction, 0)``: NaN or inf when ``N <= correction``.
    """
    dim, correction = _correction("var", dim, unbiased, correction)
    dims = reduce_dims(dim, input.ndim, "var")
    n = input.numel() if dims is None else math.prod(input.shape[d] for d in dims)
    centered = input - mean(input, dims, keepdim=True)
    return sum(centered * centered, dims, keepdim) / builtins.max(n - correction, 0)


def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """Standard deviation over ``dim``: ``sqrt(var(...))``, same arguments as :func:`var`."""
    dim, correction = _correction("std", dim, unbiased, correction)
    return StdSqrt.apply(var(input, dim, keepdim=keepdim, correction=correction))


class StdSqrt(Op):
    """``sqrt`` whose gradient is 0 where the result is 0 (torch's std: a constant slice
    gets no gradient rather than NaN)."""

    @staticmethod
    def forward(ctx, v):
        out = v.sqrt()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        return grad_output / (where(out == 0, math.inf, out) * 2)


class LogSumExp(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        x = float_mat(x)
        out = x.logsumexp(dims)  # keepdims=True
        if not keepdim:
            out = out.reshape(_drop(x.shape, dims))
        # Save the output itself (not a reshaped copy) so double backward sees it
        # depend on x.
        ctx.save_for_backward(x, out)
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        g = grad_output
        if not ctx.keepdim:  # bring both to the kept shape; the kernel broadcasts them
            keep = _keep_shape(ctx.in_shape, ctx.dims)
            g, out = reshape(g, keep), reshape(out, keep)
        return LogSumExpGrad.apply(g, x, out), None, None


class LogSumExpGrad(Op):
    """``g * exp(x - out)`` (g and out broadcasting over the reduced dimensions):
    logsumexp's backward, ``g * softmax(x)``, as one kernel."""

    @staticmethod
    def forward(ctx, g, x, out):
        ctx.save_for_backward(g, x, out)
        return g.logsumexp_grad(x, out)

    @staticmethod
    def backward(ctx, grad_output):
        g, x, out = ctx.saved_tensors
        n = ctx.needs_input_grad
        p = exp(x - out)
        gp = grad_output * p
        ggp = gp * g if n[1] or n[2] else None
        return (
            sum_to(gp, g.shape) if n[0] else None,
            ggp if n[1] else None,
            -sum_to(ggp, out.shape) if n[2] else None,
        )


def logsumexp(input, dim=None, keepdim: bool = False):
    """``log(sum(exp(input), dim))``, computed stably by shifting by the maximum.

    The gradient is ``softmax(input)`` along ``dim``; rows that are all ``-inf``
    give ``-inf`` (no NaN).
    """
    return LogSumExp.apply(input, reduce_dims(dim, input.ndim, "logsumexp"), keepdim)


class Norm(Op):
    """The vector p-norm over ``dims`` (None: all), with torch's gradient conventions:
    0 where the norm is 0 (p >= 1), ties of the inf-norms share it, none for p = 0."""

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        x = float_mat(x)
        if p == 2:
            out = x.mul(x).sum(dims, keepdims=True).sqrt()
        elif p == 0:
            out = x.ne(scalar_mat(0, x, "norm")).sum(dims, keepdims=True, dtype=x.dtype)
        elif p == 1:
            out = x.abs().sum(dims, keepdims=True)
        elif p == math.inf:
            out = x.abs().amax(dims, keepdims=True)
        elif p == -math.inf:
            out = x.abs().amin(dims, keepdims=True)
        else:
            out = x.abs().pow(scalar_mat(p, x, "norm")).sum(dims, keepdims=True)
            out = out.pow(scalar_mat(1.0 / p, x, "norm"))
        if not keepdim:
            out = out.reshape(_drop(x.shape, dims))
        ctx.save_for_backward(x, out)  # the output itself: double backward sees it
        ctx.p, ctx.in_shape, ctx.dims, ctx.keepdim = p, x.shape, dims, keepdim
        return out

    @staticmethod
    def backward(ctx, grad_output):
        p = ctx.p
        if p == 0:  # piecewise constant: no gradient (None, as torch)
            return None, None, None, None
        x, out = ctx.saved_tensors
        g = grad_output
        if not ctx.keepdim:
            keep = _keep_shape(ctx.in_shape, ctx.dims)
            g, out = reshape(g, keep), reshape(out, keep)
        if p == 1:
            gx = sign(x) * g
        elif p == 2:  # x / norm, 0 where the norm is 0 (there x is 0 too)
            gx = g * x / where(out == 0, 1.0, out)
        elif math.isinf(p):
            a = _abs(x)
            with no_grad():
                mask = ((a == out) | a.isnan()).to(x.dtype)
                count = sum(mask, ctx.dims, keepdim=True)
            gx = sign(x) * mask * (g / count)
        elif p < 1:  # |x|**(p-1) is inf at 0: those entries get 0
            a = where(x == 0, 1.0, _abs(x))
            gx = sign(x) * a ** (p - 1) * g * out ** (1 - p)
        else:
            gx = sign(x) * _abs(x) ** (p - 1) * g / where(out == 0, 1.0, out) ** (p - 1)
        return gx, None, None, None


def norm(input, p=2, dim=None, keepdim: bool = False, dtype=None):
    """The vector p-norm over ``dim`` (all elements when None).

    ``p`` is a number (``inf``/``-inf``: max/min of ``|x|``; ``0``: the count of
    non-zero elements) or ``'fro'`` (the 2-norm of the elements). ``'nuc'`` (the nuclear
    norm) is not supported. Gradients follow torch: 0 where the norm is 0.

    Raises:
        NotImplementedError: for ``p='nuc'``.
        ValueError: for another string ``p``.
    """
    if isinstance(p, str):
        if p == "nuc":
            raise NotImplementedError(
                "norm: p='nuc' (the nuclear norm, a sum of singular "
                "values) is not supported; use p='fro' or a number"
            )
        if p != "fro":
            raise ValueError(f"norm: p must be a number, 'fro' or 'nuc', got {p!r}")
        p = 2
    if dtype is not None:
        input = input.to(dtype)
    dims = reduce_dims(dim, input.ndim, "norm")
    p = float(p)
    if math.isinf(p) and (
        input.numel() == 0 if dims is None else builtins.any(input.shape[d] == 0 for d in dims)
    ):
        raise RuntimeError(
            f"norm: the {p} norm of an empty slice is undefined (input shape "
            f"{tuple(input.shape)}, dim {dim})"
        )
    return Norm.apply(input, p, dims, keepdim)


def all(input, dim=None, keepdim: bool = False):
    """Whether all elements (over ``dim``) are non-zero; a bool tensor."""
    with no_grad():
        return _Bool.apply(input, reduce_dims(dim, input.ndim, "all", False), keepdim, "all")


def any(input, dim=None, keepdim: bool = False):
    """Whether any element (over ``dim``) is non-zero; a bool tensor."""
    with no_grad():
        return _Bool.apply(input, reduce_dims(dim, input.ndim, "any", False), keepdim, "any")


def count_nonzero(input, dim=None):
    return sum(input != 0, dim)


class _Bool(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim, how):
        return getattr(x, how)(axis=dims, keepdims=keepdim)
