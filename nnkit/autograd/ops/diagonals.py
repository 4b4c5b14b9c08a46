"""Diagonals: diagonal (a strided view), diag_embed, diag, trace; triangle indices.

``Diagonal`` views its input's memory with explicit strides; ``DiagScatter`` writes a
diagonal into zeros and is its adjoint, so each is the other's backward.
"""

from __future__ import annotations

from nnkit.autograd.factories import arange
from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import _int, check_tensor, wrap_dim
from nnkit.autograd.ops.joining import stack
from nnkit.autograd.ops.masking import nonzero
from nnkit.autograd.ops.shape import clone
from nnkit.backends import dtypes as _dt

__all__ = ["diagonal", "diag_embed", "diag", "trace", "tril_indices", "triu_indices"]

# Functions of __all__ that are not Tensor methods.
NOT_METHODS: set[str] = {"tril_indices", "triu_indices"}


def _diag_mat(m, offset, d1, d2):
    """The diagonal of Mat ``m`` over dims ``d1``/``d2`` as a strided view, the diagonal
    last (torch's layout)."""
    idx = [slice(None)] * m.ndim
    if offset >= 0:
        idx[d2] = slice(offset, None)
    else:
        idx[d1] = slice(-offset, None)
    v = m.getitem(tuple(idx))
    n = min(v.shape[d1], v.shape[d2])
    st = v.strides
    keep = [k for k in range(m.ndim) if k not in (d1, d2)]
    return v.as_strided(
        tuple(v.shape[k] for k in keep) + (n,), tuple(st[k] for k in keep) + (st[d1] + st[d2],)
    )


class Diagonal(Op):
    _view_op = True  # the output views the input's memory

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        ctx.in_shape = x.shape
        ctx.args = (offset, d1, d2)
        return _diag_mat(x, offset, d1, d2)

    @staticmethod
    def backward(ctx, grad_output):
        return DiagScatter.apply(grad_output, ctx.in_shape, *ctx.args), None, None, None


class DiagScatter(Op):
    """Zeros of ``shape`` with ``values`` (diagonal last) on the diagonal over ``d1``/``d2``
    at ``offset``: the adjoint of :class:`Diagonal` (and ``diag_embed``)."""

    @staticmethod
    def forward(ctx, values, shape, offset, d1, d2):
        ctx.args = (offset, d1, d2)
        out = type(values).zeros(shape, values.dtype)
        _diag_mat(out, offset, d1, d2).copy_(values)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return Diagonal.apply(grad_output, *ctx.args), None, None, None, None


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The diagonal of ``input`` over dimensions ``dim1`` and ``dim2``, as a view
    (``torch.diagonal``).

    Element ``i`` is ``input[..., i, ..., i + offset, ...]`` (``dim1`` indexed ``i``,
    ``dim2`` indexed ``i + offset``); the two dimensions are removed and the diagonal
    becomes the last dimension.

    Args:
        input: a tensor of at least 2 dimensions.
        offset: 0 (default) for the main diagonal, ``> 0`` above it, ``< 0`` below it.
        dim1: the first dimension of the matrices (default 0).
        dim2: the second dimension (default 1).

    Returns:
        A strided view of ``input`` (empty when ``offset`` is past the edge); its
        gradient is scattered back onto the diagonal of zeros.

    Raises:
        RuntimeError: if ``dim1`` and ``dim2`` name the same dimension.

    Example:
        >>> x = nnkit.arange(9).reshape(3, 3)
        >>> x.diagonal(), x.diagonal(1), x.diagonal(-1)
        (tensor([0, 4, 8]), tensor([1, 5]), tensor([3, 7]))
    """
    check_tensor(input, "diagonal")
    d1, d2 = wrap_dim(dim1, input.ndim, "diagonal"), wrap_dim(dim2, input.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal: diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, _int(offset, "diagonal", "offset"), d1, d2)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """Matrices with the last dimension of ``input`` on a diagonal, zeros elsewhere
    (``torch.diag_embed``; the adjoint of :func:`diagonal`).

    An input of shape ``(..., n)`` gives ``(..., m, m)`` with ``m = n + abs(offset)``,
    the two new dimensions at ``dim1`` and ``dim2`` of the result.

    Args:
        input: a tensor of at least 1 dimension.
        offset: which diagonal (default 0; ``> 0`` above, ``< 0`` below the main one).
        dim1: the result's first matrix dimension (default -2).
        dim2: the result's second matrix dimension (default -1).

    Returns:
        A new tensor of ``input``'s dtype; its gradient is the diagonal of the gradient.

    Raises:
        RuntimeError: for a 0-d input or equal ``dim1`` and ``dim2``.

    Example:
        >>> nnkit.diag_embed(nnkit.tensor([1, 2]), offset=1)
        tensor([[0, 1, 0],
                [0, 0, 2],
                [0, 0, 0]])
    """
    check_tensor(input, "diag_embed")
    if input.ndim == 0:
        raise RuntimeError("diag_embed: expected a tensor with at least 1 dimension")
    nd = input.ndim + 1
    d1, d2 = wrap_dim(dim1, nd, "diag_embed"), wrap_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset, "diag_embed", "offset")
    n = input.shape[-1] + abs(offset)
    rest = iter(input.shape[:-1])
    shape = tuple(n if k in (d1, d2) else next(rest) for k in range(nd))
    return DiagScatter.apply(input, shape, offset, d1, d2)


def diag(input, diagonal: int = 0):
    """A diagonal matrix from a vector, or a matrix's diagonal as a vector (``torch.diag``).

    Args:
        input: a 1-d tensor, put on diagonal ``diagonal`` of a square matrix of size
            ``n + abs(diagonal)``; or a 2-d tensor, whose diagonal is taken.
        diagonal: which diagonal (default 0; ``> 0`` above, ``< 0`` below the main one).

    Returns:
        A new tensor (a copy, also for a 2-d input).

    Raises:
        RuntimeError: for an input that is not 1-d or 2-d.

    Example:
        >>> nnkit.diag(nnkit.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
        >>> nnkit.diag(nnkit.arange(9).reshape(3, 3), 1)
        tensor([1, 5])
    """
    check_tensor(input, "diag")
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return clone(Diagonal.apply(input, _int(diagonal, "diag", "diagonal"), 0, 1))
    raise RuntimeError(f"diag: supports 1D or 2D tensors, got {input.ndim}D")


def trace(input):
    """The sum of the main diagonal of a matrix, ``sum_i input[i, i]`` (``torch.trace``).

    Args:
        input: a 2-d tensor (not necessarily square).

    Returns:
        A 0-d tensor; integer and bool inputs give int64 (PyTorch rejects bool), floats
        keep their dtype.

    Gradient: the identity matrix (of ``input``'s shape) times the output gradient.

    Raises:
        RuntimeError: if ``input`` is not 2-d.

    Example:
        >>> nnkit.trace(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor(5.0)
    """
    check_tensor(input, "trace")
    if input.ndim != 2:
        raise RuntimeError(
            f"trace: expected a matrix, but got a tensor with {input.ndim} dimensions"
        )
    return Diagonal.apply(input, 0, 0, 1).sum()


def _tri_indices(row, col, offset, dtype, device, op, lower):
    row, col, offset = _int(row, op, "row"), _int(col, op, "col"), _int(offset, op, "offset")
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row and col must be non-negative, got {row} and {col}")
    r = arange(row, dtype=_dt.int64, device=device).unsqueeze(1)
    c = arange(col, dtype=_dt.int64, device=device).unsqueeze(0)
    mask = (c - r <= offset) if lower else (c - r >= offset)
    out = stack(nonzero(mask, as_tuple=True), 0)
    return out if dtype is None else out.to(dtype)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    """The coordinates of the lower triangle of a ``row`` x ``col`` matrix
    (``torch.tril_indices``).

    Entry ``(i, j)`` belongs to it when ``j - i <= offset``; the coordinates come row by
    row, as those ``x[tril_indices(...)[0], tril_indices(...)[1]]`` would read.

    Args:
        row: the number of rows (non-negative).
        col: the number of columns (non-negative).
        offset: which diagonal bounds the triangle (default 0, the main one; ``> 0``
            takes diagonals above it, ``< 0`` leaves diagonals out).
        dtype: the dtype of the result (default int64).
        device: the device of the result (default: the default device).

    Returns:
        A ``(2, N)`` tensor: row indices, then column indices.

    Example:
        >>> nnkit.tril_indices(3, 3)
        tensor([[0, 1, 1, 2, 2, 2],
                [0, 0, 1, 0, 1, 2]])
    """
    return _tri_indices(row, col, offset, dtype, device, "tril_indices", True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    """The coordinates of the upper triangle of a ``row`` x ``col`` matrix
    (``torch.triu_indices``): entries ``(i, j)`` with ``j - i >= offset``, row by row.

    Args:
        row: the number of rows (non-negative).
        col: the number of columns (non-negative).
        offset: which diagonal bounds the triangle (default 0, the main one; ``> 0``
            leaves diagonals out, ``< 0`` takes diagonals below it).
        dtype: the dtype of the result (default int64).
        device: the device of the result (default: the default device).

    Returns:
        A ``(2, N)`` tensor: row indices, then column indices.

    Example:
        >>> nnkit.triu_indices(3, 3, 1)
        tensor([[0, 0, 1],
                [1, 2, 2]])
    """
    return _tri_indices(row, col, offset, dtype, device, "triu_indices", False)
