"""Differential tests against PyTorch (where installed): composite expressions give the
same values and gradients (matmul + broadcasting + reductions + indexing)."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")


def _expr_mlp(lib, x, w, b, idx):
    h = (x @ w + b).relu()
    return (h * h).mean(dim=0).sum() + h.amax() + h[idx].sum()


def _expr_softmaxish(lib, x, w, b, idx):
    z = x @ w
    lse = z.logsumexp(dim=1, keepdim=True)
    p = (z - lse).exp()
    return (p * b).sum() + z.var(dim=0).sum() + z.std() + p[:, 1:].sum()


def _expr_batched(lib, x, w, b, idx):
    xb = x.reshape(2, 2, 3)
    y = xb @ w  # (2,2,3) @ (3,4) broadcast over the batch
    y = y.permute(2, 0, 1).flatten(1)  # (4, 4)
    return (y * y.T).sum() + lib.where(y > 0, y, y * 0.1).sum() + (y.sum(0) * b).sum()


def _expr_indexing(lib, x, w, b, idx):
    g = x.gather(1, lib_index(lib, [[0, 2], [1, 1], [2, 0], [0, 0]], x))
    sel = x.index_select(0, lib_index(lib, [3, 1, 3], x))
    m = x[x > 0]
    cat = lib.cat([x[:, :1], x[1:2].expand(4, 3)[:, 1:]], dim=1)
    return (
        (g**2).sum()
        + (sel * 1.5).sum()
        + m.sum()
        + (cat @ w).tanh().sum()
        + lib.stack([x[0], x[2]]).norm()
        + x[idx, 1:].sum()
    )


def _expr_reduce(lib, x, w, b, idx):
    mx = x.max(dim=1)
    out = mx.values.sum() + x.min(dim=0).values.sum()
    out = out + (x - x.mean(dim=1, keepdim=True)).pow(2).sum() + x.abs().sum()
    return out + (x.clamp(-0.5, 0.5) * x.sigmoid()).sum() + x.tril().sum() * 0.5


def lib_index(lib, data, like):
    if lib is torch:
        return torch.tensor(data, dtype=torch.int64)
    return nnkit.tensor(data, device=like.device)


EXPRS = {
    "mlp": _expr_mlp,
    "softmaxish": _expr_softmaxish,
    "batched": _expr_batched,
    "indexing": _expr_indexing,
    "reduce": _expr_reduce,
}


@pytest.mark.parametrize("name", sorted(EXPRS))
def test_matches_torch(name, device):
    rng = np.random.default_rng(7)
    xn = rng.standard_normal((4, 3))
    xn += 0.2 * np.sign(xn)  # away from the kinks of abs/relu/clamp
    wn, bn = rng.standard_normal((3, 4)), rng.standard_normal(4)
    idx = [0, 2, 2]
    expr = EXPRS[name]

    ours = [
        nnkit.tensor(a, dtype=nnkit.float64, device=device, requires_grad=True)
        for a in (xn, wn, bn)
    ]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (xn, wn, bn)]
    y = expr(nnkit, *ours, nnkit.tensor(idx, device=device))
    yt = expr(torch, *theirs, torch.tensor(idx))
    np.testing.assert_allclose(y.item(), yt.item(), rtol=1e-10)
    y.backward()
    yt.backward()
    for o, t in zip(ours, theirs):
        assert (o.grad is None) == (t.grad is None)
        if o.grad is None:
            continue
        got = o.grad.detach().cpu().numpy()
        want = t.grad.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_second_derivative_matches_torch(device):
    rng = np.random.default_rng(3)
    xn, wn = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))

    def f(lib, x, w):
        return ((x @ w).tanh() ** 2).sum() + (x.exp() * x).sum()

    x = nnkit.tensor(xn, dtype=nnkit.float64, device=device, requires_grad=True)
    w = nnkit.tensor(wn, dtype=nnkit.float64, device=device, requires_grad=True)
    (gx,) = nnkit.autograd.grad(f(nnkit, x, w), x, create_graph=True)
    (gw,) = nnkit.autograd.grad((gx * gx).sum(), w)
    xt = torch.tensor(xn, requires_grad=True)
    wt = torch.tensor(wn, requires_grad=True)
    (gxt,) = torch.autograd.grad(f(torch, xt, wt), xt, create_graph=True)
    (gwt,) = torch.autograd.grad((gxt * gxt).sum(), wt)
    np.testing.assert_allclose(gx.detach().cpu().numpy(), gxt.detach().numpy(), rtol=1e-9)
    np.testing.assert_allclose(gw.cpu().numpy(), gwt.numpy(), rtol=1e-9)
