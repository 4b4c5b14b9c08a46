"""Indexing: ``t[...]``, ``t[...] = v``, gather/scatter_add, index_select, tril/triu.

Basic indices (ints, slices, None, Ellipsis) give views; integer or boolean
array indices give copies. Backward scatters the gradient into zeros of the
input's shape, adding where an index repeats.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.engine import PieceGrad
from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.grad_mode import no_grad, state
from nnkit.autograd.ops._util import wrap_dim
from nnkit.autograd.ops.shape import reshape, sum_to

__all__ = [
    "getitem",
    "setitem",
    "index_put",
    "gather",
    "scatter_add",
    "index_select",
    "index_add",
    "repeat_interleave",
    "tril",
    "triu",
    "nonzero",
    "masked_select",
    "take_along_dim",
]


def _index_item(item, x, op):
    from nnkit.autograd.tensor import Tensor

    if item is None or item is Ellipsis or isinstance(item, slice):
        return (item,)
    if isinstance(item, (bool, np.bool_)):
        item = np.asarray(item)
    if isinstance(item, (int, np.integer)):
        return (int(item),)
    if isinstance(item, Tensor):
        m = item._impl.data
        if m.device != x._impl.data.device:
            m = m.to_device(x._impl.data.device)
    elif isinstance(item, (list, tuple, np.ndarray)):
        m = type(x._impl.data).from_data(np.asarray(item))
    else:
        raise IndexError(
            f"{op}: unsupported index type {type(item).__name__} (use ints, slices, "
            "None, Ellipsis, or integer/boolean tensors)"
        )
    kind = m.dtype.kind
    if kind == "b":
        return m.nonzero() if m.ndim else (m,)
    if kind not in "iu":
        raise IndexError(f"{op}: tensors used as indices must be integer or boolean, got {m.dtype}")
    return (m,)


def normalize_index(x, index, op="getitem") -> tuple:
    """The user's index as a tuple of ints, slices, None, Ellipsis and integer Mats."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    dim = 0  # the tensor dimension the next item indexes (until an Ellipsis)
    for item in index:
        parts = _index_item(item, x, op)
        if dim is not None and len(parts) >= 1 and _is_mask(item):
            _check_mask(item, x.shape[dim : dim + len(parts)], dim, op)
        if item is Ellipsis:
            dim = None
        elif dim is not None and item is not None:
            dim += len(parts) if _is_mask(item) else 1
        out.extend(parts)
    return tuple(out)


def _is_mask(item) -> bool:
    dt = getattr(item, "dtype", None)
    return dt is not None and getattr(item, "ndim", 0) > 0 and str(dt) == "bool"


def _check_mask(mask, dims, start, op):
    if tuple(mask.shape) != tuple(dims):
        raise IndexError(
            f"{op}: the shape of the boolean mask {tuple(mask.shape)} does not "
            f"match the indexed dimensions {tuple(dims)} starting at dimension "
            f"{start}"
        )


class GetItem(Op):
    _view_op = True  # the output may view the input's memory

    @staticmethod
    def forward(ctx, x, idx):
        ctx.in_shape, ctx.idx = x.shape, idx
        return x.getitem(idx)

    @staticmethod
    def backward(ctx, grad_output):
        if not state.grad_enabled:  # not recorded: the engine adds the pieces together
            return PieceGrad(grad_output, ctx.in_shape, ctx.idx), None
        return IndexPutZeros.apply(grad_output, ctx.in_shape, ctx.idx), None


class IndexPutZeros(Op):
    """Zeros of ``shape`` with ``values`` added at ``idx`` (the backward of indexing)."""

    @staticmethod
    def forward(ctx, values, shape, idx):
        ctx.idx = idx
        return type(values).zeros(shape, values.dtype).index_add_(idx, values)

    @staticmethod
    def backward(ctx, grad_output):
        return GetItem.apply(grad_output, ctx.idx), None, None


def getitem(x, index):
    """``x[index]``: basic indexing gives a view; integer/boolean tensors or arrays give
    a copy (NumPy semantics).

    Raises:
        IndexError: for an out-of-range or unsupported index.
    """
    idx = normalize_index(x, index)
    try:
        return GetItem.apply(x, idx)
    except IndexError as exc:
        raise IndexError(f"getitem: {exc} (tensor shape {tuple(x.shape)})") from None


class IndexPut(Op):
    @staticmethod
    def forward(ctx, x, values, idx, accumulate):
        ctx.idx, ctx.accumulate = idx, accumulate
        ctx.v_shape, ctx.v_dtype = values.shape, values.dtype
        return x.index_put(idx, values.astype(x.dtype), accumulate)

    @staticmethod
    def backward(ctx, grad_output):
        n = ctx.needs_input_grad
        gx = gv = None
        if n[0]:
            gx = grad_output
            if not ctx.accumulate:
                zero = grad_output.new_zeros(())
                gx = IndexPut.apply(grad_output, zero, ctx.idx, False)
        if n[1]:
            gv = sum_to(GetItem.apply(grad_output, ctx.idx), ctx.v_shape)
            if gv.dtype != ctx.v_dtype:
                gv = gv.to(ctx.v_dtype.name)
        return gx, gv, None, None


def _value_tensor(x, value, op):
    from nnkit.autograd.factories import tensor
    from nnkit.autograd.tensor import Tensor

    if isinstance(value, Tensor):
        if value.device != x.device:
            raise RuntimeError(f"{op}: value is on {value.device} but the tensor is on {x.device}")
        return value
    return tensor(value, dtype=x.dtype, device=x.device)


def index_put(x, index, values, accumulate: bool = False):
    """Out of place: a copy of ``x`` with ``values`` written (or added) at ``index``."""
    idx = normalize_index(x, index, "index_put")
    return IndexPut.apply(x, _value_tensor(x, values, "index_put"), idx, accumulate)


def setitem(x, index, value) -> None:
    """``x[index] = value`` in place (recorded in the graph when grad is on)."""
    from nnkit.autograd.ops.inplace import apply_inplace

    idx = normalize_index(x, index, "setitem")
    v = _value_tensor(x, value, "setitem")
    try:
        apply_inplace(
            x,
            "setitem",
            lambda snap: IndexPut.apply(snap, v, idx, False),
            lambda m: m.setitem(idx, v._impl.data),
            others=(v,),
        )
    except (IndexError, ValueError) as exc:
        kind = IndexError if isinstance(exc, IndexError) else ShapeError
        raise kind(
            f"setitem: {exc} (tensor shape {tuple(x.shape)}, value shape {tuple(v.shape)})"
        ) from None


def _check_gather(x, dim, index, op):
    xs, im = x._impl.data.shape, index._impl.data
    ixs = im.shape
    d = wrap_dim(dim, len(xs), op)
    if im.dtype.kind not in "iu":
        raise TypeError(f"{op}: index must be an integer tensor, got {index.dtype}")
    if len(ixs) != len(xs):
        raise ShapeError(
            f"{op}: index {tuple(index.shape)} and input {tuple(x.shape)} must have "
            "the same number of dimensions"
        )
    for k, (a, b) in enumerate(zip(ixs, xs)):
        if k != d and a > b:
            raise ShapeError(
                f"{op}: index size {a} exceeds the input size {b} at dimension {k} "
                f"(index {tuple(index.shape)}, input {tuple(x.shape)})"
            )
    return d


class Gather(Op):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.in_shape, ctx.dim = x.shape, dim
        ctx.save_for_backward(index)
        return x.gather(dim, index)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        return GatherGrad.apply(grad_output, ctx.in_shape, ctx.dim, index), None, None


class GatherGrad(Op):
    """Zeros of ``shape`` with ``g`` added at ``index`` along ``dim``: gather's backward
    as one kernel (``scatter_add`` into new zeros, without copying them). Its own
    backward is gather."""

    @staticmethod
    def forward(ctx, g, shape, dim, index):
        ctx.dim = dim
        ctx.save_for_backward(index)
        return g.gather_grad(shape, dim, index)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        return Gather.apply(grad_output, ctx.dim, index), None, None, None


def gather(input, dim: int, index):
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (``torch.gather``).

    Raises:
        ShapeError: if ``index`` has another number of dimensions, or is larger than
            ``input`` outside ``dim``.
    """
    d = _check_gather(input, dim, index, "gather")
    _check_range(index, input.shape[d] if input.ndim else 1, d, "gather")
    return Gather.apply(input, d, index)


def take_along_dim(input, indices, dim=None):
    """``input``'s values at ``indices`` along ``dim`` (``torch.take_along_dim``).

    ``input`` and ``indices`` broadcast against each other in every dimension but
    ``dim``; negative indices count from the end. ``dim=None`` indexes the flattened
    ``input`` with the flattened ``indices``.

    Raises:
        ShapeError: if the two differ in their number of dimensions, or do not broadcast.
        IndexError: for an index outside ``[-size, size)``.
    """
    from nnkit.autograd.ops.shape import broadcast_shapes, expand

    if indices._impl.data.dtype.kind not in "iu":
        raise TypeError(f"take_along_dim: indices must be an integer tensor, got {indices.dtype}")
    if dim is None:
        input, indices, d = reshape(input, (-1,)), reshape(indices, (-1,)), 0
    else:
        if input.ndim != indices.ndim:
            raise ShapeError(
                f"take_along_dim: input and indices should have the same number "
                f"of dimensions, got {tuple(input.shape)} and "
                f"{tuple(indices.shape)}"
            )
        d = wrap_dim(dim, input.ndim, "take_along_dim")
    if input.ndim:
        try:
            common = broadcast_shapes(_without(input.shape, d), _without(indices.shape, d))
        except ShapeError:
            raise ShapeError(
                f"take_along_dim: input {tuple(input.shape)} and indices "
                f"{tuple(indices.shape)} do not broadcast outside dimension "
                f"{d}"
            ) from None
        input = expand(input, common[:d] + (input.shape[d],) + common[d:])
        indices = expand(indices, common[:d] + (indices.shape[d],) + common[d:])
    size = input.shape[d] if input.ndim else 1
    if indices.numel():
        with no_grad():
            lo = int(indices.min().item())
            if -size <= lo < 0:
                indices = indices + (indices < 0).to(indices.dtype) * size
    _check_range(indices, size, d, "take_along_dim")
    return Gather.apply(input, d, indices)


def _without(shape, d):
    return tuple(shape[:d]) + tuple(shape[d + 1 :])


class ScatterAdd(Op):
    @staticmethod
    def forward(ctx, x, dim, index, src):
        ctx.dim, ctx.src_shape = dim, src.shape
        ctx.save_for_backward(index)
        return x.scatter_add(dim, index, src.astype(x.dtype))

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        gsrc = None
        if ctx.needs_input_grad[3]:
            gsrc = gather(grad_output, ctx.dim, index)
            if gsrc.shape != ctx.src_shape:
                full = gsrc.new_zeros(ctx.src_shape)
                gsrc = index_put(full, tuple(slice(0, n) for n in gsrc.shape), gsrc)
        return grad_output, None, None, gsrc


def scatter_add(input, dim: int, index, src):
    """Out of place: ``input`` with ``src`` added at ``index`` along ``dim``."""
    d = _check_gather(input, dim, index, "scatter_add")
    _check_range(index, input.shape[d] if input.ndim else 1, d, "scatter_add")
    if any(a > b for a, b in zip(index.shape, src.shape)):
        raise ShapeError(
            f"scatter_add: index {tuple(index.shape)} is larger than src {tuple(src.shape)}"
        )
    return ScatterAdd.apply(input, d, index, src)


def _check_index_1d(x, dim, index, op):
    d = wrap_dim(dim, x.ndim, op)
    if index.ndim > 1 or index.dtype.is_floating_point or index.dtype.name == "bool":
        raise TypeError(
            f"{op}: index must be a 0-d or 1-d integer tensor, got shape "
            f"{tuple(index.shape)} and dtype {index.dtype}"
        )
    _check_range(index, x.shape[d] if x.ndim else 1, d, op)
    return d


def _check_range(index, size, d, op):
    """Every index in ``[0, size)``: negative ones are refused, not wrapped (torch)."""
    if not index.numel():
        return
    with no_grad():
        lo, hi = int(index.min().item()), int(index.max().item())
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise IndexError(
            f"{op}: index {bad} is out of bounds for dimension {d} with size "
            f"{size} (valid indices: 0 to {size - 1})"
        )


class IndexSelect(Op):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.in_shape, ctx.dim = x.shape, dim
        ctx.save_for_backward(index)
        return x.take(index, dim)

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        zeros = grad_output.new_zeros(ctx.in_shape)
        return index_add(zeros, ctx.dim, index, grad_output), None, None


def index_select(input, dim: int, index):
    """The slices of ``input`` at the positions ``index`` (1-d) along ``dim``."""
    d = _check_index_1d(input, dim, index, "index_select")
    if input.ndim == 0:  # a 0-d input gives a 0-d result (as torch)
        if index.numel() != 1:
            raise IndexError(
                f"index_select: index to a 0-d tensor can have only 1 value, got {index.numel()}"
            )
        return reshape(IndexSelect.apply(reshape(input, (1,)), 0, reshape(index, (1,))), ())
    return IndexSelect.apply(input, d, reshape(index, (-1,)))


class IndexAdd(Op):
    @staticmethod
    def forward(ctx, x, dim, index, src):
        ctx.dim = dim
        ctx.save_for_backward(index)
        return x.index_add(dim, index, src.astype(x.dtype))

    @staticmethod
    def backward(ctx, grad_output):
        (index,) = ctx.saved_tensors
        gsrc = index_select(grad_output, ctx.dim, index) if ctx.needs_input_grad[3] else None
        return grad_output, None, None, gsrc


def index_add(input, dim: int, index, source, *, alpha=1):
    """Out of place: ``input`` with ``alpha * source`` slices added at ``index`` along ``dim``."""
    d = _check_index_1d(input, dim, index, "index_add")
    if alpha != 1:
        source = source * alpha
    if input.ndim == 0:  # as a 1-element vector (as torch: source and index hold 1 value)
        if source.ndim or index.numel() != 1:
            raise ShapeError(
                f"index_add: a 0-d input takes a 0-d source and 1 index, got "
                f"source shape {tuple(source.shape)} and {index.numel()} indices"
            )
        out = IndexAdd.apply(reshape(input, (1,)), 0, reshape(index, (1,)), reshape(source, (1,)))
        return reshape(out, ())
    return IndexAdd.apply(input, d, index, source)


def repeat_interleave(input, repeats, dim=None):
    """Repeat each element ``repeats`` times along ``dim`` (flattened when None)."""
    from nnkit.autograd.factories import arange
    from nnkit.autograd.tensor import Tensor

    x = reshape(input, (-1,)) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, x.ndim, "repeat_interleave")
    n = x.shape[d]
    reps = repeats._impl.data.to_numpy() if isinstance(repeats, Tensor) else np.asarray(repeats)
    if reps.ndim and reps.shape[0] not in (1, n):
        raise ShapeError(
            f"repeat_interleave: repeats has {reps.shape[0]} entries but dimension {d} has size {n}"
        )
    if (reps < 0).any():
        raise ValueError("repeat_interleave: repeats must be non-negative")
    # the index is built where input lives: no round trip of an arange through the host
    counts = int(reps.reshape(-1)[0]) if reps.size == 1 else [int(r) for r in reps]
    with no_grad():
        base = arange(n, device=input.device)
        idx = Tensor._from_mat(base._impl.data.repeat(counts, 0))
    return index_select(x, d, idx)


class _Tri(Op):
    upper = False

    @classmethod
    def forward(cls, ctx, x, k):
        ctx.k = k
        return x.triu(k) if cls.upper else x.tril(k)

    @classmethod
    def backward(cls, ctx, grad_output):
        return (triu if cls.upper else tril)(grad_output, ctx.k), None


class Tril(_Tri):
    upper = False


class Triu(_Tri):
    upper = True


def tril(input, diagonal: int = 0):
    """The lower triangle (of the last two dims); elements above ``diagonal`` set to 0."""
    if input.ndim < 2:
        raise ShapeError(f"tril: input must have at least 2 dimensions, got {input.ndim}")
    return Tril.apply(input, diagonal)


def triu(input, diagonal: int = 0):
    """The upper triangle (of the last two dims); elements below ``diagonal`` set to 0."""
    if input.ndim < 2:
        raise ShapeError(f"triu: input must have at least 2 dimensions, got {input.ndim}")
    return Triu.apply(input, diagonal)


def nonzero(input, *, as_tuple: bool = False):
    """Indices of non-zero elements: an (n, ndim) int64 tensor, or a tuple of 1-d ones."""
    from nnkit.autograd.ops.shape import stack
    from nnkit.autograd.tensor import Tensor

    m = input._impl.data
    mats = (m if m.ndim else m.reshape((1,))).nonzero()
    parts = [Tensor._from_mat(m.astype(np.int64)) for m in mats]
    if as_tuple:
        return tuple(parts)
    if input.ndim == 0:  # (1, 0) for a non-zero value, (0, 0) for zero (as torch)
        return Tensor._from_mat(type(m).zeros((parts[0].numel(), 0), np.int64))
    return stack(parts, 1)


def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` is True, as a 1-d tensor (the two
    broadcast against each other, as torch)."""
    from nnkit.autograd.ops.shape import broadcast_shapes, expand

    if mask.shape != input.shape:
        try:
            shape = broadcast_shapes(input.shape, mask.shape)
        except ShapeError:
            raise ShapeError(
                f"masked_select: the shapes of input {tuple(input.shape)} and "
                f"mask {tuple(mask.shape)} do not broadcast"
            ) from None
        input, mask = expand(input, shape), expand(mask, shape)
    return getitem(input, mask)
