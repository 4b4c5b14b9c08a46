"""saved_tensors_hooks: every tensor saved in scope goes through pack, unpack restores it."""

from __future__ import annotations

import os

import numpy as np
import pytest

import nnkit
from nnkit.autograd import grad
from nnkit.autograd.graph import saved_tensors_hooks


def _params(dtype=nnkit.float64):
    rng = np.random.default_rng(3)
    x = nnkit.tensor(rng.standard_normal((6, 5)), dtype=dtype, requires_grad=True)
    w = nnkit.tensor(rng.standard_normal((5, 4)) * 0.5, dtype=dtype, requires_grad=True)
    return x, w


def _loss(x, w):
    h = (x @ w).tanh()
    return (h.exp() * h).sum() + nnkit.logsumexp(x @ w, dim=1).sum()


def _grads(hooks=None, create_graph=False):
    x, w = _params()
    if hooks is None:
        loss = _loss(x, w)
    else:
        with saved_tensors_hooks(*hooks):
            loss = _loss(x, w)
    gx, gw = grad(loss, [x, w], create_graph=create_graph)
    if not create_graph:
        return [gx.numpy(), gw.numpy()]
    (hx,) = grad((gw * gw).sum(), x)  # double backward through the saved tensors
    return [gx.detach().numpy(), gw.detach().numpy(), hx.numpy()]


def test_every_saved_tensor_goes_through_pack_and_unpack():
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.shape)
        return ("box", t)

    def unpack(obj):
        unpacked.append(obj[1].shape)
        return obj[1]

    x, w = _params()
    with saved_tensors_hooks(pack, unpack):
        y = (x @ w).tanh().sum()
    assert sorted(packed) == sorted([(6, 5), (5, 4), (6, 4)])  # x, w for matmul; tanh out
    y.backward()
    assert sorted(unpacked) == sorted(packed)
    outside = []
    with saved_tensors_hooks(lambda t: outside.append(1) or t, lambda t: t):
        pass
    (x * w.sum()).sum()  # after the scope: no packing
    assert outside == []


def test_pack_to_float16_gives_close_gradients():
    ref = _grads()
    half = _grads((lambda t: t.to(nnkit.float16), lambda t: t.to(nnkit.float64)))
    for a, b in zip(ref, half):
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2)
    assert any(not np.array_equal(a, b) for a, b in zip(ref, half))  # really went lossy


def test_pack_to_disk_gives_same_gradients(tmp_path):
    counter = iter(range(10**6))
    files = []

    def pack(t):
        path = os.path.join(tmp_path, f"saved_{next(counter)}.npy")
        np.save(path, t.numpy())
        files.append(path)
        return path

    def unpack(path):
        return nnkit.tensor(np.load(path))

    ref = _grads()
    disk = _grads((pack, unpack))
    assert files and all(os.path.exists(f) for f in files)
    for a, b in zip(ref, disk):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("mode", ["float16", "disk"])
def test_double_backward_through_packed_tensors(mode, tmp_path):
    if mode == "float16":
        hooks = (lambda t: t.to(nnkit.float16), lambda t: t.to(nnkit.float64))
        tol = 3e-2
    else:
        counter = iter(range(10**6))

        def pack(t):
            path = os.path.join(tmp_path, f"s{next(counter)}.npy")
            np.save(path, t.numpy())
            return path

        hooks = (pack, lambda p: nnkit.tensor(np.load(p)))
        tol = 1e-10
    ref = _grads(create_graph=True)
    got = _grads(hooks, create_graph=True)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_packed_leaf_still_receives_second_order_gradient():
    # a leaf saved through hooks is unpacked as a new tensor: it must still feed the
    # leaf's own gradient accumulator in the double-backward graph
    x = nnkit.tensor([0.5, -1.0, 2.0], dtype=nnkit.float64, requires_grad=True)
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = (x * x * x).sum()
    (g,) = grad(y, x, create_graph=True)
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * np.array([0.5, -1.0, 2.0]))


def test_inner_scope_wins_and_scopes_nest():
    log = []
    x, w = _params()
    with saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t):
        with saved_tensors_hooks(lambda t: log.append("inner") or t, lambda t: t):
            a = x.exp()
        b = w.exp()
    assert log == ["inner", "outer"]
    (a.sum() + b.sum()).backward()
