"""``embedding_bag``: sums, means or maxima of bags of embedding rows, without building
the ``(n, embedding_dim)`` lookup of :func:`embedding` as a graph of its own.

The bag layout, the reduction and the index frequencies are kernels of
:mod:`nnkit.backends.bag_kernels`; the ``EmbeddingBag`` Op (forward one kernel) has a backward
written with Tensor ops (``index_select``/``index_add``), so double backward works. The
per-sample weights of the kept entries are gathered before the Op, so their gradient is
zero at padding entries and past the last offset.
"""

from __future__ import annotations

from nnkit.autograd.factories import arange
from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.counting import unique
from nnkit.autograd.ops.dim_index import index_add, index_select
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.statistics import norm
from nnkit.backends import bag_kernels as _k
from nnkit.backends import dtypes as _dt
from nnkit.backends.check_kernels import check_index_range

__all__ = ["embedding_bag"]

_MODES = ("sum", "mean", "max")


class _Layout(Op):
    """The kept positions and their bags (no gradient)."""

    @staticmethod
    def forward(ctx, indices, offsets, num_bags, padding_idx):
        return _k.bag_layout(indices, offsets, num_bags, padding_idx)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("embedding_bag: the bag layout is not differentiable")


class _Counts(Op):
    """Per-entry constants: ``1 / bag size`` (mean) or ``1 / frequency`` (no gradient)."""

    @staticmethod
    def forward(ctx, bag, indices, kept, num, dtype, what):
        if what == "mean":
            return _k.bag_mean_scale(bag, num, dtype)
        return _k.index_freq(indices, num, kept, dtype)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("embedding_bag: bag sizes are not differentiable")


class EmbeddingBag(Op):
    """``out[b] = reduce over kept p in bag b of scale[p] * weight[kept[p]]``."""

    @staticmethod
    def forward(ctx, weight, scale, kept, bag, freq, num_bags, mode):
        out, at = _k.bag_reduce(weight, kept, bag, scale, num_bags, mode)
        ctx.mode, ctx.num = mode, weight.shape[0]
        ctx.save_for_backward(weight, scale, kept, bag, freq, at)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        weight, scale, kept, bag, freq, at = ctx.saved_tensors
        num, dim = ctx.num, grad_output.shape[1]
        if ctx.mode == "max":
            flat = at.reshape(-1)
            hit = (flat >= 0).nonzero().reshape(-1)
            g = index_select(grad_output.reshape(-1), 0, hit)
            zeros = grad_output.new_zeros((num * dim,))
            gw = index_add(zeros, 0, index_select(flat, 0, hit), g).reshape(num, dim)
            return gw, None, None, None, None
        g_rows = index_select(grad_output, 0, bag)
        gw = gs = None
        if ctx.needs_input_grad[0]:
            rows = g_rows if scale is None else g_rows * scale.unsqueeze(1)
            if freq is not None:
                rows = rows * freq.unsqueeze(1)
            gw = index_add(grad_output.new_zeros((num, dim)), 0, kept, rows)
        if ctx.needs_input_grad[1]:
            gs = (g_rows * index_select(weight, 0, kept)).sum(1)
        return gw, gs, None, None, None


def _check_index(t, op, name):
    if t.dtype not in (_dt.int32, _dt.int64):
        raise TypeError(f"{op}: {name} must be an int32 or int64 tensor, got {t.dtype}")


def _renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, each row of ``weight`` named in ``indices`` whose
    ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm`` (torch's
    ``embedding_renorm_``: factor ``max_norm / (norm + 1e-7)``, in float64 as torch's
    double, then applied in the rows' arithmetic type: float32 for 16-bit rows)."""
    with no_grad():
        rows_idx = unique(indices.reshape(-1).long())
        rows = index_select(weight, 0, rows_idx)
        norms = norm(rows, float(norm_type), dim=1, keepdim=True).to(_dt.float64)
        factor = where(norms > max_norm, max_norm / (norms + 1e-7), norms.new_ones(()))
        math_dtype = rows.dtype if rows.dtype.itemsize >= 4 else _dt.float32
        weight[rows_idx] = rows.to(math_dtype) * factor.to(math_dtype)


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """Sums, means or maxima of bags of rows of ``weight``, one output row per bag.

    Args:
        input: integer indices: ``(B, L)`` (B bags of L indices) or 1-d with ``offsets``.
        weight: ``(num_embeddings, embedding_dim)``, floating point.
        offsets: 1-d start of each bag in a 1-d ``input`` (first 0, non-decreasing; a
            bag may be empty). None for a 2-d ``input``.
        max_norm: renormalise, in place, each row of ``weight`` named in ``input`` whose
            ``norm_type``-norm exceeds it (as torch, before the lookup).
        norm_type: the p of the norm for ``max_norm`` (default 2).
        scale_grad_by_freq: divide each row's gradient by its index's count in ``input``
            (not with ``'max'``; torch's CPU kernel can divide by another index's count).
        mode: ``'sum'``, ``'mean'`` (default) or ``'max'`` (column-wise).
        sparse: sparse gradients; nnkit has none, so True raises NotImplementedError.
        per_sample_weights: ``input``-shaped weights of the rows, ``'sum'`` only.
        include_last_offset: ``offsets`` has one more entry, the end of the last bag
            (CSR style: entries past it belong to no bag, as in torch's float32 sum).
        padding_idx: an index left out of its bags (and of the mean's count).

    Returns:
        ``(num_bags, embedding_dim)`` in ``weight``'s dtype; an empty bag gives zeros.

    Gradient: to ``weight`` (``'max'``: the bag's first maximum per column) and to
    ``per_sample_weights``; the padding row and entries past the last offset get zero.

    Example:
        >>> w = nnkit.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> F.embedding_bag(nnkit.tensor([0, 2, 1]), w, nnkit.tensor([0, 2]), mode="sum")
        tensor([[6.0, 8.0],
                [3.0, 4.0]])
    """
    op = "embedding_bag"
    check_tensor(input, op)
    check_tensor(weight, op, "weight")
    if per_sample_weights is not None:
        check_tensor(per_sample_weights, op, "per_sample_weights")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(
                f"{op}: per_sample_weights of shape {tuple(per_sample_weights.shape)} must "
                f"have the shape of input {tuple(input.shape)}"
            )
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-d, got {weight.ndim}-d")
    if not weight.dtype.is_floating_point:
        raise TypeError(f"{op}: weight must be floating point, got {weight.dtype}")
    _check_index(input, op, "input")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                f"{op}: offsets must be None for a 2-d input (bags of fixed length), "
                f"got {type(offsets).__name__}"
            )
        num_bags, length = input.shape
        offsets = arange(num_bags, device=input.device).mul(length)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError(f"{op}: offsets is required (a 1-d tensor) for a 1-d input")
        check_tensor(offsets, op, "offsets")
        if offsets.ndim != 1:
            raise ValueError(f"{op}: offsets must be a 1-d tensor, got {offsets.ndim}-d")
        _check_index(offsets, op, "offsets")
        if offsets.shape[0] == 0:
            raise ValueError(f"{op}: offsets must not be empty")
        num_bags = offsets.shape[0] - (1 if include_last_offset else 0)
    else:
        raise ValueError(f"{op}: input must be 1-d or 2-d, got {input.ndim}-d")
    if mode not in _MODES:
        raise ValueError(f"{op}: mode must be one of 'sum', 'mean' or 'max', got {mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError(f"{op}: max mode does not support scale_grad_by_freq")
    if sparse:
        raise NotImplementedError(
            f"{op}: sparse=True is not supported (nnkit has no sparse gradients); use sparse=False"
        )
    num, numel = weight.shape[0], input.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(
                f"{op}: padding_idx must be within -{num} and {num - 1}, got {padding_idx}"
            )
        padding_idx %= num
    check_index_range(
        input._impl.data, num, f"{op}: index {{bad}} out of range for {num} embeddings"
    )
    for name, t in (("input", input), ("offsets", offsets)):
        if t.device != weight.device:
            raise RuntimeError(
                f"{op}: {name} on {t.device} and weight on {weight.device}; expected one device"
            )
    _check_offsets(offsets, numel, op)
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"{op}: per_sample_weights is only supported for mode='sum' (got mode={mode!r})"
            )
        if per_sample_weights.dtype != weight.dtype:
            raise TypeError(
                f"{op}: per_sample_weights must have weight's dtype {weight.dtype}, got "
                f"{per_sample_weights.dtype}"
            )
    with no_grad():
        pos, bag = _Layout.apply(input, offsets, num_bags, padding_idx)
        kept = index_select(input, 0, pos)
        scale = freq = None
        if mode == "mean":
            scale = _Counts.apply(bag, None, None, num_bags, weight.dtype.np, "mean")
        if scale_grad_by_freq:
            freq = _Counts.apply(None, input, kept, num, weight.dtype.np, "freq")
    if per_sample_weights is not None:
        scale = index_select(per_sample_weights, 0, pos)
    return EmbeddingBag.apply(weight, scale, kept, bag, freq, num_bags=num_bags, mode=mode)


def _check_offsets(offsets, numel, op):
    if not offsets.shape[0]:
        return
    first, last = int(offsets[0].item()), int(offsets[-1].item())
    if first != 0:
        raise RuntimeError(
            f"{op}: offsets[0] has to be 0 (the first bag starts at position 0), got {first}"
        )
    if last > numel:
        raise RuntimeError(
            f"{op}: offsets[-1] can not be greater than input's length {numel}, got {last}"
        )
    if offsets.shape[0] > 1 and bool((offsets[1:] < offsets[:-1]).any().item()):
        raise RuntimeError(f"{op}: offsets must be non-decreasing, got {offsets.tolist()}")
