"""Tensor-level ops of issue 13: ``combinations``, ``unravel_index``, ``gradient``,
``renorm``, ``sum_to_size``, ``constant_pad_nd``, ``nonzero_static``, ``index_reduce``
and the histograms ``histogram``/``histogramdd``.

The differentiable ones are compositions of existing ops (indexing, arithmetic,
``scatter_reduce``, ``pad``), so their gradients (and double backward) follow. The
histograms run one kernel (:mod:`nnkit.backends.strided_kernels`) and carry no gradient.
"""

from __future__ import annotations

import itertools
from collections import namedtuple

from nnkit.autograd.factories import full, tensor
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import _dims, _int, check_tensor, norm_dims, wrap_dim
from nnkit.autograd.ops.index_write import scatter_reduce
from nnkit.autograd.ops.inplace import apply_inplace
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.ops.linalg_more import vector_norm
from nnkit.autograd.ops.masking import nonzero
from nnkit.autograd.ops.nn_misc import pad
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.shape import sum_to
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.backends import strided_kernels as _k

__all__ = [
    "combinations",
    "unravel_index",
    "gradient",
    "renorm",
    "constant_pad_nd",
    "nonzero_static",
    "index_reduce",
    "histogram",
    "histogramdd",
]

NOT_METHODS: set[str] = {
    "combinations",
    "unravel_index",
    "gradient",
    "constant_pad_nd",
    "histogramdd",
}

# Named results like torch.return_types.histogram / histogramdd.
HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])
HistogramddResult = namedtuple("histogramdd", ["hist", "bin_edges"])


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of the 1-D ``input``, in order
    (``torch.combinations``, as ``itertools.combinations``).

    Args:
        input: a 1-D tensor.
        r: the combination length (default 2); 0 gives an empty 1-D tensor.
        with_replacement: allow an element to repeat (``combinations_with_replacement``).

    Returns:
        A tensor of shape ``(number of combinations, r)``.

    Gradient: each element gets the sum of its copies' gradients.

    Example:
        >>> nnkit.combinations(nnkit.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    check_tensor(input, "combinations")
    if input.ndim != 1:
        raise ValueError(f"combinations: expects a 1-D tensor, got {input.ndim}-D")
    r = _int(r, "combinations", "r")
    if r < 0:
        raise ValueError(f"combinations: r must be non-negative, got {r}")
    if r == 0:
        return input.new_zeros((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(range(input.shape[0]), r))
    index = tensor(idx, dtype=_dt.int64) if idx else tensor([], dtype=_dt.int64).reshape(0, r)
    return input[index.to(input.device)]


def unravel_index(indices, shape):
    """The coordinates in a tensor of ``shape`` of each flat (row-major) index
    (``torch.unravel_index``); indices wrap around as in torch (``-1`` is the last).

    Args:
        indices: an integer tensor of flat indices.
        shape: the shape to index (a sequence of non-negative ints).

    Returns:
        A tuple of ``len(shape)`` int64 tensors of ``indices``' shape, one per dimension.

    Example:
        >>> nnkit.unravel_index(nnkit.tensor([4, 1]), (2, 3))
        (tensor([1, 0]), tensor([1, 1]))
    """
    check_tensor(indices, "unravel_index", "indices")
    if indices.dtype.is_floating_point or indices.dtype == _dt.bool_:
        raise TypeError(f"unravel_index: expected an integer 'indices', got {indices.dtype}")
    shape = _dims(shape, "unravel_index", "shape")
    if any(n < 0 for n in shape):
        raise ValueError(f"unravel_index: 'shape' must be non-negative, got {list(shape)}")
    idx = indices.to(_dt.int64)
    out, stride = [], 1
    for n in reversed(shape):
        out.append((idx // stride) % n if n else idx * 0)
        stride *= n
    return tuple(reversed(out))


def _steps(spacing, k, n, like):
    """The ``n - 1`` steps of dimension ``k``'s coordinates, as a tensor (or a float)."""
    if isinstance(spacing, (list, tuple)):
        spacing = spacing[k]
    if spacing is None:
        return 1.0
    if isinstance(spacing, Tensor):
        if spacing.ndim == 0:
            return float(spacing.item())
        if spacing.shape[0] != n:
            raise ValueError(
                f"gradient: expected the coordinates of dimension {k} to have {n} "
                f"elements, got {spacing.shape[0]}"
            )
        c = spacing.to(dtype=like.dtype, device=like.device)
        return c[1:] - c[:-1]
    return float(spacing)


def _grad_dim(f, d, h, edge_order):
    """numpy/torch's second-order central differences of ``f`` along ``d``."""
    n = f.shape[d]
    at = lambda a, b: f.narrow(d, a, b - a)  # noqa: E731
    shape = [1] * f.ndim
    shape[d] = -1
    uniform = not isinstance(h, Tensor)
    if uniform:
        mid = (at(2, n) - at(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first, last = (at(1, 2) - at(0, 1)) / h, (at(n - 1, n) - at(n - 2, n - 1)) / h
        else:
            first = (-1.5 * at(0, 1) + 2 * at(1, 2) - 0.5 * at(2, 3)) / h
            last = (0.5 * at(n - 3, n - 2) - 2 * at(n - 2, n - 1) + 1.5 * at(n - 1, n)) / h
        return cat([first, mid, last], d)
    dx1, dx2 = h[:-1].reshape(shape), h[1:].reshape(shape)
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    mid = a * at(0, n - 2) + b * at(1, n - 1) + c * at(2, n)
    if edge_order == 1:
        first = (at(1, 2) - at(0, 1)) / h[0]
        last = (at(n - 1, n) - at(n - 2, n - 1)) / h[-1]
    else:
        d1, d2 = h[0], h[1]
        first = (
            -(2 * d1 + d2) / (d1 * (d1 + d2)) * at(0, 1)
            + (d1 + d2) / (d1 * d2) * at(1, 2)
            - d1 / (d2 * (d1 + d2)) * at(2, 3)
        )
        d1, d2 = h[-2], h[-1]
        last = (
            d2 / (d1 * (d1 + d2)) * at(n - 3, n - 2)
            - (d2 + d1) / (d1 * d2) * at(n - 2, n - 1)
            + (2 * d2 + d1) / (d2 * (d1 + d2)) * at(n - 1, n)
        )
    return cat([first, mid, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative estimates of ``input`` along each of ``dim`` (``torch.gradient``,
    as ``numpy.gradient``): central differences inside, one-sided ones of
    ``edge_order`` (1 or 2) at the ends.

    Args:
        input: the sampled values.
        spacing: the sample spacing: a number for every dimension, a list with a number
            or a 1-D coordinates tensor per dimension of ``dim``.
        dim: an int or a sequence of ints (default: every dimension).
        edge_order: the accuracy order of the edge differences, 1 or 2.

    Returns:
        A tuple with one tensor of ``input``'s shape per dimension (float).

    Gradient: the differences are linear in ``input``; they pass gradients back.

    Example:
        >>> nnkit.gradient(nnkit.tensor([1.0, 4.0, 9.0, 16.0]))
        (tensor([3.0, 4.0, 6.0, 7.0]),)
    """
    check_tensor(input, "gradient")
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    dims = tuple(range(input.ndim)) if dim is None else _dims(dim, "gradient", "dim")
    dims = tuple(wrap_dim(d, input.ndim, "gradient") for d in dims)
    if norm_dims(dims, input.ndim, "gradient") is None or input.ndim == 0:
        raise ValueError("gradient: expects a tensor with at least one dimension")
    if isinstance(spacing, (list, tuple)) and len(spacing) != len(dims):
        raise ValueError(
            f"gradient: expected spacing to have one entry per dimension ({len(dims)}), "
            f"got {len(spacing)}"
        )
    f = input if input.dtype.is_floating_point else input.to(_dt.get_default_dtype())
    out = []
    for k, d in enumerate(dims):
        if f.shape[d] < edge_order + 1:
            raise ValueError(
                f"gradient: each dimension must have at least edge_order + 1 = "
                f"{edge_order + 1} elements, dimension {d} has {f.shape[d]}"
            )
        out.append(_grad_dim(f, d, _steps(spacing, k, f.shape[d], f), edge_order))
    return tuple(out)


def renorm(input, p, dim, maxnorm):
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm``
    scaled down to norm ``maxnorm`` (``torch.renorm``; factor ``maxnorm / (norm +
    1e-7)``, as torch).

    Args:
        input: a floating tensor of at least 1 dimension.
        p: the norm's order (positive; ``inf`` allowed).
        dim: the dimension whose slices are renormalised.
        maxnorm: the largest norm a slice keeps.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: through the scale factor too (slices within ``maxnorm`` pass it unchanged).

    Example:
        >>> nnkit.renorm(nnkit.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    check_tensor(input, "renorm")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point input, got {input.dtype}")
    if input.ndim == 0:
        raise ValueError("renorm: expects a tensor with at least one dimension")
    if p <= 0:
        raise ValueError(f"renorm: p must be positive, got {p}")
    if maxnorm < 0:
        raise ValueError(f"renorm: maxnorm must be non-negative, got {maxnorm}")
    d = wrap_dim(dim, input.ndim, "renorm")
    others = tuple(k for k in range(input.ndim) if k != d)
    norm = vector_norm(input, p, others, True) if others else input.abs()
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor.to(input.dtype)


def sum_to_size(input, *size):
    """``input`` summed down to ``size``, which must expand to ``input``'s shape
    (``torch.Tensor.sum_to_size``).

    Args:
        input: the tensor.
        size: the target shape, as separate ints or one sequence.

    Returns:
        A tensor of ``size`` (``input`` itself when the shapes match).

    Gradient: the gradient expanded back to ``input``'s shape.

    Example:
        >>> nnkit.ones(2, 3).sum_to_size(1, 3)
        tensor([[2.0, 2.0, 2.0]])
    """
    check_tensor(input, "sum_to_size")
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    size = tuple(_int(s, "sum_to_size", "size") for s in size)
    ok = len(size) <= input.ndim and all(
        s == n or s == 1 for s, n in zip(size[::-1], input.shape[::-1])
    )
    if not ok:
        raise RuntimeError(
            f"sum_to_size: size {list(size)} is not expandable to size {list(input.shape)}"
        )
    return sum_to(input, size)


def constant_pad_nd(input, pad_, value=0):
    """``input`` padded with ``value`` (``torch.constant_pad_nd``, as
    ``F.pad(input, pad, value=value)``): ``pad`` lists (before, after) amounts from
    the last dimension backwards; negative amounts crop.

    Args:
        input: the tensor.
        pad_: an even-length sequence of ints.
        value: the fill value (default 0).

    Returns:
        The padded tensor.

    Gradient: the incoming gradient cropped back (zero for cropped elements).

    Example:
        >>> nnkit.constant_pad_nd(nnkit.tensor([1, 2]), (1, 2), 9)
        tensor([9, 1, 2, 9, 9])
    """
    check_tensor(input, "constant_pad_nd")
    return pad(input, pad_, "constant", value)


def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the non-zero elements as :func:`~nnkit.nonzero`, but with exactly
    ``size`` rows (``torch.nonzero_static``): truncated, or padded with ``fill_value``.

    Args:
        input: the tensor.
        size: the number of rows of the result (non-negative).
        fill_value: the value of the padding rows (default -1).

    Returns:
        An int64 tensor of shape ``(size, input.ndim)``.

    Example:
        >>> nnkit.nonzero_static(nnkit.tensor([0, 3, 0, 4]), size=3)
        tensor([[ 1],
                [ 3],
                [-1]])
    """
    check_tensor(input, "nonzero_static")
    size = _int(size, "nonzero_static", "size")
    if size < 0:
        raise ValueError(f"nonzero_static: size must be non-negative, got {size}")
    with no_grad():
        nz = nonzero(input)
        k = nz.shape[0]
        if k >= size:
            return nz[:size]
        filler = full((size - k, input.ndim), fill_value, dtype=_dt.int64, device=input.device)
        return cat([nz, filler], 0)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """``input`` with the slices of ``source`` reduced into the slices ``index`` names
    along ``dim`` (``torch.index_reduce``): ``out[index[i]] = reduce(out[index[i]],
    source[i])`` for ``dim = 0``.

    Args:
        input: the tensor reduced into.
        dim: the dimension ``index`` runs along.
        index: a 0-d or 1-d integer tensor, one entry per slice of ``source`` along ``dim``.
        source: ``input``'s shape except ``index.numel()`` slices along ``dim``.
        reduce: ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``.
        include_self: whether ``input``'s own value takes part (default True); slices
            nothing is reduced into keep ``input``'s value.

    Returns:
        A new tensor of ``input``'s shape and dtype.

    Gradient: as :func:`~nnkit.scatter_reduce` (``amax``/``amin`` share it evenly among
    the tied maxima/minima).

    Example:
        >>> nnkit.index_reduce(nnkit.tensor([1.0, 2.0]), 0, nnkit.tensor([0, 0, 1]),
        ...                    nnkit.tensor([3.0, 4.0, 5.0]), "prod")
        tensor([12.0, 10.0])
    """
    check_tensor(input, "index_reduce")
    check_tensor(index, "index_reduce", "index")
    check_tensor(source, "index_reduce", "source")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(
            f"index_reduce: reduce must be 'prod', 'mean', 'amax' or 'amin', got {reduce!r}"
        )
    if index.ndim > 1:
        raise IndexError(f"index_reduce: index must be 0-d or 1-d, got {index.ndim}-d")
    d = wrap_dim(dim, max(input.ndim, 1), "index_reduce")
    if input.ndim == 0:
        return index_reduce(
            input.reshape(1), 0, index, source.reshape(-1), reduce, include_self=include_self
        ).reshape(())
    idx = index.reshape(-1)
    src = source if source.ndim else source.reshape(1)
    if src.ndim != input.ndim or src.shape[d] != idx.shape[0]:
        raise ValueError(
            f"index_reduce: source of shape {tuple(source.shape)} does not match input "
            f"{tuple(input.shape)} with {idx.shape[0]} indices along dim {d}"
        )
    view = [1] * src.ndim
    view[d] = -1
    expanded = idx.reshape(view).expand(src.shape)
    return scatter_reduce(input, d, expanded, src, reduce, include_self=include_self)


def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    """:func:`index_reduce` in place (``torch.Tensor.index_reduce_``).

    Args:
        input: the tensor written into.
        dim, index, source, reduce, include_self: as in :func:`index_reduce`.

    Returns:
        ``input`` itself, its version bumped; while recording, differentiable as
        :func:`index_reduce`.

    Example:
        >>> x = nnkit.tensor([1.0, 2.0])
        >>> x.index_reduce_(0, nnkit.tensor([1]), nnkit.tensor([5.0]), "amax")
        tensor([1.0, 5.0])
    """

    def compute(old):
        return index_reduce(old, dim, index, source, reduce, include_self=include_self)

    def fast(m):
        with no_grad():
            m.copy_(compute(input)._impl.data)

    return apply_inplace(input, "index_reduce_", compute, fast, (source,), clone_self=True)


def _mat(t):
    return None if t is None else t._impl.data


def _wrap(m):
    return Tensor._from_mat(m)


def _range(x, lo_hi, op):
    """The (lo, hi) of a histogram's bins: ``lo_hi``, else the data's range; equal
    ends widen by 0.5 each way and no data gives (0, 1), as torch."""
    if lo_hi is not None:
        lo, hi = float(lo_hi[0]), float(lo_hi[1])
        if lo > hi:
            raise ValueError(f"{op}: range must have min <= max, got ({lo}, {hi})")
    elif x.numel():
        lo, hi = float(x.amin()), float(x.amax())
    else:
        lo, hi = 0.0, 1.0
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def _float_input(x, op):
    check_tensor(x, op)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point input, got {x.dtype}")


def histogram(input, bins, *, range=None, weight=None, density=False):  # noqa: A002
    """A histogram of ``input``'s values (``torch.histogram``).

    Args:
        input: a floating tensor (flattened).
        bins: the number of equal bins, or a 1-D increasing tensor of bin edges.
        range: ``(min, max)`` of the equal bins (default: the data's range; equal ends
            widen by 0.5 each way); ignored with edges.
        weight: a tensor of ``input``'s shape weighting each value (default 1).
        density: divide by the total and the bin widths (the histogram integrates to 1).

    Returns:
        A named tuple ``(hist, bin_edges)``, both of ``input``'s dtype; values outside
        the edges are not counted, the last bin includes its right edge.

    Example:
        >>> h = nnkit.histogram(nnkit.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
        >>> h.hist, h.bin_edges
        (tensor([0.0, 2.0, 1.0, 0.0]), tensor([0.0000, 0.7500, 1.5000, 2.2500, 3.0000]))
    """
    _float_input(input, "histogram")
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 1:
            raise ValueError("histogram: bins tensor must be 1-D with at least one edge")
        lo = hi = None
        bins = bins.to(input.dtype)
    else:
        bins = _int(bins, "histogram", "bins")
        if bins <= 0:
            raise ValueError(f"histogram: bins must be positive, got {bins}")
        lo, hi = _range(input, range, "histogram")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("histogram: weight must have the same shape as input")
    if isinstance(bins, Tensor):
        bins = _mat(bins)
    hist, edges = _k.histogram(_mat(input), bins, lo, hi, _mat(weight), bool(density))
    return HistogramResult(_wrap(hist), _wrap(edges))


def histogramdd(input, bins, *, range=None, weight=None, density=False):  # noqa: A002
    """A ``D``-dimensional histogram of the rows of ``input`` (``torch.histogramdd``).

    Args:
        input: a floating tensor whose last dimension ``D`` holds the coordinates.
        bins: an int (every dimension), a sequence of ``D`` ints, or ``D`` 1-D edge tensors.
        range: a flat sequence ``[min_0, max_0, min_1, max_1, ...]`` for the equal bins
            (default: each coordinate's data range).
        weight: a tensor of ``input.shape[:-1]`` weighting each row (default 1).
        density: normalise so that the histogram integrates to 1.

    Returns:
        A named tuple ``(hist, bin_edges)``: ``hist`` of shape ``(bins_0, ..., bins_D-1)``
        and a tuple of ``D`` 1-D edge tensors, of ``input``'s dtype.

    Example:
        >>> h = nnkit.histogramdd(nnkit.tensor([[0.0, 0.0], [1.0, 1.0]]), [2, 2])
        >>> h.hist
        tensor([[1.0, 0.0],
                [0.0, 1.0]])
    """
    _float_input(input, "histogramdd")
    if input.ndim < 1:
        raise ValueError("histogramdd: input must have at least 1 dimension")
    dd = input.shape[-1]
    x = input.reshape(-1, dd)
    if isinstance(bins, int) and not isinstance(bins, bool):
        bins = [bins] * dd
    bins = list(bins)
    if len(bins) != dd:
        raise ValueError(f"histogramdd: expected {dd} bin specifications, got {len(bins)}")
    if range is not None and len(range) != 2 * dd:
        raise ValueError(f"histogramdd: expected range of length {2 * dd}, got {len(range)}")
    ranges = []
    for k, b in enumerate(bins):
        if isinstance(b, Tensor):
            bins[k] = _mat(b.to(input.dtype))
            ranges.append(None)
        else:
            if _int(b, "histogramdd", "bins") <= 0:
                raise ValueError(f"histogramdd: bins must be positive, got {b}")
            r = None if range is None else range[2 * k : 2 * k + 2]
            ranges.append(_range(x[:, k], r, "histogramdd"))
    if weight is not None:
        weight = weight.reshape(-1)
    hist, edges = _k.histogramdd(_mat(x.contiguous()), bins, ranges, _mat(weight), bool(density))
    return HistogramddResult(_wrap(hist), tuple(_wrap(e) for e in edges))


# Tensor methods that are not nnkit functions (as in torch).
METHODS_ONLY = {"sum_to_size": sum_to_size, "index_reduce_": index_reduce_}
