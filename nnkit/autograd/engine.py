"""The backward engine: iterative topological execution by dependency counting.

``run_backward`` never recurses (a chain of 100 000 ops is fine): it counts, for
every node reachable from the roots, how many edges lead into it, then runs a node
once all of them have delivered their gradient. Gradients reaching a leaf's
:class:`~nnkit.autograd.function.AccumulateGrad` are summed into its ``.grad``
(under a lock, so threads sharing a leaf add up exactly); without
``retain_graph`` each node's saved tensors are freed once it has run.
"""

from __future__ import annotations

import sys
import threading

from nnkit.autograd.function import AccumulateGrad, grad_edge
from nnkit.autograd.grad_mode import state
from nnkit.autograd.tensor import Tensor, TensorImpl

__all__ = ["run_backward"]

_accumulate_lock = threading.RLock()


def _root_grads(tensors, grads):
    from nnkit.autograd.tensor import ones_like

    out = []
    for k, (t, g) in enumerate(zip(tensors, grads)):
        if not t._impl.requires_grad:
            raise RuntimeError(f"element {k} of tensors does not require grad and does not "
                               "have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(
                    "grad can be implicitly created only for scalar outputs; got a tensor "
                    f"of shape {list(t.shape)}: pass gradient= to backward()")
            g = ones_like(t)
        elif not isinstance(g, Tensor):
            from nnkit.autograd.factories import tensor

            g = tensor(g, dtype=t.dtype, device=t.device)
        if tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"backward: gradient of shape {list(g.shape)} does not match "
                               f"the tensor's shape {list(t.shape)}")
        if g.device != t.device:
            raise RuntimeError(f"backward: gradient on {g.device} for a tensor on {t.device}; "
                               "move it with .to()")
        out.append(Tensor._wrap_shared(g))  # the caller keeps g: never steal its memory
    return out


def _count_dependencies(roots) -> dict:
    deps: dict = {}
    seen = set()
    stack = [n for n in roots]
    for n in roots:
        seen.add(n)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def run_backward(tensors, grad_tensors, retain_graph=None, create_graph=False, inputs=None,
                 capture=False, allow_unused=False):
    """Backpropagate from ``tensors``.

    Args:
        tensors: the roots.
        grad_tensors: one gradient (or None for scalars) per root.
        retain_graph: keep saved tensors for another backward (default: create_graph).
        create_graph: record the backward pass itself, for higher-order gradients.
        inputs: if given, only these tensors receive gradients.
        capture: return the gradients of ``inputs`` instead of accumulating into
            ``.grad`` (what :func:`nnkit.autograd.grad` uses).
        allow_unused: with ``capture``, an input the outputs do not depend on gets None
            instead of an error.

    Returns:
        With ``capture``, a tuple of gradients for ``inputs``; else None.
    """
    if retain_graph is None:
        retain_graph = create_graph
    grads = _root_grads(tensors, grad_tensors)
    edges = [grad_edge(t._impl) for t in tensors]
    targets = None
    if inputs is not None:
        targets = {}
        for k, t in enumerate(inputs):
            if not t._impl.requires_grad:
                raise RuntimeError(f"input {k} does not require grad")
            targets[grad_edge(t._impl)] = k
    results = [None] * (len(inputs) if inputs is not None else 0)
    prev = state.grad_enabled
    state.grad_enabled = create_graph
    try:
        _execute(edges, grads, retain_graph, create_graph, targets, capture, results)
    finally:
        state.grad_enabled = prev
    if capture:
        for k, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(f"One of the differentiated tensors (input {k}) appears "
                                   "not to have been used in the graph; pass allow_unused=True")
        return tuple(results)
    return None


def _execute(edges, grads, retain_graph, create_graph, targets, capture, results):
    buffers: dict = {}
    roots = []
    for (node, nr), g in zip(edges, grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._n_outputs
            roots.append(node)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    deps = _count_dependencies(roots)
    ready = [n for n in roots if deps.get(n, 0) == 0]
    anomaly = state.anomaly
    acc_cls = AccumulateGrad
    while ready:
        node = ready.pop()
        buf = buffers.pop(node)
        if capture:
            _capture_targets(node, buf, targets, results)
        if node.__class__ is acc_cls:
            if not capture and (targets is None or (node, 0) in targets):
                _accumulate(node.impl, buf[0], create_graph)
            continue
        if node.pre_hooks is not None or node.retained is not None:
            _run_tensor_hooks(node, buf, create_graph)
        nexts = node.next_functions
        if node.__class__ is _EmptyNode:
            out = ()
        elif len(buf) == 1:
            out = _call_node(node, buf, anomaly) if buf[0] is not None else ()
        else:
            out = _call_node(node, buf, anomaly) if any(g is not None for g in buf) else ()
        if out and len(out) != len(nexts):
            raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                               f"gradients (expected {len(nexts)}, got {len(out)})")
        if not retain_graph:
            node.release()
        _route(nexts, out, buffers, deps, ready)


def _route(nexts, out, buffers, deps, ready) -> None:
    n_out = len(out)
    for k, (nxt, nr) in enumerate(nexts):
        if nxt is None:
            continue
        g = out[k] if n_out else None
        buf = buffers.get(nxt)
        if buf is None:
            buf = buffers[nxt] = [None] * nxt._n_outputs
        if g is not None:
            for j in range(k):
                if out[j] is g:  # one gradient object sent to two inputs: alias it
                    g = Tensor._wrap_shared(g)
                    break
            prev = buf[nr]
            buf[nr] = g if prev is None else prev + g
        left = deps[nxt] - 1
        deps[nxt] = left
        if left == 0:
            if buf[0] is None and (len(buf) == 1 or all(b is None for b in buf)):
                del buffers[nxt]
                empty = _EmptyNode(nxt)
                buffers[empty] = [None]
                ready.append(empty)
            else:
                ready.append(nxt)


class _EmptyNode:
    """Stands in for a node that got no gradient, so its inputs' counts still drop."""

    __slots__ = ("next_functions", "_n_outputs", "pre_hooks", "retained", "_node")

    def __init__(self, node) -> None:
        self._node = node
        self.next_functions = node.next_functions
        self._n_outputs = 1
        self.pre_hooks = self.retained = None

    def name(self) -> str:
        return self._node.name()

    def release(self) -> None:
        if type(self._node) is not AccumulateGrad:
            self._node.release()


def _call_node(node, buf, anomaly):
    if len(buf) > 1 and any(g is None for g in buf):
        buf = _fill_missing(node, buf)
    out = node.apply_backward(tuple(buf))
    if node.post_hooks is not None:
        for hook in list(node.post_hooks):
            hook(out, tuple(buf))
    if anomaly:
        _check_anomaly(node, out)
    return out


def _fill_missing(node, buf):
    if node._released:  # release() cleared _out_meta: report the real problem
        from nnkit.autograd.function import _RELEASED_MSG

        raise RuntimeError(_RELEASED_MSG.format(name=node.name()))
    filled = list(buf)
    for k, g in enumerate(buf):
        if g is None:
            shape, dtype, mat_cls = node._out_meta[k]
            filled[k] = Tensor._wrap(TensorImpl(mat_cls.zeros(shape, dtype)))
    return filled


def _check_anomaly(node, out) -> None:
    for k, g in enumerate(out):
        if g is not None and not g._impl.data.all_finite():
            from nnkit.autograd.graph import format_forward_trace

            where = format_forward_trace(node.trace)
            raise RuntimeError(
                f"Function '{node.name()}' returned nan or inf values in its gradient for "
                f"input {k}. The forward op was created at:\n{where}")


def _run_tensor_hooks(node, buf, create_graph) -> None:
    if node.pre_hooks is not None:
        for nr, hooks in node.pre_hooks.items():
            for hook in list(hooks):
                if buf[nr] is not None:
                    new = hook(buf[nr])
                    if new is not None:
                        buf[nr] = new
    if node.retained is not None:
        for nr, ref in node.retained.items():
            impl = ref()
            if impl is not None and buf[nr] is not None:
                _store_grad(impl, buf[nr], create_graph)


def _capture_targets(node, buf, targets, results) -> None:
    for nr, g in enumerate(buf):
        k = targets.get((node, nr))
        if k is not None and g is not None:
            results[k] = g if results[k] is None else results[k] + g


def _accumulate(impl, grad, create_graph) -> None:
    for hook in list(impl.hooks or ()):
        new = hook(grad)
        if new is not None:
            grad = new
    _store_grad(impl, grad, create_graph)
    for hook in list(impl.post_hooks or ()):
        hook(Tensor._wrap(impl))


def _store_grad(impl, grad, create_graph) -> None:
    with _accumulate_lock:
        old = impl.grad
        if old is None:
            impl.grad = grad if create_graph else _owned(grad)
        elif create_graph or old._impl.requires_grad:
            impl.grad = old + grad
        else:
            old._impl.data.iadd(grad._impl.data)


def _owned(grad):
    """``grad`` detached, stolen when nothing else can see its memory, else copied."""
    m = grad._impl.data
    a = m.array
    if (sys.getrefcount(m.storage) == 2 and a.flags.writeable and a.flags.c_contiguous
            and grad._impl.grad_fn is None):
        return Tensor._wrap(TensorImpl(m))
    return Tensor._wrap(TensorImpl(m.copy()))
