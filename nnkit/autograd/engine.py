"""The backward engine: iterative topological execution by dependency counting.

``run_backward`` never recurses (a chain of 100 000 ops is fine): it counts, for
every node reachable from the roots, how many edges lead into it, then runs a node
once all of them have delivered their gradient. Gradients reaching a leaf's
:class:`~nnkit.autograd.function.AccumulateGrad` are summed into its ``.grad``
(under a lock, so threads sharing a leaf add up exactly); without
``retain_graph`` each node's saved tensors are freed once it has run.
"""

from __future__ import annotations

import threading
from sys import getrefcount

from nnkit.autograd.function import _RELEASED_MSG, AccumulateGrad, grad_edge
from nnkit.autograd.grad_mode import state
from nnkit.autograd.tensor import Tensor, TensorImpl

__all__ = ["run_backward"]

_accumulate_lock = threading.RLock()


def _root_grads(tensors, grads):
    from nnkit.autograd.tensor import ones_like

    out = []
    for k, (t, g) in enumerate(zip(tensors, grads)):
        if not t._impl.requires_grad:
            raise RuntimeError(
                f"element {k} of tensors does not require grad and does not have a grad_fn"
            )
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(
                    "grad can be implicitly created only for scalar outputs; got a tensor "
                    f"of shape {list(t.shape)}: pass gradient= to backward()"
                )
            out.append(ones_like(t))  # fresh: nobody else sees it
            continue
        if not isinstance(g, Tensor):
            from nnkit.autograd.factories import tensor

            g = tensor(g, dtype=t.dtype, device=t.device)
        if tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(
                f"backward: gradient of shape {list(g.shape)} does not match "
                f"the tensor's shape {list(t.shape)}"
            )
        if g.device != t.device:
            raise RuntimeError(
                f"backward: gradient on {g.device} for a tensor on {t.device}; move it with .to()"
            )
        out.append(Tensor._wrap_shared(g))  # the caller keeps g: never steal its memory
    return out


def _count_dependencies(roots) -> dict:
    deps: dict = {}
    seen = set(roots)
    stack = list(roots)
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


def run_backward(
    tensors,
    grad_tensors,
    retain_graph=None,
    create_graph=False,
    inputs=None,
    capture=False,
    allow_unused=False,
):
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
                raise RuntimeError(
                    f"One of the differentiated tensors (input {k}) appears "
                    "not to have been used in the graph; pass allow_unused=True"
                )
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
    empty_cls = _EmptyNode
    # Gradients are summed in place into a buffer nobody else can see, except when the
    # backward pass is itself recorded (create_graph): then every sum is a graph op.
    inplace = _INPLACE_SUMS and not create_graph
    partial: set = set()  # nodes whose buffer holds a PieceGrad or an _Accumulated
    while ready:
        node = ready.pop()
        buf = buffers.pop(node)
        if partial and node in partial:  # every piece has arrived: Tensors now
            partial.discard(node)
            buf = [g.tensor() if g.__class__ in _PARTIAL else g for g in buf]
        if capture:
            _capture_targets(node, buf, targets, results)
        cls = node.__class__
        if cls is acc_cls:
            if not capture and (targets is None or (node, 0) in targets):
                _accumulate(node.impl, buf[0], create_graph)
            continue
        if node.pre_hooks is not None or node.retained is not None:
            _run_tensor_hooks(node, buf, create_graph)
        nexts = node.next_functions
        if cls is empty_cls:
            out = ()
        elif len(buf) == 1:
            if buf[0] is None:
                out = ()
            elif node.post_hooks is None and not anomaly and node._in_meta is None:
                # the common case (a built-in op, no hooks), inlined from _call_node
                if node._released:
                    raise RuntimeError(_RELEASED_MSG.format(name=node.name()))
                out = node._fn_cls.backward(node, buf[0])
                if out.__class__ is not tuple:
                    out = (out,)
            else:
                out = _call_node(node, buf, anomaly)
        else:
            out = _call_node(node, buf, anomaly) if any(g is not None for g in buf) else ()
        del buf
        if out and len(out) != len(nexts):
            raise RuntimeError(
                f"function {node.name()} returned an incorrect number of "
                f"gradients (expected {len(nexts)}, got {len(out)})"
            )
        if not retain_graph:
            node.release()
        _route(nexts, out, buffers, deps, ready, inplace, partial)


def _route(nexts, out, buffers, deps, ready, inplace, partial) -> None:
    n_out = len(out)
    for k, (nxt, nr) in enumerate(nexts):
        if nxt is None:
            continue
        buf = buffers.get(nxt)
        if buf is None:
            buf = buffers[nxt] = [None] * nxt._n_outputs
        if n_out and out[k] is not None:
            g = out[k]
            for j in range(k):
                if out[j] is g:  # one gradient object sent to two inputs: alias it
                    g = Tensor._wrap_shared(g)
                    break
            prev = buf[nr]
            if prev is None:
                buf[nr] = g
                if g.__class__ is PieceGrad:
                    partial.add(nxt)
            elif prev.__class__ in _PARTIAL or g.__class__ is PieceGrad:
                buf[nr] = _add_partial(prev, g)
                partial.add(nxt)
            elif not (inplace and _add_in_place(buf, nr, g)):
                buf[nr] = prev + g
            del g, prev
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


class PieceGrad:
    """The gradient of a tensor one piece of which was used: zero but for ``values`` at
    ``idx`` (what the backward of indexing, ``unbind``, ``split`` and ``narrow``
    returns when the backward is not recorded). The engine adds the pieces of one
    tensor into one buffer, ``_Accumulated``, instead of materialising a zero-filled
    full-size gradient per piece (quadratic in the number of pieces)."""

    __slots__ = ("values", "shape", "idx")

    def __init__(self, values, shape, idx) -> None:
        self.values, self.shape, self.idx = values, shape, idx

    def accumulated(self):
        m = self.values._impl.data
        return _Accumulated(type(m).zeros(self.shape, m.dtype).index_add_(self.idx, m))

    def tensor(self):
        return self.accumulated().tensor()


class _Accumulated:
    """A gradient buffer only the engine holds (summed into in place)."""

    __slots__ = ("mat",)

    def __init__(self, mat) -> None:
        self.mat = mat

    def tensor(self):
        return Tensor._wrap(TensorImpl(self.mat))


_PARTIAL = (PieceGrad, _Accumulated)


def _add_partial(prev, g):
    """``prev + g`` where either is a :class:`PieceGrad` or an ``_Accumulated`` buffer:
    pieces are added into the engine's buffer in place (no full-size temporary)."""
    if prev.__class__ is not _Accumulated:
        if g.__class__ is _Accumulated:
            prev, g = g, prev
        elif prev.__class__ is PieceGrad:
            prev = prev.accumulated()
        else:  # a Tensor someone may hold: copied once into a buffer of the engine's
            prev = _Accumulated(prev._impl.data.copy())
    if g.__class__ is PieceGrad:
        prev.mat.index_add_(g.idx, g.values._impl.data)
    else:
        prev.mat.iadd(g.mat if g.__class__ is _Accumulated else g._impl.data)
    return prev


def _add_in_place(buf, nr, g) -> bool:
    """``buf[nr] += g`` written into the memory of whichever of the two nobody else sees.

    A gradient may be summed in place only when no one but the engine can observe it:
    not a user's tensor, not a saved tensor, not a view of or viewed by anything (a
    backward may pass its incoming gradient on unchanged, or a view of it, or return a
    tensor it keeps). Reference counts tell. Returns False (the caller then adds out of
    place) when neither qualifies.
    """
    prev = buf[nr]
    pm, gm = prev._impl.data, g._impl.data
    if pm.shape != gm.shape or pm.dtype != gm.dtype:
        return False
    del pm, gm
    # Five references to each candidate: the buffer list (prev) or the node's output
    # tuple (g), _route's local, this frame's local, _exclusive's parameter and
    # getrefcount's argument.
    if _exclusive(prev, 5):
        prev._impl.data.iadd(g._impl.data)
        return True
    if _exclusive(g, 5):
        g._impl.data.iadd(prev._impl.data)
        buf[nr] = g
        return True
    return False


def _exclusive(t, refs) -> bool:
    """Whether only the engine holds the gradient ``t``, its TensorImpl, Mat and memory."""
    impl = t._impl
    m = impl.data
    # references to impl: t._impl, the local, the argument; to m: impl.data, the local,
    # the argument.
    return (
        getrefcount(t) == refs
        and getrefcount(impl) == 3
        and getrefcount(m) == 3
        and not impl.requires_grad
        and m.owns_memory()
    )


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
    if any(g.__class__ is PieceGrad for g in out):  # hooks and checks see Tensors
        out = tuple(g.tensor() if g.__class__ is PieceGrad else g for g in out)
    if node.post_hooks is not None:
        for hook in list(node.post_hooks):
            hook(out, tuple(buf))
    if anomaly:
        _check_anomaly(node, out)
    return out


def _fill_missing(node, buf):
    if node._released:  # release() cleared _out_meta: report the real problem
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
                f"input {k}. The forward op was created at:\n{where}"
            )


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
    # references to m: grad._impl.data, the local, getrefcount's argument
    if grad._impl.grad_fn is None and getrefcount(m) == 3 and m.owns_memory() and m.is_contiguous():
        return Tensor._wrap(TensorImpl(m))
    return Tensor._wrap(TensorImpl(m.copy()))


def _inplace_sums_work() -> bool:
    """Whether the reference counts ``_add_in_place`` relies on hold on this interpreter.

    They assume every local and argument holds a strong reference (CPython 3.10-3.13);
    an interpreter that borrows references would make a shared gradient look exclusive.
    This replays ``_route``'s frames on a free and on a held gradient: the in-place
    path is used only if it accepts the first and refuses the second.
    """
    from nnkit.backends.numpy_backend import NumpyMat

    def route(buf, out):  # the locals _route holds when it calls _add_in_place
        g = out[0]
        prev = buf[0]
        return _add_in_place(buf, 0, g) and prev is not None

    def grad():
        return Tensor._from_mat(NumpyMat.zeros((2,), "float32"))

    free = route([grad()], (grad(),))
    buf, out = [grad()], (grad(),)
    held = (buf[0], out[0], buf[0]._impl.data, out[0]._impl.data)
    return free and not route(buf, out) and held is not None


_INPLACE_SUMS = _inplace_sums_work()
