"""The unrecorded backward's Mat route (``Op.backward_mat``): what the engine runs for
the hot ops without ``create_graph`` keeps the checks, hooks and buffer rules of the
Tensor ``backward`` (the op table compares their gradients bitwise, every row)."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.autograd.function import Op
from nnkit.autograd.graph import saved_tensors_hooks
from nnkit.autograd.ops.arithmetic import Mul


def _x():
    return nnkit.tensor([1.0, -2.0, 3.0], requires_grad=True)


def test_the_hot_ops_have_a_mat_backward_and_user_functions_do_not():
    assert Mul.backward_mat is not None
    assert nnkit.Function.backward_mat is None


def test_saved_tensor_hooks_unpack_in_the_mat_backward():
    x = _x()
    calls = []

    def pack(t):
        calls.append("pack")
        return t.numpy().copy()  # not the tensor itself: unpack must rebuild it

    def unpack(a):
        calls.append("unpack")
        return nnkit.tensor(a)

    with saved_tensors_hooks(pack, unpack):
        y = (x * x).tanh().sum()  # Mul saves two inputs, Tanh its output
    y.backward()
    assert calls == ["pack"] * 3 + ["unpack"] * 3
    t = np.tanh(x.detach().numpy() ** 2)
    np.testing.assert_allclose(x.grad.numpy(), (1 - t * t) * 2 * x.detach().numpy(), rtol=1e-6)


def test_an_in_place_write_of_a_saved_tensor_raises_in_the_mat_backward():
    x = _x()
    y = x * 2.0
    z = y * y  # saves y
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()


def test_a_second_backward_through_a_freed_graph_raises():
    x = _x()
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_retain_graph_runs_the_mat_backward_twice():
    x = _x()
    y = (x * x).tanh().sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * first)


def test_a_subclass_overriding_backward_does_not_inherit_the_mat_backward():
    class Doubled(Mul):
        @staticmethod
        def backward(ctx, grad_output):
            ga, gb = Mul.backward(ctx, grad_output)
            return ga * 2, None if gb is None else gb * 2

    assert Doubled.backward_mat is None
    x = _x()
    Doubled.apply(x, nnkit.tensor([1.0, 1.0, 1.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_a_subclass_may_define_its_own_mat_backward():
    class Twice(Op):
        @staticmethod
        def forward(ctx, x):
            return x.add(x)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2

        @staticmethod
        def backward_mat(ctx, g):
            return g.add(g)

    x = _x()
    Twice.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    (g,) = nnkit.autograd.grad(Twice.apply(x).sum(), [x], create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [2.0, 2.0, 2.0])


def test_post_hooks_and_anomaly_checks_see_tensors():
    x = _x()
    y = x * 3.0
    seen = []
    y.grad_fn.register_hook(lambda gin, gout: seen.append((type(gin[0]), type(gout[0]))))
    y.sum().backward()
    assert seen == [(nnkit.Tensor, nnkit.Tensor)]
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])
    with nnkit.detect_anomaly():
        z = _x()
        w = z * nnkit.tensor([np.inf, 1.0, 1.0])
        with pytest.raises(RuntimeError, match="MulBackward"):
            (w * 0.0).sum().backward()


def test_a_gradient_passed_on_to_two_inputs_is_not_summed_into_in_place():
    # Add's backward hands its incoming gradient to both operands (the same Mat): the
    # sum at y's node must be a new buffer, not a write into that shared one.
    x = _x()
    y = x * 3.0
    z = y + y
    (z * 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0, 6.0])
    a = _x()
    b = a * 1.0
    c = b + b
    seen = []
    c.register_hook(lambda g: seen.append(g))
    c.sum().backward()
    np.testing.assert_array_equal(seen[0].numpy(), [1.0, 1.0, 1.0])  # kept as it was
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0, 2.0])


def test_autograd_grad_returns_tensors_from_the_mat_route():
    x = _x()
    (g,) = nnkit.autograd.grad((x * x).sum(), [x])
    assert isinstance(g, nnkit.Tensor) and not g.requires_grad
    np.testing.assert_array_equal(g.numpy(), 2 * x.detach().numpy())
