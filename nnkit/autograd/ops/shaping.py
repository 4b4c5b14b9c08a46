"""Ops of issue 13 (shaping): views (t, narrow, select, moveaxis), roll, rot90, meshgrid.

All are compositions of existing differentiable ops (slicing, permute, reshape, cat,
flip), so their gradients follow. Views (``t``, ``view_as``, ``narrow``, ``select``,
``moveaxis``, ``meshgrid``) share their input's Storage as in PyTorch; ``roll`` and
``rot90`` copy. This module also re-exports the products of ``ops/products.py``; the
joins and splits of issue 13 live in ``ops/joining.py``, the diagonals in
``ops/diagonals.py``.
"""

from __future__ import annotations

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.ops._util import _dims, _int, check_tensor, norm_dims, wrap_dim
from nnkit.autograd.ops.indexing import getitem
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.ops.products import (
    addmm,
    addmv,
    baddbmm,
    cross,
    einsum,
    kron,
    mv,
    tensordot,
    vdot,
)
from nnkit.autograd.ops.shape import (
    Reshape,
    clone,
    expand,
    permute,
    reshape,
    transpose,
    view,
)

__all__ = [
    "addmm",
    "addmv",
    "baddbmm",
    "cross",
    "einsum",
    "kron",
    "mv",
    "tensordot",
    "vdot",
    "t",
    "view_as",
    "reshape_as",
    "narrow",
    "select",
    "moveaxis",
    "movedim",
    "flip",
    "roll",
    "rot90",
    "meshgrid",
    "einsum",
    "addmm",
    "addmv",
    "baddbmm",
    "mv",
    "tensordot",
    "kron",
    "cross",
    "vdot",
]

# Functions of __all__ that are not Tensor methods (their first argument is not a tensor).
NOT_METHODS: set[str] = {
    "meshgrid",
    "einsum",
    "tensordot",
}


def _alias(x):
    """A new Tensor viewing all of ``x`` (torch's alias for a no-op view)."""
    return Reshape.apply(x, x.shape, False)


# --------------------------------------------------------------------- views
def t(input):
    """``input`` with dimensions 0 and 1 swapped (as ``torch.t``); 0-d and 1-d tensors come
    back unchanged (as new views).

    Args:
        input: a tensor of at most 2 dimensions.

    Returns:
        A view of ``input``; its gradient is transposed back.

    Raises:
        ShapeError: for more than 2 dimensions (use :func:`transpose` or ``.mT``).

    Example:
        >>> nnkit.tensor([[1, 2, 3], [4, 5, 6]]).t()
        tensor([[1, 4],
                [2, 5],
                [3, 6]])
    """
    check_tensor(input, "t")
    if input.ndim > 2:
        raise ShapeError(
            f"t: expects a tensor with <= 2 dimensions, but input has {input.ndim} dimensions"
        )
    return transpose(input, 0, 1) if input.ndim == 2 else _alias(input)


def view_as(input, other):
    """``input.view(other.shape)``: a view of ``input`` with ``other``'s shape.

    Args:
        input: the tensor to view.
        other: a tensor with as many elements (only its shape is used).

    Returns:
        A view of ``input``; raises as :func:`view` when the strides do not allow it.

    Example:
        >>> nnkit.arange(6).view_as(nnkit.zeros(2, 3))
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    return view(
        check_tensor(input, "view_as"), tuple(check_tensor(other, "view_as", "other").shape)
    )


def reshape_as(input, other):
    """``input.reshape(other.shape)``: ``input`` with ``other``'s shape, a view when possible.

    Args:
        input: the tensor to reshape.
        other: a tensor with as many elements (only its shape is used).

    Returns:
        A view of ``input`` or a copy, as :func:`reshape`.

    Example:
        >>> nnkit.arange(6).reshape_as(nnkit.zeros(3, 2))
        tensor([[0, 1],
                [2, 3],
                [4, 5]])
    """
    return reshape(
        check_tensor(input, "reshape_as"), tuple(check_tensor(other, "reshape_as", "other").shape)
    )


def narrow(input, dim: int, start, length: int):
    """The slice ``start:start + length`` of ``input`` along ``dim``, as a view
    (``torch.narrow``).

    Args:
        input: the tensor, at least 1-d.
        dim: the dimension to slice (negative counts from the end).
        start: the first index, in ``[-size, size]``; negative counts from the end. An int
            or a 1-element integer tensor.
        length: the number of elements kept, ``start + length <= size``.

    Returns:
        A view of ``input``; its gradient is scattered back into zeros of ``input``'s shape.

    Raises:
        IndexError: for a 0-d input, a bad ``dim`` or ``start`` out of range.
        RuntimeError: for a negative ``length`` or one running past the end.

    Example:
        >>> nnkit.tensor([[1, 2, 3], [4, 5, 6]]).narrow(1, 1, 2)
        tensor([[2, 3],
                [5, 6]])
    """
    check_tensor(input, "narrow")
    if input.ndim == 0:
        raise IndexError("narrow: cannot be applied to a 0-dim tensor")
    d = wrap_dim(dim, input.ndim, "narrow")
    start, length = _int(start, "narrow", "start"), _int(length, "narrow", "length")
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(
            f"narrow: start {start} out of range for dimension {d} of size {n} "
            f"(expected in [{-n}, {n}])"
        )
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError(f"narrow: length must be non-negative, got {length}")
    if start + length > n:
        raise RuntimeError(
            f"narrow: start ({start}) + length ({length}) exceeds dimension "
            f"size ({n}) of dimension {d}"
        )
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


def select(input, dim: int, index):
    """The slice of ``input`` at ``index`` along ``dim``, that dimension removed: a view
    (``torch.select``; ``x.select(1, i)`` is ``x[:, i]``).

    Args:
        input: the tensor, at least 1-d.
        dim: the dimension to index (negative counts from the end).
        index: the index, in ``[-size, size)``; an int or a 1-element integer tensor.

    Returns:
        A view with one dimension less; its gradient is scattered back into zeros.

    Raises:
        IndexError: for a 0-d input, a bad ``dim`` or ``index`` out of range.

    Example:
        >>> nnkit.tensor([[1, 2, 3], [4, 5, 6]]).select(1, -1)
        tensor([3, 6])
    """
    check_tensor(input, "select")
    if input.ndim == 0:
        raise IndexError("select: cannot be applied to a 0-dim tensor")
    d = wrap_dim(dim, input.ndim, "select")
    index = _int(index, "select", "index")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(
            f"select: index {index} out of range for tensor of size "
            f"{list(input.shape)} at dimension {d}"
        )
    return getitem(input, (slice(None),) * d + (index % n,))


def moveaxis(input, source, destination):
    """Move dimension(s) ``source`` to position(s) ``destination``, the other dimensions
    keeping their order (as ``torch.moveaxis``, NumPy's name of :func:`movedim`).

    Args:
        input: the tensor.
        source: an int or a sequence of distinct dimensions (negative count from the end).
        destination: as many distinct positions in the result.

    Returns:
        A view of ``input`` (a permutation of its dimensions).

    Raises:
        RuntimeError: if the sequences differ in length or repeat a dimension.

    Example:
        >>> nnkit.zeros(2, 3, 4).moveaxis((0, 1), (-1, -2)).shape
        (4, 3, 2)
    """
    check_tensor(input, "moveaxis")
    src, dst = _dims(source, "moveaxis", "source"), _dims(destination, "moveaxis", "destination")
    if len(src) != len(dst):
        raise RuntimeError(
            f"moveaxis: source {src} and destination {dst} must have the same number of elements"
        )
    nd = input.ndim
    src = tuple(wrap_dim(s, nd, "moveaxis") for s in src)
    dst = tuple(wrap_dim(s, nd, "moveaxis") for s in dst)
    for name, seq in (("source", src), ("destination", dst)):
        if len(set(seq)) != len(seq):
            raise RuntimeError(f"moveaxis: repeated dim in `{name}` {seq}")
    if nd == 0:
        return _alias(input)
    order = [None] * nd
    for s, dd in zip(src, dst):
        order[dd] = s
    rest = iter(k for k in range(nd) if k not in src)
    order = [next(rest) if o is None else o for o in order]
    if order == list(range(nd)):
        return _alias(input)
    return permute(input, tuple(order))


def movedim(x, source, destination):
    """Move dimension(s) ``source`` to position(s) ``destination``, the other dimensions
    keeping their order (as ``torch.movedim``; the same as :func:`moveaxis`).

    Args:
        x: the tensor.
        source: an int or a sequence of distinct dimensions (negative count from the end).
        destination: as many distinct positions in the result.

    Returns:
        A view of ``x``; its gradient is permuted back.

    Example:
        >>> nnkit.zeros(2, 3, 4).movedim(0, -1).shape
        (3, 4, 2)
    """
    if not (isinstance(source, int) and isinstance(destination, int)):
        return moveaxis(x, source, destination)
    s, d = wrap_dim(source, x.ndim, "movedim"), wrap_dim(destination, x.ndim, "movedim")
    dims = [k for k in range(x.ndim) if k != s]
    dims.insert(d, s)
    return permute(x, tuple(dims))


# ------------------------------------------------------------ rearrangements
class Flip(Op):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.flip(dims)

    @staticmethod
    def backward(ctx, grad_output):
        return flip(grad_output, ctx.dims), None


def flip(x, dims):
    """Reverse the order of elements along ``dims``.

    As ``torch.flip``, the result is a copy (not a view as NumPy's ``flip``): writes
    into it do not show in ``x``.

    Args:
        x: the tensor.
        dims: an int or a sequence of distinct dimensions (negative count from the end).

    Returns:
        A new tensor (a copy) of ``x``'s shape; its gradient is flipped back.

    Example:
        >>> nnkit.tensor([[1, 2, 3], [4, 5, 6]]).flip(1)
        tensor([[3, 2, 1],
                [6, 5, 4]])
    """
    dims = norm_dims(dims if isinstance(dims, (list, tuple)) else (dims,), x.ndim, "flip")
    return Flip.apply(x, dims if x.ndim else ())


def roll(input, shifts, dims=None):
    """Roll ``input`` along ``dims`` by ``shifts``: elements leaving one end come back at
    the other (as ``torch.roll``).

    Args:
        input: the tensor.
        shifts: an int or a sequence of ints, one per dimension in ``dims``; positive
            shifts move elements towards higher indices.
        dims: an int, a sequence of dimensions, or ``None`` (default) to roll the
            flattened tensor and restore its shape.

    Returns:
        A new tensor (a copy) of ``input``'s shape; its gradient is rolled back.

    Raises:
        RuntimeError: if ``shifts`` and ``dims`` differ in length.

    Example:
        >>> nnkit.roll(nnkit.arange(5), 2)
        tensor([3, 4, 0, 1, 2])
        >>> nnkit.roll(nnkit.tensor([[1, 2, 3], [4, 5, 6]]), (1, -1), (0, 1))
        tensor([[5, 6, 4],
                [2, 3, 1]])
    """
    check_tensor(input, "roll")
    shifts = _dims(shifts, "roll", "shifts")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts {shifts} must have one element when dims is None")
        return reshape(roll(reshape(input, (-1,)), shifts, 0), input.shape)
    dims = _dims(dims, "roll", "dims")
    if len(shifts) != len(dims) or not dims:
        raise RuntimeError(
            f"roll: shifts and dimensions must align, got shifts {shifts} and dims {dims}"
        )
    out = input
    for s, d in zip(shifts, dims):
        d = wrap_dim(d, input.ndim, "roll")
        n = input.shape[d] if input.ndim else 1
        if n == 0 or s % n == 0:
            continue
        s %= n
        out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return clone(input) if out is input else out


def rot90(input, k: int = 1, dims=(0, 1)):
    """Rotate ``input`` by 90 degrees ``k`` times in the plane of ``dims``, from the first
    towards the second dimension (as ``torch.rot90``; counter-clockwise for a matrix).

    Args:
        input: a tensor of at least 2 dimensions.
        k: the number of quarter turns (default 1); negative turns the other way.
        dims: the two different dimensions spanning the plane (default ``(0, 1)``).

    Returns:
        A new tensor (a copy); its gradient is rotated back.

    Raises:
        RuntimeError: unless ``dims`` names two different dimensions of a tensor with
            at least 2 dimensions.

    Example:
        >>> nnkit.rot90(nnkit.tensor([[1, 2], [3, 4]]))
        tensor([[2, 4],
                [1, 3]])
    """
    check_tensor(input, "rot90")
    dims = _dims(dims, "rot90", "dims")
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {input.ndim}")
    a, b = (wrap_dim(d, input.ndim, "rot90") for d in dims)
    if a == b:
        raise RuntimeError(
            f"rot90: expected rotation dims to be different, but got dim0 = "
            f"{dims[0]} and dim1 = {dims[1]}"
        )
    k = _int(k, "rot90", "k") % 4
    if k == 1:
        return transpose(flip(input, b), a, b)
    if k == 2:
        return flip(input, (a, b))
    if k == 3:
        return transpose(flip(input, a), a, b)
    return clone(input)


def meshgrid(*tensors, indexing: str = "ij"):
    """Coordinate grids from 0-d or 1-d tensors (as ``torch.meshgrid``).

    With ``N`` inputs of sizes ``n1, ..., nN`` each result has shape ``(n1, ..., nN)``
    (``indexing="ij"``) and holds input ``k``'s values along dimension ``k``; ``"xy"``
    swaps the first two dimensions (Cartesian indexing, as NumPy's default).

    Args:
        *tensors: the coordinate tensors (or one list of them), of the same dtype.
        indexing: ``"ij"`` (default; PyTorch's default, which it warns about) or ``"xy"``.

    Returns:
        A tuple of broadcast views of the inputs (read-only: clone them to write).

    Raises:
        RuntimeError: for no input, an input of more than 1 dimension, differing dtypes
            or an unknown ``indexing``.

    Example:
        >>> xs, ys = nnkit.meshgrid(nnkit.tensor([1, 2, 3]), nnkit.tensor([4, 5]))
        >>> xs
        tensor([[1, 1],
                [2, 2],
                [3, 3]])
        >>> ys
        tensor([[4, 5],
                [4, 5],
                [4, 5]])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid: expects a non-empty TensorList")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for k, x in enumerate(tensors):
        check_tensor(x, "meshgrid", f"tensors[{k}]")
        if x.ndim > 1:
            raise RuntimeError(
                f"meshgrid: expected 0D or 1D tensor in the tensor list but got "
                f"a {x.ndim}-d tensor at position {k}"
            )
        if x.dtype != tensors[0].dtype:
            raise RuntimeError(
                f"meshgrid: expects all tensors to have the same dtype, got "
                f"{tensors[0].dtype} and {x.dtype}"
            )
    pos = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        pos[0], pos[1] = 1, 0
    shape = [0] * len(tensors)
    for k, x in enumerate(tensors):
        shape[pos[k]] = x.numel()
    out = []
    for k, x in enumerate(tensors):
        one = [1] * len(tensors)
        one[pos[k]] = x.numel()
        out.append(expand(Reshape.apply(x, tuple(one), False), tuple(shape)))
    return tuple(out)
