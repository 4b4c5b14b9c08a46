"""Gradients of pieces of one tensor (indexing, unbind, split, chunk) are added into one
buffer by the engine: the same values as torch, Tensors wherever user code sees them."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")


def both(fn, shape=(6, 4), seed=0):
    data = np.random.default_rng(seed).normal(size=shape)
    ours = nnkit.tensor(data, requires_grad=True)
    theirs = torch.tensor(data, requires_grad=True)
    fn(ours, nnkit).backward()
    fn(theirs, torch).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)
    return ours


def test_every_piece_and_repeats():
    def loss(x, lib):
        rows = x.unbind(0)
        halves = x.split(3, 0)
        total = sum((r * (k + 1)).sum() for k, r in enumerate(rows))
        total = total + (halves[1] ** 2).sum() + x.chunk(2, 1)[0].sum()
        index = lib.tensor([0, 2, 2, 5])
        return total + x[index].sum() + x[1:4, 1].sum()

    both(loss)


def test_an_intermediate_tensor_and_a_leaf_piece_mix():
    def loss(x, lib):
        y = x * 2  # the pieces' gradients meet a full gradient at y
        return (y[0] * y[1]).sum() + y.sum() + (y.unbind(1)[2] ** 3).sum()

    both(loss)


def test_hooks_and_grad_see_tensors():
    x = nnkit.randn(5, 3, requires_grad=True)
    y = x * 1.0
    seen = []
    y.register_hook(lambda g: seen.append(type(g).__name__))
    (y[0].sum() + y[2].sum()).backward()
    assert seen == ["Tensor"]
    (g,) = nnkit.autograd.grad(sum(p.sum() for p in x.unbind(0)), x)
    assert isinstance(g, nnkit.Tensor) and g.numpy().tolist() == [[1.0] * 3] * 5


def test_the_recorded_backward_still_differentiates():
    x = nnkit.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = nnkit.autograd.grad((x[0] * x[1] + x[2] ** 2).sum(), x, create_graph=True)
    (h,) = nnkit.autograd.grad(g.sum(), x)
    assert h.numpy().tolist() == [1.0, 1.0, 2.0]
