"""Attention layers: ``MultiheadAttention`` and ``TransformerEncoderLayer`` (PyTorch)."""

from __future__ import annotations

import math

from nnkit.autograd.factories import empty, ones
from nnkit.autograd.ops.attention import ScaledDotProductAttention, fused_attention_ok
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import bool_
from nnkit.layers import _functional as F
from nnkit.layers import initializers as init
from nnkit.layers.activation import get_activation
from nnkit.layers.dropout import Dropout
from nnkit.layers.linear import Linear
from nnkit.layers.module import Module, Parameter
from nnkit.layers.normalization import LayerNorm

__all__ = ["MultiheadAttention", "TransformerEncoderLayer"]


def _apply_mask(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Add a float mask, or set the positions of a boolean mask (True = ignore) to -inf."""
    if mask is None:
        return scores
    if mask.dtype == bool_:
        return scores.masked_fill(mask, float("-inf"))
    return scores + mask


def _fused_mask(attn_mask: Tensor | None, key_padding_mask: Tensor | None):
    """The one mask the fused op takes (boolean: True keeps), or False where the two
    masks cannot merge with the composite's rounding (a float mask with another)."""
    masks = [m for m in (attn_mask, key_padding_mask) if m is not None]
    if not masks:
        return None
    if all(m.dtype == bool_ for m in masks):
        ignore = masks[0] if len(masks) == 1 else masks[0] | masks[1]
        return ~ignore
    return masks[0] if len(masks) == 1 else False


class MultiheadAttention(Module):
    """Multi-head attention: softmax(Q Kᵀ / √d) V for each of ``num_heads`` heads.

    ``MultiHead(Q, K, V) = concat(head₁, …, head_h) W_oᵀ + b_o`` with
    ``headᵢ = softmax((Q W_qᵢᵀ)(K W_kᵢᵀ)ᵀ / √d) (V W_vᵢᵀ)`` and d = embed_dim / num_heads.

    Args:
        embed_dim: model dimension E (split across heads).
        num_heads: number of heads; must divide ``embed_dim``.
        dropout: dropout on the attention weights (training only).
        bias: learn input/output projection biases.
        kdim: feature size of keys (default ``embed_dim``).
        vdim: feature size of values (default ``embed_dim``).
        batch_first: inputs/outputs are ``(N, L, E)`` instead of ``(L, N, E)``.

    Attributes:
        in_proj_weight: ``(3E, E)``, the stacked Q, K, V projections (xavier uniform);
            when ``kdim``/``vdim`` differ from E, ``q_proj_weight``, ``k_proj_weight``
            and ``v_proj_weight`` instead.
        in_proj_bias: ``(3E,)``, zeros.
        out_proj: the output ``Linear(E, E)`` (bias zeros).

    Example:
        >>> mha = MultiheadAttention(16, 4, batch_first=True)
        >>> x = nnkit.randn(2, 5, 16)
        >>> out, weights = mha(x, x, x)
        >>> out.shape, weights.shape
        ((2, 5, 16), (2, 5, 5))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim must be divisible by num_heads. "
                f"Received: embed_dim={embed_dim}, num_heads={num_heads}"
            )
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.head_dim = embed_dim // num_heads
        self.dropout, self.batch_first = float(dropout), batch_first
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        kw = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **kw))
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **kw))
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **kw)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform projections, zero biases (PyTorch's ``_reset_parameters``)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple:
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None,) * 3 if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            wq, wk, wv = w[:e], w[e : 2 * e], w[2 * e :]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ):
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``) or unbatched ``(L, E)``.
            key: ``(S, N, kdim)`` likewise.
            value: ``(S, N, vdim)`` likewise.
            key_padding_mask: ``(N, S)``; True (or -inf) marks keys to ignore.
            need_weights: also return the attention weights.
            attn_mask: ``(L, S)`` or ``(N·num_heads, L, S)``; True (or -inf) forbids.
            average_attn_weights: average the returned weights over heads.
            is_causal: with no ``attn_mask``, forbid attending to later positions.

        Returns:
            ``(attn_output, attn_weights)``: the output is shaped like ``query``; the
            weights are ``(N, L, S)`` (``(N, num_heads, L, S)`` unaveraged), or None when
            ``need_weights`` is False.
        """
        batched = query.ndim == 3
        if not batched or not self.batch_first:  # work in (N, L, E)
            same = query is key and key is value
            to_batch_first = (
                (lambda t: t.unsqueeze(0)) if not batched else (lambda t: t.transpose(0, 1))
            )
            query = to_batch_first(query)
            key = query if same else to_batch_first(key)
            value = query if same else to_batch_first(value)
            if not batched and key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        out, weights = self._attend(
            query,
            key,
            value,
            key_padding_mask,
            attn_mask,
            is_causal,
            need_weights,
            average_attn_weights,
        )
        if not batched:
            out = out.squeeze(0)
            weights = None if weights is None else weights.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _attend(
        self, query, key, value, key_padding_mask, attn_mask, is_causal, need_weights, average
    ):
        n, length, _ = query.shape
        source = key.shape[1]
        h, d = self.num_heads, self.head_dim
        scale = 1.0 / math.sqrt(d)
        if attn_mask is None and is_causal:
            attn_mask = ones(length, source, dtype=bool_, device=query.device).triu(1)
        if attn_mask is not None and attn_mask.ndim == 3:
            attn_mask = attn_mask.reshape(n, h, length, source)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.reshape(n, 1, 1, source)
        packed = self._qkv_same_embed_dim and query is key and key is value
        if packed:  # self-attention: one GEMM projects Q, K and V
            qkv = F.linear(query, self.in_proj_weight, self.in_proj_bias)
            q, k, v = qkv, None, None
        else:
            q, k, v = self._project(query, key, value)
        mask = _fused_mask(attn_mask, key_padding_mask)
        if (
            not (self.training and self.dropout)
            and mask is not False
            and fused_attention_ok(q, q if packed else k, q if packed else v, mask)
        ):
            # one fused op, heads split and merged in place: no scores, mask or head
            # copies kept for backward
            res = ScaledDotProductAttention.apply(
                q, k, v, mask, scale, weights=need_weights, heads=h
            )
            out, weights = res if need_weights else (res, None)
            if weights is not None and average:
                weights = weights.mean(1)
            return self.out_proj(out), weights
        if packed:
            q, k, v = qkv.chunk(3, -1)
        q = q.reshape(n, length, h, d).transpose(1, 2)
        k = k.reshape(n, source, h, d).transpose(1, 2)
        v = v.reshape(n, source, h, d).transpose(1, 2)
        scores = _apply_mask((q @ k.transpose(-2, -1)) * scale, attn_mask)
        scores = _apply_mask(scores, key_padding_mask)
        weights = F.softmax(scores, dim=-1)
        attn = F.dropout(weights, self.dropout, True) if self.training and self.dropout else weights
        out = (attn @ v).transpose(1, 2).reshape(n, length, self.embed_dim)
        out = self.out_proj(out)
        if not need_weights:
            return out, None
        return out, (weights.mean(1) if average else weights)

    def extra_repr(self) -> str:
        s = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if self.dropout:
            s += f", dropout={self.dropout}"
        return s + (", batch_first=True" if self.batch_first else "")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and LayerNorm.

    Post-norm (default): ``x = norm1(x + SA(x)); x = norm2(x + FF(x))``; with
    ``norm_first``: ``x = x + SA(norm1(x)); x = x + FF(norm2(x))``, where
    ``FF(x) = linear2(dropout(activation(linear1(x))))``.

    Args:
        d_model: the model dimension.
        nhead: attention heads.
        dim_feedforward: the hidden size of the feed-forward block.
        dropout: dropout after attention, inside and after the feed-forward block.
        activation: ``'relu'``, ``'gelu'`` or a callable.
        layer_norm_eps: LayerNorm's eps.
        batch_first: inputs are ``(N, L, E)`` instead of ``(L, N, E)``.
        norm_first: pre-norm instead of post-norm.
        bias: learn biases in the linear and LayerNorm layers.

    Example:
        >>> layer = TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(nnkit.randn(2, 10, 16)).shape
        (2, 10, 16)
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation="relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if activation not in ("relu", "gelu") and not callable(activation):
            raise ValueError(
                f"TransformerEncoderLayer: activation should be relu/gelu or a "
                f"callable. Received: activation={activation!r}"
            )
        self.activation = get_activation(activation)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """Encode ``src`` (shape ``(L, N, E)``, or ``(N, L, E)`` with ``batch_first``)."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))
