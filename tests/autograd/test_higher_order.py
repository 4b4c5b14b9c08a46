"""Derivatives of any order through grad(create_graph=True) and backward(create_graph=True)."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.autograd import grad


def _poly(x):
    return x**4 + 2 * x**3 + x**2


def test_polynomial_derivatives_with_grad():
    x = nnkit.tensor(2.0, dtype=nnkit.float64, requires_grad=True)
    f = _poly(x)
    (d1,) = grad(f, x, create_graph=True)
    (d2,) = grad(d1, x, create_graph=True)
    (d3,) = grad(d2, x, create_graph=True)
    (d4,) = grad(d3, x)
    assert [f.item(), d1.item(), d2.item(), d3.item(), d4.item()] == [36, 60, 74, 60, 24]
    assert d1.requires_grad and d3.requires_grad and not d4.requires_grad


def test_polynomial_derivatives_with_backward():
    x = nnkit.tensor(2.0, dtype=nnkit.float64, requires_grad=True)
    _poly(x).backward(create_graph=True)
    d1 = x.grad
    assert d1.item() == 60 and d1.requires_grad
    x.grad = None
    d1.backward(create_graph=True)
    d2 = x.grad
    assert d2.item() == 74
    x.grad = None
    d2.backward()
    assert x.grad.item() == 60


def test_without_create_graph_the_gradient_is_constant():
    x = nnkit.tensor(2.0, requires_grad=True)
    (d1,) = grad(_poly(x), x)
    assert not d1.requires_grad and d1.grad_fn is None


def test_mixed_partials_and_vector_inputs():
    x = nnkit.tensor([1.0, 2.0], dtype=nnkit.float64, requires_grad=True)
    y = nnkit.tensor([3.0, -1.0], dtype=nnkit.float64, requires_grad=True)
    f = (x * x * y).sum() + (x.sin() * y.exp()).sum()
    (gx,) = grad(f, x, create_graph=True)
    (gxy,) = grad(gx.sum(), y)  # d/dy of df/dx = 2x + cos(x) e^y
    xv, yv = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    np.testing.assert_allclose(gxy.numpy(), 2 * xv + np.cos(xv) * np.exp(yv), rtol=1e-12)


def test_third_derivative_of_tanh_and_exp():
    x = nnkit.tensor([0.3, -0.7], dtype=nnkit.float64, requires_grad=True)
    g = x.tanh().sum() + (2 * x).exp().sum()
    for _ in range(3):
        (g,) = grad(g.sum(), x, create_graph=True)
    t = np.tanh(np.array([0.3, -0.7]))
    expected = -2 * (1 - t**2) * (1 - 3 * t**2) + 8 * np.exp(2 * np.array([0.3, -0.7]))
    np.testing.assert_allclose(g.detach().numpy(), expected, rtol=1e-10)


def _mlp_loss(params, x, target, act):
    w1, b1, w2, b2 = params
    h = act(x @ w1 + b1)
    z = h @ w2 + b2
    # cross-entropy composed from primitives: logsumexp(z) - z[target]
    picked = nnkit.gather(z, 1, target.reshape(-1, 1)).reshape(-1)
    return (nnkit.logsumexp(z, dim=1) - picked).mean()


@pytest.mark.parametrize("act", ["tanh", "relu"])
def test_mlp_hessian_vector_product_matches_finite_differences(act):
    rng = np.random.default_rng(0)
    shapes = [(5, 7), (7,), (7, 3), (3,)]
    values = [rng.standard_normal(s) * 0.7 for s in shapes]
    vecs = [rng.standard_normal(s) for s in shapes]
    x = nnkit.tensor(rng.standard_normal((6, 5)), dtype=nnkit.float64)
    target = nnkit.tensor(rng.integers(0, 3, 6), dtype=nnkit.int64)
    fn = nnkit.tanh if act == "tanh" else nnkit.relu

    def gradient(vals):
        ps = [nnkit.tensor(v, dtype=nnkit.float64, requires_grad=True) for v in vals]
        loss = _mlp_loss(ps, x, target, fn)
        return ps, grad(loss, ps, create_graph=True)

    ps, gs = gradient(values)
    dot = sum((g * nnkit.tensor(v, dtype=nnkit.float64)).sum() for g, v in zip(gs, vecs))
    hvp = grad(dot, ps)
    eps = 1e-6
    _, gp = gradient([p + eps * v for p, v in zip(values, vecs)])
    _, gm = gradient([p - eps * v for p, v in zip(values, vecs)])
    for h, a, b in zip(hvp, gp, gm):
        fd = (a.detach().numpy() - b.detach().numpy()) / (2 * eps)
        np.testing.assert_allclose(h.numpy(), fd, rtol=1e-5, atol=1e-7)
    assert any(np.abs(h.numpy()).max() > 1e-3 for h in hvp)  # not trivially zero


def test_gradient_penalty_trains_through_double_backward():
    # d/dw of ||d loss/dx||^2: the standard gradient-penalty pattern
    w = nnkit.tensor([[0.5, -1.0], [2.0, 0.3]], dtype=nnkit.float64, requires_grad=True)
    x = nnkit.tensor([[1.0, 2.0]], dtype=nnkit.float64, requires_grad=True)
    out = (x @ w).tanh().sum()
    (gx,) = grad(out, x, create_graph=True)
    penalty = (gx * gx).sum()
    penalty.backward()
    eps = 1e-6
    wv = w.detach().numpy().copy()

    def pen(wn):
        xx = nnkit.tensor([[1.0, 2.0]], dtype=nnkit.float64, requires_grad=True)
        (g,) = grad((xx @ nnkit.tensor(wn)).tanh().sum(), xx)
        return float((g * g).sum().item())

    fd = np.zeros_like(wv)
    for idx in np.ndindex(*wv.shape):
        d = np.zeros_like(wv)
        d[idx] = eps
        fd[idx] = (pen(wv + d) - pen(wv - d)) / (2 * eps)
    np.testing.assert_allclose(w.grad.numpy(), fd, rtol=1e-6)
