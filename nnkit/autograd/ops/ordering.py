"""Ordering ops (issue 13): sorting and selection (``sort``, ``argsort``, ``topk``,
``kthvalue``) and order statistics (``median``, ``nanmedian``, ``mode``), with torch's
signatures. Cumulative scans live in :mod:`~nnkit.autograd.ops.scan`, quantiles and
the NaN-ignoring reductions in :mod:`~nnkit.autograd.ops.statistics`.

Selections compute their indices without a graph, then take the values with
``gather``: the gradient goes to the selected index only, as in torch.
``median()``/``nanmedian()`` without ``dim`` share the gradient evenly between the
elements equal to the result.

Where torch leaves a choice unspecified nnkit's is documented, and may differ from the
index torch happens to return (values always agree, gradients follow the index):
- sorts are always stable (a valid answer for ``stable=False``); ``topk`` and
  ``kthvalue`` return, among equal values, the first in stable order (torch's CPU
  kernels use ``nth_element`` and can pick another);
- ``nanmedian(dim)`` of an all-NaN slice: NaN at the slice's first NaN;
- ``mode`` of a slice holding NaN: NaNs count as equal to each other;
- ``median()`` of an empty integer tensor raises (torch returns INT64_MIN).
Matched exactly: ``median(dim)``'s index, ``mode``'s smallest value and last index,
NaN ordering.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import wrap_dim
from nnkit.autograd.ops.indexing import Gather
from nnkit.autograd.ops.reduction import any as _any
from nnkit.autograd.ops.reduction import argmax, sum
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.shape import reshape

__all__ = [
    "sort",
    "argsort",
    "topk",
    "kthvalue",
    "median",
    "nanmedian",
    "mode",
]


def _rt(name):
    return namedtuple(name, ["values", "indices"])


# Named (values, indices) pairs like torch.return_types.*.
SortResult, TopKResult, KthvalueResult = _rt("sort"), _rt("topk"), _rt("kthvalue")
MedianResult, NanMedianResult, ModeResult = _rt("median"), _rt("nanmedian"), _rt("mode")


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


def sort(input, dim=-1, descending: bool = False, *, stable: bool = False):
    """Sort ``input`` along ``dim``, returning the sorted values and their original indices.

    Args:
        input: the input tensor.
        dim: the dimension to sort along (default: the last).
        descending: sort from largest to smallest.
        stable: accepted for PyTorch's signature; nnkit's sort is always stable (equal
            values keep their order), which is a valid answer for ``stable=False`` too.

    Returns:
        A named tuple ``(values, indices)`` of ``input``'s shape; ``indices`` is int64.
        NaN sorts as the largest value, as in PyTorch.

    Gradient: each value's gradient goes back to the position it came from.

    Example:
        >>> nnkit.sort(nnkit.tensor([3.0, 1.0, float("nan"), 2.0]))
        sort(values=tensor([1.0, 2.0, 3.0, nan]), indices=tensor([1, 3, 0, 2]))
        >>> nnkit.tensor([[3, 1, 2]]).sort(descending=True).indices
        tensor([[0, 2, 1]])
    """
    x, d, z = _along(input, dim, "sort")
    idx = _indices(x, "sort_indices", d, bool(descending))
    return SortResult(_back0(Gather.apply(x, d, idx), z), _back0(idx, z))


def argsort(input, dim=-1, descending: bool = False, *, stable: bool = False):
    """The indices that sort ``input`` along ``dim`` (the ``indices`` of :func:`sort`).

    Args:
        input: the input tensor.
        dim: the dimension to sort along (default: the last).
        descending: sort from largest to smallest.
        stable: accepted for PyTorch's signature; the sort is always stable.

    Returns:
        An int64 tensor of ``input``'s shape (no gradient). NaN sorts as the largest value.

    Example:
        >>> nnkit.argsort(nnkit.tensor([3.0, 1.0, 2.0, 1.0]))
        tensor([1, 3, 2, 0])
        >>> nnkit.tensor([3.0, 1.0, 2.0]).argsort(descending=True)
        tensor([0, 2, 1])
    """
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
    """The ``k`` largest (or smallest) elements along ``dim``.

    Args:
        input: the input tensor.
        k: how many elements to return (``0 <= k <= input.shape[dim]``).
        dim: the dimension to select along (default: the last).
        largest: ``False`` returns the ``k`` smallest instead.
        sorted: accepted for PyTorch's signature; the result is always sorted (largest
            first, or smallest first when ``largest=False``).

    Returns:
        A named tuple ``(values, indices)`` whose ``dim`` has size ``k``; ``indices`` is
        int64. NaN counts as the largest value. Among equal values nnkit picks the first in
        stable order; PyTorch's CPU kernel may return another index (same values).

    Gradient: flows to the selected elements only.

    Example:
        >>> nnkit.topk(nnkit.tensor([1.0, 4.0, 2.0, 5.0]), 2)
        topk(values=tensor([5.0, 4.0]), indices=tensor([3, 1]))
        >>> nnkit.tensor([1.0, 4.0, 2.0, 5.0]).topk(2, largest=False).values
        tensor([1.0, 2.0])
    """
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
    """The ``k``-th smallest element (1-based) along ``dim``.

    Args:
        input: the input tensor.
        k: the rank, ``1 <= k <= input.shape[dim]``.
        dim: the dimension to select along (default: the last).
        keepdim: keep ``dim`` as a dimension of size 1.

    Returns:
        A named tuple ``(values, indices)`` with ``dim`` removed (or of size 1);
        ``indices`` is int64. Among equal values nnkit returns the first in stable order;
        PyTorch's CPU kernel may return another index (same values).

    Gradient: flows to the selected element only.

    Example:
        >>> nnkit.kthvalue(nnkit.tensor([[3.0, 1.0, 2.0], [6.0, 5.0, 4.0]]), 2)
        kthvalue(values=tensor([2.0, 5.0]), indices=tensor([2, 1]))
    """
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
    """The median: ``median(input)`` over all elements, ``median(input, dim)`` along ``dim``.

    For an even count this is the lower of the two middle values (not their mean), as in
    PyTorch. Any NaN in a slice makes its median NaN.

    Args:
        input: the input tensor.
        dim: the dimension to reduce; None (default) reduces all elements.
        keepdim: with ``dim``, keep it as a dimension of size 1.

    Returns:
        Without ``dim``: a 0-d tensor. With ``dim``: a named tuple ``(values, indices)``
        (``indices`` int64; for a slice with NaN, the index of its first NaN).

    Gradient: with ``dim``, to the selected element; without, shared evenly by all
    elements equal to the median (as PyTorch).

    Raises:
        RuntimeError: for an empty ``dim``, or ``median()`` of an empty integer tensor
            (PyTorch returns INT64_MIN there; a float one gives NaN).

    Example:
        >>> nnkit.median(nnkit.tensor([4.0, 1.0, 3.0, 2.0]))
        tensor(2.0)
        >>> nnkit.tensor([[1.0, 5.0, 3.0], [2.0, 0.0, 9.0]]).median(dim=1)
        median(values=tensor([3.0, 2.0]), indices=tensor([2, 0]))
    """
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
        with no_grad():
            nan = x.isnan()
            idx = where(_any(nan, d, keepdim=True), argmax(nan.to("int64"), d, True), idx)
    return _select(x, d, idx, keepdim, z, MedianResult)


def nanmedian(input, dim=None, keepdim: bool = False):
    """:func:`median` ignoring NaN: the lower median of the non-NaN values.

    Args:
        input: the input tensor (for integer tensors this is :func:`median`).
        dim: the dimension to reduce; None (default) reduces all elements.
        keepdim: with ``dim``, keep it as a dimension of size 1.

    Returns:
        Without ``dim``: a 0-d tensor. With ``dim``: a named tuple ``(values, indices)``
        (``indices`` int64). A slice that is all NaN gives NaN, with the index of its
        first NaN.

    Gradient: as :func:`median`'s.

    Example:
        >>> nan = float("nan")
        >>> nnkit.nanmedian(nnkit.tensor([1.0, nan, 3.0, 2.0]))
        tensor(2.0)
        >>> nnkit.tensor([[1.0, nan], [nan, nan]]).nanmedian(dim=1)
        nanmedian(values=tensor([1.0, nan]), indices=tensor([0, 0]))
    """
    if dim is None:
        return MedianAll.apply(input, True)
    if not input.dtype.is_floating_point:
        return NanMedianResult(*median(input, dim, keepdim))
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
    return _select(x, d, idx, keepdim, z, NanMedianResult)


def mode(input, dim=-1, keepdim: bool = False):
    """The most frequent value along ``dim``, and where it occurs.

    Among equally frequent values the smallest wins; the index is that of its last
    occurrence, as in PyTorch's CPU kernel. For a slice holding NaN PyTorch leaves the
    result unspecified; nnkit counts NaNs as equal to each other.

    Args:
        input: the input tensor.
        dim: the dimension to reduce (default: the last).
        keepdim: keep ``dim`` as a dimension of size 1.

    Returns:
        A named tuple ``(values, indices)`` with ``dim`` removed (or of size 1);
        ``indices`` is int64.

    Gradient: flows to the element at ``indices``.

    Example:
        >>> nnkit.mode(nnkit.tensor([2, 1, 2, 3, 1]))
        mode(values=tensor(1), indices=tensor(4))
    """
    x, d, z = _along(input, dim, "mode")
    if x.shape[d] == 0:
        raise RuntimeError(
            f"mode: expected reduction dim {d} to have non-zero size "
            f"(input shape {tuple(input.shape)})"
        )
    idx = _indices(x, "mode_indices", d).unsqueeze(d)
    return _select(x, d, idx, keepdim, z, ModeResult)
