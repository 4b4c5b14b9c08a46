"""Shape ops: views (reshape, permute, expand, ...), joining and splitting, casts.

View ops return tensors over the same Storage as their input (no copy); their
backward maps the gradient back through the inverse view.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.ops._util import check_tensor, norm_dims, wrap_dim
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
    "movedim",
    "repeat",
    "cat",
    "concat",
    "stack",
    "split",
    "chunk",
    "unbind",
    "flip",
    "clone",
    "contiguous",
    "cast",
    "broadcast_shapes",
    "atleast_2d",
]


def broadcast_shapes(*shapes) -> tuple:
    """The shape NumPy-style broadcasting gives ``shapes``.

    Raises:
        ShapeError: if the shapes do not broadcast.
    """
    ndim = max(len(s) for s in shapes)
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


def sum_to(x, shape):
    """Sum ``x`` over broadcast dimensions so that it has ``shape``.

    The inverse of broadcasting, used by every binary op's backward to bring a
    gradient back to its input's shape. Returns ``x`` itself when shapes match.
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


def expand(x, *shape):
    """A broadcast view of ``x`` at ``shape`` (``-1`` keeps a dimension); no copy.

    Raises:
        ShapeError: if a non-singleton dimension would change size.
    """
    shape = _shape_arg(shape)
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
    return expand(x, other.shape)


def broadcast_to(x, shape):
    return expand(x, tuple(shape))


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def _infer_shape(shape: tuple, numel: int, op: str) -> tuple:
    if shape.count(-1) > 1:
        raise ShapeError(f"{op}: only one dimension can be inferred (-1), got {shape}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise ShapeError(f"{op}: shape {shape} is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise ShapeError(f"{op}: shape {shape} is invalid for input of size {numel}")
    return shape


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


def reshape(x, *shape):
    """``x`` with a new shape (one dimension may be ``-1``): a view when possible."""
    shape = _infer_shape(_shape_arg(shape), x.numel(), "reshape")
    if shape == x.shape:
        return x
    return Reshape.apply(x, shape, False)


def view(x, *shape):
    """Like :func:`reshape`, but never copies: raises if the strides do not allow a view."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return cast(x, _dt.to_dtype(shape[0]))
    shape = _infer_shape(_shape_arg(shape), x.numel(), "view")
    return Reshape.apply(x, shape, True)


def flatten(x, start_dim: int = 0, end_dim: int = -1):
    """Merge dimensions ``start_dim``..``end_dim`` into one."""
    if x.ndim == 0:
        return reshape(x, (1,))
    s = wrap_dim(start_dim, x.ndim, "flatten")
    e = wrap_dim(end_dim, x.ndim, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = x.shape[:s] + (math.prod(x.shape[s : e + 1]),) + x.shape[e + 1 :]
    return reshape(x, shape)


def unflatten(x, dim: int, sizes):
    d = wrap_dim(dim, x.ndim, "unflatten")
    return reshape(x, x.shape[:d] + tuple(sizes) + x.shape[d + 1 :])


def squeeze(x, dim=None):
    """Drop dimensions of size 1 (all of them, or those in ``dim``)."""
    if dim is None:
        dims = [k for k, n in enumerate(x.shape) if n == 1]
    else:
        dims = norm_dims(dim, x.ndim, "squeeze")  # checks dim (0 and -1 for a 0-d tensor)
        dims = [d for d in dims if x.ndim and x.shape[d] == 1]
    return reshape(x, tuple(n for k, n in enumerate(x.shape) if k not in dims))


def unsqueeze(x, dim: int):
    """Insert a dimension of size 1 at ``dim``."""
    s = x._impl.data.shape
    d = wrap_dim(dim, len(s) + 1, "unsqueeze")
    return Reshape.apply(x, s[:d] + (1,) + s[d:], False)  # a valid shape by construction


def atleast_2d(x):
    while x.ndim < 2:
        x = unsqueeze(x, 0)
    return x


class Permute(Op):
    _view_op = True  # the output may view the input's memory

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, grad_output):
        inv = [0] * len(ctx.dims)
        for k, d in enumerate(ctx.dims):
            inv[d] = k
        return permute(grad_output, tuple(inv)), None


def permute(x, *dims):
    """A view of ``x`` with its dimensions reordered."""
    dims = _shape_arg(dims)
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
    """A view of ``x`` with dimensions ``dim0`` and ``dim1`` swapped."""
    a, b = wrap_dim(dim0, x.ndim, "transpose"), wrap_dim(dim1, x.ndim, "transpose")
    if x.ndim == 0:  # only dims 0 and -1 exist (as in torch)
        return x
    dims = list(range(x.ndim))
    dims[a], dims[b] = dims[b], dims[a]
    return permute(x, tuple(dims))


swapaxes = transpose


def movedim(x, source, destination):
    """Move dimension(s) ``source`` to ``destination`` (ints or sequences): a view."""
    if not (isinstance(source, int) and isinstance(destination, int)):
        from nnkit.autograd.ops.shaping import moveaxis

        return moveaxis(x, source, destination)
    s, d = wrap_dim(source, x.ndim, "movedim"), wrap_dim(destination, x.ndim, "movedim")
    dims = [k for k in range(x.ndim) if k != s]
    dims.insert(d, s)
    return permute(x, tuple(dims))


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
    """Tile ``x``: ``sizes[k]`` copies along dimension ``k`` (as ``torch.Tensor.repeat``)."""
    sizes = _shape_arg(sizes)
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
    from nnkit.autograd.ops.indexing import getitem

    return getitem(x, (slice(None),) * dim + (slice(start, start + length),))


def cat(tensors, dim: int = 0):
    """Concatenate tensors along an existing dimension.

    Raises:
        ShapeError: if the tensors differ in a dimension other than ``dim``.
        TypeError: if their dtypes differ.
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
    dtype = _dt.to_dtype(type(ref._impl.data).result_type(*[t._impl.data.dtype for t in tensors]))
    tensors = [t if t.dtype == dtype else cast(t, dtype) for t in tensors]
    return Cat.apply(d, *tensors)


concat = cat


def stack(tensors, dim: int = 0):
    """Join tensors of equal shape along a new dimension ``dim``."""
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
    """Split into chunks of ``split_size`` (last may be smaller) or the given sizes (views)."""
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
    """Split into ``chunks`` nearly equal pieces (the last may be smaller)."""
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    n = x.shape[wrap_dim(dim, x.ndim, "chunk")]
    return split(x, max(1, -(-n // chunks)), dim)


def unbind(x, dim: int = 0):
    """The slices of ``x`` along ``dim``, as a tuple (views)."""
    from nnkit.autograd.ops.indexing import getitem

    d = wrap_dim(dim, x.ndim, "unbind")
    return tuple(getitem(x, (slice(None),) * d + (k,)) for k in range(x.shape[d]))


class Flip(Op):
    _view_op = True  # the output may view the input's memory

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.flip(dims)

    @staticmethod
    def backward(ctx, grad_output):
        return flip(grad_output, ctx.dims), None


def flip(x, dims):
    """Reverse the order of elements along ``dims``."""
    dims = norm_dims(dims if isinstance(dims, (list, tuple)) else (dims,), x.ndim, "flip")
    return Flip.apply(x, dims if x.ndim else ())


class Clone(Op):
    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


def clone(x):
    """A copy of ``x`` with its own memory; gradients flow through it."""
    return Clone.apply(x)


def contiguous(x):
    """``x`` itself if C-contiguous, else a contiguous copy."""
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
    """``x`` converted to ``dtype`` (differentiable between floating dtypes)."""
    dtype = _dt.to_dtype(dtype)
    if x.dtype == dtype:
        return x
    return Cast.apply(x, dtype)
