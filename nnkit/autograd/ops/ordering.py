"""Ordering ops (issue 13): cumulative scans, sorting and selection, order statistics,
NaN-ignoring reductions, ``prod`` and the ``*_mean`` pairs, with torch's signatures.

Selections (sort, topk, kthvalue, median(dim), nanmedian(dim), mode, cummax/cummin)
compute their indices without a graph, then take the values with ``gather``: the
gradient goes to the selected index only, as in torch. ``median()``/``nanmedian()``
without ``dim`` share the gradient evenly between the elements equal to the result.

Where torch leaves a choice unspecified nnkit's is documented, and may differ from the
index torch happens to return (values always agree, gradients follow the index):
- sorts are always stable (a valid answer for ``stable=False``); ``topk`` and
  ``kthvalue`` return, among equal values, the first in stable order (torch's CPU
  kernels use ``nth_element`` and can pick another);
- ``nanmedian(dim)`` of an all-NaN slice: NaN at the slice's first NaN;
- ``mode`` of a slice holding NaN: NaNs count as equal to each other;
- ``median()`` of an empty integer tensor raises (torch returns INT64_MIN).
Matched exactly: cummax/cummin's last index among ties and NaN propagation,
``median(dim)``'s index, ``mode``'s smallest value and last index, NaN ordering.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import is_grad_enabled, no_grad
from nnkit.autograd.ops._util import float_mat, is_scalar, wrap_dim
from nnkit.autograd.ops.elementwise import exp, log, where
from nnkit.autograd.ops.indexing import Gather
from nnkit.autograd.ops.reduction import _correction, mean, std, sum, var
from nnkit.autograd.ops.shape import cat, reshape
from nnkit.backends import dtypes as _dt

__all__ = [
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "sort",
    "argsort",
    "topk",
    "kthvalue",
    "median",
    "nanmedian",
    "mode",
    "nansum",
    "nanmean",
    "prod",
    "quantile",
    "nanquantile",
    "std_mean",
    "var_mean",
]

# Functions of __all__ that are not Tensor methods (their first argument is not a tensor).
NOT_METHODS: set[str] = {"std_mean", "var_mean"}  # torch has no such Tensor methods


def _rt(name):
    return namedtuple(name, ["values", "indices"])


# Named (values, indices) pairs like torch.return_types.*.
SortResult, TopKResult, KthvalueResult = _rt("sort"), _rt("topk"), _rt("kthvalue")
MedianResult, ModeResult = _rt("median"), _rt("mode")
CummaxResult, CumminResult = _rt("cummax"), _rt("cummin")


def _along(input, dim, op):
    """``(x, d, zero_d)``: the input (a 0-d tensor as shape (1,)) and the wrapped dim."""
    d = wrap_dim(dim, input.ndim, op)
    if input.ndim == 0:
        return reshape(input, (1,)), 0, True
    return input, d, False


def _back0(t, zero_d):
    return reshape(t, ()) if zero_d else t


class _Indices(Op):
    """An order kernel's int64 result (no gradient)."""

    @staticmethod
    def forward(ctx, x, how, *args):
        return getattr(x, how)(*args)


def _indices(x, how, *args):
    with no_grad():
        return _Indices.apply(x, how, *args)


def _cast_for_scan(input, dtype):
    """torch's dtype rule for cumsum/cumprod: integers and bools accumulate in int64."""
    if dtype is not None:
        return input.to(dtype)
    if not input.dtype.is_floating_point and input.dtype != _dt.to_dtype("int64"):
        return input.to("int64")
    return input


class CumSum(Op):
    """The inclusive cumulative sum along ``dim``; ``reverse`` sums from the end. Each
    direction's backward is the other one."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        return x.cumulative("sum", dim, reverse)

    @staticmethod
    def backward(ctx, grad_output):
        return CumSum.apply(grad_output, ctx.dim, not ctx.reverse), None, None


def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along ``dim`` (integers and bools accumulate in int64, as torch).

    Example:
        >>> nnkit.tensor([1.0, 2.0, 3.0]).cumsum(0)   # [1.0, 3.0, 6.0]
    """
    x, d, z = _along(input, dim, "cumsum")
    return _back0(CumSum.apply(_cast_for_scan(x, dtype), d, False), z)


class CumProd(Op):
    """The inclusive cumulative product along ``dim`` (``reverse``: from the end), with
    torch's gradient where the input has zeros."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        out = x.cumulative("prod", dim, reverse)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        return _cumprod_grad(x, out, grad_output, ctx.dim, ctx.reverse), None, None


def _cumprod_grad(x, out, g, d, rev):
    """d/dx_k of sum_j g_j * prod_{i<=j} x_i. Before the first zero of a slice it is
    ``reverse_cumsum(g * out) / x``; at the first zero, the products that skip it; after
    it, ``x_first`` (0) times the same gradient with ``x_first`` set to 1, so that the
    double backward is exact too (as torch's)."""
    with no_grad():
        zero = x == 0
        nzeros = CumSum.apply(zero.to("int64"), d, rev)
        before = nzeros == 0
    gx = where(before, CumSum.apply(g * out, d, not rev) / where(before, x, 1.0), 0.0)
    if not bool(zero.any()):
        return gx
    with no_grad():
        first = zero & (nzeros == 1)
        after = nzeros > 0
    y = where(first, 1.0, x)  # the first zero replaced by 1
    out_y = CumProd.apply(y, d, rev)
    at_first = sum(where(before, 0.0, g * out_y), d, keepdim=True)
    gx = gx + where(first, at_first, 0.0)
    if is_grad_enabled():  # after the first zero: x_first * d/dy (0, but not its gradient)
        x_first = sum(where(first, x, 0.0), d, keepdim=True)
        gx = gx + where(after & ~first, x_first * _cumprod_grad(y, out_y, g, d, rev), 0.0)
    return gx


def cumprod(input, dim, *, dtype=None):
    """Cumulative product along ``dim`` (integers and bools in int64, as torch); the
    gradient is exact where the input has zeros."""
    x, d, z = _along(input, dim, "cumprod")
    return _back0(CumProd.apply(_cast_for_scan(x, dtype), d, False), z)


def _cum_extreme(input, dim, is_max):
    op = "cummax" if is_max else "cummin"
    x, d, z = _along(input, dim, op)
    idx = _indices(x, "cumextreme_indices", d, is_max)
    res = CummaxResult if is_max else CumminResult
    return res(_back0(Gather.apply(x, d, idx), z), _back0(idx, z))


def cummax(input, dim):
    """Running maximum along ``dim``: ``(values, indices)``; among equal values the index
    is the last one, and after a NaN the values are NaN (as torch). The gradient goes
    to the index."""
    return _cum_extreme(input, dim, True)


def cummin(input, dim):
    """Running minimum along ``dim``: ``(values, indices)`` (see :func:`cummax`)."""
    return _cum_extreme(input, dim, False)


def _lowest(dtype):
    """torch's stand-in for log(0) in logcumsumexp's backward: its dtype's lowest value,
    quartered here so that sums of two such terms (double backward) stay finite."""
    return float(np.finfo(dtype.np).min) / 4


class LogCumSumExp(Op):
    """``log(cumsum(exp(x)))`` along ``dim`` without overflow (``reverse``: from the end);
    the backward is torch's: positive and negative parts of the gradient in log space."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        x = float_mat(x)
        ctx.dim, ctx.reverse = dim, reverse
        out = x.cumulative("logaddexp", dim, reverse)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        g, d, rev = grad_output, ctx.dim, not ctx.reverse
        if g.numel() == 0:
            return g, None, None
        low = _lowest(g.dtype)
        with no_grad():
            pos, neg = g > 0, g < 0
        log_abs = log(where(pos | neg, g.abs(), 1.0))
        gp = exp(LogCumSumExp.apply(where(pos, log_abs, low) - out, d, rev) + x)
        gn = exp(LogCumSumExp.apply(where(neg, log_abs, low) - out, d, rev) + x)
        return gp - gn, None, None


def logcumsumexp(input, dim):
    """``log(cumsum(exp(input), dim))``, computed stably (``-inf`` entries stay
    ``-inf``)."""
    if not input.dtype.is_floating_point:  # as torch: not implemented for integers
        raise RuntimeError(f"logcumsumexp: expected a floating point input, got {input.dtype}")
    x, d, z = _along(input, dim, "logcumsumexp")
    return _back0(LogCumSumExp.apply(x, d, False), z)


def sort(input, dim=-1, descending: bool = False, *, stable: bool = False):
    """``(values, indices)`` sorted along ``dim``; NaN sorts as the largest value. The
    sort is always stable (``stable`` is accepted for torch's signature)."""
    x, d, z = _along(input, dim, "sort")
    idx = _indices(x, "sort_indices", d, bool(descending))
    return SortResult(_back0(Gather.apply(x, d, idx), z), _back0(idx, z))


def argsort(input, dim=-1, descending: bool = False, *, stable: bool = False):
    """The indices that sort ``input`` along ``dim`` (stable; see :func:`sort`)."""
    x, d, z = _along(input, dim, "argsort")
    return _back0(_indices(x, "sort_indices", d, bool(descending)), z)


def _check_k(k, n, op, lo):
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"{op}: argument 'k' must be an int, got {type(k).__name__}")
    if not lo <= k <= n:
        raise RuntimeError(
            f"{op}: k ({k}) out of range for a dimension of size {n} (expected {lo} <= k <= {n})"
        )
    return int(k)


def topk(input, k, dim=-1, largest: bool = True, sorted: bool = True):
    """The ``k`` largest (``largest=False``: smallest) elements along ``dim`` as
    ``(values, indices)``, always in sorted order; NaN counts as the largest value."""
    x, d, z = _along(input, dim, "topk")
    k = _check_k(k, x.shape[d], "topk", 0)
    idx = _indices(x, "topk_indices", k, d, bool(largest))
    return TopKResult(_back0(Gather.apply(x, d, idx), z), _back0(idx, z))


def _select(x, d, idx, keepdim, z, result):
    """``(values, indices)`` of a reduction selecting ``idx`` (kept dim) along ``d``."""
    vals = Gather.apply(x, d, idx)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    if z:
        vals, idx = reshape(vals, ()), reshape(idx, ())
    return result(vals, idx)


def _nth(x, d, k):
    """The index of the ``k``-th (0-based) element of the stable ascending order, kept
    dim."""
    order = _indices(x, "sort_indices", d, False)
    return order[(slice(None),) * d + (slice(k, k + 1),)]


def kthvalue(input, k, dim=-1, keepdim: bool = False):
    """The ``k``-th smallest element (1-based) along ``dim``: ``(values, indices)``."""
    x, d, z = _along(input, dim, "kthvalue")
    k = _check_k(k, x.shape[d], "kthvalue", 1)
    return _select(x, d, _nth(x, d, k - 1), keepdim, z, KthvalueResult)


class MedianAll(Op):
    """The lower median of all elements (NaN if any is NaN, NaN when empty); the
    gradient is shared evenly by the elements equal to it (as torch)."""

    @staticmethod
    def forward(ctx, x, ignore_nan):
        flat = x.reshape((x.size,))
        n = x.size
        if ignore_nan and x.dtype.kind == "f":
            n = int(x.isnan().logical_not().sum().item())
        if n == 0:
            out = x.__class__.scalar(math.nan, x.dtype) if x.dtype.kind == "f" else None
            if out is None:
                raise RuntimeError("median: cannot take the median of an empty integer tensor")
        else:
            order = flat.sort_indices(0, False)
            out = flat.gather(0, order).getitem(((n - 1) // 2,))
            if not ignore_nan and x.dtype.kind == "f" and not x.isnan().logical_not().all().item():
                out = x.__class__.scalar(math.nan, x.dtype)
            out = out.copy()
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        with no_grad():
            mask = (x == out) | (x.isnan() & out.isnan())
            count = mask.sum()
        return grad_output * mask / where(count == 0, 1, count), None


def median(input, dim=None, keepdim: bool = False):
    """``median()``: the lower median of all elements; ``median(dim)``: ``(values,
    indices)`` of the lower median along ``dim``. NaN propagates (the index is the
    slice's first NaN)."""
    if dim is None:
        return MedianAll.apply(input, False)
    x, d, z = _along(input, dim, "median")
    n = x.shape[d]
    if n == 0:
        raise RuntimeError(
            f"median: expected reduction dim {d} to have non-zero size "
            f"(input shape {tuple(input.shape)})"
        )
    idx = _nth(x, d, (n - 1) // 2)
    if x.dtype.is_floating_point:
        from nnkit.autograd.ops.reduction import any as _any
        from nnkit.autograd.ops.reduction import argmax

        with no_grad():
            nan = x.isnan()
            idx = where(_any(nan, d, keepdim=True), argmax(nan.to("int64"), d, True), idx)
    return _select(x, d, idx, keepdim, z, MedianResult)


def nanmedian(input, dim=None, keepdim: bool = False):
    """:func:`median` ignoring NaN: the lower median of the non-NaN values (NaN where a
    slice is all NaN, with the index of its first NaN)."""
    if dim is None:
        return MedianAll.apply(input, True)
    if not input.dtype.is_floating_point:
        return median(input, dim, keepdim)
    x, d, z = _along(input, dim, "nanmedian")
    if x.shape[d] == 0:
        raise RuntimeError(
            f"nanmedian: expected reduction dim {d} to have non-zero size "
            f"(input shape {tuple(input.shape)})"
        )
    with no_grad():
        valid = sum(x.isnan().logical_not(), d, keepdim=True)
        k = (valid - 1).clamp(min=0) // 2
        idx = Gather.apply(_indices(x, "sort_indices", d, False), d, k)
    return _select(x, d, idx, keepdim, z, MedianResult)


def mode(input, dim=-1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest among equally frequent ones)
    and the index of its last occurrence, as torch's CPU kernel. With NaN in a slice the
    result is unspecified in torch; nnkit counts NaNs as equal."""
    x, d, z = _along(input, dim, "mode")
    if x.shape[d] == 0:
        raise RuntimeError(
            f"mode: expected reduction dim {d} to have non-zero size "
            f"(input shape {tuple(input.shape)})"
        )
    idx = _indices(x, "mode_indices", d).unsqueeze(d)
    return _select(x, d, idx, keepdim, z, ModeResult)


class _NaNToZero(Op):
    """NaN entries as 0; the gradient is the incoming one times the not-NaN mask
    (torch's nansum backward: a NaN or inf incoming gradient stays NaN at NaN entries)."""

    @staticmethod
    def forward(ctx, x):
        nan = x.isnan()
        keep = nan.logical_not().astype(x.dtype)
        ctx.save_for_backward(keep)
        return nan.where(type(x).scalar(0.0, x.dtype), x)

    @staticmethod
    def backward(ctx, grad_output):
        (keep,) = ctx.saved_tensors
        return grad_output * keep


def nansum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """:func:`sum` treating NaN as zero (NaN entries get gradient 0)."""
    if input.dtype.is_floating_point:
        input = _NaNToZero.apply(input)
    return sum(input, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """The mean of the non-NaN elements over ``dim`` (NaN where there are none)."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"nanmean: expected input to have a floating point dtype, got {input.dtype}"
        )
    with no_grad():
        count = sum(input.isnan().logical_not(), dim, keepdim).to(input.dtype)
        count = where(count == 0, math.nan, count)  # all NaN: NaN, without 0/0's warning
    return nansum(input, dim, keepdim) / count


class Prod(Op):
    """The product over ``dim`` (None: all), with torch's gradient at zeros: the product
    of the others for a single zero, 0 where a slice has several."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.dim, ctx.keepdim, ctx.in_shape = dim, keepdim, x.shape
        out = x.prod(axis=dim, keepdims=keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        dim, shape = ctx.dim, ctx.in_shape
        g = grad_output
        keep = tuple(1 if dim is None or k == dim else n for k, n in enumerate(shape))
        if not ctx.keepdim:
            g, out = reshape(g, keep), reshape(out, keep)
        if x.numel() == 0:
            return g.expand(shape) * 0, None, None
        if not bool((x == 0).any()):
            return g * out / x, None, None
        flat, d = (reshape(x, (-1,)), 0) if dim is None else (x, dim)
        n = flat.shape[d]
        head = (slice(None),) * d
        ones = flat[head + (slice(0, 1),)].detach() * 0 + 1
        left = CumProd.apply(cat([ones, flat[head + (slice(0, n - 1),)]], d), d, False)
        right = CumProd.apply(cat([flat[head + (slice(1, n),)], ones], d), d, True)
        return g * reshape(left * right, shape), None, None


def prod(input, dim=None, keepdim: bool = False, *, dtype=None):
    """The product of elements (over ``dim``, one dimension, when given); integers and
    bools multiply in int64, as torch."""
    input = _cast_for_scan(input, dtype)
    if dim is None:
        return Prod.apply(input, None, False)
    d = wrap_dim(dim, input.ndim, "prod")
    if input.ndim == 0:
        return Prod.apply(input, None, False)
    return Prod.apply(input, d, keepdim)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    from nnkit.autograd.tensor import Tensor

    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}: input must be a float or double tensor, got {input.dtype}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(
            f"{op}: interpolation must be one of {', '.join(_INTERPOLATIONS)}, "
            f"got {interpolation!r}"
        )
    if input.numel() == 0:
        raise RuntimeError(f"{op}: input tensor must be non-empty")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(
                f"{op}: q must be a scalar or a 1-d tensor, got shape {tuple(q.shape)}"
            )
        if q.dtype != input.dtype:
            raise RuntimeError(f"{op}: q ({q.dtype}) must have the dtype of input ({input.dtype})")
        qs = q.detach().tolist()
        scalar_q = q.ndim == 0
    elif is_scalar(q):
        qs, scalar_q = float(q), True
    else:
        raise TypeError(f"{op}: argument 'q' must be a float or a Tensor, got {type(q).__name__}")
    if builtins.any(not 0 <= v <= 1 for v in (qs if isinstance(qs, list) else [qs])):
        raise RuntimeError(f"{op}: q values must be in the range [0, 1], got {qs}")
    if dim is None:
        x, d = reshape(input, (-1,)), 0
        out_shape = (1,) * input.ndim if keepdim else ()
    else:
        d = wrap_dim(dim, input.ndim, op)
        x = reshape(input, (1,)) if input.ndim == 0 else input
        out_shape = (
            tuple(1 if k == d else s for k, s in enumerate(input.shape))
            if keepdim
            else tuple(s for k, s in enumerate(input.shape) if k != d)
        )
    x = _last(x, d)
    srt = sort(x, -1).values  # NaN last
    n = srt.shape[-1]
    qt = q.reshape(-1) if isinstance(q, Tensor) else None
    qv = qt if qt is not None else srt.new_tensor([qs])
    with no_grad():
        nan = srt.isnan()
        valid = sum(nan.logical_not(), -1, keepdim=True).to(srt.dtype)
    shape_q = (-1,) + (1,) * srt.ndim  # q leads: (nq, *batch, 1)
    qv = reshape(qv, shape_q)
    if ignore_nan:
        ranks = (qv * (valid - 1)).clamp(min=0)
    else:
        ranks = where(nan.any(-1, keepdim=True), float(n - 1), qv * (n - 1))
    with no_grad():
        rk = ranks.detach()
        if interpolation == "lower":
            rk = rk.floor()
        elif interpolation == "higher":
            rk = rk.ceil()
        elif interpolation == "nearest":
            rk = rk.round()
        below = rk.floor().to("int64")
        above = rk.ceil().to("int64")
    batch = tuple(srt.shape[:-1])
    src = srt.unsqueeze(0).expand((qv.shape[0],) + batch + (n,))
    full = (qv.shape[0],) + batch + (1,)
    lo = Gather.apply(src, srt.ndim, below.expand(full).contiguous())
    if interpolation in ("linear", "midpoint"):
        hi = Gather.apply(src, srt.ndim, above.expand(full).contiguous())
        w = ranks - below.to(ranks.dtype) if interpolation == "linear" else 0.5
        with no_grad():
            nan_slice = lo.isnan()  # NaN (and only NaN) there: keep NaN out of w's gradient
        lo = lo + where(nan_slice, 0.0, hi - lo) * w
    res = lo.squeeze(-1)  # (nq, *batch)
    res = reshape(res, (res.shape[0],) + out_shape)
    return reshape(res, out_shape) if scalar_q else res


def _last(x, d):
    perm = [k for k in range(x.ndim) if k != d] + [d]
    return x.permute(*perm)


def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
    """The ``q``-th quantiles of ``input`` over ``dim`` (all elements when None), with
    torch's ``interpolation`` (linear, lower, higher, midpoint, nearest). A 1-d ``q``
    adds a leading dimension. A slice holding NaN gives NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
    """:func:`quantile` ignoring NaN (NaN only where a slice is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` over ``dim`` in one call; the arguments are :func:`var`'s."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    return (var(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` over ``dim`` in one call; the arguments are :func:`std`'s."""
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    return (std(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim))
