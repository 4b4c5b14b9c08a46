"""Op-table rows of the fused attention op in its multi-head form (``heads=H``: q, k, v
as ``(N, L, E)``, or q the packed ``(N, L, 3E)`` projection), appended to
``tests/optable_nn.py``'s table; ``F.scaled_dot_product_attention``'s own row covers the
plain form. References: NumPy heads split, attended and merged by hand."""

from __future__ import annotations

import math

import numpy as np

from nnkit.autograd.ops.attention import ScaledDotProductAttention
from tests.opspec import OpSpec, Sample

OPS: list[OpSpec] = []
_HEADS = 2


def _split(a):
    n, length, e = a.shape
    return a.reshape(n, length, _HEADS, e // _HEADS).transpose(0, 2, 1, 3)


def ref_heads_attention(q, k, v, mask=None, weights=False):
    if k is None:
        q, k, v = np.split(q, 3, axis=-1)
    q, k, v = _split(q), _split(k), _split(v)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = p @ v
    out = o.transpose(0, 2, 1, 3).reshape(o.shape[0], o.shape[2], -1)
    return [out, p] if weights else out


def heads_attention(q, k, v, mask=None, weights=False):
    scale = 1 / math.sqrt(q.shape[-1] // (_HEADS * (3 if k is None else 1)))
    res = ScaledDotProductAttention.apply(q, k, v, mask, scale, weights=weights, heads=_HEADS)
    return list(res) if weights else res


def _samples(rng):
    def rn(*shape):
        return np.asarray(rng.standard_normal(shape))

    keep = np.array([[True, False, True, True], [True, True, False, True], [False] * 3 + [True]])
    return [
        Sample((rn(2, 4, 12), None, None), desc="packed"),
        Sample((rn(2, 4, 12), None, None, rn(2, 1, 1, 4)), diff=(0, 3), desc="packed-float-mask"),
        Sample((rn(2, 4, 12), None, None, None, True), desc="packed-weights"),
        Sample((rn(2, 3, 4), rn(2, 4, 4), rn(2, 4, 6), keep), desc="cross-bool-mask"),
        Sample((rn(1, 3, 4), rn(1, 4, 4), rn(1, 4, 4), None, True), desc="cross-weights"),
    ]


OPS.append(
    OpSpec(
        name="scaled_dot_product_attention_heads",
        fn=heads_attention,
        ref=ref_heads_attention,
        samples=_samples,
    )
)
