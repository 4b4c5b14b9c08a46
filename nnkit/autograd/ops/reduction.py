"""Reductions: sum, mean, amax/amin, max/min (with indices), argmax/argmin,
logsumexp, all/any and count_nonzero. ``var``/``std``, ``norm`` and ``prod`` are in
:mod:`~nnkit.autograd.ops.statistics`.

``dim`` may be None (all dimensions), an int or a tuple; ``keepdim`` keeps reduced
dimensions as size 1.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import NO_GRAPH, Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import float_mat, reduce_dims, wrap_dim
from nnkit.autograd.ops.elementwise import exp
from nnkit.autograd.ops.indexing import gather
from nnkit.autograd.ops.selection import maximum, minimum
from nnkit.autograd.ops.shape import clone, expand, reshape, sum_to
from nnkit.autograd.tensor import Tensor
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
    "logsumexp",
    "all",
    "any",
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
        if dtype is None and x.dtype.kind in "biu" and x.dtype.itemsize < 8:
            dtype = "int64"  # as PyTorch: bool and integer sums (uint8 too) give int64
        return x.sum(axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, grad_output):
        g = Unreduce.apply(grad_output, ctx.in_shape, ctx.dims, ctx.keepdim, 1)
        return (g if g.dtype == ctx.in_dtype else g.to(_dt.from_np(ctx.in_dtype))), None, None, None

    @staticmethod
    def backward_mat(ctx, g):
        g = Unreduce.forward(NO_GRAPH, g, ctx.in_shape, ctx.dims, ctx.keepdim, 1)
        return g.astype(ctx.in_dtype), None, None, None


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Sum of the elements over ``dim``.

    Args:
        input: the input tensor.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.
        dtype: the dtype to accumulate in and return. By default bools and integers
            narrower than 64 bits accumulate in int64, as in PyTorch; floats keep theirs.

    Returns:
        A tensor with the reduced dimensions removed (or of size 1).

    Gradient: the incoming gradient broadcast back to ``input``'s shape.

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nnkit.sum(x)
        tensor(10.0)
        >>> x.sum(dim=0)
        tensor([4.0, 6.0])
        >>> x.sum(dim=1, keepdim=True)
        tensor([[3.0],
                [7.0]])
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

    @staticmethod
    def backward_mat(ctx, g):
        scale = 1 / ctx.count if ctx.count else 1.0
        return Unreduce.forward(NO_GRAPH, g, ctx.in_shape, ctx.dims, ctx.keepdim, scale), None, None


def mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Arithmetic mean of the elements over ``dim``: ``sum(x) / N``.

    Args:
        input: a floating-point tensor (an integer or bool one raises ``RuntimeError``,
            as in PyTorch, unless ``dtype`` is a floating dtype).
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.
        dtype: a floating dtype to cast ``input`` to first.

    Returns:
        A floating-point tensor with the reduced dimensions removed (or of size 1); NaN
        for an empty reduction.

    Gradient: the incoming gradient divided by ``N``, broadcast back.

    Example:
        >>> nnkit.tensor([[1.0, 2.0], [3.0, 5.0]]).mean(dim=1)
        tensor([1.5000, 4.0000])
    """
    if dtype is None and input._impl.data.dtype.kind == "f":  # the common case, checked
        return Mean.apply(input, reduce_dims(dim, input.ndim, "mean"), keepdim)  # on the Mat
    dt = input.dtype if dtype is None else _dt.to_dtype(dtype)
    if not dt.is_floating_point:
        what = "input" if dtype is None else "dtype"
        raise RuntimeError(
            f"mean: could not infer the output dtype: {what} must be a floating point "
            f"dtype, got {dt} (pass dtype=nnkit.float32, or call .float() first)"
        )
    if dtype is not None:
        input = input.to(dt)
    return Mean.apply(input, reduce_dims(dim, input.ndim, "mean"), keepdim)


class _Extreme(Op):
    """amax/amin: the gradient is split evenly between tied extremes (as PyTorch)."""

    is_max = True

    @classmethod
    def forward(cls, ctx, x, dims, keepdim):
        if x.size == 0 and (dims is None or 0 in [x.shape[d] for d in dims]):
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
    """Maximum of the elements over ``dim`` (values only; see :func:`max` for indices).

    Args:
        input: a non-empty tensor; NaN propagates.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.

    Returns:
        A tensor with the reduced dimensions removed (or of size 1).

    Gradient: shared evenly between the elements equal to the maximum, as PyTorch.

    Example:
        >>> x = nnkit.tensor([[1.0, 5.0], [5.0, 2.0]], requires_grad=True)
        >>> x.amax(dim=0)
        tensor([5.0, 5.0], grad_fn=<AMaxBackward>)
        >>> x.amax().backward()
        >>> x.grad
        tensor([[0.0000, 0.5000],
                [0.5000, 0.0000]])
    """
    return AMax.apply(input, reduce_dims(dim, input.ndim, "amax"), keepdim)


def amin(input, dim=None, keepdim: bool = False):
    """Minimum of the elements over ``dim`` (values only; see :func:`min` for indices).

    Args:
        input: a non-empty tensor; NaN propagates.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.

    Returns:
        A tensor with the reduced dimensions removed (or of size 1).

    Gradient: shared evenly between the elements equal to the minimum, as PyTorch.

    Example:
        >>> nnkit.amin(nnkit.tensor([[1.0, 5.0], [0.0, 2.0]]), dim=1)
        tensor([1.0, 0.0])
    """
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
    """The index of the maximum, of the flattened input or along ``dim``.

    Args:
        input: a non-empty tensor; NaN counts as the maximum, as in PyTorch.
        dim: the dimension to reduce; None (default) indexes the flattened input.
        keepdim: with ``dim``, keep it as a dimension of size 1.

    Returns:
        An int64 tensor (no gradient); among equal maxima, the first index.

    Example:
        >>> x = nnkit.tensor([[1.0, 9.0, 3.0], [8.0, 2.0, 8.0]])
        >>> nnkit.argmax(x)
        tensor(1)
        >>> x.argmax(dim=1)
        tensor([1, 0])
    """
    d = _arg_dim(input, dim, "argmax")
    with no_grad():
        return ArgMax.apply(input, d, keepdim)


def argmin(input, dim=None, keepdim: bool = False):
    """The index of the minimum, of the flattened input or along ``dim``.

    Args:
        input: a non-empty tensor; NaN counts as the minimum, as in PyTorch.
        dim: the dimension to reduce; None (default) indexes the flattened input.
        keepdim: with ``dim``, keep it as a dimension of size 1.

    Returns:
        An int64 tensor (no gradient); among equal minima, the first index.

    Example:
        >>> nnkit.tensor([[1.0, 0.0, 3.0], [0.0, 2.0, 0.0]]).argmin(dim=1, keepdim=True)
        tensor([[1],
                [0]])
    """
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
    if isinstance(dim, Tensor):
        return (maximum if is_max else minimum)(input, dim)
    if dim is None:
        return (amax if is_max else amin)(input)
    d = wrap_dim(dim, input.ndim, "max" if is_max else "min")
    if input.ndim == 0:  # the value itself, at index 0 (as torch)
        with no_grad():
            idx = argmax(input)
        return _ReturnTypes((clone(input), idx))
    idx = (argmax if is_max else argmin)(input, d, keepdim=True)
    values = gather(input, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return _ReturnTypes((values, idx))


def max(input, dim=None, keepdim: bool = False):
    """The maximum, in PyTorch's three forms.

    ``max(input)`` is the maximum of all elements (as :func:`amax`); ``max(input, dim)``
    returns ``(values, indices)`` along ``dim``; ``max(input, other)`` with a tensor
    ``other`` is the elementwise :func:`maximum`.

    Args:
        input: the input tensor; NaN propagates.
        dim: None, an int, or a tensor (the elementwise form).
        keepdim: with an int ``dim``, keep it as a dimension of size 1.

    Returns:
        A 0-d tensor, a tuple ``(values, indices)`` (also readable as ``.values`` and
        ``.indices``; ``indices`` int64, the first maximum), or an elementwise result.

    Gradient: ``max(input)`` shares it between tied maxima; ``max(input, dim)`` sends it
    to ``indices``.

    Example:
        >>> x = nnkit.tensor([[1.0, 7.0, 3.0], [4.0, 2.0, 4.0]])
        >>> x.max()
        tensor(7.0)
        >>> x.max(dim=1)
        (tensor([7.0, 4.0]), tensor([1, 0]))
        >>> nnkit.max(x, nnkit.tensor([5.0, 5.0, 5.0]))
        tensor([[5.0, 7.0, 5.0],
                [5.0, 5.0, 5.0]])
    """
    return _max_min(input, dim, keepdim, True, None)


def min(input, dim=None, keepdim: bool = False):
    """The minimum, in PyTorch's three forms.

    ``min(input)`` is the minimum of all elements (as :func:`amin`); ``min(input, dim)``
    returns ``(values, indices)`` along ``dim``; ``min(input, other)`` with a tensor
    ``other`` is the elementwise :func:`minimum`.

    Args:
        input: the input tensor; NaN propagates.
        dim: None, an int, or a tensor (the elementwise form).
        keepdim: with an int ``dim``, keep it as a dimension of size 1.

    Returns:
        A 0-d tensor, a tuple ``(values, indices)`` (also readable as ``.values`` and
        ``.indices``; ``indices`` int64, the first minimum), or an elementwise result.

    Gradient: ``min(input)`` shares it between tied minima; ``min(input, dim)`` sends it
    to ``indices``.

    Example:
        >>> x = nnkit.tensor([[1.0, 7.0, 3.0], [4.0, 2.0, 4.0]])
        >>> x.min(dim=0).indices
        tensor([0, 1, 0])
    """
    return _max_min(input, dim, keepdim, False, None)


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

    @staticmethod
    def backward_mat(ctx, g):
        x, out = ctx.saved_mats
        if not ctx.keepdim:
            keep = _keep_shape(ctx.in_shape, ctx.dims)
            g = g if g.shape == keep else g.reshape(keep)
            out = out if out.shape == keep else out.reshape(keep)
        return g.logsumexp_grad(x, out), None, None  # LogSumExpGrad's


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
    """``log(sum(exp(input)))`` over ``dim``, computed stably by shifting by the maximum.

    Args:
        input: the input tensor (integers give the default float dtype).
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.

    Returns:
        A floating-point tensor with the reduced dimensions removed (or of size 1); a
        slice that is all ``-inf`` gives ``-inf``.

    Gradient: ``softmax(input)`` along ``dim`` times the incoming gradient; no NaN for
    all-``-inf`` slices.

    Example:
        >>> nnkit.logsumexp(nnkit.tensor([[0.0, 0.0], [1000.0, 1000.0]]), dim=1)
        tensor([   0.6931, 1000.6932])
    """
    return LogSumExp.apply(input, reduce_dims(dim, input.ndim, "logsumexp"), keepdim)


def all(input, dim=None, keepdim: bool = False):
    """Whether all elements over ``dim`` are non-zero (True).

    Args:
        input: a tensor of any dtype.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.

    Returns:
        A bool tensor (no gradient); True for an empty reduction.

    Example:
        >>> nnkit.tensor([[1, 0], [2, 3]]).all(dim=1)
        tensor([False,  True])
    """
    with no_grad():
        return _Bool.apply(input, reduce_dims(dim, input.ndim, "all", False), keepdim, "all")


def any(input, dim=None, keepdim: bool = False):
    """Whether any element over ``dim`` is non-zero (True).

    Args:
        input: a tensor of any dtype.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.

    Returns:
        A bool tensor (no gradient); False for an empty reduction.

    Example:
        >>> nnkit.any(nnkit.tensor([[0.0, 0.0], [0.0, 0.5]]), dim=1)
        tensor([False,  True])
    """
    with no_grad():
        return _Bool.apply(input, reduce_dims(dim, input.ndim, "any", False), keepdim, "any")


def count_nonzero(input, dim=None):
    """The number of non-zero elements over ``dim``.

    Args:
        input: a tensor of any dtype.
        dim: an int or a tuple of ints to reduce; None (default) counts all elements.

    Returns:
        An int64 tensor with the reduced dimensions removed.

    Example:
        >>> x = nnkit.tensor([[0, 1, 2], [3, 0, 0]])
        >>> nnkit.count_nonzero(x)
        tensor(3)
        >>> x.count_nonzero(dim=0)
        tensor([1, 1, 1])
    """
    return sum(input != 0, dim)


class _Bool(Op):
    @staticmethod
    def forward(ctx, x, dims, keepdim, how):
        return getattr(x, how)(axis=dims, keepdims=keepdim)
