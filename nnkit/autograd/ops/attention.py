"""Attention: ``scaled_dot_product_attention``, composed from matmul and softmax.

``softmax(q k^T * scale + mask) v``: two batched GEMMs and the fused softmax, so
backward (and double backward) come from those ops.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.activation import softmax
from nnkit.autograd.ops.nn_misc import dropout
from nnkit.autograd.ops.selection import where

__all__ = ["scaled_dot_product_attention"]


def _causal_mask(q_len, k_len, device):
    from nnkit.autograd.factories import ones

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
    scores = (query @ key.mT) * scale
    if is_causal:
        attn_mask = _causal_mask(query.shape[-2], key.shape[-2], query.device)
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value
