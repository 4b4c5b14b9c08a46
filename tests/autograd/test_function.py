"""User-defined Functions: forward/backward, ctx API, checks on what backward returns."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.autograd import Function, gradcheck, gradgradcheck


class ScaledMul(Function):
    """out1 = a * b * k, out2 = a + b; k is a plain number."""

    @staticmethod
    def forward(ctx, a, b, k):
        ctx.save_for_backward(a, b)
        ctx.k = k
        return a * b * k, a + b

    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        ga = g1 * b * ctx.k + g2 if ctx.needs_input_grad[0] else None
        gb = g1 * a * ctx.k + g2 if ctx.needs_input_grad[1] else None
        return ga, gb, None


def test_multiple_outputs_and_non_tensor_argument():
    a = nnkit.tensor([1.0, 2.0], requires_grad=True)
    b = nnkit.tensor([3.0, 5.0], requires_grad=True)
    o1, o2 = ScaledMul.apply(a, b, 3.0)
    np.testing.assert_allclose(o1.detach().numpy(), [9.0, 30.0])
    assert o1.grad_fn is o2.grad_fn and o1.grad_fn.name() == "ScaledMulBackward"
    assert (o1.output_nr, o2.output_nr) == (0, 1)
    (o1.sum() + 2 * o2.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), [3 * 3 + 2, 3 * 5 + 2])
    np.testing.assert_allclose(b.grad.numpy(), [3 * 1 + 2, 3 * 2 + 2])


def test_unused_output_gets_zero_gradient():
    a = nnkit.tensor([1.0, 2.0], requires_grad=True)
    b = nnkit.tensor([3.0, 5.0], requires_grad=True)
    o1, _ = ScaledMul.apply(a, b, 1.0)
    o1.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 5.0])


def test_needs_input_grad_and_none_gradients():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, flag):
            return a * b

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return (
                g if ctx.needs_input_grad[0] else None,
                g if ctx.needs_input_grad[1] else None,
                None,
            )

    a = nnkit.ones(2, requires_grad=True)
    b = nnkit.ones(2)
    Probe.apply(a, b, "x").sum().backward()
    assert seen == [(True, False, False)]
    assert b.grad is None and a.grad is not None


def test_no_graph_without_requires_grad_or_under_no_grad():
    a = nnkit.ones(2)
    out, _ = ScaledMul.apply(a, a, 2.0)
    assert out.grad_fn is None and not out.requires_grad
    with nnkit.no_grad():
        out, _ = ScaledMul.apply(nnkit.ones(2, requires_grad=True), a, 2.0)
    assert out.grad_fn is None


def test_forward_runs_without_recording():
    class Inner(Function):
        @staticmethod
        def forward(ctx, a):
            inner = a * 2
            ctx.inner_has_graph = inner.grad_fn is not None
            return inner

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = nnkit.ones(2, requires_grad=True)
    out = Inner.apply(a)
    assert out.grad_fn.name() == "InnerBackward"
    assert out.grad_fn.inner_has_graph is False


def test_mark_non_differentiable():
    class SortWithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            vals = x * 1.0
            flags = (x > 0).float()
            ctx.mark_non_differentiable(flags)
            return vals, flags

        @staticmethod
        def backward(ctx, g_vals, g_flags):
            return g_vals

    x = nnkit.tensor([1.0, -2.0], requires_grad=True)
    vals, flags = SortWithIndex.apply(x)
    assert vals.requires_grad and not flags.requires_grad and flags.grad_fn is None
    vals.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def test_saved_tensor_version_check():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    a = nnkit.tensor([1.0, 2.0], requires_grad=True)
    h = a * 1.0
    y = Square.apply(h)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match=r"modified by an in-place operation.*SquareBackward"):
        y.sum().backward()


def test_second_backward_raises_then_retain_graph_allows_it():
    a = nnkit.tensor([1.0, 2.0], requires_grad=True)
    o1, _ = ScaledMul.apply(a, a * 1.0, 1.0)
    o1.sum().backward(retain_graph=True)
    o1.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="second time"):
        o1.sum().backward()


def test_wrong_number_of_gradients_names_function():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = nnkit.ones(3, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"TooMany.*incorrect number of gradients.*"
        r"expected 1.*got 2",
    ):
        TooMany.apply(x).sum().backward()


def test_wrong_gradient_shape_names_function_and_input():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x, y, scale):
            return x * y * scale

        @staticmethod
        def backward(ctx, g):
            return g, g.sum(), None  # input 1 has shape (3,), gets ()

    x = nnkit.ones(3, requires_grad=True)
    y = nnkit.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadShape.*shape \[\] for input 1.*shape \[3\]"):
        BadShape.apply(x, y, 2.0).sum().backward()


def test_non_tensor_gradient_is_rejected():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 1.0

    with pytest.raises(TypeError, match="Bad.*float.*input 0"):
        Bad.apply(nnkit.ones(2, requires_grad=True)).sum().backward()


def test_forward_must_return_tensors():
    class NotTensor(Function):
        @staticmethod
        def forward(ctx, x):
            return 3.0

    with pytest.raises(TypeError, match="NotTensor.forward must return Tensors"):
        NotTensor.apply(nnkit.ones(2, requires_grad=True))


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


def test_user_function_supports_double_backward_and_gradcheck():
    x = nnkit.tensor([0.5, -1.5, 2.0], dtype=nnkit.float64, requires_grad=True)
    assert gradcheck(Cube.apply, (x,))
    assert gradgradcheck(Cube.apply, (x,))
    (g,) = nnkit.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (gg,) = nnkit.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * np.array([0.5, -1.5, 2.0]))


def test_builtin_ops_use_the_same_node_mechanism():
    from nnkit.autograd.function import Node, Op

    x = nnkit.ones(2, requires_grad=True)
    y = x.exp()
    assert isinstance(y.grad_fn, Node) and issubclass(y.grad_fn._fn_cls, Op)
    assert y.grad_fn.next_functions[0][0].name() == "AccumulateGrad"
