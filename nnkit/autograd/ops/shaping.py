"""Ops of issue 13 (shaping): views, joins, diagonals, grids and products.

Most ops are compositions of existing differentiable ops (slicing, permute, reshape,
cat, matmul, sum), so their gradients follow; the diagonal view and its adjoint are
the two ``Op`` classes here (``Diagonal`` views its input's memory with explicit
strides; ``DiagScatter`` writes a diagonal into zeros). Views (``t``, ``narrow``,
``select``, ``diagonal``, ``moveaxis``, ``tensor_split`` pieces, ``meshgrid``) share
their input's Storage as in PyTorch; ``rot90``, ``roll``, ``diag`` and ``tile`` copy.
"""

from __future__ import annotations

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.ops._util import check_tensor, wrap_dim
from nnkit.autograd.ops.indexing import getitem, nonzero
from nnkit.autograd.ops.products import (
    _dims,
    _int,
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
    cat,
    clone,
    expand,
    flip,
    permute,
    repeat,
    reshape,
    stack,
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
    "tensor_split",
    "hstack",
    "vstack",
    "dstack",
    "moveaxis",
    "roll",
    "tile",
    "rot90",
    "diagonal",
    "diag_embed",
    "diag",
    "trace",
    "tril_indices",
    "triu_indices",
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
    "hstack",
    "vstack",
    "dstack",
    "tril_indices",
    "triu_indices",
    "meshgrid",
    "einsum",
    "tensordot",
}


def _alias(x):
    """A new Tensor viewing all of ``x`` (torch's alias for a no-op view)."""
    return Reshape.apply(x, x.shape, False)


# --------------------------------------------------------------------- views
def t(input):
    """``input`` with dimensions 0 and 1 swapped (0-d and 1-d tensors as they are): a view.

    Raises:
        ShapeError: for more than 2 dimensions.
    """
    check_tensor(input, "t")
    if input.ndim > 2:
        raise ShapeError(
            f"t: expects a tensor with <= 2 dimensions, but input has {input.ndim} dimensions"
        )
    return transpose(input, 0, 1) if input.ndim == 2 else _alias(input)


def view_as(input, other):
    """``input.view(other.shape)``."""
    return view(
        check_tensor(input, "view_as"), tuple(check_tensor(other, "view_as", "other").shape)
    )


def reshape_as(input, other):
    """``input.reshape(other.shape)``."""
    return reshape(
        check_tensor(input, "reshape_as"), tuple(check_tensor(other, "reshape_as", "other").shape)
    )


def narrow(input, dim: int, start, length: int):
    """The view of ``input`` at ``start:start + length`` along ``dim``.

    Raises:
        IndexError: for a 0-d input, a bad ``dim`` or ``start`` out of range.
        RuntimeError: for a negative ``length`` or one running past the end.
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
    """The view of ``input`` at ``index`` along ``dim`` (that dimension removed).

    Raises:
        IndexError: for a 0-d input, a bad ``dim`` or ``index`` out of range.
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


def tensor_split(input, indices_or_sections, dim: int = 0):
    """Split ``input`` along ``dim`` into views: ``n`` nearly equal parts for an int (the
    first ``size % n`` one longer), or at the given indices for a sequence (a 0-d or 1-d
    integer tensor counts as either).

    Raises:
        RuntimeError: for a 0-d input or a non-positive number of sections.
    """
    from nnkit.autograd.tensor import Tensor

    check_tensor(input, "tensor_split")
    if input.ndim == 0:
        raise RuntimeError(
            "tensor_split: expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    d = wrap_dim(dim, input.ndim, "tensor_split")
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype.is_floating_point or ios.ndim > 1:
            raise TypeError(
                "tensor_split: indices_or_sections must be a 0-d or 1-d integer "
                f"tensor, got a {ios.ndim}-d {ios.dtype} tensor"
            )
        ios = ios.item() if ios.ndim == 0 else ios.tolist()
    pre = (slice(None),) * d
    if isinstance(ios, (list, tuple)):
        bounds = [0] + [_int(i, "tensor_split", "indices_or_sections") for i in ios] + [None]
        return tuple(getitem(input, pre + (slice(a, b),)) for a, b in zip(bounds, bounds[1:]))
    sections = _int(ios, "tensor_split", "indices_or_sections")
    if sections <= 0:
        raise RuntimeError(
            f"tensor_split: number of sections must be larger than 0, got {sections}"
        )
    n = input.shape[d]
    small, extra = divmod(n, sections)
    out, start = [], 0
    for k in range(sections):
        size = small + (k < extra)
        out.append(getitem(input, pre + (slice(start, start + size),)))
        start += size
    return tuple(out)


def _atleast(x, nd, op, k):
    check_tensor(x, op, f"tensors[{k}]")
    if x.ndim >= nd:
        return x
    if nd == 3 and x.ndim == 2:
        return reshape(x, x.shape + (1,))
    if nd == 3:
        return reshape(x, (1, x.numel(), 1))
    return reshape(x, (1,) * (nd - x.ndim) + x.shape)


def _tensor_list(tensors, op):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}: expects a non-empty TensorList")
    return tensors


def hstack(tensors):
    """Stack tensors column-wise: ``cat`` along dim 1 (dim 0 for 1-d tensors)."""
    ts = [_atleast(x, 1, "hstack", k) for k, x in enumerate(_tensor_list(tensors, "hstack"))]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    """Stack tensors row-wise: 1-d tensors become rows, then ``cat`` along dim 0."""
    return cat(
        [_atleast(x, 2, "vstack", k) for k, x in enumerate(_tensor_list(tensors, "vstack"))], 0
    )


def dstack(tensors):
    """Stack tensors depth-wise: each made at least 3-d, then ``cat`` along dim 2."""
    return cat(
        [_atleast(x, 3, "dstack", k) for k, x in enumerate(_tensor_list(tensors, "dstack"))], 2
    )


def moveaxis(input, source, destination):
    """Move dimension(s) ``source`` to ``destination`` (ints or sequences): a view.

    Raises:
        RuntimeError: if the sequences differ in length or repeat a dimension.
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


# --------------------------------------------------------------------- copies
def roll(input, shifts, dims=None):
    """Roll ``input`` along ``dims`` by ``shifts`` (the flattened tensor when ``dims`` is
    None); elements leaving one end come back at the other. A copy.

    Raises:
        RuntimeError: if ``shifts`` and ``dims`` differ in length.
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


def tile(input, dims):
    """Repeat ``input`` ``dims[k]`` times along dimension ``k``; ``dims`` shorter than the
    tensor's dimensions is padded with ones at the front."""
    check_tensor(input, "tile")
    reps = _dims(dims, "tile", "dims")
    reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)


def rot90(input, k: int = 1, dims=(0, 1)):
    """Rotate ``input`` by 90 degrees ``k`` times in the plane of ``dims``, from the first
    towards the second dimension. A copy.

    Raises:
        RuntimeError: unless ``dims`` names two different dimensions of a tensor with at
            least 2 dimensions.
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
        return transpose(clone(flip(input, b)), a, b)
    if k == 2:
        return clone(flip(input, (a, b)))
    if k == 3:
        return transpose(clone(flip(input, a)), a, b)
    return clone(input)


# ------------------------------------------------------------------ diagonals
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
    """The diagonal of ``input`` over ``dim1``/``dim2`` (above it for ``offset > 0``,
    below for ``offset < 0``), as a view with the diagonal as the last dimension.

    Raises:
        RuntimeError: if ``dim1`` and ``dim2`` name the same dimension.
    """
    check_tensor(input, "diagonal")
    d1, d2 = wrap_dim(dim1, input.ndim, "diagonal"), wrap_dim(dim2, input.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal: diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, _int(offset, "diagonal", "offset"), d1, d2)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """A tensor whose diagonals over ``dim1``/``dim2`` (at ``offset``) hold the last
    dimension of ``input``; zeros elsewhere.

    Raises:
        RuntimeError: for a 0-d input or equal ``dim1``/``dim2``.
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
    """For a 1-d input, the square matrix with it on diagonal ``diagonal``; for a 2-d
    input, a copy of that diagonal.

    Raises:
        RuntimeError: for inputs that are not 1-d or 2-d.
    """
    check_tensor(input, "diag")
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return clone(Diagonal.apply(input, _int(diagonal, "diag", "diagonal"), 0, 1))
    raise RuntimeError(f"diag: supports 1D or 2D tensors, got {input.ndim}D")


def trace(input):
    """The sum of the main diagonal of a 2-d ``input``."""
    check_tensor(input, "trace")
    if input.ndim != 2:
        raise RuntimeError(
            f"trace: expected a matrix, but got a tensor with {input.ndim} dimensions"
        )
    return Diagonal.apply(input, 0, 0, 1).sum()


def _tri_indices(row, col, offset, dtype, device, op, lower):
    from nnkit.autograd.factories import arange
    from nnkit.backends import dtypes as _dt

    row, col, offset = _int(row, op, "row"), _int(col, op, "col"), _int(offset, op, "offset")
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row and col must be non-negative, got {row} and {col}")
    r = arange(row, dtype=_dt.int64, device=device).unsqueeze(1)
    c = arange(col, dtype=_dt.int64, device=device).unsqueeze(0)
    mask = (c - r <= offset) if lower else (c - r >= offset)
    out = stack(nonzero(mask, as_tuple=True), 0)
    return out if dtype is None else out.to(dtype)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    """The (2, N) int64 coordinates of the lower triangle of a ``row`` x ``col`` matrix
    (with diagonal ``offset``), row by row."""
    return _tri_indices(row, col, offset, dtype, device, "tril_indices", True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    """The (2, N) int64 coordinates of the upper triangle, as :func:`tril_indices`."""
    return _tri_indices(row, col, offset, dtype, device, "triu_indices", False)


def meshgrid(*tensors, indexing: str = "ij"):
    """Coordinate grids from 0-d or 1-d tensors, as broadcast views (``indexing='ij'``:
    matrix indexing; ``'xy'``: the first two dimensions swapped, Cartesian indexing).

    Raises:
        RuntimeError: for an empty list, an input of more than 1 dimension, differing
            dtypes, or an unknown ``indexing``.
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
