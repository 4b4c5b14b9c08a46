"""The fused attention op and Linear's folded GEMM, against PyTorch and the composite."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F
from nnkit.autograd import gradgradcheck
from nnkit.autograd.ops.activation import softmax
from nnkit.backends import linear_kernels


def _composite(q, k, v, mask, scale):
    """softmax(q k^T * scale + mask) v with separate ops (nnkit's former path)."""
    s = (q @ k.mT) * scale
    if mask is not None:
        s = nnkit.where(mask, s, float("-inf")) if mask.dtype == nnkit.bool else s + mask
    return softmax(s, -1) @ v


def _mask(rng, kind, shape):
    if kind == "none":
        return None
    if kind == "bool":
        m = rng.random(shape) > 0.3
        m[..., 0] = True  # every query keeps one key
        return m
    return rng.standard_normal(shape)


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float"])
@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7), (5, 6)),
        ((2, 1, 5, 4), (1, 3, 6, 4), (1, 3, 6, 4), (2, 3, 5, 6)),  # batch dims broadcast
        ((5, 4), (6, 4), (6, 3), (1, 6)),
    ],
)
def test_sdpa_matches_torch_values_and_gradients(shapes, mask_kind, device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes[:3]]
    mask = _mask(rng, mask_kind, shapes[3])
    grad_mask = mask_kind == "float"
    xs = [nnkit.tensor(a, device=device, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    nm = None if mask is None else nnkit.tensor(mask, device=device, requires_grad=grad_mask)
    tm = None if mask is None else torch.tensor(mask, requires_grad=grad_mask)
    out = F.scaled_dot_product_attention(*xs, nm, scale=0.7)
    ref = torch.nn.functional.scaled_dot_product_attention(*ts, tm, scale=0.7)
    assert out.grad_fn.name() == "ScaledDotProductAttentionBackward"
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), atol=1e-12)
    w = rng.standard_normal(tuple(ref.shape))
    (out * nnkit.tensor(w, device=device)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for a, t in zip(xs + ([nm] if grad_mask else []), ts + ([tm] if grad_mask else [])):
        assert a.grad.shape == tuple(t.shape)
        np.testing.assert_allclose(a.grad.cpu().numpy(), t.grad.numpy(), atol=1e-12)


def test_sdpa_float32_equals_the_composite_to_rounding(device):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((3, 4, 16, 8)).astype(np.float32) for _ in range(3)]
    mask = nnkit.tensor(np.tril(np.ones((16, 16), bool)), device=device)
    outs, grads = [], []
    for fn in (F.scaled_dot_product_attention, _composite):
        xs = [nnkit.tensor(a, device=device, requires_grad=True) for a in arrays]
        out = fn(*xs, mask, 0.35) if fn is _composite else fn(*xs, mask, scale=0.35)
        out.square().sum().backward()
        outs.append(out.detach().cpu().numpy())
        grads.append([x.grad.cpu().numpy() for x in xs])
    # the same operations forward but for the softmax's sums (over the keys in another
    # order): float rounding
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)
    for a, b in zip(*grads):  # rowsum(dp p) as rowsum(g out): where dp - rowsum cancels
        # (a query with one key) a rounding of dp's size is left
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * np.abs(b).max())


def test_sdpa_fully_masked_query_gives_nan_like_the_composite():
    q = nnkit.randn(1, 2, 3, requires_grad=True)
    kv = nnkit.randn(1, 4, 3)
    mask = nnkit.tensor([[True, True, False, False], [False, False, False, False]])
    out = F.scaled_dot_product_attention(q, kv, kv, mask)
    assert np.isfinite(out.detach().numpy()[0, 0]).all()
    assert np.isnan(out.detach().numpy()[0, 1]).all()
    np.testing.assert_allclose(
        out.detach().numpy(), _composite(q, kv, kv, mask, 3**-0.5).detach().numpy(), rtol=1e-6
    )


def test_sdpa_double_backward():
    rng = np.random.default_rng(2)
    xs = [nnkit.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True) for _ in range(3)]
    mask = nnkit.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    assert gradgradcheck(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m), [*xs, mask])


def test_sdpa_dropout_takes_the_composite_path():
    q = nnkit.randn(2, 3, 4, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert out.grad_fn.name() == "MatMulBackward"


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_uses_the_fused_op(need_weights):
    layer = nn.MultiheadAttention(8, 2, batch_first=True)
    x = nnkit.randn(2, 5, 8, requires_grad=True)
    out, w = layer(x, x, x, need_weights=need_weights)
    names, stack, seen = set(), [out.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.add(node.name())
        stack.extend(fn for fn, _ in node.next_functions)
    assert "ScaledDotProductAttentionBackward" in names
    assert "SoftmaxBackward" not in names
    assert "PermuteBackward" not in names  # heads split and merged inside the fused op
    assert (w is not None) == need_weights
    layer.dropout = 0.5  # training with dropout: the composite (dropout needs the weights)
    out, _ = layer(x, x, x, need_weights=False)
    out.sum().backward()
    assert x.grad is not None


@pytest.mark.parametrize("with_attn_mask", [False, True])
def test_multihead_attention_float_masks_match_torch(with_attn_mask):
    """A float key-padding mask alone (fused) and with a float attn_mask (composite)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    layer = nn.MultiheadAttention(8, 2, batch_first=True).double()
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    ref.load_state_dict({k: torch.tensor(v.numpy()) for k, v in layer.state_dict().items()})
    x = rng.standard_normal((2, 5, 8))
    am = rng.standard_normal((5, 5)) if with_attn_mask else None
    pad = rng.standard_normal((2, 5))
    pad[0, -1] = -np.inf
    xs = [nnkit.tensor(x, requires_grad=True)]
    txs = [torch.tensor(x, requires_grad=True)]
    out, w = layer(
        xs[0],
        xs[0],
        xs[0],
        attn_mask=None if am is None else nnkit.tensor(am),
        key_padding_mask=nnkit.tensor(pad),
    )
    tout, tw = ref(
        txs[0],
        txs[0],
        txs[0],
        attn_mask=None if am is None else torch.tensor(am),
        key_padding_mask=torch.tensor(pad),
    )
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), atol=1e-12)
    (out.sum() + w.square().sum()).backward()
    (tout.sum() + tw.square().sum()).backward()
    np.testing.assert_allclose(xs[0].grad.numpy(), txs[0].grad.numpy(), atol=1e-12)
    for (name, p), (_, tp) in zip(layer.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), atol=1e-12, err_msg=name)


@pytest.mark.parametrize("n_out", [6, 12], ids=["narrow", "wide"])  # wide: the ones column
@pytest.mark.parametrize("contiguous", [True, False])
def test_linear_on_3d_input_matches_torch(contiguous, n_out, device, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(linear_kernels, "ONES_COLUMN_MIN_ROWS", 1)  # these 12 rows too
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 5))
    w, b = rng.standard_normal((n_out, 5)), rng.standard_normal(n_out)
    nx = nnkit.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    nw, nb = (nnkit.tensor(a, device=device, requires_grad=True) for a in (w, b))
    tw, tb = (torch.tensor(a, requires_grad=True) for a in (w, b))
    xin, txin = (nx, tx) if contiguous else (nx.transpose(0, 1), tx.transpose(0, 1))
    out = F.linear(xin, nw, nb)
    ref = torch.nn.functional.linear(txin, tw, tb)
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), atol=1e-12)
    g = rng.standard_normal(tuple(ref.shape))
    (out * nnkit.tensor(g, device=device)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    for a, t in ((nx, tx), (nw, tw), (nb, tb)):
        np.testing.assert_allclose(a.grad.cpu().numpy(), t.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "bool", "float3d"])
def test_self_attention_packed_heads_match_torch(masks, batch_first, need_weights, device):
    """Self-attention (one packed Q/K/V projection, heads split in the fused op)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    n, length, e, heads = 3, 5, 8, 2
    layer = nn.MultiheadAttention(e, heads, batch_first=batch_first).to(device).double()
    ref = torch.nn.MultiheadAttention(e, heads, batch_first=batch_first).double()
    nn.init.uniform_(layer.in_proj_bias, -0.5, 0.5)
    ref.load_state_dict({k: torch.tensor(v.cpu().numpy()) for k, v in layer.state_dict().items()})
    x = rng.standard_normal((n, length, e) if batch_first else (length, n, e))
    kw = {}
    if masks == "bool":
        pad = np.zeros((n, length), bool)
        pad[0, -2:] = True
        kw = {"attn_mask": np.triu(np.ones((length, length), bool), 1), "key_padding_mask": pad}
    elif masks == "float3d":
        kw = {"attn_mask": rng.standard_normal((n * heads, length, length))}
    nx = nnkit.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    out, w = layer(
        nx,
        nx,
        nx,
        need_weights=need_weights,
        **{k: nnkit.tensor(v, device=device) for k, v in kw.items()},
    )
    tout, tw = ref(
        tx, tx, tx, need_weights=need_weights, **{k: torch.tensor(v) for k, v in kw.items()}
    )
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), atol=1e-12)
    loss, tloss = out.square().sum(), tout.square().sum()
    if need_weights:
        np.testing.assert_allclose(w.detach().cpu().numpy(), tw.detach().numpy(), atol=1e-12)
        loss, tloss = loss + (w * w).sum(), tloss + (tw * tw).sum()
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(nx.grad.cpu().numpy(), tx.grad.numpy(), atol=1e-12)
    for (name, p), (_, tp) in zip(layer.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), atol=1e-12, err_msg=name)


def test_self_attention_double_backward_through_the_packed_op():
    rng = np.random.default_rng(6)
    layer = nn.MultiheadAttention(4, 2, batch_first=True).double()
    x = nnkit.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    m = nnkit.tensor(rng.standard_normal((3, 3)), requires_grad=True)

    def fn(x, m):
        return layer(x, x, x, attn_mask=m, need_weights=False)[0]

    assert gradgradcheck(fn, [x, m])
