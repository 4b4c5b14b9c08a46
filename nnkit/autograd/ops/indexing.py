"""Indexing: ``t[...]``, ``t[...] = v``, ``index_put``, gather/scatter_add and
``take_along_dim``. ``index_select``/``index_add``/``repeat_interleave`` are in
:mod:`~nnkit.autograd.ops.dim_index`; mask-driven ops (``tril``, ``triu``,
``nonzero``, ``masked_select``) are in :mod:`~nnkit.autograd.ops.masking`.

Basic indices (ints, slices, None, Ellipsis) give views; integer or boolean
array indices give copies. Backward scatters the gradient into zeros of the
input's shape, adding where an index repeats.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.factories import tensor
from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.grad_mode import no_grad, state
from nnkit.autograd.ops._util import wrap_dim
from nnkit.autograd.ops.inplace import apply_inplace
from nnkit.autograd.ops.shape import broadcast_shapes, expand, reshape, sum_to
from nnkit.autograd.piece_grads import PieceGrad
from nnkit.autograd.tensor import Tensor
from nnkit.backends.check_kernels import check_index_range

__all__ = [
    "getitem",
    "setitem",
    "index_put",
    "gather",
    "scatter_add",
    "take_along_dim",
]


def _index_item(item, x, op):
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
    """``x[index]``, as a function; NumPy's indexing rules, as PyTorch's.

    Ints, slices, ``None`` and ``Ellipsis`` (basic indexing) give a view sharing
    ``x``'s memory; integer or boolean tensors, lists or arrays (advanced indexing)
    give a copy. A boolean mask must match the shape of the dimensions it indexes.

    Args:
        x: the tensor to index.
        index: one index item or a tuple of them.

    Returns:
        The selected elements.

    Gradient: the incoming gradient written back at the indexed positions (added where
    an index repeats), zeros elsewhere.

    Raises:
        IndexError: for an out-of-range or unsupported index, or a mismatched mask.

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> nnkit.getitem(x, (slice(None), 1))
        tensor([2.0, 5.0])
        >>> x[x > 2.5]
        tensor([3.0, 4.0, 5.0, 6.0])
        >>> x[[1, 0, 1], [0, 0, 2]]
        tensor([4.0, 1.0, 6.0])
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
    if isinstance(value, Tensor):
        if value.device != x.device:
            raise RuntimeError(f"{op}: value is on {value.device} but the tensor is on {x.device}")
        return value
    return tensor(value, dtype=x.dtype, device=x.device)


def index_put(x, index, values, accumulate: bool = False):
    """Out of place: a copy of ``x`` with ``values`` written (or added) at ``index``.

    Args:
        x: the input tensor.
        index: any index :func:`getitem` accepts (PyTorch takes a tuple of index
            tensors only).
        values: a number or a tensor broadcasting to the indexed shape.
        accumulate: add ``values`` instead of overwriting (repeated indices add up).

    Returns:
        A new tensor of ``x``'s shape and dtype.

    Gradient: as :func:`setitem`; with ``accumulate`` ``x`` gets the full gradient.

    Example:
        >>> x = nnkit.zeros(4)
        >>> idx = (nnkit.tensor([0, 2, 0]),)
        >>> nnkit.index_put(x, idx, nnkit.tensor(1.0), accumulate=True)
        tensor([2.0, 0.0, 1.0, 0.0])
    """
    idx = normalize_index(x, index, "index_put")
    return IndexPut.apply(x, _value_tensor(x, values, "index_put"), idx, accumulate)


def setitem(x, index, value) -> None:
    """``x[index] = value`` in place, as a function (recorded in the graph when grad is on).

    Args:
        x: the tensor to write into (not a leaf that requires grad, as in PyTorch).
        index: any index :func:`getitem` accepts.
        value: a number or a tensor broadcasting to the indexed shape, cast to
            ``x``'s dtype; a tensor must be on ``x``'s device.

    Returns:
        None; ``x`` is modified.

    Gradient: ``x``'s incoming gradient with the overwritten positions zeroed; ``value``
    gets the gradient at those positions (summed over broadcast dimensions).

    Example:
        >>> x = nnkit.zeros(2, 3)
        >>> x[0, 1:] = 5.0
        >>> nnkit.setitem(x, (1, 0), nnkit.tensor(7.0))
        >>> x
        tensor([[0.0, 5.0, 5.0],
                [7.0, 0.0, 0.0]])
    """
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

    @staticmethod
    def backward_mat(ctx, g):
        (index,) = ctx.saved_mats
        return g.gather_grad(ctx.in_shape, ctx.dim, index), None, None  # GatherGrad's


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
    """Values of ``input`` picked along ``dim`` by ``index``: for ``dim=1``,
    ``out[i][j] = input[i][index[i][j]]``.

    Args:
        input: the source tensor.
        dim: the dimension to pick along.
        index: an integer tensor with ``input``'s number of dimensions, no larger than
            ``input`` outside ``dim``; its values in ``[0, input.shape[dim])``.

    Returns:
        A tensor of ``index``'s shape and ``input``'s dtype.

    Gradient: ``scatter_add`` of the incoming gradient into zeros of ``input``'s shape.

    Raises:
        ShapeError: for mismatched dimensions or an ``index`` too large outside ``dim``.
        IndexError: for an index out of range (negative ones are refused, as PyTorch).

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> nnkit.gather(x, 1, nnkit.tensor([[0, 0], [1, 0]]))
        tensor([[1.0, 1.0],
                [4.0, 3.0]])
    """
    d = _check_gather(input, dim, index, "gather")
    _check_range(index, input.shape[d] if input.ndim else 1, d, "gather")
    return Gather.apply(input, d, index)


def take_along_dim(input, indices, dim=None):
    """``input``'s values at ``indices`` along ``dim``, as ``torch.take_along_dim``.

    Like :func:`gather`, but ``input`` and ``indices`` broadcast against each other in
    every dimension but ``dim``. With ``dim``, negative indices count from the end;
    with ``dim`` None they are refused, as in PyTorch.

    Args:
        input: the source tensor.
        indices: an integer tensor with ``input``'s number of dimensions (any shape when
            ``dim`` is None).
        dim: the dimension to pick along; None indexes the flattened ``input`` with the
            flattened ``indices``.

    Returns:
        A tensor of the broadcast shape, with ``dim`` of ``indices``'s size.

    Gradient: as :func:`gather`'s.

    Raises:
        ShapeError: if the two differ in their number of dimensions, or do not broadcast.
        IndexError: for an index outside ``[-size, size)`` (``[0, numel)`` when ``dim``
            is None).

    Example:
        >>> x = nnkit.tensor([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
        >>> nnkit.take_along_dim(x, x.argsort(dim=1), dim=1)
        tensor([[10.0, 20.0, 30.0],
                [40.0, 50.0, 60.0]])
        >>> nnkit.take_along_dim(x, nnkit.tensor([[-1], [0]]), dim=1)
        tensor([[20.0],
                [60.0]])
    """
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
    if indices.numel() and dim is not None:  # torch wraps only along a given dim
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
    """Out of place: ``input`` with ``src`` added at ``index`` along ``dim``; for ``dim=0``,
    ``out[index[i][j]][j] += src[i][j]`` (repeated indices add up).

    Args:
        input: the tensor to add into.
        dim: the dimension along which ``index`` points.
        index: an integer tensor shaped like :func:`gather`'s, no larger than ``src``.
        src: the values to add (cast to ``input``'s dtype).

    Returns:
        A new tensor of ``input``'s shape and dtype.

    Gradient: ``input`` gets the incoming gradient; ``src`` gets it gathered at ``index``
    (0 where ``src`` is larger than ``index``).

    Example:
        >>> src = nnkit.tensor([1.0, 2.0, 3.0, 4.0])
        >>> nnkit.scatter_add(nnkit.zeros(3), 0, nnkit.tensor([0, 2, 0, 1]), src)
        tensor([4.0, 4.0, 2.0])
    """
    d = _check_gather(input, dim, index, "scatter_add")
    _check_range(index, input.shape[d] if input.ndim else 1, d, "scatter_add")
    if any(a > b for a, b in zip(index.shape, src.shape)):
        raise ShapeError(
            f"scatter_add: index {tuple(index.shape)} is larger than src {tuple(src.shape)}"
        )
    return ScatterAdd.apply(input, d, index, src)


def _check_range(index, size, d, op):
    """Every index in ``[0, size)``: negative ones are refused, not wrapped (torch)."""
    check_index_range(  # a kernel, not a read into Python: compiled steps check it too
        index._impl.data,
        size,
        f"{op}: index {{bad}} is out of bounds for dimension {d} with size "
        f"{size} (valid indices: 0 to {size - 1})",
    )
