"""Whole slices along one dimension picked by a 1-d index: ``index_select``, its
adjoint ``index_add``, and ``repeat_interleave`` (an ``index_select`` with repeats).

Indices are refused outside ``[0, size)`` (negative ones are not wrapped), as in
PyTorch.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.factories import arange
from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import wrap_dim
from nnkit.autograd.ops.indexing import _check_range
from nnkit.autograd.ops.shape import reshape
from nnkit.autograd.tensor import Tensor

__all__ = ["index_select", "index_add", "repeat_interleave"]


def _check_index_1d(x, dim, index, op):
    d = wrap_dim(dim, x.ndim, op)
    if index.ndim > 1 or index.dtype.is_floating_point or index.dtype.name == "bool":
        raise TypeError(
            f"{op}: index must be a 0-d or 1-d integer tensor, got shape "
            f"{tuple(index.shape)} and dtype {index.dtype}"
        )
    _check_range(index, x.shape[d] if x.ndim else 1, d, op)
    return d


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
    """The slices of ``input`` at the positions ``index`` along ``dim`` (repeats allowed).

    Args:
        input: the source tensor.
        dim: the dimension to select along.
        index: a 0-d or 1-d integer tensor with values in ``[0, input.shape[dim])``.

    Returns:
        A tensor like ``input`` whose ``dim`` has ``index.numel()`` entries.

    Gradient: :func:`index_add` of the incoming gradient into zeros of ``input``'s shape.

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> x.index_select(0, nnkit.tensor([2, 0, 2]))
        tensor([[5.0, 6.0],
                [1.0, 2.0],
                [5.0, 6.0]])
    """
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
    """Out of place: ``input`` with ``alpha * source`` slices added at ``index`` along ``dim``;
    for ``dim=0``, ``out[index[i]] += alpha * source[i]`` (repeated indices add up).

    Args:
        input: the tensor to add into.
        dim: the dimension along which ``index`` points.
        index: a 0-d or 1-d integer tensor with values in ``[0, input.shape[dim])``.
        source: slices shaped like ``input`` with ``dim`` of ``index.numel()`` entries.
        alpha: a multiplier for ``source`` (keyword only; default 1).

    Returns:
        A new tensor of ``input``'s shape and dtype.

    Gradient: ``input`` gets the incoming gradient, ``source`` its rows at ``index``
    (times ``alpha``).

    Example:
        >>> nnkit.index_add(nnkit.zeros(3, 2), 0, nnkit.tensor([0, 0, 2]), nnkit.ones(3, 2))
        tensor([[2.0, 2.0],
                [0.0, 0.0],
                [1.0, 1.0]])
    """
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


def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Repeat each element (or slice along ``dim``) ``repeats`` times, copies adjacent.

    Args:
        input: the input tensor.
        repeats: an int, or a 1-d integer tensor/sequence of one count per entry of
            ``dim`` (non-negative).
        dim: the dimension to repeat along; None flattens ``input`` first.
        output_size: the size of the result along ``dim`` when known (torch uses it
            to skip a sync); checked, a wrong one raises ``ValueError``.

    Returns:
        A tensor like ``input`` whose ``dim`` has ``sum(repeats)`` entries (1-d when
        ``dim`` is None).

    Gradient: the incoming gradients of each entry's copies summed.

    Example:
        >>> x = nnkit.tensor([[1, 2], [3, 4]])
        >>> x.repeat_interleave(2)
        tensor([1, 1, 2, 2, 3, 3, 4, 4])
        >>> nnkit.repeat_interleave(x, nnkit.tensor([1, 2]), dim=0)
        tensor([[1, 2],
                [3, 4],
                [3, 4]])
    """
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
    total = counts * n if isinstance(counts, int) else sum(counts)
    if output_size is not None and output_size != total:
        raise ValueError(
            f"repeat_interleave: output_size={output_size} but the repeats give {total}"
        )
    with no_grad():
        base = arange(n, device=input.device)
        idx = Tensor._from_mat(base._impl.data.repeat(counts, 0))
    return index_select(x, d, idx)
