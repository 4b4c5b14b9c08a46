"""checkpoint(fn, *args): no activations kept in forward, same gradients in backward."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import nnkit
from nnkit.autograd import checkpoint, checkpoint_sequential


def _weights(n=3, width=8, seed=0):
    rng = np.random.default_rng(seed)
    return [
        nnkit.tensor(
            rng.standard_normal((width, width)) * 0.4, dtype=nnkit.float32, requires_grad=True
        )
        for _ in range(n)
    ]


def _block(h, w, refs=None, p_keep=0.7):
    a = h @ w
    t = a.tanh()
    mask = (nnkit.rand(*t.shape) < p_keep).float()  # dropout-like: draws random numbers
    out = t * mask / p_keep
    if refs is not None:
        refs.extend(weakref.ref(v._impl.data) for v in (a, t, mask))
    return out


def _run(ws, x, use_ckpt, seed=7):
    nnkit.manual_seed(seed)
    for w in ws:
        w.grad = None
    x.grad = None
    h = x
    for w in ws:
        h = checkpoint(_block, h, w) if use_ckpt else _block(h, w)
    loss = (h * h).sum()
    loss.backward()
    return [loss.item(), x.grad.numpy().copy()] + [w.grad.numpy().copy() for w in ws]


def test_gradients_equal_plain_run_with_random_ops_inside():
    ws = _weights()
    x = nnkit.tensor(
        np.random.default_rng(1).standard_normal((4, 8)), dtype=nnkit.float32, requires_grad=True
    )
    plain = _run(ws, x, False)
    ckpt = _run(ws, x, True)
    assert plain[0] == ckpt[0]
    for a, b in zip(plain[1:], ckpt[1:]):
        np.testing.assert_array_equal(a, b)  # the masks were redrawn identically


def test_without_preserved_rng_state_masks_differ():
    ws = _weights(1)
    x = nnkit.tensor(
        np.random.default_rng(1).standard_normal((16, 8)), dtype=nnkit.float32, requires_grad=True
    )
    plain = _run(ws, x, False)
    nnkit.manual_seed(7)
    y = checkpoint(_block, x, ws[0], preserve_rng_state=False)
    ws[0].grad = None
    (y * y).sum().backward()
    assert not np.allclose(ws[0].grad.numpy(), plain[2])


def test_forward_keeps_no_intermediate_arrays():
    ws = _weights(1)
    x = nnkit.randn(4, 8, requires_grad=True)
    refs = []
    y = _block(x, ws[0], refs)
    gc.collect()
    assert sum(r() is not None for r in refs) >= 2  # the plain graph keeps them (tanh, mask)

    refs = []
    y = checkpoint(_block, x, ws[0], refs)
    gc.collect()
    assert all(r() is None for r in refs), "checkpointed forward kept an intermediate"
    assert y.grad_fn.name() == "CheckpointBackward"
    assert [n for n, _ in y.grad_fn.next_functions if n is not None][0].name() == "AccumulateGrad"
    y.sum().backward()
    assert x.grad is not None and ws[0].grad is not None


def test_recomputes_once_per_backward():
    calls = []
    w = nnkit.randn(3, 3, requires_grad=True)

    def fn(h):
        calls.append(nnkit.is_grad_enabled())
        return (h @ w).relu()

    x = nnkit.randn(2, 3, requires_grad=True)
    y = checkpoint(fn, x)
    assert calls == [False]  # forward ran without recording
    y.sum().backward()
    assert calls == [False, True]  # recomputed with grad on


def test_parameters_get_gradients_when_no_input_requires_grad():
    ws = _weights(2)
    x = nnkit.tensor(np.random.default_rng(2).standard_normal((4, 8)), dtype=nnkit.float32)
    nnkit.manual_seed(3)
    plain = _block(_block(x, ws[0]), ws[1]).sum()
    plain.backward()
    ref = [w.grad.numpy().copy() for w in ws]
    for w in ws:
        w.grad = None
    nnkit.manual_seed(3)
    y = checkpoint(_block, checkpoint(_block, x, ws[0]), ws[1])
    assert y.requires_grad
    y.sum().backward()
    for w, r in zip(ws, ref):
        np.testing.assert_allclose(w.grad.numpy(), r, rtol=1e-6)


def test_no_grad_anywhere_returns_plain_result():
    x = nnkit.randn(2, 3)
    y = checkpoint(lambda t: t * 2, x)
    assert not y.requires_grad and y.grad_fn is None
    with nnkit.no_grad():
        y = checkpoint(lambda t: t * 2, nnkit.randn(2, requires_grad=True))
    assert y.grad_fn is None


def test_multiple_outputs_non_tensor_args_and_kwargs():
    w = nnkit.randn(3, requires_grad=True)

    def fn(a, scale, b, *, shift):
        return (a * w * scale + shift).sin(), (b * w).exp()

    a = nnkit.randn(3, requires_grad=True)
    b = nnkit.randn(3, requires_grad=True)
    outs = fn(a, 2.0, b, shift=1.0)
    (outs[0].sum() + 3 * outs[1].sum()).backward()
    ref = [t.grad.numpy().copy() for t in (a, b, w)]
    for t in (a, b, w):
        t.grad = None
    o1, o2 = checkpoint(fn, a, 2.0, b, shift=1.0)
    (o1.sum() + 3 * o2.sum()).backward()
    for t, r in zip((a, b, w), ref):
        np.testing.assert_allclose(t.grad.numpy(), r, rtol=1e-6)
    # only one output used: the other gets a zero gradient
    for t in (a, b, w):
        t.grad = None
    o1, o2 = checkpoint(fn, a, 2.0, b, shift=1.0)
    o2.sum().backward()
    assert a.grad is None or np.allclose(a.grad.numpy(), 0)
    assert b.grad is not None


def test_modified_input_is_detected():
    x = nnkit.randn(3, requires_grad=True)
    h = x * 1.0
    y = checkpoint(lambda t: t.exp(), h)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="in-place"):
        y.sum().backward()


def test_function_must_return_tensors():
    with pytest.raises(TypeError, match="checkpoint.*Tensor"):
        checkpoint(lambda t: 3, nnkit.randn(2, requires_grad=True))


def test_checkpoint_sequential_matches_plain():
    ws = _weights(4)
    fns = [lambda h, w=w: (h @ w).tanh() for w in ws]
    x = nnkit.randn(5, 8, requires_grad=True)
    h = x
    for f in fns:
        h = f(h)
    h.sum().backward()
    ref = [x.grad.numpy().copy()] + [w.grad.numpy().copy() for w in ws]
    for t in [x] + ws:
        t.grad = None
    checkpoint_sequential(fns, 2, x).sum().backward()
    got = [x.grad.numpy()] + [w.grad.numpy() for w in ws]
    for a, b in zip(ref, got):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_exported_at_top_level():
    assert nnkit.checkpoint is checkpoint
