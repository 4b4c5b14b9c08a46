"""The fused layer_norm op against PyTorch and the composite formula."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F
from nnkit.autograd import gradcheck, gradgradcheck


def _composite(x, shape, weight, bias, eps=1e-5):
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    centered = x - x.mean(dims, keepdim=True)
    out = centered * nnkit.rsqrt((centered * centered).mean(dims, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("shape,normalized", [((2, 3, 5), (5,)), ((4, 3, 2), (3, 2)), ((6,), (6,))])
def test_layer_norm_matches_torch(shape, normalized, affine, device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    w, b = rng.standard_normal(normalized), rng.standard_normal(normalized)
    nx, tx = nnkit.tensor(x, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
    nw = tw = nb = tb = None
    if affine != "none":
        nw, tw = (
            nnkit.tensor(w, device=device, requires_grad=True),
            torch.tensor(w, requires_grad=True),
        )
    if affine == "both":
        nb, tb = (
            nnkit.tensor(b, device=device, requires_grad=True),
            torch.tensor(b, requires_grad=True),
        )
    out = F.layer_norm(nx, normalized, nw, nb)
    ref = torch.nn.functional.layer_norm(tx, normalized, tw, tb)
    assert out.grad_fn.name() == "LayerNormBackward"
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref.detach().numpy(), atol=1e-12)
    g = rng.standard_normal(shape)
    (out * nnkit.tensor(g, device=device)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    pairs = [(nx, tx)] + [(a, t) for a, t in ((nw, tw), (nb, tb)) if a is not None]
    for a, t in pairs:
        np.testing.assert_allclose(a.grad.cpu().numpy(), t.grad.numpy(), atol=1e-12)


def test_layer_norm_float32_equals_the_composite_to_rounding():
    """The same formula, the sums as GEMVs (another order of the additions)."""
    rng = np.random.default_rng(1)
    x = nnkit.tensor(
        rng.standard_normal((8, 16, 32)).astype(np.float32) * 3 + 1, requires_grad=True
    )
    w = nnkit.tensor(rng.standard_normal(32).astype(np.float32), requires_grad=True)
    b = nnkit.tensor(rng.standard_normal(32).astype(np.float32), requires_grad=True)
    g = nnkit.tensor(rng.standard_normal((8, 16, 32)).astype(np.float32))
    outs, grads = [], []
    for fn in (
        lambda *a: F.layer_norm(a[0], (32,), *a[1:]),
        lambda *a: _composite(a[0], (32,), *a[1:]),
    ):
        out = fn(x, w, b)
        (out * g).sum().backward()
        outs.append(out.detach().numpy())
        grads.append([t.grad.numpy().copy() for t in (x, w, b)])
        for t in (x, w, b):
            t.grad = None
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    for a, r in zip(*grads):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5 * np.abs(r).max())


@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_gradcheck_and_double_backward(affine):
    rng = np.random.default_rng(2)
    ins = [nnkit.tensor(rng.standard_normal((3, 2, 4)), requires_grad=True)]
    if affine:
        ins += [nnkit.tensor(rng.standard_normal((2, 4)), requires_grad=True) for _ in range(2)]

    def fn(*a):
        return F.layer_norm(a[0], (2, 4), *a[1:])

    assert gradcheck(fn, ins)
    assert gradgradcheck(fn, ins)


def test_layer_norm_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((3, 5)), rng.standard_normal(5)
    nx, nw = (nnkit.tensor(a, requires_grad=True) for a in (x, w))
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x, w))
    (gx,) = nnkit.autograd.grad(F.layer_norm(nx, (5,), nw).square().sum(), [nx], create_graph=True)
    (tgx,) = torch.autograd.grad(
        torch.nn.functional.layer_norm(tx, (5,), tw).square().sum(), [tx], create_graph=True
    )
    gx.sin().sum().backward()
    tgx.sin().sum().backward()
    np.testing.assert_allclose(nx.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(nw.grad.numpy(), tw.grad.numpy(), atol=1e-12)


def test_layer_norm_module_trains_like_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    layer, ref = nn.LayerNorm(6), torch.nn.LayerNorm(6)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    out, tout = layer(nnkit.tensor(x)), ref(torch.tensor(x))
    out.square().sum().backward()
    tout.square().sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), ref.weight.grad.numpy(), atol=1e-5)
    np.testing.assert_allclose(layer.bias.grad.numpy(), ref.bias.grad.numpy(), atol=1e-5)
