"""Shape ops: broadcasting (expand, sum_to), views (reshape, view, flatten, squeeze,
permute, transpose, ...), clone and casts.

View ops return tensors over the same Storage as their input (no copy); their
backward maps the gradient back through the inverse view. Joining and splitting live
in ``ops/joining.py``; ``movedim`` and ``flip`` in ``ops/shaping.py``.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import NO_GRAPH, Op, ShapeError
from nnkit.autograd.ops._util import infer_shape, norm_dims, shape_arg, wrap_dim
from nnkit.backends import dtypes as _dt

__all__ = [
    "sum_to",
    "expand",
    "expand_as",
    "broadcast_to",
    "reshape",
    "view",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "swapaxes",
    "clone",
    "contiguous",
    "cast",
    "broadcast_shapes",
]


def broadcast_shapes(*shapes) -> tuple:
    """The shape that NumPy-style broadcasting gives ``shapes`` (as ``torch.broadcast_shapes``).

    Shapes are aligned at their last dimension; in each dimension the sizes must be equal
    or 1, and a missing leading dimension counts as 1.

    Args:
        *shapes: shapes, each a tuple or list of ints, or an int for a 1-d shape.

    Returns:
        The broadcast shape as a tuple (PyTorch returns a ``torch.Size``).

    Raises:
        ShapeError: if the shapes do not broadcast.

    Example:
        >>> nnkit.broadcast_shapes((2, 1), (3,))
        (2, 3)
    """
    shapes = [(s,) if isinstance(s, int) else s for s in shapes]  # an int: a 1-d shape
    ndim = max(map(len, shapes), default=0)
    out = []
    for k in range(ndim):
        sizes = {s[len(s) - ndim + k] for s in shapes if len(s) - ndim + k >= 0} - {1}
        if len(sizes) > 1:
            raise ShapeError(
                f"shapes {', '.join(str(tuple(s)) for s in shapes)} are not broadcastable"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


class SumTo(Op):
    _view_op = True  # the output may view the input's memory

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        lead = x.ndim - len(shape)
        kept = tuple(lead + k for k, n in enumerate(shape) if n == 1 and x.shape[lead + k] != 1)
        if not kept and lead:  # only leading dims (a bias gradient): one fresh result
            return x.sum(axis=tuple(range(lead)))
        axes = tuple(range(lead)) + kept
        out = x.sum(axis=axes, keepdims=True) if axes else x
        return out.reshape(shape) if out.shape != tuple(shape) else out.copy()

    @staticmethod
    def backward(ctx, grad_output):
        return expand(grad_output, ctx.in_shape), None


def reduce_grad(grad, meta):
    """Bring a broadcast op's gradient back to its input's ``meta = (shape, dtype)``."""
    shape, dtype = meta
    m = grad._impl.data
    if m.shape == shape and m.dtype == dtype:  # the common case: nothing to do
        return grad
    g = sum_to(grad, shape)
    return g if g._impl.data.dtype == dtype else cast(g, dtype)


def reduce_grad_mat(m, meta):
    """:func:`reduce_grad` on a Mat (for an ``Op.backward_mat``): the same kernels."""
    shape, dtype = meta
    if m.shape != shape:
        m = SumTo.forward(NO_GRAPH, m, shape)
    return m if m.dtype == dtype else m.astype(dtype)


def sum_to(x, shape):
    """Sum ``x`` over its broadcast dimensions so that it has ``shape``: the adjoint of
    :func:`expand` (``torch.Tensor.sum_to_size``).

    Leading dimensions of ``x`` are summed away, and so is (keeping it, as size 1) each
    dimension where ``shape`` has 1 and ``x`` does not. Binary ops' backwards use it.

    Args:
        x: the tensor; ``shape`` must broadcast to ``x.shape``.
        shape: the target shape.

    Returns:
        ``x`` itself when the shapes match, else a new tensor of ``shape``.

    Gradient: the gradient expanded back to ``x``'s shape.

    Example:
        >>> nnkit.sum_to(nnkit.ones(2, 3), (1, 3))
        tensor([[2.0, 2.0, 2.0]])
    """
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return SumTo.apply(x, shape)


class Expand(Op):
    _view_op = True  # the output may view the input's memory

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return x.expand(shape)

    @staticmethod
    def backward(ctx, grad_output):
        return sum_to(grad_output, ctx.in_shape), None

    @staticmethod
    def backward_mat(ctx, g):
        return (g if g.shape == ctx.in_shape else SumTo.forward(NO_GRAPH, g, ctx.in_shape)), None


def expand(x, *shape):
    """A broadcast view of ``x`` at ``shape``, without copying (as ``torch.Tensor.expand``).

    Dimensions of size 1 are repeated with stride 0 and new ones may be added in front;
    as elements share memory, in-place writes into the result raise.

    Args:
        x: the tensor.
        *shape: the new sizes, as ints or one tuple; ``-1`` keeps that dimension's size.

    Returns:
        A view of ``x`` with shape ``shape``; ``x`` itself when the shape is unchanged.

    Gradient: summed over the expanded dimensions (:func:`sum_to`).

    Raises:
        ShapeError: if ``shape`` has fewer dimensions than ``x``, or changes the size of
            a dimension that is not 1.

    Example:
        >>> nnkit.tensor([1.0, 2.0]).expand(2, -1)
        tensor([[1.0, 2.0],
                [1.0, 2.0]])
    """
    shape = shape_arg(shape)
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ShapeError(
            f"expand: the number of sizes provided ({len(shape)}) must be at least "
            f"the number of dimensions of the tensor ({x.ndim})"
        )
    full = tuple(x.shape[k - lead] if n == -1 and k >= lead else n for k, n in enumerate(shape))
    for k in range(x.ndim):
        if x.shape[k] != 1 and x.shape[k] != full[k + lead]:
            raise ShapeError(
                f"expand: the expanded size {full[k + lead]} must match the existing "
                f"size {x.shape[k]} at dimension {k + lead} (shape "
                f"{tuple(x.shape)} to {full})"
            )
    if full == x.shape:
        return x
    return Expand.apply(x, full)


def expand_as(x, other):
    """``x.expand(other.shape)``: ``x`` broadcast to ``other``'s shape, as a view.

    Args:
        x: the tensor to expand.
        other: a tensor whose shape ``x`` broadcasts to (only its shape is used).

    Returns:
        A view of ``x``, as :func:`expand` (which gives the gradient too).

    Example:
        >>> nnkit.tensor([[1.0], [2.0]]).expand_as(nnkit.zeros(2, 3))
        tensor([[1.0, 1.0, 1.0],
                [2.0, 2.0, 2.0]])
    """
    return expand(x, other.shape)


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` as a view (``torch.broadcast_to``; see :func:`expand`).

    Args:
        x: the tensor.
        shape: the target shape, a tuple or list (``-1`` keeps a dimension).

    Returns:
        A view of ``x`` with shape ``shape``; the gradient is summed back (:func:`sum_to`).

    Example:
        >>> nnkit.broadcast_to(nnkit.tensor([1, 2, 3]), (2, 3))
        tensor([[1, 2, 3],
                [1, 2, 3]])
    """
    return expand(x, tuple(shape))


class Reshape(Op):
    _view_op = True  # the output may view the input's memory

    @staticmethod
    def forward(ctx, x, shape, require_view):
        ctx.in_shape = x.shape
        out = x.reshape(shape)
        if require_view and out.storage is not x.storage:
            raise RuntimeError(
                f"view: shape {shape} is not compatible with the input's strides "
                f"{x.strides}; use reshape() (which copies) instead"
            )
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return reshape(grad_output, ctx.in_shape), None, None

    @staticmethod
    def backward_mat(ctx, g):
        return (g if g.shape == ctx.in_shape else g.reshape(ctx.in_shape)), None, None


def reshape(x, *shape):
    """``x`` with a new shape, its elements read in row-major order (as ``torch.reshape``).

    A view of ``x`` when its strides allow one, otherwise a copy (:func:`view` never copies).

    Args:
        x: the tensor.
        *shape: the new sizes, as ints or one tuple; one of them may be ``-1``, inferred
            from ``x.numel()``.

    Returns:
        A tensor of ``shape``; ``x`` itself when the shape is unchanged (PyTorch returns
        a new view).

    Gradient: the gradient reshaped back to ``x``'s shape.

    Raises:
        ShapeError: if ``shape`` does not hold ``x.numel()`` elements or has two ``-1``.

    Example:
        >>> nnkit.arange(6).reshape(2, -1)
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    shape = infer_shape(shape_arg(shape), x.numel(), "reshape")
    if shape == x.shape:
        return x
    return Reshape.apply(x, shape, False)


def view(x, *shape):
    """Like :func:`reshape`, but always a view of ``x``'s memory: raises rather than copy.

    Args:
        x: the tensor.
        *shape: the new sizes, as for :func:`reshape`. A single dtype instead converts
            the values (``cast(x, dtype)``, a copy); PyTorch's ``view(dtype)``
            reinterprets the bytes instead.

    Returns:
        A new view of ``x`` with the new shape, sharing its Storage.

    Raises:
        ShapeError: if ``shape`` does not hold ``x.numel()`` elements.
        RuntimeError: if ``x``'s strides do not allow the view (e.g. after
            ``transpose``); use ``reshape`` or ``contiguous().view(...)``.

    Example:
        >>> nnkit.arange(6.0).view(3, 2)
        tensor([[0.0, 1.0],
                [2.0, 3.0],
                [4.0, 5.0]])
    """
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return cast(x, _dt.to_dtype(shape[0]))
    shape = infer_shape(shape_arg(shape), x.numel(), "view")
    return Reshape.apply(x, shape, True)


def flatten(x, start_dim: int = 0, end_dim: int = -1):
    """Merge dimensions ``start_dim`` to ``end_dim`` (inclusive) into one (``torch.flatten``).

    Args:
        x: the tensor; a 0-d tensor gives shape ``(1,)``.
        start_dim: the first dimension to merge (default 0; negative counts from the end).
        end_dim: the last dimension to merge (default -1, the last one).

    Returns:
        A view of ``x`` when its strides allow, else a copy (as :func:`reshape`).

    Raises:
        ValueError: if ``start_dim`` comes after ``end_dim`` (PyTorch: RuntimeError).

    Example:
        >>> nnkit.zeros(2, 3, 4).flatten(1).shape
        (2, 12)
    """
    if x.ndim == 0:
        return reshape(x, (1,))
    s = wrap_dim(start_dim, x.ndim, "flatten")
    e = wrap_dim(end_dim, x.ndim, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = x.shape[:s] + (math.prod(x.shape[s : e + 1]),) + x.shape[e + 1 :]
    return reshape(x, shape)


def unflatten(x, dim: int, sizes):
    """Split dimension ``dim`` into ``sizes``: the inverse of :func:`flatten`
    (``torch.unflatten``).

    Args:
        x: the tensor.
        dim: the dimension to split (negative counts from the end).
        sizes: the new sizes, whose product is ``x.shape[dim]``; one may be ``-1``.

    Returns:
        A view of ``x`` when its strides allow, else a copy (as :func:`reshape`).

    Example:
        >>> nnkit.zeros(2, 12).unflatten(1, (3, -1)).shape
        (2, 3, 4)
    """
    d = wrap_dim(dim, x.ndim, "unflatten")
    return reshape(x, x.shape[:d] + tuple(sizes) + x.shape[d + 1 :])


def squeeze(x, dim=None):
    """Remove dimensions of size 1 (as ``torch.squeeze``).

    Args:
        x: the tensor.
        dim: ``None`` (default) removes every dimension of size 1; an int or a tuple of
            ints removes those of the named dimensions that have size 1 (the others stay).

    Returns:
        A view of ``x``; ``x`` itself when no dimension is removed.

    Example:
        >>> x = nnkit.zeros(2, 1, 3, 1)
        >>> x.squeeze().shape, x.squeeze(1).shape, x.squeeze(0).shape
        ((2, 3), (2, 3, 1), (2, 1, 3, 1))
    """
    if dim is None:
        dims = [k for k, n in enumerate(x.shape) if n == 1]
    else:
        dims = norm_dims(dim, x.ndim, "squeeze")  # checks dim (0 and -1 for a 0-d tensor)
        dims = [d for d in dims if x.ndim and x.shape[d] == 1]
    return reshape(x, tuple(n for k, n in enumerate(x.shape) if k not in dims))


def unsqueeze(x, dim: int):
    """Insert a dimension of size 1 at position ``dim`` (as ``torch.unsqueeze``).

    Args:
        x: the tensor.
        dim: the new dimension's position in the result, in ``[-x.ndim - 1, x.ndim]``;
            negative values count from the end of the result.

    Returns:
        A view of ``x`` with one more dimension.

    Example:
        >>> nnkit.tensor([1.0, 2.0]).unsqueeze(1)
        tensor([[1.0],
                [2.0]])
    """
    s = x._impl.data.shape
    d = wrap_dim(dim, len(s) + 1, "unsqueeze")
    return Reshape.apply(x, s[:d] + (1,) + s[d:], False)  # a valid shape by construction


class Permute(Op):
    _view_op = True  # the output may view the input's memory

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, grad_output):
        return permute(grad_output, _inverse(ctx.dims)), None

    @staticmethod
    def backward_mat(ctx, g):
        inv = _inverse(ctx.dims)
        return (g if inv == tuple(range(len(inv))) else g.transpose(inv)), None


def _inverse(dims) -> tuple:
    """The permutation that undoes ``dims``."""
    inv = [0] * len(dims)
    for k, d in enumerate(dims):
        inv[d] = k
    return tuple(inv)


def permute(x, *dims):
    """A view of ``x`` with its dimensions reordered: dimension ``k`` of the result is
    dimension ``dims[k]`` of ``x`` (as ``torch.permute``).

    Args:
        x: the tensor.
        *dims: a permutation of ``0 .. x.ndim - 1``, as ints or one tuple; negative values
            count from the end.

    Returns:
        A view of ``x``; ``x`` itself for the identity permutation.

    Gradient: the gradient permuted back by the inverse permutation.

    Raises:
        ShapeError: if ``len(dims) != x.ndim``.
        ValueError: if ``dims`` repeats a dimension.

    Example:
        >>> nnkit.zeros(2, 3, 4).permute(2, 0, 1).shape
        (4, 2, 3)
    """
    dims = shape_arg(dims)
    if len(dims) != x.ndim:
        raise ShapeError(
            f"permute: number of dims {len(dims)} does not match the tensor's {x.ndim} dimensions"
        )
    dims = tuple(wrap_dim(d, x.ndim, "permute") for d in dims)
    if sorted(dims) != list(range(x.ndim)):
        raise ValueError(f"permute: dims {dims} is not a permutation of 0..{x.ndim - 1}")
    if dims == tuple(range(x.ndim)):
        return x
    return Permute.apply(x, dims)


def transpose(x, dim0: int, dim1: int):
    """A view of ``x`` with dimensions ``dim0`` and ``dim1`` swapped (``torch.transpose``).

    Args:
        x: the tensor; a 0-d tensor comes back as it is (``dim0``, ``dim1`` in {0, -1}).
        dim0: a dimension (negative counts from the end).
        dim1: the other dimension.

    Returns:
        A view of ``x`` (not contiguous in general).

    Gradient: the gradient transposed back.

    Example:
        >>> nnkit.tensor([[1, 2, 3]]).transpose(0, 1)
        tensor([[1],
                [2],
                [3]])
    """
    a, b = wrap_dim(dim0, x.ndim, "transpose"), wrap_dim(dim1, x.ndim, "transpose")
    if x.ndim == 0:  # only dims 0 and -1 exist (as in torch)
        return x
    dims = list(range(x.ndim))
    dims[a], dims[b] = dims[b], dims[a]
    return permute(x, tuple(dims))


def swapaxes(input, axis0: int, axis1: int):
    """NumPy's name for :func:`transpose`: dimensions ``axis0`` and ``axis1`` swapped, a view.

    Args:
        input: the tensor.
        axis0: a dimension (negative counts from the end).
        axis1: the other dimension.

    Returns:
        A view of ``input`` (as ``torch.swapaxes``); the gradient is transposed back.

    Example:
        >>> nnkit.zeros(2, 3, 4).swapaxes(0, 2).shape
        (4, 3, 2)
    """
    return transpose(input, axis0, axis1)


class Clone(Op):
    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def clone(x):
    """A copy of ``x`` with its own memory (as ``torch.clone``, without ``memory_format``).

    Args:
        x: the tensor.

    Returns:
        A new contiguous tensor with ``x``'s shape, dtype, device and values.

    Gradient: the identity; the copy stays in the graph (``CloneBackward``).

    Example:
        >>> x = nnkit.tensor([1.0, 2.0])
        >>> y = x.clone()
        >>> y[0] = 5.0
        >>> x, y
        (tensor([1.0, 2.0]), tensor([5.0, 2.0]))
    """
    return Clone.apply(x)


def contiguous(x):
    """``x`` itself if its memory is row-major contiguous, else a contiguous copy.

    Args:
        x: the tensor.

    Returns:
        A C-contiguous tensor equal to ``x``; a copy enters the graph as :func:`clone`.

    Example:
        >>> x = nnkit.zeros(2, 3).t()
        >>> x.is_contiguous(), x.contiguous().is_contiguous()
        (False, True)
    """
    return x if x._impl.data.is_contiguous() else Clone.apply(x)


class Cast(Op):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.in_dtype = x.dtype
        return x.astype(dtype.np)

    @staticmethod
    def backward(ctx, grad_output):
        return cast(grad_output, _dt.from_np(ctx.in_dtype)), None


def cast(x, dtype):
    """``x`` converted to ``dtype`` (like ``x.to(dtype)``; floats truncate towards zero
    when converted to integers, as in PyTorch). Not a Tensor method.

    Args:
        x: the tensor.
        dtype: the target dtype: an nnkit dtype, its name (``"int64"``) or a NumPy dtype.

    Returns:
        A new tensor of ``dtype``; ``x`` itself when it has that dtype already.

    Gradient: cast back to ``x``'s dtype between floating dtypes; integer and bool
    results carry no gradient.

    Example:
        >>> nnkit.cast(nnkit.tensor([1.7, -1.7]), "int64")
        tensor([ 1, -1])
    """
    dtype = _dt.to_dtype(dtype)
    if x.dtype == dtype:
        return x
    return Cast.apply(x, dtype)
