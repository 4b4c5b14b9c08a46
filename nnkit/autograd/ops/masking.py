"""Mask-driven ops: the triangles ``tril``/``triu``, ``masked_select`` and the
positions of non-zeros, ``nonzero``.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.ops.indexing import getitem
from nnkit.autograd.ops.joining import stack
from nnkit.autograd.ops.shape import broadcast_shapes, expand
from nnkit.autograd.tensor import Tensor

__all__ = ["tril", "triu", "nonzero", "masked_select"]


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
    """The lower triangle of the last two dimensions: ``out[..., i, j] = input[..., i, j]``
    where ``j - i <= diagonal``, else 0.

    Args:
        input: a tensor of at least 2 dimensions (the leading ones are a batch).
        diagonal: which diagonal bounds the triangle: 0 (default) the main one,
            ``k > 0`` the ``k``-th above it, ``k < 0`` the ``|k|``-th below it.

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: the incoming gradient, masked the same way.

    Example:
        >>> x = nnkit.ones(3, 3)
        >>> nnkit.tril(x)
        tensor([[1.0, 0.0, 0.0],
                [1.0, 1.0, 0.0],
                [1.0, 1.0, 1.0]])
        >>> x.tril(diagonal=-1)
        tensor([[0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0],
                [1.0, 1.0, 0.0]])
    """
    if input.ndim < 2:
        raise ShapeError(f"tril: input must have at least 2 dimensions, got {input.ndim}")
    return Tril.apply(input, diagonal)


def triu(input, diagonal: int = 0):
    """The upper triangle of the last two dimensions: ``out[..., i, j] = input[..., i, j]``
    where ``j - i >= diagonal``, else 0.

    Args:
        input: a tensor of at least 2 dimensions (the leading ones are a batch).
        diagonal: which diagonal bounds the triangle: 0 (default) the main one,
            ``k > 0`` the ``k``-th above it, ``k < 0`` the ``|k|``-th below it.

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: the incoming gradient, masked the same way.

    Example:
        >>> nnkit.triu(nnkit.ones(2, 3), diagonal=1)
        tensor([[0.0, 1.0, 1.0],
                [0.0, 0.0, 1.0]])
    """
    if input.ndim < 2:
        raise ShapeError(f"triu: input must have at least 2 dimensions, got {input.ndim}")
    return Triu.apply(input, diagonal)


def nonzero(input, *, as_tuple: bool = False):
    """The indices of the non-zero elements, in row-major order.

    Args:
        input: a tensor of any dtype.
        as_tuple: return one 1-d index tensor per dimension instead of one matrix
            (usable as ``input[nonzero(input, as_tuple=True)]``).

    Returns:
        An ``(n, input.ndim)`` int64 tensor, or a tuple of ``input.ndim`` int64 tensors of
        length ``n`` (no gradient). A 0-d input gives shape ``(1, 0)`` or ``(0, 0)``, as
        in PyTorch.

    Example:
        >>> x = nnkit.tensor([[0.0, 1.5], [2.0, 0.0]])
        >>> nnkit.nonzero(x)
        tensor([[0, 1],
                [1, 0]])
        >>> x.nonzero(as_tuple=True)
        (tensor([0, 1]), tensor([1, 0]))
    """
    m = input._impl.data
    mats = (m if m.ndim else m.reshape((1,))).nonzero()
    parts = [Tensor._from_mat(m.astype(np.int64)) for m in mats]
    if as_tuple:
        return tuple(parts)
    if input.ndim == 0:  # (1, 0) for a non-zero value, (0, 0) for zero (as torch)
        return Tensor._from_mat(type(m).zeros((parts[0].numel(), 0), np.int64))
    return stack(parts, 1)


def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` is True, as a 1-d tensor (row-major order).

    Args:
        input: the input tensor.
        mask: a bool tensor; ``input`` and ``mask`` broadcast against each other.

    Returns:
        A 1-d tensor of ``input``'s dtype with one entry per True of the broadcast mask.

    Gradient: the incoming gradient written back at the selected positions (summed over
    broadcast copies), zeros elsewhere.

    Example:
        >>> x = nnkit.tensor([[1.0, -2.0], [-3.0, 4.0]])
        >>> nnkit.masked_select(x, x > 0)
        tensor([1.0, 4.0])
        >>> x.masked_select(nnkit.tensor([True, False]))
        tensor([ 1.0, -3.0])
    """
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
