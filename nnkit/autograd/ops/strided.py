"""Strided views and their scatters: ``as_strided`` (a view of the Storage with explicit
sizes, strides and offset), ``Tensor.unfold`` (sliding windows, a view), their copies,
``as_strided_scatter``, ``diagonal_scatter`` and ``Tensor.storage_offset``.

``AsStrided`` and ``Unfold`` view their input's Storage (sharing its version counter);
their backwards are written with Tensor ops (``index_add``/``take`` over storage
positions), so double backward works. The scatters are compositions of ``scatter``
over the flat positions a view selects, whose gradients follow.
"""

from __future__ import annotations

from nnkit.autograd.factories import arange
from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import _dims, _int, check_tensor, wrap_dim
from nnkit.autograd.ops.counting import bincount
from nnkit.autograd.ops.index_write import take
from nnkit.backends import strided_kernels as _k

__all__ = [
    "as_strided",
    "as_strided_copy",
    "as_strided_scatter",
    "unfold_copy",
    "diagonal_scatter",
]

NOT_METHODS: set[str] = {"as_strided_copy", "unfold_copy"}


def _needed(shape, strides, offset) -> int:
    if any(n == 0 for n in shape):
        return 0
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def _positions(n, shape, strides, offset, device):
    """The storage positions of a geometry, as an int64 tensor of ``shape``."""
    return AsStrided.apply(arange(n, device=device), tuple(shape), tuple(strides), offset)


class AsStrided(Op):
    _view_op = True  # the output views the input's Storage

    @staticmethod
    def forward(ctx, x, size, stride, offset):
        ctx.geom = (x.shape, x.strides, _k.storage_offset(x), size, stride, offset)
        return _k.storage_view(x, size, stride, offset, "as_strided")

    @staticmethod
    def backward(ctx, g):
        in_shape, in_st, in_off, size, stride, off = ctx.geom
        n = max(_needed(in_shape, in_st, in_off), _needed(size, stride, off))
        out_pos = _positions(n, size, stride, off, g.device).reshape(-1)
        in_pos = _positions(n, in_shape, in_st, in_off, g.device)
        flat = g.new_zeros(n).index_add(0, out_pos, g.reshape(-1))
        gin = take(flat, in_pos)
        if in_pos.numel():
            counts = bincount(in_pos.reshape(-1), minlength=n)
            if int(counts.max()) > 1:  # the input overlaps itself: share, as torch
                gin = gin / take(counts, in_pos).to(g.dtype)
        return gin, None, None, None


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s Storage with the given sizes, strides and offset
    (``torch.as_strided``): element ``i`` is storage element
    ``storage_offset + sum(i[k] * stride[k])``.

    Args:
        input: the tensor whose Storage is viewed.
        size: the shape of the result (a sequence of ints).
        stride: one non-negative stride per dimension, in elements.
        storage_offset: the first element's position in the Storage (default:
            ``input.storage_offset()``).

    Returns:
        A view sharing ``input``'s memory and version counter.

    Raises:
        RuntimeError: when the view reaches past the Storage or a stride is negative.

    Gradient: the output's gradient is summed into the storage positions it views and
    read back at ``input``'s positions (divided by their multiplicity where ``input``
    overlaps itself), as torch's ``as_strided_backward``: overlapping windows add up.

    Example:
        >>> nnkit.arange(6.0).as_strided((2, 2), (1, 2), 1)
        tensor([[1.0, 3.0],
                [2.0, 4.0]])
    """
    check_tensor(input, "as_strided")
    size, stride = _dims(size, "as_strided", "size"), _dims(stride, "as_strided", "stride")
    if len(size) != len(stride):
        raise RuntimeError(
            f"as_strided: mismatch in length of strides ({len(stride)}) and shape ({len(size)})"
        )
    if any(n < 0 for n in size):
        raise RuntimeError(f"as_strided: negative size in {list(size)}")
    if storage_offset is None:
        off = _k.storage_offset(input._impl.data)
    else:
        off = _int(storage_offset, "as_strided", "storage_offset")
    return AsStrided.apply(input, size, stride, off)


def as_strided_copy(input, size, stride, storage_offset=None):
    """A copy of :func:`as_strided` (``torch.as_strided_copy``): same values and gradient,
    its own memory.

    Args:
        input, size, stride, storage_offset: as in :func:`as_strided`.

    Returns:
        A new contiguous tensor of shape ``size``.

    Example:
        >>> nnkit.as_strided_copy(nnkit.arange(4), (2,), (2,))
        tensor([0, 2])
    """
    return as_strided(input, size, stride, storage_offset).clone()


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``src`` written where ``as_strided(size, stride,
    storage_offset)`` of that copy looks (``torch.as_strided_scatter``).

    Args:
        input: the tensor to copy; positions count in its memory order (row-major, or
            the layout of a dense permuted ``input``, which the copy keeps as torch's).
        src: the values, of shape ``size``.
        size, stride: the view's shape and strides (elements).
        storage_offset: the view's first position (default 0).

    Returns:
        A new tensor of ``input``'s shape and dtype.

    Gradient: ``input`` gets the output's gradient with the written positions zeroed;
    ``src`` gets the output's gradient read through the view.

    Example:
        >>> nnkit.as_strided_scatter(nnkit.zeros(4), nnkit.ones(2), (2,), (2,))
        tensor([1.0, 0.0, 1.0, 0.0])
    """
    check_tensor(input, "as_strided_scatter")
    check_tensor(src, "as_strided_scatter", "src")
    off = 0
    if storage_offset is not None:
        off = _int(storage_offset, "as_strided_scatter", "storage_offset")
    pos = as_strided(arange(input.numel(), device=input.device), size, stride, off)
    if tuple(src.shape) != tuple(pos.shape):
        raise RuntimeError(
            f"as_strided_scatter: expected src to have shape {list(pos.shape)}, "
            f"got {list(src.shape)}"
        )
    perm = _memory_order(input)  # torch's clone keeps a dense layout: positions follow it
    mem = input if perm is None else input.permute(perm)
    flat = mem.reshape(-1).scatter(0, pos.reshape(-1), src.reshape(-1).to(input.dtype))
    out = flat.reshape(mem.shape)
    return out if perm is None else out.permute([perm.index(k) for k in range(len(perm))])


def _memory_order(t):
    """The dims of a dense, non-overlapping, non-contiguous ``t`` from the outermost in
    memory to the innermost (None for a contiguous or not dense ``t``)."""
    if t.is_contiguous() or t.ndim < 2:
        return None
    st = t.stride()
    perm = sorted(range(t.ndim), key=lambda k: (-st[k], -k))
    expect = 1
    for k in reversed(perm):
        if t.shape[k] != 1 and st[k] != expect:
            return None
        expect *= t.shape[k]
    return perm


class Unfold(Op):
    _view_op = True  # the output views the input's memory

    @staticmethod
    def forward(ctx, x, dim, size, step):
        ctx.args = (x.shape, dim, size, step)
        return _k.window_view(x, dim, size, step)

    @staticmethod
    def backward(ctx, g):
        shape, dim, size, step = ctx.args
        if not shape:
            return g.reshape(()), None, None, None
        n = g.shape[dim]
        idx = (arange(n, device=g.device) * step).unsqueeze(1) + arange(size, device=g.device)
        gm = g.movedim(-1, dim + 1)
        gm = gm.reshape(shape[:dim] + (n * size,) + shape[dim + 1 :])
        return g.new_zeros(shape).index_add(dim, idx.reshape(-1), gm), None, None, None


def unfold(input, dimension, size, step):
    """The windows of ``size`` elements every ``step`` along ``dimension``, as a view
    (``torch.Tensor.unfold``): ``dimension`` becomes the window count
    ``(n - size) // step + 1`` and a last dimension of ``size`` is appended.

    Args:
        input: the tensor (a 0-d tensor gives a 1-element window).
        dimension: the dimension to slide along.
        size: the window length, at most ``input.shape[dimension]``.
        step: the distance between windows' starts (positive).

    Returns:
        A view sharing ``input``'s memory (windows may overlap).

    Gradient: each input element gets the sum of its copies' gradients.

    Example:
        >>> nnkit.arange(5).unfold(0, 2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    check_tensor(input, "unfold")
    size, step = _int(size, "unfold", "size"), _int(step, "unfold", "step")
    dim = wrap_dim(_int(dimension, "unfold", "dimension"), input.ndim, "unfold")
    n = input.shape[dim] if input.ndim else 1
    if size > n or size < 0:
        raise RuntimeError(
            f"unfold: maximum size for tensor at dimension {dim} is {n} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    return Unfold.apply(input, dim, size, step)


def unfold_copy(input, dimension, size, step):
    """A copy of :meth:`Tensor.unfold <unfold>` (``torch.unfold_copy``).

    Args:
        input, dimension, size, step: as in ``Tensor.unfold``.

    Returns:
        A new contiguous tensor with the windows (last dimension ``size``).

    Example:
        >>> nnkit.unfold_copy(nnkit.arange(4), 0, 2, 1)
        tensor([[0, 1],
                [1, 2],
                [2, 3]])
    """
    return unfold(input, dimension, size, step).clone()


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``src`` written on its diagonal
    (``torch.diagonal_scatter``): the diagonal :func:`~nnkit.diagonal` selects.

    Args:
        input: a tensor of at least 2 dimensions.
        src: the values, of the diagonal's shape (the other dims, then the diagonal).
        offset: which diagonal: 0 the main one, > 0 above it, < 0 below it.
        dim1, dim2: the two dimensions the diagonal runs over.

    Returns:
        A new tensor of ``input``'s shape and dtype.

    Gradient: ``input`` gets the gradient off the diagonal, ``src`` the gradient's
    diagonal.

    Example:
        >>> nnkit.diagonal_scatter(nnkit.zeros(2, 2), nnkit.ones(2))
        tensor([[1.0, 0.0],
                [0.0, 1.0]])
    """
    check_tensor(input, "diagonal_scatter")
    check_tensor(src, "diagonal_scatter", "src")
    pos = arange(input.numel(), device=input.device).reshape(input.shape)
    pos = pos.diagonal(offset, dim1, dim2)
    if tuple(src.shape) != tuple(pos.shape):
        raise RuntimeError(
            f"diagonal_scatter: expected src to have shape {list(pos.shape)}, got {list(src.shape)}"
        )
    flat = input.reshape(-1).scatter(0, pos.reshape(-1), src.reshape(-1).to(input.dtype))
    return flat.reshape(input.shape)


def storage_offset(input) -> int:
    """The position of ``input``'s first element in its Storage, in elements
    (``torch.Tensor.storage_offset``).

    Args:
        input: a tensor.

    Returns:
        An int (0 for a tensor that owns its memory).

    Example:
        >>> nnkit.arange(6).reshape(2, 3)[1].storage_offset()
        3
    """
    return _k.storage_offset(check_tensor(input, "storage_offset")._impl.data)


# Tensor methods that are not nnkit functions (torch has no torch.unfold/storage_offset).
METHODS_ONLY = {"unfold": unfold, "storage_offset": storage_offset}
