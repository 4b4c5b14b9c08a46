"""Reductions: sum, mean, max/min (with indices), argmax, var/std, logsumexp, norms.

``dim`` may be None (all dimensions), an int or a tuple; ``keepdim`` keeps reduced
dimensions as size 1. ``var``/``std``/``logsumexp`` are composed from primitives.
"""

from __future__ import annotations

import builtins
import math

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import float_mat, norm_dims, wrap_dim
from nnkit.autograd.ops.elementwise import exp, sqrt
from nnkit.autograd.ops.shape import expand, reshape, sum_to
from nnkit.backends import dtypes as _dt

__all__ = ["sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std",
           "logsumexp", "all", "any", "norm", "count_nonzero"]


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
        return (g if g.dtype == ctx.in_dtype else g.to(_dt.from_np(ctx.in_dtype))), None, \
            None, None


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Sum of elements over ``dim`` (all when None).

    Example:
        >>> nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]).sum(dim=0)   # [4.0, 6.0]
    """
    dims = norm_dims(dim, input.ndim, "sum")
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
        return Unreduce.apply(grad_output, ctx.in_shape, ctx.dims, ctx.keepdim, scale), \
            None, None


def mean(input, dim=None, keepdim: bool = False):
    """Arithmetic mean over ``dim`` (all when None)."""
    return Mean.apply(input, norm_dims(dim, input.ndim, "mean"), keepdim)


class _Extreme(Op):
    """amax/amin: the gradient is split evenly between tied extremes (as PyTorch)."""

    is_max = True

    @classmethod
    def forward(cls, ctx, x, dims, keepdim):
        if x.size == 0:
            raise RuntimeError(f"{'amax' if cls.is_max else 'amin'}: cannot reduce an empty "
                               "tensor")
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
    return AMax.apply(input, norm_dims(dim, input.ndim, "amax"), keepdim)


def amin(input, dim=None, keepdim: bool = False):
    """Minimum over ``dim`` (all when None); ties share the gradient."""
    return AMin.apply(input, norm_dims(dim, input.ndim, "amin"), keepdim)


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


def argmax(input, dim=None, keepdim: bool = False):
    """Index of the maximum (flattened when ``dim`` is None); no gradient."""
    d = None if dim is None else wrap_dim(dim, input.ndim, "argmax")
    with no_grad():
        return ArgMax.apply(input, d, keepdim)


def argmin(input, dim=None, keepdim: bool = False):
    """Index of the minimum (flattened when ``dim`` is None); no gradient."""
    d = None if dim is None else wrap_dim(dim, input.ndim, "argmin")
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


def var(input, dim=None, *, correction=1, keepdim: bool = False, unbiased=None):
    """Variance over ``dim``; unbiased (``correction=1``) by default, as PyTorch."""
    if unbiased is not None:
        correction = 1 if unbiased else 0
    dims = norm_dims(dim, input.ndim, "var")
    n = input.numel() if dims is None else math.prod(input.shape[d] for d in dims)
    centered = input - mean(input, dims, keepdim=True)
    return sum(centered * centered, dims, keepdim) / builtins.max(n - correction, 0)


def std(input, dim=None, *, correction=1, keepdim: bool = False, unbiased=None):
    """Standard deviation over ``dim``; unbiased by default."""
    return sqrt(var(input, dim, correction=correction, keepdim=keepdim, unbiased=unbiased))


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
        return (sum_to(gp, g.shape) if n[0] else None,
                ggp if n[1] else None,
                -sum_to(ggp, out.shape) if n[2] else None)


def logsumexp(input, dim=None, keepdim: bool = False):
    """``log(sum(exp(input), dim))``, computed stably by shifting by the maximum.

    The gradient is ``softmax(input)`` along ``dim``; rows that are all ``-inf``
    give ``-inf`` (no NaN).
    """
    return LogSumExp.apply(input, norm_dims(dim, input.ndim, "logsumexp"), keepdim)


def norm(input, p=2, dim=None, keepdim: bool = False):
    """The vector p-norm over ``dim`` (all elements when None); p in {1, 2, inf}."""
    from nnkit.autograd.ops.elementwise import abs as _abs

    if p == 2:
        return sqrt(sum(input * input, dim, keepdim))
    if p == 1:
        return sum(_abs(input), dim, keepdim)
    if p == float("inf"):
        return amax(_abs(input), dim, keepdim)
    return sum(_abs(input) ** p, dim, keepdim) ** (1.0 / p)


def all(input, dim=None, keepdim: bool = False):
    """Whether all elements (over ``dim``) are non-zero; a bool tensor."""
    with no_grad():
        return _Bool.apply(input, norm_dims(dim, input.ndim, "all"), keepdim, "all")


def any(input, dim=None, keepdim: bool = False):
    """Whether any element (over ``dim``) is non-zero; a bool tensor."""
    with no_grad():
        return _Bool.apply(input, norm_dims(dim, input.ndim, "any"), keepdim, "any")


def count_nonzero(input, dim=None):
    return sum(input != 0, dim)


class _Bool(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim, how):
        return getattr(x, how)(axis=dims, keepdims=keepdim)
