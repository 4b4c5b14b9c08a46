"""Rearranging ops under torch's names: flips and splits by axis (``fliplr``,
``hsplit``...), ``ravel``, ``column_stack``, ``block_diag``, ``diagflat``,
``broadcast_tensors``, ``cartesian_prod``, ``msort``, top-level ``softmax`` /
``log_softmax``, and the ``*_copy`` variants of the view ops.

Each is a composition of existing differentiable ops (views, ``cat``, ``clone``), so
gradients flow as through those: sliced back, summed over broadcast copies.
"""

from __future__ import annotations

from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.activation import log_softmax as _log_softmax
from nnkit.autograd.ops.activation import softmax as _softmax
from nnkit.autograd.ops.joining import cat, chunk, split, stack, tensor_split
from nnkit.autograd.ops.shape import broadcast_shapes

__all__ = [
    "fliplr",
    "flipud",
    "ravel",
    "hsplit",
    "vsplit",
    "dsplit",
    "split_with_sizes",
    "unsafe_split",
    "unsafe_chunk",
    "column_stack",
    "block_diag",
    "diagflat",
    "broadcast_tensors",
    "cartesian_prod",
    "msort",
    "softmax",
    "log_softmax",
    "expand_copy",
    "permute_copy",
    "transpose_copy",
    "t_copy",
    "squeeze_copy",
    "unsqueeze_copy",
    "view_copy",
    "diagonal_copy",
    "alias_copy",
    "narrow_copy",
    "unbind_copy",
    "split_with_sizes_copy",
]

# Functions of __all__ that are not Tensor methods (they take several tensors).
NOT_METHODS: set[str] = {"column_stack", "block_diag", "broadcast_tensors", "cartesian_prod"}


def _at_least(x, nd, op):
    check_tensor(x, op)
    if x.ndim < nd:
        raise ValueError(f"{op}: expects a tensor with at least {nd} dimension(s), got {x.ndim}")
    return x


def fliplr(input):
    """``input`` reversed along dimension 1 (left/right); needs 2 or more dimensions.

    Example:
        >>> nnkit.fliplr(nnkit.tensor([[1, 2, 3]]))
        tensor([[3, 2, 1]])
    """
    return _at_least(input, 2, "fliplr").flip((1,))


def flipud(input):
    """``input`` reversed along dimension 0 (up/down); needs 1 or more dimensions.

    Example:
        >>> nnkit.flipud(nnkit.tensor([1, 2, 3]))
        tensor([3, 2, 1])
    """
    return _at_least(input, 1, "flipud").flip((0,))


def ravel(input):
    """``input`` flattened to 1-D (a view when it is contiguous).

    Example:
        >>> nnkit.ravel(nnkit.tensor([[1, 2], [3, 4]]))
        tensor([1, 2, 3, 4])
    """
    return check_tensor(input, "ravel").reshape(-1)


def _split_along(input, sections, dim, op):
    if isinstance(sections, int) and not isinstance(sections, bool):
        size = input.shape[dim]
        if sections <= 0 or size % sections:
            raise ValueError(
                f"{op}: dimension {dim} of size {size} does not split into {sections} "
                "equal sections"
            )
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    """:func:`tensor_split` along dimension 1 (dimension 0 for a 1-D ``input``); an int
    number of sections must divide that dimension.

    Example:
        >>> [t.tolist() for t in nnkit.hsplit(nnkit.arange(4), 2)]
        [[0, 1], [2, 3]]
    """
    x = _at_least(input, 1, "hsplit")
    return _split_along(x, indices_or_sections, 1 if x.ndim > 1 else 0, "hsplit")


def vsplit(input, indices_or_sections):
    """:func:`tensor_split` along dimension 0 of a tensor of 2 or more dimensions; an int
    number of sections must divide it.

    Example:
        >>> [t.shape for t in nnkit.vsplit(nnkit.zeros(4, 2), [1])]
        [(1, 2), (3, 2)]
    """
    return _split_along(_at_least(input, 2, "vsplit"), indices_or_sections, 0, "vsplit")


def dsplit(input, indices_or_sections):
    """:func:`tensor_split` along dimension 2 of a tensor of 3 or more dimensions; an int
    number of sections must divide it.

    Example:
        >>> [t.shape for t in nnkit.dsplit(nnkit.zeros(1, 2, 4), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    return _split_along(_at_least(input, 3, "dsplit"), indices_or_sections, 2, "dsplit")


def split_with_sizes(input, split_sizes, dim=0):
    """``input`` split along ``dim`` into pieces of the given sizes (which must sum to
    its size there): views, as :func:`split` with a list.

    Example:
        >>> [t.tolist() for t in nnkit.split_with_sizes(nnkit.arange(5), [2, 3])]
        [[0, 1], [2, 3, 4]]
    """
    check_tensor(input, "split_with_sizes")
    return split(input, list(split_sizes), dim)


def unsafe_split(input, split_size, dim=0):
    """:func:`split` (torch's variant skips the view bookkeeping; nnkit's is the same).

    Example:
        >>> len(nnkit.unsafe_split(nnkit.arange(5), 2))
        3
    """
    check_tensor(input, "unsafe_split")
    return split(input, split_size, dim)


def unsafe_chunk(input, chunks, dim=0):
    """:func:`chunk` (torch's variant skips the view bookkeeping; nnkit's is the same).

    Example:
        >>> len(nnkit.unsafe_chunk(nnkit.arange(5), 2))
        2
    """
    check_tensor(input, "unsafe_chunk")
    return chunk(input, chunks, dim)


def column_stack(tensors):
    """The tensors side by side as columns: 0-d and 1-d ones become ``(n, 1)`` columns,
    then all are concatenated along dimension 1 (dtypes promote).

    Example:
        >>> nnkit.column_stack([nnkit.tensor([1, 2]), nnkit.tensor([[3], [4]])])
        tensor([[1, 3],
                [2, 4]])
    """
    ts = [check_tensor(t, "column_stack", f"tensors[{k}]") for k, t in enumerate(tensors)]
    if not ts:
        raise ValueError("column_stack: expects a non-empty list of tensors")
    return cat([t.reshape(t.numel(), 1) if t.ndim < 2 else t for t in ts], 1)


def block_diag(*tensors):
    """A block-diagonal matrix of the tensors (0-d as ``1x1``, 1-d as one row, 2-d as
    they are), zeros elsewhere; dtypes promote.

    Example:
        >>> nnkit.block_diag(nnkit.tensor([[1, 2]]), nnkit.tensor(3))
        tensor([[1, 2, 0],
                [0, 0, 3]])
    """
    ts = []
    for k, t in enumerate(tensors):
        check_tensor(t, "block_diag", f"tensors[{k}]")
        if t.ndim > 2:
            raise ValueError(f"block_diag: tensors[{k}] has {t.ndim} dimensions (at most 2)")
        ts.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not ts:
        raise ValueError("block_diag: expects at least one tensor")
    ncols = sum(t.shape[1] for t in ts)
    rows, left = [], 0
    for t in ts:
        r, c = t.shape
        parts = [t.new_zeros((r, left)), t, t.new_zeros((r, ncols - left - c))]
        rows.append(cat(parts, 1))
        left += c
    return cat(rows, 0)


def diagflat(input, offset=0):
    """A 2-D matrix with the flattened ``input`` on diagonal ``offset`` (above the main
    one for ``offset > 0``), zeros elsewhere.

    Example:
        >>> nnkit.diagflat(nnkit.tensor([[1, 2]]))
        tensor([[1, 0],
                [0, 2]])
    """
    return check_tensor(input, "diagflat").reshape(-1).diag(offset)


def broadcast_tensors(*tensors):
    """The tensors expanded (as views) to their common broadcast shape, as a tuple.

    Example:
        >>> [t.shape for t in nnkit.broadcast_tensors(nnkit.zeros(2, 1), nnkit.zeros(3))]
        [(2, 3), (2, 3)]
    """
    ts = [check_tensor(t, "broadcast_tensors", f"tensors[{k}]") for k, t in enumerate(tensors)]
    shape = broadcast_shapes(*(t.shape for t in ts))
    return tuple(t.expand(*shape) for t in ts)


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, one row per combination (the last tensor
    varying fastest): shape ``(n1 * n2 * ..., k)``; one tensor is returned as it is.

    Example:
        >>> nnkit.cartesian_prod(nnkit.tensor([1, 2]), nnkit.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    ts = [check_tensor(t, "cartesian_prod", f"tensors[{k}]") for k, t in enumerate(tensors)]
    if any(t.ndim != 1 for t in ts) or not ts:
        raise ValueError("cartesian_prod: expects one or more 1-D tensors")
    if len(ts) == 1:
        return ts[0]
    shape = tuple(t.shape[0] for t in ts)
    cols = []
    for k, t in enumerate(ts):
        view = [1] * len(ts)
        view[k] = shape[k]
        cols.append(t.reshape(*view).expand(*shape).reshape(-1))
    return stack(cols, 1)


def msort(input):
    """``input`` sorted along dimension 0, ascending (the values of :func:`sort`).

    Example:
        >>> nnkit.msort(nnkit.tensor([[3, 1], [2, 4]]))
        tensor([[2, 1],
                [3, 4]])
    """
    return check_tensor(input, "msort").sort(0).values


def softmax(input, dim, dtype=None):
    """``nnkit.nn.functional.softmax`` (``dim`` required, as ``torch.softmax``).

    Example:
        >>> nnkit.softmax(nnkit.tensor([0.0, 0.0]), 0)
        tensor([0.5000, 0.5000])
    """
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    """``nnkit.nn.functional.log_softmax`` (``dim`` required, as ``torch.log_softmax``).

    Example:
        >>> nnkit.log_softmax(nnkit.tensor([0.0, 0.0]), 0)
        tensor([-0.6931, -0.6931])
    """
    return _log_softmax(input, dim, dtype=dtype)


def _copy(view):
    def fn(input, *args, **kwargs):
        out = view(check_tensor(input, fn.__name__), *args, **kwargs)
        if isinstance(out, tuple):
            return tuple(o.clone() for o in out)
        return out.clone()

    return fn


def _copy_fn(name, view, what, example, result):
    fn = _copy(view)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"{what}, as a new tensor rather than a view (gradient as the view's).\n\n"
        f"    Example:\n        >>> {example}\n        {result}\n"
    )
    return fn


expand_copy = _copy_fn(
    "expand_copy",
    lambda x, size, implicit=False: x.expand(*size),
    "``input.expand(size)``",
    "nnkit.expand_copy(nnkit.tensor([1, 2]), (2, 2)).shape",
    "(2, 2)",
)
permute_copy = _copy_fn(
    "permute_copy",
    lambda x, dims: x.permute(*dims),
    "``input.permute(dims)``",
    "nnkit.permute_copy(nnkit.zeros(2, 3), (1, 0)).shape",
    "(3, 2)",
)
transpose_copy = _copy_fn(
    "transpose_copy",
    lambda x, dim0, dim1: x.transpose(dim0, dim1),
    "``input.transpose(dim0, dim1)``",
    "nnkit.transpose_copy(nnkit.zeros(2, 3), 0, 1).shape",
    "(3, 2)",
)
t_copy = _copy_fn(
    "t_copy", lambda x: x.t(), "``input.t()``", "nnkit.t_copy(nnkit.zeros(2, 3)).shape", "(3, 2)"
)
squeeze_copy = _copy_fn(
    "squeeze_copy",
    lambda x, dim=None: x.squeeze(dim),
    "``input.squeeze(dim)``",
    "nnkit.squeeze_copy(nnkit.zeros(2, 1)).shape",
    "(2,)",
)
unsqueeze_copy = _copy_fn(
    "unsqueeze_copy",
    lambda x, dim: x.unsqueeze(dim),
    "``input.unsqueeze(dim)``",
    "nnkit.unsqueeze_copy(nnkit.zeros(2), 0).shape",
    "(1, 2)",
)
view_copy = _copy_fn(
    "view_copy",
    lambda x, *size: x.view(*size),
    "``input.view(size)``",
    "nnkit.view_copy(nnkit.zeros(2, 3), (3, 2)).shape",
    "(3, 2)",
)
diagonal_copy = _copy_fn(
    "diagonal_copy",
    lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
    "``input.diagonal(offset, dim1, dim2)``",
    "nnkit.diagonal_copy(nnkit.eye(2))",
    "tensor([1.0, 1.0])",
)
alias_copy = _copy_fn(
    "alias_copy", lambda x: x, "``input``", "nnkit.alias_copy(nnkit.tensor([1]))", "tensor([1])"
)
narrow_copy = _copy_fn(
    "narrow_copy",
    lambda x, dim, start, length: x.narrow(dim, start, length),
    "``input.narrow(dim, start, length)``",
    "nnkit.narrow_copy(nnkit.arange(5), 0, 1, 2)",
    "tensor([1, 2])",
)
unbind_copy = _copy_fn(
    "unbind_copy",
    lambda x, dim=0: x.unbind(dim),
    "``input.unbind(dim)`` (a tuple)",
    "len(nnkit.unbind_copy(nnkit.zeros(3, 2)))",
    "3",
)
split_with_sizes_copy = _copy_fn(
    "split_with_sizes_copy",
    lambda x, split_sizes, dim=0: split_with_sizes(x, split_sizes, dim),
    "``split_with_sizes(input, split_sizes, dim)`` (a tuple)",
    "[t.tolist() for t in nnkit.split_with_sizes_copy(nnkit.arange(3), [1, 2])]",
    "[[0], [1, 2]]",
)
