"""MultiheadAttention and TransformerEncoderLayer against PyTorch with copied weights."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn


def _copy(torch, layer, ref):
    ref.load_state_dict({k: torch.tensor(v.cpu().numpy()) for k, v in layer.state_dict().items()})


def _masks(rng, kind, n, heads, length, source):
    if kind == "none":
        return None, None
    if kind == "bool":
        attn = np.triu(np.ones((length, source), bool), 1)
        pad = np.zeros((n, source), bool)
        pad[0, -2:] = True
        return attn, pad
    return rng.standard_normal((n * heads, length, source)), None


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "bool", "float3d"])
@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention_matches_torch(batch_first, masks, average, device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    n, length, source, e, heads = 2, 4, 6, 8, 2
    layer = nn.MultiheadAttention(e, heads, batch_first=batch_first).to(device).double()
    ref = torch.nn.MultiheadAttention(e, heads, batch_first=batch_first).double()
    nn.init.uniform_(layer.in_proj_bias, -0.5, 0.5)
    _copy(torch, layer, ref)

    def shaped(a):
        return a if batch_first else a.transpose(1, 0, 2)

    q, k, v = (shaped(rng.standard_normal((n, s, e))) for s in (length, source, source))
    attn_mask, pad_mask = _masks(rng, masks, n, heads, length, source)
    qs = [nnkit.tensor(a, device=device, requires_grad=True) for a in (q, k, v)]
    tqs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    kw = {"average_attn_weights": average}
    out, w = layer(
        *qs,
        attn_mask=None if attn_mask is None else nnkit.tensor(attn_mask, device=device),
        key_padding_mask=None if pad_mask is None else nnkit.tensor(pad_mask, device=device),
        **kw,
    )
    tout, tw = ref(
        *tqs,
        attn_mask=None if attn_mask is None else torch.tensor(attn_mask),
        key_padding_mask=None if pad_mask is None else torch.tensor(pad_mask),
        **kw,
    )
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(w.detach().cpu().numpy(), tw.detach().numpy(), atol=1e-10)
    (out.sum() + (w * w).sum()).backward()
    (tout.sum() + (tw * tw).sum()).backward()
    for a, ta in zip(qs, tqs):
        np.testing.assert_allclose(a.grad.cpu().numpy(), ta.grad.numpy(), atol=1e-10)
    for (name, p), (_, tp) in zip(layer.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), atol=1e-10, err_msg=name)


def test_multihead_attention_with_kdim_vdim_and_unbatched_input():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    layer = nn.MultiheadAttention(8, 4, kdim=5, vdim=3).double()
    ref = torch.nn.MultiheadAttention(8, 4, kdim=5, vdim=3).double()
    assert [n for n, _ in layer.named_parameters()] == [n for n, _ in ref.named_parameters()]
    _copy(torch, layer, ref)
    q, k, v = rng.standard_normal((4, 8)), rng.standard_normal((6, 5)), rng.standard_normal((6, 3))
    out, w = layer(*(nnkit.tensor(a) for a in (q, k, v)), need_weights=True)
    tout, tw = ref(*(torch.tensor(a) for a in (q, k, v)))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), atol=1e-10)
    assert layer(*(nnkit.tensor(a) for a in (q, k, v)), need_weights=False)[1] is None


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_layer_matches_torch(norm_first, activation):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    kw = {
        "dim_feedforward": 16,
        "dropout": 0.0,
        "activation": activation,
        "batch_first": True,
        "norm_first": norm_first,
    }
    layer = nn.TransformerEncoderLayer(8, 2, **kw).double().eval()
    ref = torch.nn.TransformerEncoderLayer(8, 2, **kw).double().eval()
    assert list(layer.state_dict()) == list(ref.state_dict())
    _copy(torch, layer, ref)
    x = rng.standard_normal((2, 5, 8))
    pad = np.zeros((2, 5), bool)
    pad[1, -1] = True
    out = layer(nnkit.tensor(x), src_key_padding_mask=nnkit.tensor(pad))
    with torch.no_grad():
        tout = ref(torch.tensor(x), src_key_padding_mask=torch.tensor(pad))
    np.testing.assert_allclose(out.detach().numpy(), tout.numpy(), atol=1e-10)


def test_causal_attention_ignores_the_future():
    layer = nn.MultiheadAttention(4, 1, batch_first=True)
    x = nnkit.randn(1, 3, 4)
    _, w = layer(x, x, x, is_causal=True)
    np.testing.assert_allclose(np.triu(w.detach().numpy()[0], 1), 0)
