"""Counting, bucketing and set ops (``bincount``, ``bucketize``, ``searchsorted``,
``histc``, ``isin``, ``unique``, ``unique_consecutive``) and the factories
``scalar_tensor`` and ``logspace``.

The counting ops run one kernel (:mod:`nnkit.backends.search_kernels`) and carry no
gradient (torch defines none).
"""

from __future__ import annotations

import math

from nnkit.autograd.factories import tensor
from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor, is_scalar
from nnkit.backends import dtypes as _dt
from nnkit.backends import search_kernels as _k

__all__ = [
    "bincount",
    "bucketize",
    "searchsorted",
    "histc",
    "isin",
    "unique",
    "unique_consecutive",
    "scalar_tensor",
    "logspace",
]

NOT_METHODS: set[str] = {"searchsorted", "scalar_tensor", "logspace"}


class _Kernel(Op):
    """One search kernel; its results carry no gradient."""

    @staticmethod
    def forward(ctx, kernel, *args):
        return kernel(*args)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("this op is not differentiable")


def _run(kernel, *args):
    with no_grad():
        return _Kernel.apply(kernel, *args)


def _integer(x, op, name="input"):
    check_tensor(x, op, name)
    if x.dtype.is_floating_point or x.dtype == _dt.bool_:
        raise TypeError(f"{op}: '{name}' must be an integer tensor, got {x.dtype}")
    return x


def bincount(input, weights=None, minlength=0):
    """The number of occurrences of each value ``0..max(input)`` in a 1-D non-negative
    integer tensor (at least ``minlength`` bins); with ``weights``, their sums instead
    (floating weights keep their dtype, others give float64).

    Example:
        >>> nnkit.bincount(nnkit.tensor([0, 2, 2]))
        tensor([1, 0, 2])
    """
    x = _integer(input, "bincount")
    if x.ndim != 1:
        raise ValueError(f"bincount: expects a 1-D tensor, got shape {x.shape}")
    if x.numel() and bool((x < 0).any()):
        raise ValueError("bincount: input must be non-negative")
    if weights is not None:
        check_tensor(weights, "bincount", "weights")
        if weights.shape != x.shape:
            raise ValueError(f"bincount: weights {weights.shape} must match input {x.shape}")
    return _run(_k.bincount, x, weights, int(minlength))


def _side(right, side, op):
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"{op}: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise ValueError(f"{op}: side='left' contradicts right=True")
        return side
    return "right" if right else "left"


def _index_dtype(out_int32):
    return _dt.int32.np if out_int32 else _dt.int64.np


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each element of ``input`` in the sorted 1-D ``boundaries``: the
    ``i`` with ``b[i-1] < x <= b[i]`` (``b[i-1] <= x < b[i]`` with ``right``).

    Example:
        >>> nnkit.bucketize(nnkit.tensor([1, 5, 9]), nnkit.tensor([1, 3, 5, 7]))
        tensor([0, 2, 4])
    """
    check_tensor(boundaries, "bucketize", "boundaries")
    if boundaries.ndim != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D, got shape {boundaries.shape}")
    if is_scalar(input):
        input = boundaries.new_tensor(input)
    check_tensor(input, "bucketize")
    side = "right" if right else "left"
    return _run(_k.searchsorted, boundaries, input, side, None, _index_dtype(out_int32))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Insertion indices of ``input`` in ``sorted_sequence`` (sorted along its last
    dimension; an N-D one searches row by row, matching ``input``'s leading dims):
    the first index ``i`` with ``seq[i] >= x`` (``> x`` for ``side="right"``/``right``).
    ``sorter`` gives the indices that sort an unsorted ``sorted_sequence``.

    Example:
        >>> nnkit.searchsorted(nnkit.tensor([1, 3, 5]), nnkit.tensor([3, 6]))
        tensor([1, 3])
    """
    check_tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    if is_scalar(input):
        if sorted_sequence.ndim != 1:
            raise ValueError("searchsorted: a scalar input needs a 1-D sorted_sequence")
        input = sorted_sequence.new_tensor(input)
    check_tensor(input, "searchsorted")
    s = sorted_sequence
    if s.ndim > 1 and (input.ndim != s.ndim or input.shape[:-1] != s.shape[:-1]):
        raise ValueError(
            f"searchsorted: input {input.shape} must match the leading dimensions of "
            f"sorted_sequence {s.shape}"
        )
    if sorter is not None:
        check_tensor(sorter, "searchsorted", "sorter")
    side = _side(right, side, "searchsorted")
    return _run(_k.searchsorted, s, input, side, sorter, _index_dtype(out_int32))


def histc(input, bins=100, min=0, max=0):  # noqa: A002 (torch's names)
    """A histogram of ``bins`` equal bins over ``[min, max]`` (both 0: the data's range);
    values outside are ignored. A 1-D tensor of ``input``'s floating dtype.

    Example:
        >>> nnkit.histc(nnkit.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
        tensor([0.0, 2.0, 1.0, 0.0])
    """
    x = check_tensor(input, "histc")
    if not x.dtype.is_floating_point:
        raise TypeError(f"histc: expects a floating tensor, got {x.dtype}")
    if bins <= 0:
        raise ValueError(f"histc: bins must be positive, got {bins}")
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = float(x.amin()), float(x.amax())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi or not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"histc: invalid range [{lo}, {hi}]")
    return _run(_k.histc, x, int(bins), lo, hi)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a
    number): a bool tensor of ``elements``' shape (negated with ``invert``).

    Example:
        >>> nnkit.isin(nnkit.tensor([1, 2, 3]), nnkit.tensor([2, 5]))
        tensor([False,  True, False])
    """
    if is_scalar(elements):
        elements = check_tensor(test_elements, "isin", "test_elements").new_tensor(elements)
    check_tensor(elements, "isin", "elements")
    if is_scalar(test_elements):
        test_elements = elements.new_tensor([test_elements])
    check_tensor(test_elements, "isin", "test_elements")
    return _run(_k.isin, elements, test_elements, bool(invert))


def _pick(vals, inv, counts, return_inverse, return_counts):
    if not (return_inverse or return_counts):
        return vals
    out = (vals,) + ((inv,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct elements of ``input`` (flattened), or its distinct slices along
    ``dim``, in ascending (lexicographic) order, as torch does on CPU even for
    ``sorted=False``; optionally the inverse indices and the counts.

    Example:
        >>> nnkit.unique(nnkit.tensor([3, 1, 3]), return_counts=True)
        (tensor([1, 3]), tensor([1, 2]))
    """
    check_tensor(input, "unique")
    if dim is not None:
        dim = dim % max(input.ndim, 1)
    vals, inv, counts = _run(_k.unique, input, dim)
    return _pick(vals, inv, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive elements (or slices along ``dim``)
    reduced to one; optionally the inverse indices and the run lengths.

    Example:
        >>> nnkit.unique_consecutive(nnkit.tensor([1, 1, 2, 1]))
        tensor([1, 2, 1])
    """
    check_tensor(input, "unique_consecutive")
    if dim is not None:
        dim = dim % max(input.ndim, 1)
    vals, inv, counts = _run(_k.unique_consecutive, input, dim)
    return _pick(vals, inv, counts, return_inverse, return_counts)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding the number ``s`` (default float dtype unless ``dtype``).

    Example:
        >>> nnkit.scalar_tensor(3)
        tensor(3.0)
    """
    dtype = _dt.get_default_dtype() if dtype is None else dtype
    return tensor(s, dtype=dtype, device=device, requires_grad=requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """``steps`` values ``base ** e`` with exponents evenly spaced from ``start`` to
    ``end`` (numbers or 0-d tensors). Integer dtypes truncate ``start``, ``end`` and
    each value, as torch.

    Example:
        >>> nnkit.logspace(0, 2, 3)
        tensor([  1.0,  10.0, 100.0])
    """
    start = float(start.item() if hasattr(start, "item") else start)
    end = float(end.item() if hasattr(end, "item") else end)
    dtype = _dt.get_default_dtype() if dtype is None else dtype
    if steps < 0:
        raise ValueError(f"logspace: steps must be non-negative, got {steps}")
    if not dtype.is_floating_point:
        start, end = float(math.trunc(start)), float(math.trunc(end))
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    half = steps // 2 if steps > 1 else 1
    vals = [
        float(base) ** (start + step * i if i < half else end - step * (steps - i - 1))
        for i in range(steps)
    ]
    if not dtype.is_floating_point:
        vals = [math.trunc(v) for v in vals]
    return tensor(vals, dtype=dtype, device=device, requires_grad=requires_grad)
