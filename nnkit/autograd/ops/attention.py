"""Attention: ``scaled_dot_product_attention``, one fused op.

``softmax(q k^T * scale + mask) v`` runs as :class:`ScaledDotProductAttention`: two
batched GEMMs around an in-place scale, mask and softmax (see
:mod:`nnkit.backends.attention_kernels`), saving only the attention weights and its
output besides its inputs; its backward reuses them (two GEMMs for ``ds`` and ``dv``,
two for ``dq`` and ``dk``: its ``backward_mat``). With ``create_graph`` the backward is written with
differentiable Tensor ops (the weights recomputed from q and k), so double backward
works. Dropout on the weights, and masks of other dtypes, take the composite path
(matmul, softmax, dropout, matmul).
"""

from __future__ import annotations

import math

from nnkit.autograd.factories import ones
from nnkit.autograd.function import NO_GRAPH, Op, ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.activation import softmax
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.ops.nn_misc import dropout
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.shape import SumTo, sum_to
from nnkit.backends.attention_kernels import sdpa_backward, sdpa_forward

__all__ = ["scaled_dot_product_attention"]


class ScaledDotProductAttention(Op):
    """``softmax(q k^T * scale + mask) v`` in one op; ``mask`` is None, a boolean Mat
    (True keeps) or a float Mat of q's dtype (added). With ``weights=True`` it returns
    ``(out, weights)``, the weights differentiable too.

    With ``heads=H`` (multi-head attention) q, k, v and the output are ``(N, L, E)``,
    read and written as ``(N, H, L, E/H)`` heads without copies; q may be the packed
    ``(N, L, 3E)`` projection with k and v None. The mask then broadcasts to
    ``(N, H, L, S)``.
    """

    @staticmethod
    def forward(ctx, q, k, v, mask, scale, weights=False, heads=None):
        out, p = sdpa_forward(q, k, v, mask, scale, heads)
        ctx.scale, ctx.heads = scale, heads
        ctx.save_for_backward(q, k, v, mask, p, out)
        return (out, p) if weights else out

    @staticmethod
    def backward(ctx, grad_output, grad_weights=None):  # recorded: Tensor ops throughout
        q, k, v, mask, p, _ = ctx.saved_tensors
        need = ctx.needs_input_grad[:4]
        grads = _composite_backward(grad_output, grad_weights, q, k, v, mask, ctx.scale, ctx.heads)
        out = [
            None if g is None or not n else sum_to(g, t.shape)
            for g, n, t in zip(grads, need, (q, k, v, mask))
        ]
        return (*out, None)

    @staticmethod
    def backward_mat(ctx, g, gw=None):  # not recorded: the fused kernel, from the weights
        q, k, v, mask, p, o = ctx.saved_mats
        need = ctx.needs_input_grad[:4]
        grads = sdpa_backward(g, gw, q, k, v, p, ctx.scale, need, ctx.heads, o)
        out = [
            None
            if d is None or not n
            else d
            if d.shape == t.shape
            else SumTo.forward(NO_GRAPH, d, t.shape)
            for d, n, t in zip(grads, need, (q, k, v, mask))
        ]
        return (*out, None)


def _masked_scores(q, k, mask, scale):
    scores = (q @ k.mT) * scale
    if mask is None:
        return scores
    if mask.dtype.name == "bool":
        return where(mask, scores, -math.inf)
    return scores + mask


def _split_heads(t, heads):
    n, length, e = t.shape
    return t.reshape(n, length, heads, e // heads).transpose(1, 2)


def _merge_heads(t):
    n, h, length, d = t.shape
    return t.transpose(1, 2).reshape(n, length, h * d)


def _composite_backward(g, gw, q, k, v, mask, scale, heads=None):
    """The fused op's gradients with Tensor ops (for ``create_graph``)."""
    packed = heads is not None and k is None
    if packed:
        q, k, v = q.chunk(3, -1)
    if heads is not None:
        q, k, v, g = (_split_heads(t, heads) for t in (q, k, v, g))
    p = softmax(_masked_scores(q, k, mask, scale), -1)
    dp = g @ v.mT
    if gw is not None:
        dp = dp + gw
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq, dk, dv = (ds @ k) * scale, (ds.mT @ q) * scale, p.mT @ g
    if heads is not None:
        dq, dk, dv = _merge_heads(dq), _merge_heads(dk), _merge_heads(dv)
    if packed:
        return cat([dq, dk, dv], -1), None, None, ds
    return dq, dk, dv, ds


def fused_attention_ok(query, key, value, mask) -> bool:
    """Whether :class:`ScaledDotProductAttention` computes what the composite would:
    floating q, k, v of one dtype, and no mask or a boolean one or one of that dtype."""
    dt = query.dtype
    return (
        query.is_floating_point()
        and key.dtype == dt
        and value.dtype == dt
        and (mask is None or mask.dtype == dt or mask.dtype.name == "bool")
    )


def _causal_mask(q_len, k_len, device):
    with no_grad():  # top-left aligned lower triangle, as torch
        return ones(q_len, k_len, dtype="bool", device=device).tril()


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False, scale=None
):
    """Attention: ``softmax(Q K^T * scale + M) V`` over the last two dimensions.

    Args:
        query: ``(..., L, E)``.
        key: ``(..., S, E)``.
        value: ``(..., S, Ev)``; leading (batch, head) dimensions broadcast.
        attn_mask: broadcastable to ``(..., L, S)``: a bool mask keeps positions where
            True (the others get ``-inf``), a float mask is added to the scores.
        dropout_p: dropout probability on the attention weights (drawn from nnkit's
            global generator); pass 0 in evaluation.
        is_causal: mask out keys after each query (position ``j > i``); may not be
            combined with ``attn_mask``.
        scale: the score scale (default ``1 / sqrt(E)``).

    Returns:
        ``(..., L, Ev)``. A query whose keys are all masked gives NaN, as in PyTorch.

    Gradient: through the softmax, to query, key, value and a float ``attn_mask``.

    Raises:
        ShapeError: if the feature or sequence sizes do not match.
        ValueError: if both ``attn_mask`` and ``is_causal`` are given.

    Example:
        >>> q = nnkit.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> v = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> F.scaled_dot_product_attention(q, q, v, is_causal=True)
        tensor([[1.0000, 2.0000],
                [2.3395, 3.3395]])
        >>> k = nnkit.randn(2, 4, 6, 8)  # (batch, heads, S, E)
        >>> F.scaled_dot_product_attention(nnkit.randn(2, 4, 5, 8), k, k).shape
        (2, 4, 5, 8)
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(t, op, name)
        if t.ndim < 2:
            raise ShapeError(
                f"{op}: {name} must have at least 2 dimensions (..., L, E), got "
                f"shape {tuple(t.shape)}"
            )
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(
            f"{op}: query {tuple(query.shape)}, key {tuple(key.shape)} and value "
            f"{tuple(value.shape)} do not fit (expected (..., L, E), (..., S, E), "
            "(..., S, Ev))"
        )
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: pass either attn_mask or is_causal=True, not both")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if is_causal:
        attn_mask = _causal_mask(query.shape[-2], key.shape[-2], query.device)
    if dropout_p <= 0.0 and fused_attention_ok(query, key, value, attn_mask):
        return ScaledDotProductAttention.apply(query, key, value, attn_mask, scale)
    weights = softmax(_masked_scores(query, key, attn_mask, scale), -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value
