"""Tensor hooks: register_hook on leaves and non-leaves, post-accumulate-grad hooks."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit


def _leaf():
    return nnkit.tensor([1.0, -2.0, 3.0], requires_grad=True)


def test_leaf_hook_replaces_gradient_and_remove_restores():
    x = _leaf()
    handle = x.register_hook(lambda g: g * 2)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0, 6.0])
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])
    handle.remove()  # removing twice is harmless


def test_hook_returning_none_observes_only():
    x = _leaf()
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    (x * x).sum().backward()
    np.testing.assert_allclose(seen[0], [2.0, -4.0, 6.0])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])


def test_non_leaf_hook_changes_what_flows_upstream():
    x = _leaf()
    y = x * 3
    seen = []
    handle = y.register_hook(lambda g: seen.append(1) or g * 10)
    (y * 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0, 30.0])
    assert seen == [1] and y.grad is None
    handle.remove()
    x.grad = None
    y2 = x * 3
    (y2 * 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_non_leaf_hook_gets_summed_gradient_once():
    x = _leaf()
    y = x * 1.0
    calls = []
    y.register_hook(lambda g: calls.append(g.numpy().copy()))
    (y * 2 + y * 3).sum().backward()
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0], [5.0, 5.0, 5.0])


def test_hooks_run_in_registration_order_and_chain():
    x = _leaf()
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 10)
    x.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 20.0, 20.0])


def test_hook_on_multi_output_node_hits_only_its_output():
    x = nnkit.arange(6, dtype=nnkit.float32).requires_grad_()
    a, b = x.split(3)
    a.register_hook(lambda g: g * 0)
    (a.sum() + 2 * b.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 0, 0, 2, 2, 2])


def test_retain_grad_sees_gradient_before_upstream_hooks_change():
    x = _leaf()
    y = x * 2
    y.retain_grad()
    z = y.exp()
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.exp(2 * np.array([1.0, -2.0, 3.0])), rtol=1e-6)


def test_register_hook_requires_grad():
    with pytest.raises(RuntimeError, match="doesn't require grad"):
        nnkit.ones(2).register_hook(lambda g: g)


def test_post_accumulate_grad_hook_runs_once_after_grad_update():
    x = _leaf()
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    y = x * x
    (y + y + x).sum().backward()  # three paths into x, one hook call
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 4 * np.array([1.0, -2.0, 3.0]) + 1)
    (x * 1).sum().backward()  # accumulates: hook sees the summed .grad
    assert len(seen) == 2
    np.testing.assert_allclose(seen[1], seen[0] + 1)
    handle.remove()
    (x * 1).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_hook_can_step_in_place():
    # the optimizer-in-backward pattern: update the weight and drop the grad
    w = nnkit.tensor([1.0, 2.0], requires_grad=True)

    def sgd(p):
        with nnkit.no_grad():
            p.sub_(0.5 * p.grad)
        p.grad = None

    w.register_post_accumulate_grad_hook(sgd)
    (w * w).sum().backward()
    np.testing.assert_allclose(w.detach().numpy(), [0.0, 0.0])
    assert w.grad is None


def test_post_accumulate_hook_only_on_leaves():
    y = _leaf() * 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_node_post_hook_sees_grad_inputs_and_outputs():
    x = _leaf()
    y = x * 2
    seen = []
    y.grad_fn.register_hook(lambda gin, gout: seen.append((len(gin), len(gout))))
    y.sum().backward()
    assert seen == [(2, 1)]
