"""Buffer ownership in the backward engine, checked against PyTorch.

The engine writes gradients in place (sums, the first ``.grad`` taken over without a
copy) only into buffers it owns: ones it allocated, or that a built-in backward made
while it ran. A buffer handed to the user is never written again: a ``.grad`` some
other tensor holds, a hook's argument or return value, a saved tensor of a retained
graph, a result of ``autograd.grad``. Each scenario runs the same code on nnkit and
torch; every value observed, including tensors held across later backwards, must
agree. Sharing any of those buffers with a gradient the engine later sums into would
change a held value and fail the comparison.
"""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.backends.mat import ArrayMat

torch = pytest.importorskip("torch")


def _np(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def _compare(scenario):
    got, want = scenario(nnkit), scenario(torch)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, err_msg=key)


def _held_grads_across_backwards(lib):
    """A retained non-leaf ``.grad`` and a leaf ``.grad``, held across a second
    backward that accumulates: add's backward hands y's gradient straight on to x."""
    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x + 1.0
    y.retain_grad()
    (y * 3.0).sum().backward()
    gx, gy = x.grad, y.grad
    seen = {"gx1": _np(gx), "gy1": _np(gy)}
    y2 = x + 1.0
    y2.retain_grad()
    (y2 * 5.0 + y2 * y2).sum().backward()
    seen.update(gx_held=_np(gx), gy_held=_np(gy), x_grad=_np(x.grad), y2_grad=_np(y2.grad))
    seen["gx_is_grad"] = np.array(gx is x.grad)  # accumulated in place, as torch
    return seen


def test_held_grads_are_never_written_by_a_later_backward():
    _compare(_held_grads_across_backwards)


def _retained_graph_saved_tensors(lib):
    """Saved tensors of a retained graph, read between two backwards, with gradients
    summed at the tensor they save (y feeds three ops)."""
    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x.exp()  # saves its output
    z = y * y + y * 2.0 + y
    loss = z.sum()
    loss.backward(retain_graph=True)
    seen = {"g1": _np(x.grad), "y_between": _np(y)}
    loss.backward()
    seen.update(g2=_np(x.grad), y_after=_np(y))
    return seen


def test_saved_tensors_of_a_retained_graph_are_not_written():
    _compare(_retained_graph_saved_tensors)


def _function_returning_its_saved_tensor(lib):
    """A user backward that hands back a tensor it saved: the engine must copy it
    into ``.grad`` (not take it over), else the second backward would sum into the
    saved tensor and return the changed value."""

    class Triple(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            g = x.detach() * 0.0 + 3.0  # d(3x)/dx, exact under a sum loss
            ctx.save_for_backward(g)
            return x * 3.0

        @staticmethod
        def backward(ctx, grad_output):
            (g,) = ctx.saved_tensors
            return g

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = Triple.apply(x).sum()
    out.backward(retain_graph=True)
    (saved,) = out.grad_fn.next_functions[0][0].saved_tensors  # held across
    seen = {"g1": _np(x.grad), "saved_between": _np(saved)}
    out.backward()
    seen.update(g2=_np(x.grad), saved_after=_np(saved))
    return seen


def test_saved_tensor_returned_as_gradient_is_copied_into_grad():
    _compare(_function_returning_its_saved_tensor)


def _hooks_keeping_tensors(lib):
    """A tensor hook keeping its argument, a leaf hook returning a tensor it keeps, and
    gradients summed after both (h feeds three ops, x two)."""
    kept, made = [], []

    def keep(g):
        kept.append(g)

    def double(g):
        t = g * 2.0
        made.append(t)
        return t

    x = lib.tensor([1.0, -1.0, 0.5], requires_grad=True)
    x.register_hook(double)
    h = x * 2.0
    h.register_hook(keep)
    ((h * h).sum() + (h * 3.0).sum() + h.sum() + (x * 4.0).sum()).backward()
    first = {"kept": _np(kept[0]), "made": _np(made[0]), "g1": _np(x.grad)}
    h2 = x * 2.0
    h2.register_hook(keep)
    ((h2 * h2).sum() + (h2 * 3.0).sum() + (x * 4.0).sum()).backward()
    seen = {k + "_first": v for k, v in first.items()}
    seen.update(
        kept_after=_np(kept[0]),
        made_after=_np(made[0]),
        kept2=_np(kept[1]),
        made2=_np(made[1]),
        g2=_np(x.grad),
    )
    return seen


def test_hook_arguments_and_returns_are_never_written():
    _compare(_hooks_keeping_tensors)


def _grad_results_then_backward(lib):
    """A result of ``autograd.grad`` (y's gradient, which continues down the graph and
    is summed with another at x) held across a backward of the same graph."""
    x = lib.tensor([1.0, 2.0, -3.0], requires_grad=True)
    y = x * 3.0
    loss = (y * y).sum() + (x * x).sum()
    (gy,) = lib.autograd.grad(loss, y, retain_graph=True)
    seen = {"gy": _np(gy)}
    loss.backward()
    seen.update(gy_after=_np(gy), x_grad=_np(x.grad))
    return seen


def test_autograd_grad_results_are_never_written():
    _compare(_grad_results_then_backward)


def _user_gradient(lib):
    """The gradient given to ``backward`` is the caller's, even when it reaches a leaf
    unchanged and the leaf's gradient is summed into twice."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    g = lib.tensor([0.5, -1.0])
    y = x + 0.0
    (y + y * 1.0).backward(g)
    (x * 2.0).backward(g)
    return {"g": _np(g), "x_grad": _np(x.grad)}


def test_user_gradient_is_never_written():
    _compare(_user_gradient)


def _one_gradient_for_two_inputs(lib):
    """Add's backward hands one gradient to both inputs; it must not be summed into (the
    other input's buffer holds it too), and each leaf's ``.grad`` must get a buffer of
    its own, so accumulating into one never changes the other. (The last term runs
    first: its gradient reaches x and w before their other ones.)"""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([-1.0, 0.5], requires_grad=True)
    for k in range(3):
        ((x * 3.0).sum() + (w * 5.0).sum() + ((x + w) * (k + 2.0)).sum()).backward()
    return {"x_grad": _np(x.grad), "w_grad": _np(w.grad)}


def test_one_gradient_for_two_inputs_gives_two_grads():
    _compare(_one_gradient_for_two_inputs)


def _user_backward_keeping_its_results(lib):
    """A user backward that keeps what it returns; two such gradients meet at h and
    must be summed out of place."""
    kept = []

    class Keep(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad_output):
            out = grad_output * 1.0
            kept.append(out)
            return out

    x = lib.tensor([1.0, -2.0], requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    loss = (Keep.apply(h) * 3.0).sum() + (Keep.apply(h) * 5.0).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return {
        "kept": np.stack([_np(t) for t in kept]),
        "h_grad": _np(h.grad),
        "x_grad": _np(x.grad),
    }


def test_user_backward_results_are_never_written():
    _compare(_user_backward_keeping_its_results)


def _hooks_keeping_arguments_across_retained_backwards(lib):
    """Hooks keeping their arguments (a leaf's, a retained non-leaf's, and a node's post
    hook keeping its gradients) while ``.grad`` accumulates over a retained graph."""
    leaf_args, h_args, node_args = [], [], []
    x = lib.tensor([0.5, 1.5, -1.0], requires_grad=True)
    x.register_hook(leaf_args.append)
    h = x * 2.0
    h.retain_grad()
    h.register_hook(h_args.append)
    y = h * h
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: node_args.append(grad_inputs))
    loss = (x * 4.0).sum() + (h * 3.0).sum() + y.sum()  # y's gradients reach h first
    loss.backward(retain_graph=True)
    loss.backward()
    return {
        "leaf_args": np.stack([_np(t) for t in leaf_args]),
        "h_args": np.stack([_np(t) for t in h_args]),
        "node_args": np.stack([_np(gi[0]) for gi in node_args]),
        "h_grad": _np(h.grad),
        "x_grad": _np(x.grad),
    }


def test_hooks_keeping_arguments_across_retained_backwards():
    _compare(_hooks_keeping_arguments_across_retained_backwards)


def test_a_new_buffer_returned_for_two_inputs_is_owned_by_neither():
    """A built-in backward returning one new buffer for both inputs: both ``.grad``
    must not share it (no torch twin: torch's own ops never do this)."""
    from nnkit.autograd.function import Op

    class Both(Op):  # out = a + b, whose backward makes one buffer for both inputs
        @staticmethod
        def forward(ctx, a, b):
            return a.add(b)

        @staticmethod
        def backward(ctx, grad_output):
            g = grad_output * 1.0
            return g, g

    x = nnkit.tensor([1.0, 2.0], requires_grad=True)
    w = nnkit.tensor([3.0, 4.0], requires_grad=True)
    for _ in range(3):  # Both's gradients reach x and w before their other ones
        ((x * 3.0).sum() + (w * 5.0).sum() + (Both.apply(x, w) * 2.0).sum()).backward()
    np.testing.assert_allclose(_np(x.grad), [15.0, 15.0])
    np.testing.assert_allclose(_np(w.grad), [21.0, 21.0])


def test_engine_reuses_the_buffers_it_owns(monkeypatch):
    """The speed half of the rule: a gradient a built-in backward just made becomes the
    leaf's ``.grad`` without a copy, and fan-in sums go into an owned buffer."""
    copies, writes = [], []
    copy, accumulate = ArrayMat.copy, ArrayMat.accumulate_

    def spy_copy(self):
        copies.append(self)
        return copy(self)

    def spy_accumulate(self, other):
        writes.append(self)
        return accumulate(self, other)

    monkeypatch.setattr(ArrayMat, "copy", spy_copy)
    monkeypatch.setattr(ArrayMat, "accumulate_", spy_accumulate)
    x = nnkit.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = nnkit.tensor([0.5, 0.5, 2.0], requires_grad=True)
    ((x * w).exp().sum() + (x * 3.0).sum() + (x * x).sum()).backward()
    assert not copies  # x.grad and w.grad were taken over, not copied
    assert writes  # x's three gradients were summed in place
    np.testing.assert_allclose(
        _np(x.grad), (_np(w) * np.exp(_np(x) * _np(w)) + 3 + 2 * _np(x)), rtol=1e-6
    )
