"""The backward engine and autograd state: graph walking, accumulation, modes, seeds."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import nnkit


def _np(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------- graph walking
def test_chain_of_100k_ops_backwards_without_recursion(device):
    x = nnkit.tensor(0.5, device=device, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = -y
    y.backward()
    assert x.grad.item() == 1.0
    del y  # freeing the long graph must not recurse either
    gc.collect()


def test_long_chain_freed_without_backward(device):
    x = nnkit.tensor(1.0, device=device, requires_grad=True)
    y = x
    for _ in range(50_000):
        y = -y
    ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert ref() is None


def test_intermediates_are_freed_after_backward(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    h1 = x * 2
    h2 = h1.exp()
    out = (h2 * h1).sum()
    mats = [weakref.ref(h1._impl.data), weakref.ref(h2._impl.data)]
    del h1, h2
    assert all(r() is not None for r in mats)  # saved for backward
    out.backward()
    gc.collect()
    assert all(r() is None for r in mats)
    assert x.grad is not None


def test_graph_nodes_are_freed_with_output(device):
    x = nnkit.randn(3, device=device, requires_grad=True)
    y = (x * 2).exp().sum()
    node = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node() is None


def test_diamond_graph_counts_dependencies(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    a = x * 3
    b = a * a  # a used twice
    c = a + b
    c.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 3 + 2 * 9 * _np(x))


def test_same_tensor_both_operands(device):
    x = nnkit.tensor([1.0, -2.0], device=device, requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * _np(x))
    x.grad = None
    (x + x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])


def test_unused_branch_gets_no_gradient(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    w = nnkit.ones(2, device=device, requires_grad=True)
    _unused = w * 2
    (x * 2).sum().backward()
    assert w.grad is None and x.grad is not None


def test_multiple_roots_backward(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    y1, y2 = (x * 2).sum(), (x * x).sum()
    nnkit.autograd.backward([y1, y2])
    np.testing.assert_allclose(_np(x.grad), 2 + 2 * _np(x))


def test_backward_with_gradient_argument(device):
    x = nnkit.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    g = nnkit.tensor([1.0, 0.5, -1.0], device=device)
    (x * x).backward(g)
    np.testing.assert_allclose(_np(x.grad), 2 * _np(x) * _np(g))
    assert g.tolist() == [1.0, 0.5, -1.0]  # the caller's gradient is not modified


def test_backward_inputs_restricts_accumulation(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    w = nnkit.ones(2, device=device, requires_grad=True)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and w.grad is not None


# ------------------------------------------------------------- retain / accumulate
def test_retain_graph_allows_second_backward_and_accumulates(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(_np(x.grad), [2.0, 4.0])
    y.backward()
    np.testing.assert_allclose(_np(x.grad), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_gradient_accumulates_across_graphs(device):
    w = nnkit.tensor([1.0, -1.0], device=device, requires_grad=True)
    for k in range(3):
        (w * (k + 1)).sum().backward()
    np.testing.assert_allclose(_np(w.grad), [6.0, 6.0])
    w.grad = None
    (w * 2).sum().backward()
    np.testing.assert_allclose(_np(w.grad), [2.0, 2.0])


def test_grad_is_not_aliased_to_user_memory(device):
    x = nnkit.ones(3, device=device, requires_grad=True)
    g = nnkit.ones(3, device=device)
    (x * 1).backward(g)
    (x * 1).backward(g)
    assert g.tolist() == [1.0, 1.0, 1.0]
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_gradient_sums_in_place_only_into_buffers_nobody_else_sees(device, monkeypatch):
    # The engine sums the gradients reaching one tensor in place into buffers it owns
    # (allocated by it or by a built-in backward's ops); check it does so here, and
    # that tensors a user backward returns but also keeps are never written.
    from nnkit.backends.mat import ArrayMat

    writes = []
    accumulate = ArrayMat.accumulate_

    def spy(self, other):
        writes.append(self)
        return accumulate(self, other)

    monkeypatch.setattr(ArrayMat, "accumulate_", spy)
    kept = []

    class Keep(nnkit.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            out = g * 1
            kept.append((out, out.tolist()))
            return out

    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    h = x * 2
    h.retain_grad()
    y = Keep.apply(h) + Keep.apply(h) + h * 3 + h.reshape(2, 1).reshape(2)
    y.sum().backward()
    assert [t.tolist() for t, _ in kept] == [want for _, want in kept]  # untouched
    assert writes  # the in-place path was taken (h gets four gradients)
    np.testing.assert_allclose(_np(h.grad), [6.0, 6.0])
    np.testing.assert_allclose(_np(x.grad), [12.0, 12.0])
    g = h.grad
    (x * 5).sum().backward()  # a later backward must not write into h.grad
    np.testing.assert_allclose(_np(g), [6.0, 6.0])


def test_gradient_passed_through_to_two_inputs_is_not_summed_into(device):
    # Add's backward hands one gradient object to both inputs; summing into it in
    # place would change what the other input receives.
    x = nnkit.tensor([1.0, -1.0], device=device, requires_grad=True)
    w = nnkit.tensor([2.0, 3.0], device=device, requires_grad=True)
    a = x + w  # both get a's gradient object
    y = a * 2 + x * 3 + w * 4
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [5.0, 5.0])
    np.testing.assert_allclose(_np(w.grad), [6.0, 6.0])


def test_non_leaf_grad_only_after_retain_grad(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x * 3
    z = x * 4
    y.retain_grad()
    assert y.retains_grad and not z.retains_grad
    ((y * y).sum() + z.sum()).backward()
    np.testing.assert_allclose(_np(y.grad), 2 * _np(y))
    assert z.grad is None
    assert not y.is_leaf and x.is_leaf and z.grad_fn is not None


def test_autograd_grad_does_not_touch_dot_grad(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    (g,) = nnkit.autograd.grad((x**3).sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), 3 * _np(x) ** 2)
    assert x.grad is None
    (gg,) = nnkit.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(_np(gg), 6 * _np(x))


def test_double_backward_through_leaf_alias(device):
    # d/dv of (v * d(x*y)/dx) where the first gradient is v itself (an alias of a leaf).
    x = nnkit.randn(3, device=device, dtype=nnkit.float64, requires_grad=True)
    v = nnkit.randn(3, device=device, dtype=nnkit.float64, requires_grad=True)
    (gx,) = nnkit.autograd.grad(x + 1, x, v, create_graph=True)
    (gv,) = nnkit.autograd.grad((gx * 2).sum(), v)
    np.testing.assert_allclose(_np(gv), [2.0, 2.0, 2.0])


# ------------------------------------------------------------- graph inspection
def test_grad_fn_name_and_next_functions(device):
    x = nnkit.ones(2, 3, device=device, requires_grad=True)
    w = nnkit.ones(3, 4, device=device, requires_grad=True)
    c = nnkit.ones(2, 4, device=device)  # a constant: no edge
    y = (x @ w + c).relu().sum()
    assert y.grad_fn.name() == "SumBackward"
    ((relu_fn, nr),) = y.grad_fn.next_functions[:1]
    assert relu_fn.name() == "ReLUBackward" and nr == 0
    add_fn = relu_fn.next_functions[0][0]
    assert add_fn.name() == "AddBackward"
    assert add_fn.next_functions[1] == (None, 0)
    mm_fn = add_fn.next_functions[0][0]
    names = set()
    stack = [mm_fn]
    while stack:  # walk down to the leaves
        n = stack.pop()
        names.add(n.name())
        stack.extend(f for f, _ in n.next_functions if f is not None)
    assert "AccumulateGrad" in names and any("MatMul" in s for s in names)
    accs = [f for f, _ in _leaves(y.grad_fn)]
    assert {id(a.variable._impl) for a in accs} == {id(x._impl), id(w._impl)}
    assert x.grad_fn is None


def _leaves(node):
    out, stack, seen = [], [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for f, nr in n.next_functions:
            if f is None:
                continue
            if f.name() == "AccumulateGrad":
                out.append((f, nr))
            else:
                stack.append(f)
    return out


# ------------------------------------------------------------- broadcasting
@pytest.mark.parametrize(
    "sa,sb", [((3, 1), (1, 4)), ((2, 3), (3,)), ((), (2, 3)), ((2, 1, 3), (4, 1))]
)
def test_broadcast_gradients_summed_to_input_shape(sa, sb, device):
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal(sa), rng.standard_normal(sb)
    a = nnkit.tensor(an, device=device, requires_grad=True)
    b = nnkit.tensor(bn, device=device, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.shape == tuple(sa) and b.grad.shape == tuple(sb)
    full = np.broadcast_shapes(sa, sb)
    np.testing.assert_allclose(_np(a.grad), _sum_to(np.broadcast_to(bn, full), sa), rtol=1e-5)
    np.testing.assert_allclose(_np(b.grad), _sum_to(np.broadcast_to(an, full), sb), rtol=1e-5)


def _sum_to(arr, shape):
    lead = arr.ndim - len(shape)
    arr = arr.sum(axis=tuple(range(lead))) if lead else arr
    axes = tuple(k for k, n in enumerate(shape) if n == 1 and arr.shape[k] != 1)
    return arr.sum(axis=axes, keepdims=True) if axes else arr


# ------------------------------------------------------------- type promotion
def test_float32_with_python_float_stays_float32(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    for y in (x + 1.5, 1.5 * x, x / 3.0, x**2.0, 2.0 - x, nnkit.maximum(x, 0.5)):
        assert y.dtype == nnkit.float32


@pytest.mark.parametrize(
    "op",
    [
        lambda i: i + 1.5,
        lambda i: i * 1.5,
        lambda i: 1.5 - i,
        lambda i: i / 2,
        lambda i: i**0.5,
        lambda i: nnkit.where(i > 1, i, 0.5),
    ],
)
def test_int_tensor_with_python_float_gives_default_float(op, device):
    i = nnkit.tensor([1, 2, 3], device=device)
    assert i.dtype == nnkit.int64
    assert op(i).dtype == nnkit.float32


def test_int_with_int_and_bool_stay_integer(device):
    i = nnkit.tensor([1, 2, 3], device=device)
    assert (i + 1).dtype == nnkit.int64 and (i * i).dtype == nnkit.int64
    assert (nnkit.tensor([True, False], device=device) + 1).dtype == nnkit.int64


def test_int_tensor_with_float_tensor_takes_the_float_dtype(device):
    i = nnkit.tensor([1, 2], device=device)
    f = nnkit.ones(2, device=device, requires_grad=True)
    y = i * f
    assert y.dtype == nnkit.float32
    y.sum().backward()
    assert f.grad.dtype == nnkit.float32 and f.grad.tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a + b,
        lambda a, b: a * b,
        lambda a, b: a / b,
        lambda a, b: b - a,
        lambda a, b: nnkit.maximum(a, b),
        lambda a, b: a**b,
        lambda a, b: nnkit.cat([a, b]),
        lambda a, b: nnkit.where(a > 0, a, b),
    ],
)
def test_mixed_float_precision_promotes_and_casts_grads_back(op, device):
    a = nnkit.tensor([1.5, 2.0], dtype=nnkit.float32, device=device, requires_grad=True)
    b = nnkit.tensor([0.5, 3.0], dtype=nnkit.float64, device=device, requires_grad=True)
    y = op(a, b)
    assert y.dtype == nnkit.float64
    y.sum().backward()
    assert a.grad.dtype == nnkit.float32 and b.grad.dtype == nnkit.float64
    assert a.grad.shape == a.shape and b.grad.shape == b.shape


def test_cast_gradient_flows_between_float_dtypes(device):
    x = nnkit.tensor([1.0, 2.0], dtype=nnkit.float64, device=device, requires_grad=True)
    y = x.to(nnkit.float32) * 3
    assert y.dtype == nnkit.float32
    y.sum().backward()
    assert x.grad.dtype == nnkit.float64 and x.grad.tolist() == [3.0, 3.0]


def test_integer_sum_accumulates_in_int64(device):
    i = nnkit.tensor([1, 2], dtype=nnkit.int32, device=device)
    assert i.sum().dtype == nnkit.int64


# ------------------------------------------------------------- grad modes
def test_no_grad_context_and_decorator(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    with nnkit.no_grad():
        assert not nnkit.is_grad_enabled()
        y = x * 2
    assert nnkit.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad

    @nnkit.no_grad()
    def f(t):
        return t * 2

    assert f(x).grad_fn is None and nnkit.is_grad_enabled()
    assert f.__name__ == "f"


def test_enable_grad_inside_no_grad(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    with nnkit.no_grad():
        with nnkit.enable_grad():
            y = x * 2
        z = x * 2

        @nnkit.enable_grad()
        def f(t):
            return t * 2

        w = f(x)
    assert y.requires_grad and not z.requires_grad and w.requires_grad


def test_set_grad_enabled_call_context_and_decorator(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    with nnkit.set_grad_enabled(False):
        assert (x * 2).grad_fn is None
    assert nnkit.is_grad_enabled()
    nnkit.set_grad_enabled(False)
    try:
        assert not nnkit.is_grad_enabled()
    finally:
        nnkit.set_grad_enabled(True)

    @nnkit.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert nnkit.is_grad_enabled()  # decorating does not switch the mode
    assert f(x).grad_fn is None and nnkit.is_grad_enabled()


def test_inference_mode_context_and_decorator(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    with nnkit.inference_mode():
        assert nnkit.is_inference_mode_enabled() and not nnkit.is_grad_enabled()
        y = x * 2
    assert y.grad_fn is None and not nnkit.is_inference_mode_enabled()
    with nnkit.inference_mode(False):
        assert (x * 2).requires_grad

    @nnkit.inference_mode()
    def f(t):
        return t * 2

    assert f(x).grad_fn is None and nnkit.is_grad_enabled()


def test_modes_restore_after_exception():
    with pytest.raises(KeyError):
        with nnkit.no_grad():
            raise KeyError("boom")
    assert nnkit.is_grad_enabled()


def test_grad_mode_is_thread_local(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    inside = threading.Event()
    release = threading.Event()
    seen = {}

    def other():
        with nnkit.no_grad():
            seen["other"] = nnkit.is_grad_enabled()
            inside.set()
            release.wait(5)

    t = threading.Thread(target=other)
    t.start()
    assert inside.wait(5)
    try:
        assert nnkit.is_grad_enabled()
        assert (x * 2).requires_grad  # the other thread's no_grad does not leak here
    finally:
        release.set()
        t.join()
    assert seen["other"] is False


def test_threads_accumulate_into_shared_leaf(device):
    w = nnkit.ones(4, device=device, requires_grad=True)

    def work():
        for _ in range(20):
            (w * 2).sum().backward()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert w.grad.tolist() == [160.0] * 4


def test_ops_on_tensors_without_grad_record_nothing(device):
    a = nnkit.ones(2, device=device)
    assert (a * 2).grad_fn is None and (a * 2).is_leaf


def test_detach_shares_memory_and_cuts_graph(device):
    x = nnkit.ones(2, device=device, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad
    assert d.untyped_storage() is y.untyped_storage()


# ------------------------------------------------------------- random seeds
@pytest.mark.parametrize(
    "draw",
    [
        lambda d: nnkit.rand(3, 2, device=d),
        lambda d: nnkit.randn((4,), device=d),
        lambda d: nnkit.randint(0, 10, (5,), device=d),
        lambda d: nnkit.randperm(7, device=d),
    ],
)
def test_manual_seed_reproducibility(draw, device):
    nnkit.manual_seed(123)
    a = draw(device).tolist()
    b = draw(device).tolist()
    nnkit.manual_seed(123)
    assert draw(device).tolist() == a
    assert draw(device).tolist() == b
    assert a != b
    nnkit.manual_seed(124)
    assert draw(device).tolist() != a


def test_random_factories_shapes_and_ranges(device):
    nnkit.manual_seed(0)
    r = nnkit.rand(100, device=device)
    assert r.dtype == nnkit.float32 and 0 <= r.min().item() and r.max().item() < 1
    i = nnkit.randint(3, 6, (50,), device=device)
    assert i.dtype == nnkit.int64 and set(i.tolist()) <= {3, 4, 5}
    assert sorted(nnkit.randperm(6, device=device).tolist()) == list(range(6))
    assert nnkit.randn(2, 3, device=device, requires_grad=True).requires_grad
    assert nnkit.initial_seed() == 0
