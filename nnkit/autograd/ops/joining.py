"""Joining and splitting: cat, stack and its 2-d/3-d variants, split, chunk,
tensor_split, unbind; repeat, tile and atleast_2d.

The split ops return views of their input (slices along one dimension); the joins and
the tilings copy. Gradients flow through all of them: the gradient of a join is sliced
back to each input, that of a tiling summed over the copies.
"""

from __future__ import annotations

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.ops._util import _dims, _int, check_tensor, shape_arg, wrap_dim
from nnkit.autograd.ops.indexing import getitem
from nnkit.autograd.ops.shape import cast, reshape, unsqueeze
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt

__all__ = [
    "cat",
    "concat",
    "stack",
    "hstack",
    "vstack",
    "dstack",
    "split",
    "chunk",
    "tensor_split",
    "unbind",
    "repeat",
    "tile",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
]

# Functions of __all__ that are not Tensor methods (their first argument is a list).
NOT_METHODS: set[str] = {"cat", "concat", "stack", "hstack", "vstack", "dstack"}
NOT_METHODS |= {"atleast_1d", "atleast_2d", "atleast_3d"}


class Repeat(Op):
    @staticmethod
    def forward(ctx, x, reps):
        ctx.in_shape = x.shape
        return x.tile(reps)

    @staticmethod
    def backward(ctx, grad_output):
        shape = ctx.in_shape
        g = grad_output
        if 0 in g.shape:  # an empty input or a zero repeat: every copy is empty
            return g.new_zeros(shape), None
        lead = grad_output.ndim - len(shape)
        if lead:
            g = g.reshape((-1,) + g.shape[lead:]).sum(0)
        inter = []
        for n, total in zip(shape, g.shape):
            inter += [total // n, n]
        g = g.reshape(tuple(inter)).sum(tuple(range(0, len(inter), 2)))
        return g, None


def repeat(x, *sizes):
    """Tile ``x``: ``sizes[k]`` copies along dimension ``k`` (as ``torch.Tensor.repeat``).

    Unlike NumPy's ``repeat`` this copies the whole tensor (NumPy's ``tile``). Extra
    leading ``sizes`` add new dimensions in front.

    Args:
        x: the tensor.
        *sizes: the number of copies per dimension, as ints or one tuple; at least
            ``x.ndim`` of them.

    Returns:
        A new tensor of shape ``(..., x.shape[k] * sizes[k], ...)``.

    Gradient: the gradient summed over the copies.

    Raises:
        ShapeError: if fewer sizes than ``x.ndim`` are given.

    Example:
        >>> nnkit.tensor([1, 2]).repeat(2, 2)
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    sizes = shape_arg(sizes)
    if len(sizes) < x.ndim:
        raise ShapeError(
            f"repeat: number of repeat dims ({len(sizes)}) can not be smaller than "
            f"the number of dimensions of the tensor ({x.ndim})"
        )
    return Repeat.apply(x, sizes)


class Cat(Op):
    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.sizes = [x.shape[dim] for x in xs]
        ctx.dim = dim
        return type(xs[0]).concatenate(xs, dim)

    @staticmethod
    def backward(ctx, grad_output):
        grads, start = [None], 0
        for k, n in enumerate(ctx.sizes):
            if ctx.needs_input_grad[k + 1]:
                grads.append(_narrow(grad_output, ctx.dim, start, n))
            else:
                grads.append(None)
            start += n
        return tuple(grads)


def _narrow(x, dim, start, length):
    return getitem(x, (slice(None),) * dim + (slice(start, start + length),))


def cat(tensors, dim: int = 0):
    """Concatenate ``tensors`` along the existing dimension ``dim`` (as ``torch.cat``).

    Mixed dtypes promote as in PyTorch: a floating dtype wins over integer and bool
    ones, within a category the wider one.

    Args:
        tensors: a non-empty sequence of tensors with the same number of dimensions
            (at least 1) and the same sizes except in ``dim``.
        dim: the dimension to join along (default 0; negative counts from the end).

    Returns:
        A new tensor; its size along ``dim`` is the sum of the inputs' sizes.

    Gradient: each input gets its slice of the gradient.

    Raises:
        ShapeError: for a 0-d input or sizes differing outside ``dim``.

    Example:
        >>> x = nnkit.tensor([[1, 2], [3, 4]])
        >>> nnkit.cat([x, nnkit.tensor([[5, 6]])])
        tensor([[1, 2],
                [3, 4],
                [5, 6]])
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")
    for k, t in enumerate(tensors):
        check_tensor(t, "cat", f"tensors[{k}]")
    for k, t in enumerate(tensors):
        if t.ndim == 0:
            raise ShapeError(
                f"cat: tensors[{k}] is zero-dimensional and cannot be "
                "concatenated (use stack, or reshape it to (1,))"
            )
    ref = tensors[0]
    d = wrap_dim(dim, ref.ndim, "cat")
    for k, t in enumerate(tensors[1:], 1):
        if t.ndim != ref.ndim or any(
            a != b for j, (a, b) in enumerate(zip(t.shape, ref.shape)) if j != d
        ):
            raise ShapeError(
                f"cat: sizes of tensors must match except in dimension {d}: "
                f"tensors[0] has shape {tuple(ref.shape)}, tensors[{k}] has "
                f"{tuple(t.shape)}"
            )
    dts = [t._impl.data.dtype for t in tensors]
    floats = [d for d in dts if d.kind == "f"]  # PyTorch's categories: a float dtype wins
    dtype = _dt.to_dtype(type(ref._impl.data).result_type(*(floats or dts)))
    tensors = [t if t.dtype == dtype else cast(t, dtype) for t in tensors]
    return Cat.apply(d, *tensors)


def concat(tensors, dim: int = 0):
    """Another name of :func:`cat` (``torch.concat``): ``tensors`` joined along ``dim``.

    Args:
        tensors: a non-empty sequence of tensors of equal sizes except in ``dim``.
        dim: the dimension to join along (default 0).

    Returns:
        A new tensor; gradients, dtype promotion and errors as for :func:`cat`.

    Example:
        >>> x = nnkit.tensor([[1, 2], [3, 4]])
        >>> nnkit.concat([x, x], dim=1)
        tensor([[1, 2, 1, 2],
                [3, 4, 3, 4]])
    """
    return cat(tensors, dim)


def stack(tensors, dim: int = 0):
    """Join tensors of equal shape along a new dimension ``dim`` (as ``torch.stack``).

    Args:
        tensors: a non-empty sequence of tensors of the same shape (mixed dtypes promote
            as in :func:`cat`).
        dim: the new dimension's position in the result, in ``[-ndim - 1, ndim]``
            (default 0).

    Returns:
        A new tensor with one more dimension, of size ``len(tensors)`` at ``dim``.

    Gradient: each input gets its slice of the gradient.

    Raises:
        ShapeError: if the shapes differ.

    Example:
        >>> nnkit.stack([nnkit.tensor([1, 2]), nnkit.tensor([3, 4])], dim=1)
        tensor([[1, 3],
                [2, 4]])
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    shape = check_tensor(tensors[0], "stack", "tensors[0]").shape
    for k, t in enumerate(tensors):
        if check_tensor(t, "stack", f"tensors[{k}]").shape != shape:
            raise ShapeError(
                f"stack: expects each tensor to be equal size, but got "
                f"{tuple(shape)} at entry 0 and {tuple(t.shape)} at entry {k}"
            )
    d = wrap_dim(dim, len(shape) + 1, "stack")
    return cat([unsqueeze(t, d) for t in tensors], d)


def split(x, split_size_or_sections, dim: int = 0):
    """Split ``x`` along ``dim`` into views (as ``torch.split``).

    Args:
        x: the tensor.
        split_size_or_sections: an int: pieces of that size, the last one smaller when
            the size does not divide; or a list of the pieces' sizes, summing to
            ``x.shape[dim]``.
        dim: the dimension to split (default 0).

    Returns:
        A tuple of views of ``x``; their gradients flow back into ``x``.

    Raises:
        ValueError: for a split size that is not positive.
        ShapeError: if the sections do not sum to ``x.shape[dim]``.

    Example:
        >>> nnkit.arange(5).split(2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    d = wrap_dim(dim, x.ndim, "split")
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split: split_size must be positive, got {step}")
        sizes = [min(step, n - s) for s in range(0, n, step)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise ShapeError(f"split: sections {sizes} do not sum to the size {n} of dimension {d}")
    out, start = [], 0
    for s in sizes:
        out.append(_narrow(x, d, start, s))
        start += s
    return tuple(out)


def chunk(x, chunks: int, dim: int = 0):
    """Split ``x`` along ``dim`` into at most ``chunks`` views of ``ceil(size / chunks)``
    elements, the last one smaller (as ``torch.chunk``: fewer chunks can come back).

    Args:
        x: the tensor.
        chunks: the number of chunks wanted, positive.
        dim: the dimension to split (default 0).

    Returns:
        A tuple of views of ``x``. An empty dimension gives ``chunks`` empty chunks, as
        in PyTorch.

    Raises:
        ValueError: if ``chunks`` is not positive.

    Example:
        >>> nnkit.arange(5).chunk(3)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[wrap_dim(dim, x.ndim, "chunk")]
    if n == 0:  # torch: size-0 chunks can add up to 0 any number of times; it gives chunks
        return split(x, [0] * chunks, dim)
    return split(x, -(-n // chunks), dim)


def unbind(x, dim: int = 0):
    """The slices of ``x`` along ``dim``, that dimension removed (as ``torch.unbind``).

    Args:
        x: the tensor (at least 1-d).
        dim: the dimension to slice along (default 0).

    Returns:
        A tuple of ``x.shape[dim]`` views of ``x``.

    Example:
        >>> nnkit.unbind(nnkit.tensor([[1, 2], [3, 4]]), 1)
        (tensor([1, 3]), tensor([2, 4]))
    """
    d = wrap_dim(dim, x.ndim, "unbind")
    return tuple(getitem(x, (slice(None),) * d + (k,)) for k in range(x.shape[d]))


def tensor_split(input, indices_or_sections, dim: int = 0):
    """Split ``input`` along ``dim`` into views (as ``torch.tensor_split``).

    Args:
        input: the tensor, at least 1-d.
        indices_or_sections: an int ``n``: ``n`` nearly equal parts, the first
            ``size % n`` of them one element longer; or a sequence of indices to split
            before (``[2, 5]`` gives ``[:2]``, ``[2:5]``, ``[5:]``). A 0-d or 1-d integer
            tensor counts as an int or a sequence.
        dim: the dimension to split (default 0).

    Returns:
        A tuple of views of ``input``.

    Raises:
        RuntimeError: for a 0-d input or a number of sections that is not positive.
        TypeError: for a floating or multi-dimensional tensor of indices.

    Example:
        >>> nnkit.tensor_split(nnkit.arange(7), 3)
        (tensor([0, 1, 2]), tensor([3, 4]), tensor([5, 6]))
        >>> nnkit.tensor_split(nnkit.arange(7), [2, 5])
        (tensor([0, 1]), tensor([2, 3, 4]), tensor([5, 6]))
    """
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


def atleast_2d(x, *rest):
    """``x`` with size-1 dimensions added in front until it has at least 2 (as
    ``torch.atleast_2d``). Not a Tensor method.

    Args:
        x: a tensor, or a list/tuple of tensors; more tensors may follow as arguments.

    Returns:
        A view of shape ``(1, 1)`` for a 0-d and ``(1, n)`` for a 1-d ``x``; ``x`` itself
        when it has 2 or more dimensions; a tuple, one per tensor, when given several
        or a list.

    Example:
        >>> nnkit.atleast_2d(nnkit.tensor([1.0, 2.0]))
        tensor([[1.0, 2.0]])
    """
    return _atleast_nd(x, rest, 2, "atleast_2d")


def _atleast_nd(x, rest, nd, op):
    if rest or isinstance(x, (list, tuple)):
        xs = [x, *rest] if rest else list(x)
        return tuple(_atleast(t, nd, op, k) for k, t in enumerate(xs))
    return _atleast(x, nd, op, 0)


def atleast_1d(x, *rest):
    """``x`` as a tensor of at least 1 dimension (as ``torch.atleast_1d``).

    Args:
        x: a tensor, or a list/tuple of tensors; more tensors may follow as arguments.

    Returns:
        A 0-d ``x`` as a view of shape ``(1,)``, any other ``x`` itself; a tuple, one
        per tensor, when given several or a list.

    Example:
        >>> nnkit.atleast_1d(nnkit.tensor(3.0))
        tensor([3.0])
    """
    return _atleast_nd(x, rest, 1, "atleast_1d")


def atleast_3d(x, *rest):
    """``x`` as a tensor of at least 3 dimensions (as ``torch.atleast_3d``).

    Args:
        x: a tensor, or a list/tuple of tensors; more tensors may follow as arguments.

    Returns:
        A view of shape ``(1, 1, 1)`` for a 0-d, ``(1, n, 1)`` for a 1-d and
        ``(a, b, 1)`` for a 2-d ``x``; ``x`` itself from 3 dimensions on; a tuple, one
        per tensor, when given several or a list.

    Example:
        >>> nnkit.atleast_3d(nnkit.tensor([1.0, 2.0])).shape
        (1, 2, 1)
    """
    return _atleast_nd(x, rest, 3, "atleast_3d")


def _tensor_list(tensors, op):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op}: expects a non-empty TensorList")
    return tensors


def hstack(tensors):
    """Join tensors column-wise (as ``torch.hstack``): :func:`cat` along dimension 1, or
    dimension 0 when they are 1-d; 0-d tensors count as 1-d.

    Args:
        tensors: a non-empty sequence of tensors.

    Returns:
        A new tensor (see :func:`cat` for gradients and dtypes).

    Example:
        >>> nnkit.hstack([nnkit.tensor([1, 2]), nnkit.tensor([3])])
        tensor([1, 2, 3])
    """
    ts = [_atleast(x, 1, "hstack", k) for k, x in enumerate(_tensor_list(tensors, "hstack"))]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    """Join tensors row-wise (as ``torch.vstack``): each made at least 2-d (a 1-d tensor
    of size ``n`` becomes ``(1, n)``), then :func:`cat` along dimension 0.

    Args:
        tensors: a non-empty sequence of tensors.

    Returns:
        A new tensor (see :func:`cat` for gradients and dtypes).

    Example:
        >>> nnkit.vstack([nnkit.tensor([1, 2]), nnkit.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]])
    """
    return cat(
        [_atleast(x, 2, "vstack", k) for k, x in enumerate(_tensor_list(tensors, "vstack"))], 0
    )


def dstack(tensors):
    """Join tensors depth-wise (as ``torch.dstack``): each made at least 3-d (``(n,)``
    becomes ``(1, n, 1)``, ``(m, n)`` becomes ``(m, n, 1)``), then :func:`cat` along
    dimension 2.

    Args:
        tensors: a non-empty sequence of tensors.

    Returns:
        A new tensor (see :func:`cat` for gradients and dtypes).

    Example:
        >>> nnkit.dstack([nnkit.zeros(2, 3), nnkit.ones(2, 3)]).shape
        (2, 3, 2)
    """
    return cat(
        [_atleast(x, 3, "dstack", k) for k, x in enumerate(_tensor_list(tensors, "dstack"))], 2
    )


def tile(input, dims):
    """Repeat ``input`` ``dims[k]`` times along dimension ``k`` (as ``torch.tile``).

    Like :func:`repeat`, except that ``dims`` may be shorter than ``input.ndim``: it is
    padded with ones in front.

    Args:
        input: the tensor.
        dims: an int or a sequence of ints, the number of copies per dimension.

    Returns:
        A new tensor; the gradient is summed over the copies.

    Example:
        >>> nnkit.tensor([[1, 2]]).tile((2,))
        tensor([[1, 2, 1, 2]])
    """
    check_tensor(input, "tile")
    reps = _dims(dims, "tile", "dims")
    reps = (1,) * (input.ndim - len(reps)) + reps
    return repeat(input, reps)
