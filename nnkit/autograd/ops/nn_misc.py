"""Layer building blocks that are not a family of their own: linear, dropout,
embedding, padding and one-hot encoding.

``embedding`` is a dedicated Op (its backward masks ``padding_idx``, scales by
``1 / count`` for ``scale_grad_by_freq``, then adds rows with ``index_add``); ``pad``
in constant mode is an Op whose backward is a slice; reflect / replicate / circular
padding gather with index tensors (so their backward is ``index_add``). The rest is
composed from tensor ops.
"""

from __future__ import annotations

from nnkit.autograd.factories import arange, tensor
from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_same_dtype, check_tensor
from nnkit.autograd.ops.dim_index import index_add, index_select
from nnkit.autograd.ops.embedding_bag import _renorm_
from nnkit.autograd.ops.inplace import apply_inplace
from nnkit.autograd.ops.linalg import MatMul
from nnkit.backends import dtypes as _dt
from nnkit.backends.check_kernels import check_index_range
from nnkit.backends.linear_kernels import linear_backward, linear_forward
from nnkit.random import default_generator

__all__ = ["linear", "dropout", "dropout1d", "dropout2d", "embedding", "pad", "one_hot"]


def linear(input, weight, bias=None):
    """Affine map over the last dimension: ``y = x W^T + b``.

    Args:
        input: ``(*, in_features)``.
        weight: ``(out_features, in_features)``.
        bias: optional ``(out_features,)``.

    Returns:
        ``(*, out_features)``.

    Gradient: ``g W`` for the input, ``g^T x`` (summed over the leading dimensions) for
    the weight, the sum of ``g`` for the bias.

    Raises:
        ShapeError: if ``input``'s last dimension is not ``in_features``.
        RuntimeError: if ``weight`` or ``bias`` has another dtype than ``input``.

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0, 3.0]])
        >>> w = nnkit.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5]])
        >>> F.linear(x, w, nnkit.tensor([0.0, 1.0]))
        tensor([[1.0, 4.0]])
    """
    check_tensor(input, "linear")
    if weight.ndim != 2 or input.ndim < 1 or input.shape[-1] != weight.shape[1]:
        raise ShapeError(
            f"linear: input of shape {tuple(input.shape)} does not fit weight of "
            f"shape {tuple(weight.shape)} (expected input (*, "
            f"{weight.shape[-1]}))"
        )
    check_same_dtype("linear", input, weight, "weight")
    if bias is not None:
        check_same_dtype("linear", input, bias, "bias")
    if bias is not None and tuple(bias.shape) not in ((weight.shape[0],), ()):
        raise ShapeError(
            f"linear: bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}"
        )
    if input.ndim >= 2 and input.is_floating_point() and (bias is None or bias.ndim == 1):
        # one GEMM each way over the leading dimensions folded into rows (a batched
        # matmul would broadcast W and sum the weight's gradient over a (*, out, in)
        # stack), the bias added in place into the fresh product
        return Linear.apply(input, weight, bias)
    out = input @ weight.mT
    return out if bias is None else out + bias


class Linear(Op):
    """``x W^T + b`` for a floating ``x`` of 2 or more dimensions and a ``(out,)`` bias
    (or None): one GEMM over the folded leading dimensions whose fresh output takes the
    bias in place (see :mod:`nnkit.backends.linear_kernels`). Backward: ``G W``, ``G^T
    x`` (in the weight's own layout) and the column sums of ``G`` in one kernel (its
    ``backward_mat``), or with ``create_graph`` with MatMul and sum ops (double backward)."""

    @staticmethod
    def forward(ctx, x, w, b):
        y, x1 = linear_forward(x, w, b)
        ctx.save_for_backward(x, w, x1)
        return y

    @staticmethod
    def backward(ctx, grad_output):  # recorded: MatMul and sum ops (double backward)
        x, w, _ = ctx.saved_tensors
        n = ctx.needs_input_grad
        g = grad_output.reshape(-1, w.shape[0])
        x2 = x.reshape(-1, w.shape[1])
        gx = MatMul.apply(g, w).reshape(x.shape) if n[0] else None
        gw = MatMul.apply(g, x2, ta=True) if n[1] else None
        return gx, gw, (g.sum(0) if n[2] else None)

    @staticmethod
    def backward_mat(ctx, g):  # not recorded: the one backward kernel
        x, w, x1 = ctx.saved_mats
        return linear_backward(g, x, w, ctx.needs_input_grad[:3], x1)


class DropoutMul(Op):
    """``x * mask`` for a constant (scaled keep-) ``mask`` Mat, broadcasting: saves only
    the mask, so in-place dropout keeps no copy of ``x``'s old value."""

    @staticmethod
    def forward(ctx, x, mask):
        ctx.save_for_backward(mask)
        return x.mul(mask)

    @staticmethod
    def backward(ctx, grad_output):
        (mask,) = ctx.saved_tensors
        return grad_output * mask, None


def _dropout(input, p, training, mask_shape, op, inplace=False):
    check_tensor(input, op)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    mat = input._impl.data
    if p == 1.0:  # x * 0, not zeros: NaN stays NaN, as in PyTorch
        mask = type(mat).scalar(0.0, mat.dtype)
    else:
        if mat.dtype.kind != "f":  # the scaled mask is float (PyTorch refuses likewise)
            raise RuntimeError(f"{op}: expected a floating point input, got {input.dtype}")
        keep = type(mat).bernoulli(1.0 - p, mask_shape, mat.dtype, default_generator())
        mask = keep.mul(type(mat).scalar(1.0 / (1.0 - p), mat.dtype))
    if inplace:  # written into input through the in-place machinery (version, graph)
        return apply_inplace(
            input,
            f"{op}(inplace=True)",
            lambda old: DropoutMul.apply(old, mask),
            lambda m: m.imul(mask),
        )
    return DropoutMul.apply(input, mask)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``, so
    the expected value is unchanged.

    Random draws come from nnkit's global generator (see :func:`nnkit.manual_seed`).

    Args:
        input: the input tensor.
        p: the probability of zeroing, in ``[0, 1]`` (default 0.5).
        training: when False, return ``input`` itself (evaluation mode).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape (``input`` itself when not training, ``p == 0`` or
        ``inplace``).

    Gradient: the same mask and scale applied to the incoming gradient.

    Raises:
        ValueError: if ``p`` is outside ``[0, 1]``.
        RuntimeError: for an integer or bool ``input`` with ``0 < p < 1`` (as PyTorch).

    Example:
        >>> y = F.dropout(nnkit.ones(8), p=0.5)
        >>> sorted(set(y.tolist())) in ([0.0, 2.0], [0.0], [2.0])
        True
        >>> F.dropout(nnkit.ones(3), p=0.5, training=False)
        tensor([1.0, 1.0, 1.0])
    """
    return _dropout(input, p, training, tuple(input.shape), "dropout", inplace)


def _channel_dropout(input, p, training, nd, op, inplace):
    if input.ndim not in (nd + 1, nd + 2):
        raise ShapeError(
            f"{op}: expected a {nd + 1}-d or {nd + 2}-d input, got shape {tuple(input.shape)}"
        )
    lead = input.ndim - nd
    return _dropout(input, p, training, tuple(input.shape[:lead]) + (1,) * nd, op, inplace)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout: zero whole channels of ``(N, C, L)`` (or ``(C, L)``) inputs with
    probability ``p``, scaling the others by ``1 / (1 - p)``.

    Args:
        input: a 2-d or 3-d tensor.
        p: the probability of zeroing, in ``[0, 1]`` (default 0.5).
        training: when False, return ``input`` itself (evaluation mode).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape; each ``(n, c)`` row is all zero or all scaled.

    Gradient: the same mask and scale applied to the incoming gradient.

    Raises:
        ShapeError: for another number of dimensions.

    Example:
        >>> y = F.dropout1d(nnkit.ones(2, 4, 3), p=0.5)
        >>> bool(((y == 0).all(-1) | (y == 2).all(-1)).all())
        True
    """
    return _channel_dropout(input, p, training, 1, "dropout1d", inplace)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout: zero whole channels of ``(N, C, H, W)`` (or ``(C, H, W)``) inputs
    with probability ``p``, scaling the others by ``1 / (1 - p)``.

    Args:
        input: a 3-d or 4-d tensor.
        p: the probability of zeroing, in ``[0, 1]`` (default 0.5).
        training: when False, return ``input`` itself (evaluation mode).
        inplace: write the result into ``input`` and return ``input`` itself (its
            version bumped; refused for a leaf that requires grad while recording).

    Returns:
        A tensor of ``input``'s shape; each ``(n, c)`` feature map is all zero or all
        scaled.

    Gradient: the same mask and scale applied to the incoming gradient.

    Raises:
        ShapeError: for another number of dimensions.

    Example:
        >>> F.dropout2d(nnkit.ones(1, 2, 2, 2), p=0.0).shape
        (1, 2, 2, 2)
    """
    return _channel_dropout(input, p, training, 2, "dropout2d", inplace)


class Embedding(Op):
    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq=False):
        ctx.num, ctx.padding_idx = weight.shape[0], padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        ctx.save_for_backward(indices)
        return weight.take(indices, 0)

    @staticmethod
    def backward(ctx, grad_output):
        (indices,) = ctx.saved_tensors
        idx = indices.reshape(-1)
        g = grad_output.reshape(-1, grad_output.shape[-1])
        if ctx.padding_idx is not None:
            g = g * (idx != ctx.padding_idx).unsqueeze(1).to(g.dtype)
        if ctx.scale_grad_by_freq:
            # as torch: each entry times 1 / (its index's count), the reciprocal in float64
            ones = g.new_ones(idx.shape, dtype=_dt.float64)
            counts = index_add(ones.new_zeros((ctx.num,)), 0, idx, ones)
            g = g * (1.0 / index_select(counts, 0, idx)).to(g.dtype).unsqueeze(1)
        return index_add(g.new_zeros((ctx.num, g.shape[1])), 0, idx, g), None, None, None


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
        input: an integer tensor of indices in ``[0, num_embeddings)``, any shape.
        weight: ``(num_embeddings, embedding_dim)``.
        padding_idx: a row that receives no gradient (negative counts from the end).
        max_norm: if given, first rescale, in place and without gradient, each row of
            ``weight`` named in ``input`` whose ``norm_type``-norm exceeds it, by
            ``max_norm / (norm + 1e-7)`` (torch's ``embedding_renorm_``).
        norm_type: the p of that norm (default 2; ``inf`` allowed).
        scale_grad_by_freq: divide each row's gradient by its index's count in ``input``.
        sparse: sparse gradients; nnkit has none, so True raises NotImplementedError.

    Returns:
        ``input.shape + (embedding_dim,)``.

    Gradient: each looked-up row of ``weight`` accumulates its incoming gradients
    (``index_add``); nothing flows to ``input`` nor through the ``max_norm`` rescaling.

    Raises:
        IndexError: for an index outside ``[0, num_embeddings)``.
        TypeError: for a non-integer ``input``.

    Example:
        >>> w = nnkit.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]])
        >>> F.embedding(nnkit.tensor([2, 0, 2]), w)
        tensor([[3.0, 4.0],
                [0.0, 0.0],
                [3.0, 4.0]])
        >>> F.embedding(nnkit.tensor([2]), w, max_norm=1.0)  # w[2] is rescaled too
        tensor([[0.6000, 0.8000]])
    """
    check_tensor(input, "embedding")
    if sparse:
        raise NotImplementedError(
            "embedding: sparse=True is not supported (nnkit has no sparse gradients); "
            "use sparse=False"
        )
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise TypeError(f"embedding: indices must be an integer tensor, got {input.dtype}")
    if weight.ndim != 2:
        raise ShapeError(
            f"embedding: weight must be 2-d (num_embeddings, embedding_dim), got "
            f"shape {tuple(weight.shape)}"
        )
    num = weight.shape[0]
    # a kernel, not a read into Python: compiled steps check at every replay
    check_index_range(
        input._impl.data, num, f"embedding: index {{bad}} out of range for {num} embeddings"
    )
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise ValueError(
                f"embedding: padding_idx {padding_idx} out of range for {num} embeddings"
            )
        padding_idx %= num
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return Embedding.apply(weight, input, padding_idx, bool(scale_grad_by_freq))


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
    """Pad the last ``len(pad) // 2`` dimensions (PyTorch's order: last dimension first).

    ``pad = (left, right)`` pads the last dimension, ``(left, right, top, bottom)`` the
    last two, and so on. Negative amounts crop (in every mode, as torch).

    Args:
        input: the input tensor.
        pad: an even-length sequence of ints.
        mode: ``'constant'`` (fill with ``value``), ``'reflect'`` (mirror without
            repeating the edge), ``'replicate'`` (repeat the edge) or ``'circular'``
            (wrap around).
        value: the fill value of constant mode (default 0).

    Returns:
        ``input`` with each padded dimension grown by its two amounts.

    Gradient: the incoming gradient cropped back (constant), or summed onto the source
    positions the padding copied (other modes).

    Raises:
        ValueError: for an odd-length ``pad``, too many dimensions, an unknown mode, or
            a reflect padding not smaller than the dimension.

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0, 3.0]])
        >>> F.pad(x, (1, 2))
        tensor([[0.0, 1.0, 2.0, 3.0, 0.0, 0.0]])
        >>> F.pad(x, (2, 1), mode="reflect")
        tensor([[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]])
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
        if mode == "circular" and min(lo, hi) < 0:  # torch crops first, then wraps
            if n + min(lo, 0) + min(hi, 0) > 0:
                out = out.narrow(d, max(-lo, 0), n + min(lo, 0) + min(hi, 0))
                n, lo, hi = out.shape[d], max(lo, 0), max(hi, 0)
        if (
            n + lo + hi <= 0
            or (mode == "reflect" and max(lo, hi) >= n)
            or (mode == "circular" and max(lo, hi) > n)
        ):
            raise ValueError(
                f"pad: {mode} padding ({lo}, {hi}) is invalid for dimension "
                f"{d} of size {n} (input shape {tuple(input.shape)})"
            )

        idx = tensor(_gather_index(n, lo, hi, mode), device=input.device)
        out = index_select(out, d, idx)
    return out


def one_hot(tensor, num_classes: int = -1):
    """One-hot encoding: a 1 at each index of ``tensor`` along a new last dimension.

    Args:
        tensor: an integer tensor of class indices, any shape.
        num_classes: the size of the new dimension; -1 (default) uses
            ``tensor.max() + 1``.

    Returns:
        An int64 tensor of shape ``tensor.shape + (num_classes,)`` (no gradient).

    Raises:
        TypeError: for a floating-point ``tensor``.
        ValueError: for a negative index, or one not below ``num_classes``.

    Example:
        >>> F.one_hot(nnkit.tensor([0, 2, 1]))
        tensor([[1, 0, 0],
                [0, 0, 1],
                [0, 1, 0]])
        >>> F.one_hot(nnkit.tensor([1]), num_classes=4)
        tensor([[0, 1, 0, 0]])
    """
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
