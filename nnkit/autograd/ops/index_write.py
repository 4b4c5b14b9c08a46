"""Out-of-place writes by index under torch's names: ``take``, ``put``,
``index_fill``, ``index_copy``, ``scatter``, ``scatter_reduce`` (sum, mean, amax,
amin, prod), ``select_scatter``, ``slice_scatter``, ``masked_scatter``; and ``fill``,
``argwhere``, ``aminmax``.

The writes are compositions of :func:`scatter_add`, :func:`index_put`, :func:`where`
and gathers, so gradients flow to the written values (gathered back) and to the input
where it is kept. ``scatter_reduce``'s ``amax``/``amin``/``prod`` compute the values with
one kernel (:mod:`nnkit.backends.extra_kernels`) and give torch's gradients: ``amax`` and
``amin`` share ``g`` evenly among the elements equal to the result, ``prod`` gives each
factor ``g`` times the product of the others (zeros included; its second derivative
is refused).
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor, is_scalar, wrap_dim
from nnkit.autograd.ops.arrange import broadcast_tensors
from nnkit.autograd.ops.indexing import gather, index_put
from nnkit.autograd.ops.selection import where
from nnkit.backends import extra_kernels as _k

__all__ = [
    "take",
    "put",
    "index_fill",
    "index_copy",
    "scatter",
    "scatter_reduce",
    "select_scatter",
    "slice_scatter",
    "masked_scatter",
    "fill",
    "argwhere",
    "aminmax",
]

_REDUCES = ("sum", "mean", "amax", "amin", "prod")


def take(input, index):
    """The elements of the flattened ``input`` at ``index`` (an integer tensor of any
    shape; negatives count from the end): shape ``index.shape``.

    Example:
        >>> nnkit.take(nnkit.tensor([[1, 2], [3, 4]]), nnkit.tensor([0, 3]))
        tensor([1, 4])
    """
    check_tensor(input, "take")
    check_tensor(index, "take", "index")
    return input.reshape(-1)[index]


def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source`` written (added with ``accumulate``) at the
    flat positions ``index``.

    Example:
        >>> nnkit.put(nnkit.zeros(2, 2), nnkit.tensor([0, 3]), nnkit.tensor([1.0, 2.0]))
        tensor([[1.0, 0.0],
                [0.0, 2.0]])
    """
    check_tensor(input, "put")
    check_tensor(index, "put", "index")
    check_tensor(source, "put", "source")
    flat = input.reshape(-1)
    out = index_put(flat, (index.reshape(-1),), source.reshape(-1), accumulate)
    return out.reshape(*input.shape)


def _dim_mask(input, dim, index, op):
    """A bool tensor that is True along ``dim`` at the positions ``index`` names."""
    d = wrap_dim(dim, input.ndim, op)
    n = input.shape[d] if input.ndim else 1
    idx = index.reshape(-1)
    with no_grad():
        idx = where(idx < 0, idx + n, idx)
        pos = idx.new_tensor(list(range(n)))
        hit = (pos.unsqueeze(1) == idx.unsqueeze(0)).any(1)
    shape = [1] * input.ndim
    if input.ndim:
        shape[d] = n
    return hit.reshape(*shape), d, idx


def index_fill(input, dim, index, value):
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value`` (a
    number or a 0-d tensor, which receives the summed gradient of those slices).

    Example:
        >>> nnkit.index_fill(nnkit.zeros(2, 3), 1, nnkit.tensor([0, 2]), 5.0)
        tensor([[5.0, 0.0, 5.0],
                [5.0, 0.0, 5.0]])
    """
    check_tensor(input, "index_fill")
    check_tensor(index, "index_fill", "index")
    if not is_scalar(value) and check_tensor(value, "index_fill", "value").ndim != 0:
        raise ValueError(f"index_fill: value must be a number or a 0-d tensor, got {value.shape}")
    mask, _, _ = _dim_mask(input, dim, index, "index_fill")
    if not is_scalar(value):
        value = value.to(input.dtype)
    return where(mask, value, input)


def index_copy(input, dim, index, source):
    """A copy of ``input`` whose slice ``index[i]`` along ``dim`` is ``source``'s slice
    ``i`` (the last one wins for repeated indices).

    Example:
        >>> nnkit.index_copy(nnkit.zeros(3), 0, nnkit.tensor([2, 0]), nnkit.tensor([1.0, 2.0]))
        tensor([2.0, 0.0, 1.0])
    """
    check_tensor(input, "index_copy")
    check_tensor(index, "index_copy", "index")
    check_tensor(source, "index_copy", "source")
    mask, d, idx = _dim_mask(input, dim, index, "index_copy")
    if input.ndim == 0:
        return where(mask.reshape(()), source.reshape(()), input)
    n = input.shape[d]
    src_of = [0] * n
    for i, j in enumerate(idx.tolist()):
        src_of[j] = i
    picked = source.index_select(d, idx.new_tensor(src_of))
    return where(mask, picked, input)


def _ones_like_index(index, like):
    return index.to(like.dtype) * 0 + 1


def _narrow_to(src, index):
    return src[tuple(slice(0, s) for s in index.shape)] if src.shape != index.shape else src


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """A copy of ``input`` with ``src`` (or the number ``value``) written at ``index``
    along ``dim``: ``out[..., index[i, j], ...] = src[i, j]`` (``src`` is read over
    ``index``'s shape). ``reduce="add"`` adds instead (``"multiply"`` is refused).
    Repeated indices: torch leaves the winner unspecified; nnkit requires none.

    Example:
        >>> nnkit.scatter(nnkit.zeros(3), 0, nnkit.tensor([2, 0]), nnkit.tensor([1.0, 2.0]))
        tensor([2.0, 0.0, 1.0])
    """
    check_tensor(input, "scatter")
    check_tensor(index, "scatter", "index")
    if src is None:
        src = value
    if is_scalar(src):
        src = input.new_full(index.shape, src)
    src = _narrow_to(check_tensor(src, "scatter", "src"), index).to(input.dtype)
    zeros = input.new_zeros(input.shape)
    if reduce == "add":
        return input + zeros.scatter_add(dim, index, src)
    if reduce is not None:
        raise NotImplementedError(f"scatter: reduce={reduce!r} is not supported (only 'add')")
    with no_grad():
        hits = zeros.scatter_add(dim, index, _ones_like_index(index, zeros))
        if bool((hits > 1).any()):
            raise ValueError("scatter: index repeats a position (the result would be unspecified)")
    return where(hits > 0, zeros.scatter_add(dim, index, src), input)


class _ScatterReduce(Op):
    @staticmethod
    def forward(ctx, input, index, src, dim, reduce, include_self):
        return _k.scatter_reduce(input, dim, index, src, reduce, include_self)

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("_ScatterReduce runs under no_grad")


class _RefuseSecond(Op):
    """Identity on ``x`` in a backward graph, attached to ``anchor`` (so that the result
    depends on the op's input) and whose own derivative is refused."""

    @staticmethod
    def forward(ctx, x, anchor):
        return x.copy()

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError(
            "scatter_reduce: the second derivative of reduce='prod' is not supported"
        )


class _Weighted(Op):
    """``x * w`` with ``w`` a constant (``prod``'s weights): a second derivative would
    need ``w``'s own, so it is refused rather than silently 0."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x.mul(w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return _RefuseSecond.apply(g * w, x), None  # x: keeps the result on the graph


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with the ``src`` values at ``index`` along ``dim`` reduced into it by
    ``reduce`` (``"sum"``, ``"mean"``, ``"amax"``, ``"amin"`` or ``"prod"``), together
    with the original value unless ``include_self=False``; untouched positions keep
    ``input``. Integer ``mean`` rounds down, as torch.

    Example:
        >>> nnkit.scatter_reduce(nnkit.tensor([1.0, 5.0]), 0, nnkit.tensor([0, 0, 1]),
        ...                      nnkit.tensor([3.0, 2.0, 4.0]), "amax")
        tensor([3.0, 5.0])
    """
    check_tensor(input, "scatter_reduce")
    check_tensor(index, "scatter_reduce", "index")
    check_tensor(src, "scatter_reduce", "src")
    if reduce not in _REDUCES:
        raise ValueError(f"scatter_reduce: reduce must be one of {_REDUCES}, got {reduce!r}")
    if input.ndim == 0:
        out = scatter_reduce(
            input.reshape(1),
            0,
            index.reshape(-1),
            src.reshape(-1),
            reduce,
            include_self=include_self,
        )
        return out.reshape(())
    src = _narrow_to(src, index)
    d = wrap_dim(dim, input.ndim, "scatter_reduce")
    with no_grad():
        out = _ScatterReduce.apply(input, index, src, d, reduce, include_self)
        hits = input.new_zeros(input.shape).scatter_add(d, index, _ones_like_index(index, input))
        keep = (hits == 0) if not include_self else (hits >= 0)
    if not (input.dtype.is_floating_point and (input.requires_grad or src.requires_grad)):
        return out
    zeros = input.new_zeros(input.shape)
    src = src.to(input.dtype)
    if reduce in ("sum", "mean"):
        total = where(keep, input, 0.0) + zeros.scatter_add(d, index, src)
        if reduce == "sum":
            return total
        count = hits + keep.to(hits.dtype)
        return where(count > 0, total / where(count > 0, count, 1.0), input)
    w = out.detach()
    if reduce == "prod":  # each factor gets g * (the product of the other factors)
        xs, ss = input.detach(), src.detach()
        with no_grad():
            xz, sz = keep & (xs == 0), ss == 0
            nz = _ScatterReduce.apply(
                where(xz | ~keep, 1.0, xs), index, where(sz, 1.0, ss), d, "prod", True
            )
            zc = xz.to(xs.dtype) + zeros.scatter_add(d, index, sz.to(xs.dtype))
            x_others = where(zc - xz.to(xs.dtype) == 0, nz / where(xz, 1.0, xs), 0.0)
            nz_s, zc_s = gather(nz, d, index), gather(zc, d, index)
            s_others = where(zc_s - sz.to(ss.dtype) == 0, nz_s / where(sz, 1.0, ss), 0.0)
        diff = where(keep, _Weighted.apply(input - xs, x_others), 0.0)
        sdiff = _Weighted.apply(src - ss, s_others)
        return out + diff + zeros.scatter_add(d, index, sdiff)
    with no_grad():  # amax / amin: g shared evenly among the elements equal to the result
        self_hit = keep & (input == w)
        src_hit = src == gather(w, d, index)
        n = self_hit.to(w.dtype) + zeros.scatter_add(d, index, src_hit.to(w.dtype))
        n = where(n > 0, n, 1.0)
    diff = where(self_hit, (input - input.detach()) / n, 0.0)
    sw = where(src_hit, (src - src.detach()) / gather(n, d, index), 0.0)
    return out + diff + zeros.scatter_add(d, index, sw)


def select_scatter(input, src, dim, index):
    """A copy of ``input`` with its slice ``index`` along ``dim`` replaced by ``src``.

    Example:
        >>> nnkit.select_scatter(nnkit.zeros(2, 2), nnkit.tensor([1.0, 2.0]), 0, 1)
        tensor([[0.0, 0.0],
                [1.0, 2.0]])
    """
    check_tensor(input, "select_scatter")
    check_tensor(src, "select_scatter", "src")
    d = wrap_dim(dim, input.ndim, "select_scatter")
    mask, _, _ = _dim_mask(input, d, input.new_tensor([index]).long(), "select_scatter")
    return where(mask, src.unsqueeze(d).to(input.dtype), input)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with ``input[start:end:step]`` along ``dim`` replaced by
    ``src`` (which has that slice's shape).

    Example:
        >>> nnkit.slice_scatter(nnkit.zeros(4), nnkit.tensor([1.0, 2.0]), 0, 0, 4, 2)
        tensor([1.0, 0.0, 2.0, 0.0])
    """
    check_tensor(input, "slice_scatter")
    check_tensor(src, "slice_scatter", "src")
    d = wrap_dim(dim, input.ndim, "slice_scatter")
    n = input.shape[d]
    positions = list(range(n))[slice(start, end, step)]
    if not positions:
        return input.clone()
    src_of = [0] * n
    for i, j in enumerate(positions):
        src_of[j] = i
    pos = input.new_tensor(positions).long()
    mask, _, _ = _dim_mask(input, d, pos, "slice_scatter")
    picked = src.to(input.dtype).index_select(d, pos.new_tensor(src_of))
    return where(mask, picked, input)


def masked_scatter(input, mask, source):
    """A copy of ``input`` with the positions where ``mask`` (broadcast) is True filled,
    in row-major order, with consecutive elements of ``source``.

    Example:
        >>> nnkit.masked_scatter(nnkit.zeros(3), nnkit.tensor([True, False, True]),
        ...                      nnkit.tensor([1.0, 2.0]))
        tensor([1.0, 0.0, 2.0])
    """
    check_tensor(input, "masked_scatter")
    check_tensor(mask, "masked_scatter", "mask")
    check_tensor(source, "masked_scatter", "source")
    if mask.dtype.name != "bool":
        raise TypeError(f"masked_scatter: mask must be a bool tensor, got {mask.dtype}")
    x, m = broadcast_tensors(input, mask)
    with no_grad():
        order = m.reshape(-1).long().cumsum(0) - 1
        count = int(m.sum())
    if count > source.numel():
        raise ValueError(
            f"masked_scatter: mask selects {count} positions, source has {source.numel()}"
        )
    flat = source.reshape(-1)[order.clamp(min=0)].reshape(*x.shape)
    return where(m, flat.to(x.dtype), x)


def fill(input, value):
    """A tensor of ``input``'s shape and dtype filled with ``value`` (a number or a 0-d
    tensor, which receives the summed gradient); ``input`` gets none.

    Example:
        >>> nnkit.fill(nnkit.zeros(2), 3.0)
        tensor([3.0, 3.0])
    """
    check_tensor(input, "fill")
    if is_scalar(value):
        return input.new_full(input.shape, value)
    if check_tensor(value, "fill", "value").ndim != 0:
        raise ValueError(f"fill: value must be a number or a 0-d tensor, got {value.shape}")
    return value.to(input.dtype).expand(*input.shape).clone()


def argwhere(input):
    """The indices of the non-zero elements, one row each: ``(n, input.ndim)`` int64.

    Example:
        >>> nnkit.argwhere(nnkit.tensor([[0, 1], [2, 0]]))
        tensor([[0, 1],
                [1, 0]])
    """
    return check_tensor(input, "argwhere").nonzero()


def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` of ``input`` (over ``dim``, or all elements), as ``amin``/``amax``.

    Example:
        >>> nnkit.aminmax(nnkit.tensor([3.0, 1.0, 2.0]))
        (tensor(1.0), tensor(3.0))
    """
    check_tensor(input, "aminmax")
    if dim is None and input.ndim and keepdim:
        dims = tuple(range(input.ndim))
        return input.amin(dims, keepdim=True), input.amax(dims, keepdim=True)
    return input.amin(dim, keepdim=keepdim), input.amax(dim, keepdim=keepdim)
