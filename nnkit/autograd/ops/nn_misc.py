"""Layer building blocks that are not a family of their own: linear, dropout,
embedding, padding and one-hot encoding.

``embedding`` is a dedicated Op (its backward masks ``padding_idx`` then adds rows
with ``index_add``); ``pad`` in constant mode is an Op whose backward is a slice;
reflect / replicate / circular padding gather with index tensors (so their backward
is ``index_add``). The rest is composed from tensor ops.
"""

from __future__ import annotations

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.indexing import index_add, index_select
from nnkit.autograd.ops.linalg import MatMul

__all__ = ["linear", "dropout", "dropout1d", "dropout2d", "embedding", "pad", "one_hot"]


def linear(input, weight, bias=None):
    """``y = x W^T + b`` over the last dimension of ``input``.

    Args:
        input: ``(*, in_features)``.
        weight: ``(out_features, in_features)``.
        bias: optional ``(out_features,)``.

    Returns:
        ``(*, out_features)``.

    Raises:
        ShapeError: if ``input``'s last dimension is not ``in_features``.

    Example:
        >>> linear(nnkit.ones(4, 3), nnkit.ones(2, 3)).shape
        (4, 2)
    """
    check_tensor(input, "linear")
    if weight.ndim != 2 or input.ndim < 1 or input.shape[-1] != weight.shape[1]:
        raise ShapeError(
            f"linear: input of shape {tuple(input.shape)} does not fit weight of "
            f"shape {tuple(weight.shape)} (expected input (*, "
            f"{weight.shape[-1]}))"
        )
    if weight.ndim == 2 and input.ndim == 2 and input.is_floating_point():
        # x @ W^T with the transpose as a flag: the weight's gradient, G^T @ x, comes out
        # in the weight's own (out, in) layout, with no transposed copy to make
        out = MatMul.apply(input, weight, tb=True)
    else:
        out = input @ weight.mT
    if bias is not None:
        if tuple(bias.shape) not in ((weight.shape[0],), ()):
            raise ShapeError(
                f"linear: bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}"
            )
        out = out + bias
    return out


def _dropout(input, p, training, mask_shape, op):
    from nnkit.autograd.tensor import Tensor
    from nnkit.random import default_generator

    check_tensor(input, op)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    mat = input._impl.data
    with no_grad():
        keep = type(mat).bernoulli(1.0 - p, mask_shape, mat.dtype, default_generator())
        mask = Tensor._from_mat(keep) * (1.0 / (1.0 - p))
    return input * mask


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Random draws come from nnkit's global generator (``nnkit.manual_seed``).

    Args:
        p: probability of zeroing an element, in ``[0, 1]``.
        training: when False, return ``input`` unchanged.
        inplace: accepted for torch compatibility; the result is always a new tensor.

    Raises:
        ValueError: if ``p`` is outside ``[0, 1]``.
    """
    return _dropout(input, p, training, tuple(input.shape), "dropout")


def _channel_dropout(input, p, training, nd, op):
    if input.ndim not in (nd + 1, nd + 2):
        raise ShapeError(
            f"{op}: expected a {nd + 1}-d or {nd + 2}-d input, got shape {tuple(input.shape)}"
        )
    lead = input.ndim - nd
    return _dropout(input, p, training, tuple(input.shape[:lead]) + (1,) * nd, op)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of ``(N, C, L)`` inputs with probability ``p``."""
    return _channel_dropout(input, p, training, 1, "dropout1d")


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero whole channels of ``(N, C, H, W)`` inputs with probability ``p``."""
    return _channel_dropout(input, p, training, 2, "dropout2d")


class Embedding(Op):
    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        ctx.num, ctx.padding_idx = weight.shape[0], padding_idx
        ctx.save_for_backward(indices)
        return weight.take(indices, 0)

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        idx = indices.reshape(-1)
        g = grad_output.reshape(-1, grad_output.shape[-1])
        if ctx.padding_idx is not None:
            g = g * (idx != ctx.padding_idx).unsqueeze(1).to(g.dtype)
        return index_add(g.new_zeros((ctx.num, g.shape[1])), 0, idx, g), None, None


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Look up rows of ``weight``: ``out[..., :] = weight[input[...], :]``.

    Args:
        input: integer tensor of indices, any shape.
        weight: ``(num_embeddings, embedding_dim)``.
        padding_idx: a row that receives no gradient (negative counts from the end).

    Returns:
        ``input.shape + (embedding_dim,)``.

    Raises:
        IndexError: for an index outside ``[0, num_embeddings)``.
        TypeError: for a non-integer ``input``.
    """
    check_tensor(input, "embedding")
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding: max_norm, scale_grad_by_freq and sparse are not supported"
        )
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise TypeError(f"embedding: indices must be an integer tensor, got {input.dtype}")
    if weight.ndim != 2:
        raise ShapeError(
            f"embedding: weight must be 2-d (num_embeddings, embedding_dim), got "
            f"shape {tuple(weight.shape)}"
        )
    num = weight.shape[0]
    if input.numel():
        lo, hi = int(input.min().item()), int(input.max().item())
        if lo < 0 or hi >= num:
            bad = lo if lo < 0 else hi
            raise IndexError(f"embedding: index {bad} out of range for {num} embeddings")
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(
                f"embedding: padding_idx {padding_idx} out of range for {num} embeddings"
            )
        padding_idx %= num
    return Embedding.apply(weight, input, padding_idx)


class ConstantPad(Op):
    @staticmethod
    def forward(ctx, x, widths, value):
        ctx.crop = tuple(slice(lo, lo + n) for (lo, _), n in zip(widths, x.shape))
        return x.pad(widths, value=value)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output[ctx.crop], None, None


def _gather_index(n, lo, hi, mode):
    """Source positions of a padded dimension of size ``n + lo + hi``."""
    pos = range(-lo, n + hi)
    if mode == "reflect":
        return [-j if j < 0 else (2 * (n - 1) - j if j >= n else j) for j in pos]
    if mode == "replicate":
        return [min(max(j, 0), n - 1) for j in pos]
    return [j % n for j in pos]  # circular


def pad(input, pad, mode: str = "constant", value=None):
    """Pad the last ``len(pad) // 2`` dimensions (torch order: last dimension first).

    ``pad = (left, right)`` pads the last dimension, ``(left, right, top, bottom)`` the
    last two, and so on. Negative amounts crop (constant mode).

    Args:
        mode: ``'constant'`` (fill with ``value``, default 0), ``'reflect'`` (mirror
            without repeating the edge), ``'replicate'`` (repeat the edge) or
            ``'circular'`` (wrap around).

    Raises:
        ValueError: for an odd-length ``pad``, too many dimensions, an unknown mode, or
            a reflect padding not smaller than the dimension.

    Example:
        >>> pad(nnkit.ones(1, 2), (1, 1)).tolist()
        [[0.0, 1.0, 1.0, 0.0]]
    """
    check_tensor(input, "pad")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(
            f"pad: padding {pad} must have an even length of at most "
            f"2 * ndim = {2 * input.ndim} (input shape {tuple(input.shape)})"
        )
    k = len(pad) // 2
    pairs = [(0, 0)] * (input.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
    if mode == "constant":
        crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(pairs, input.shape))
        if any(lo < 0 or hi < 0 for lo, hi in pairs):
            input = input[crop]
        widths = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pairs)
        return ConstantPad.apply(input, widths, 0.0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise ValueError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}"
        )
    out = input
    for d, (lo, hi) in enumerate(pairs):
        if not (lo or hi):
            continue
        n = input.shape[d]
        if (
            lo < 0
            or hi < 0
            or (mode == "reflect" and max(lo, hi) >= n)
            or (mode == "circular" and max(lo, hi) > n)
        ):
            raise ValueError(
                f"pad: {mode} padding ({lo}, {hi}) is invalid for dimension "
                f"{d} of size {n} (input shape {tuple(input.shape)})"
            )
        from nnkit.autograd.factories import tensor

        idx = tensor(_gather_index(n, lo, hi, mode), device=input.device)
        out = index_select(out, d, idx)
    return out


def one_hot(tensor, num_classes: int = -1):
    """``(*, num_classes)`` int64 tensor with a 1 at each index of ``tensor``.

    Raises:
        ValueError: for negative indices or one not below ``num_classes``.
    """
    from nnkit.autograd.factories import arange

    check_tensor(tensor, "one_hot")
    if tensor.dtype.is_floating_point:
        raise TypeError(f"one_hot: expected an integer tensor, got {tensor.dtype}")
    hi = int(tensor.max().item()) if tensor.numel() else -1
    if num_classes == -1:
        num_classes = hi + 1
    if tensor.numel() and (int(tensor.min().item()) < 0 or hi >= num_classes):
        raise ValueError(
            f"one_hot: class values must be in [0, {num_classes}), got "
            f"[{int(tensor.min().item())}, {hi}]"
        )
    with no_grad():
        classes = arange(num_classes, device=tensor.device)
        return (tensor.unsqueeze(-1) == classes).to("int64")
