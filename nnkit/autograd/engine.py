"""The backward engine: iterative topological execution by dependency counting.

``run_backward`` never recurses (a chain of 100 000 ops is fine): it counts, for
every node reachable from the roots, how many edges lead into it, then runs a node
once all of them have delivered their gradient. Gradients reaching a leaf's
:class:`~nnkit.autograd.tensor.AccumulateGrad` are summed into its ``.grad``
(under a lock, so threads sharing a leaf add up exactly); without
``retain_graph`` each node's saved tensors are freed once it has run.

Buffer ownership. Without ``create_graph`` the engine sums the gradients reaching
one tensor in place, and a leaf's first gradient becomes its ``.grad`` without a
copy, but only into or from buffers the engine owns: Mats it allocated itself (the
root's ones, sums, zero fills, piece accumulations) and the results of a built-in
op's backward that were made while the engine ran it (their ``serial`` stamp is
newer than the call: not an input handed back, not a saved tensor). Whatever is
handed out leaves the set for good: a buffer stored as a ``.grad``, passed to a
hook, returned by ``autograd.grad``, given to a user
:class:`~nnkit.autograd.function.Function`, or sent to two places at once. An owned
Mat is written only while :meth:`~nnkit.backends.mat.ArrayMat.is_unaliased`
(nothing views its memory).

Buffers. A gradient waiting for its node is a Tensor, or, where a built-in op's
``backward_mat`` made it (no ``create_graph``), the bare Mat: the next ``backward_mat``
takes it as it is, and it is wrapped as a Tensor only where it leaves the engine's
hands (a Tensor ``backward``, a hook, a ``.grad``, ``autograd.grad``'s results).
"""

from __future__ import annotations

import threading

from nnkit.autograd.factories import tensor as _tensor
from nnkit.autograd.function import _RELEASED_MSG
from nnkit.autograd.grad_mode import state
from nnkit.autograd.graph import format_forward_trace
from nnkit.autograd.piece_grads import (
    PARTIAL,
    PieceGrad,
    add_partial,
    from_partial,
)
from nnkit.autograd.tensor import AccumulateGrad, Tensor, grad_edge, tensor_method
from nnkit.backends.fp_errors import quiet as quiet_fp
from nnkit.backends.mat import next_serial

__all__ = ["run_backward", "PieceGrad"]

_accumulate_lock = threading.RLock()


def _root_grads(tensors, grads, owned):
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
            m = t._impl.data
            m = type(m).ones(m.shape, m.dtype)
            if owned is not None:
                owned.add(m)  # allocated here: nobody else sees it
            out.append(Tensor._from_mat(m))
            continue
        if not isinstance(g, Tensor):
            g = _tensor(g, dtype=t.dtype, device=t.device)
        if tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(
                f"backward: gradient of shape {list(g.shape)} does not match "
                f"the tensor's shape {list(t.shape)}"
            )
        if g.device != t.device:
            raise RuntimeError(
                f"backward: gradient on {g.device} for a tensor on {t.device}; move it with .to()"
            )
        out.append(Tensor._wrap_shared(g))  # the caller's: never owned, never written
    return out


def _count_dependencies(roots) -> dict:
    """How many edges lead into each node reachable from ``roots`` (the roots that no
    other root reaches have no entry)."""
    deps: dict = {}
    get = deps.get
    stack = list(roots)
    roots = set(roots)
    push, pop = stack.append, stack.pop
    while stack:
        for nxt, _ in pop().next_functions:
            if nxt is None:
                continue
            count = get(nxt)
            if count is None:  # first reached: its own edges are counted once
                deps[nxt] = 1
                if nxt not in roots:  # a root's edges are on the stack already
                    push(nxt)
            else:
                deps[nxt] = count + 1
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
    # The buffers the engine owns; None when the backward is itself recorded
    # (create_graph): then every sum is a graph op and nothing is written in place.
    owned = None if create_graph else set()
    grads = _root_grads(tensors, grad_tensors, owned)
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
        with quiet_fp():  # NumPy's floating-point errors quiet, as torch
            _execute(edges, grads, retain_graph, owned, targets, capture, results)
    finally:
        state.grad_enabled = prev
    if capture:
        for k, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated tensors (input {k}) appears "
                    "not to have been used in the graph; pass allow_unused=True"
                )
            if r is not None and r._impl.data.dtype != inputs[k]._impl.data.dtype:
                results[k] = r.to(inputs[k].dtype)  # as _accumulate: the input's dtype
        return tuple(results)
    return None


@tensor_method("backward")
def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' ``.grad``.

    Args:
        gradient: d(something)/d(self); may be omitted for a single-element tensor.
        retain_graph: keep the graph for another backward (default: create_graph).
        create_graph: record the backward pass, for higher-order derivatives.
        inputs: accumulate only into these tensors.

    Raises:
        RuntimeError: for a non-scalar tensor without ``gradient``, a tensor that
            does not require grad, or a graph already freed by an earlier backward.
    """
    if isinstance(inputs, Tensor):
        inputs = [inputs]
    run_backward([self], [gradient], retain_graph, create_graph, inputs)


def _execute(edges, grads, retain_graph, owned, targets, capture, results):
    buffers: dict = {}
    roots = []
    for (node, nr), g in zip(edges, grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._n_outputs
            roots.append(node)
        buf[nr] = g if buf[nr] is None else _sum(buf[nr], g, owned)
    deps = _count_dependencies(roots)
    ready = [n for n in roots if deps.get(n, 0) == 0]
    partial: set = set()  # nodes whose buffer holds a PieceGrad or an _Accumulated
    anomaly = state.anomaly
    # The loop runs once per node: methods bound once, the common route inlined.
    pop_ready, push_ready, pop_buffer, get_buffer = (
        ready.pop,
        ready.append,
        buffers.pop,
        buffers.get,
    )
    release = not retain_graph
    while ready:
        node = pop_ready()
        buf = pop_buffer(node)
        if partial and node in partial:  # every piece has arrived: Tensors now
            partial.discard(node)
            buf = [from_partial(g, owned) if g.__class__ in PARTIAL else g for g in buf]
        if capture:
            _capture_targets(node, buf, targets, results, owned)
        ncls = node.__class__
        if ncls is AccumulateGrad:
            if not capture and (targets is None or (node, 0) in targets):
                _accumulate(node.impl, buf[0], owned)
            continue
        if ncls is _EmptyNode:
            nexts = node.next_functions
            out = ()
            del buf
            if release:
                node.release()
        else:
            # A Node's rarely set attributes (hooks, retained grads, user Functions'
            # input shapes, the anomaly trace, ctx values) live in its __dict__: one
            # test of it skips their checks on the common node.
            extra = node.__dict__
            if extra and (node.pre_hooks is not None or node.retained is not None):
                buf = _tensors(buf)
                _run_tensor_hooks(node, buf, owned)
            nexts = node.next_functions
            if buf[0] is None and (len(buf) == 1 or all(g is None for g in buf)):
                out = ()
            else:
                # Run the node's backward: the one path every node takes. The buffers
                # given are consumed; the results a built-in op's backward made during
                # the call (a newer serial) become owned, unless a post hook sees them
                # or one is returned for two inputs. A user Function's backward is user
                # code: what it returns may be kept elsewhere.
                if node._released:
                    raise RuntimeError(_RELEASED_MSG.format(name=node.name()))
                if len(buf) > 1 and any(g is None for g in buf):
                    buf = _fill_missing(node, buf, owned)
                fn = node._fn_cls
                hooked = extra and node.post_hooks is not None
                mat_bwd = fn.backward_mat if owned is not None else None
                if mat_bwd is not None and not (hooked or anomaly):
                    # Not recorded: the op's backward on Mats (the common route, inline);
                    # its results, owned here, stay Mats in the buffers.
                    if len(buf) == 1:
                        m = buf[0]
                        if isinstance(m, Tensor):
                            m = m._impl.data
                        owned.discard(m)
                        start = next_serial()
                        res = mat_bwd(node, m)
                    else:
                        mats = [g._impl.data if isinstance(g, Tensor) else g for g in buf]
                        for m in mats:
                            owned.discard(m)
                        start = next_serial()
                        res = mat_bwd(node, *mats)
                    out = res if res.__class__ is tuple else (res,)
                    for m in out:
                        if m is not None and m.serial > start:
                            if m in owned:  # returned for two inputs: nobody's
                                owned.discard(m)
                                m.serial = 0
                            else:
                                owned.add(m)
                else:
                    buf = _tensors(buf)
                    if owned:
                        for g in buf:
                            owned.discard(g._impl.data)
                    start = next_serial()
                    if mat_bwd is not None:  # with hooks or anomaly checks to run
                        res = mat_bwd(node, *[g._impl.data for g in buf])
                        out = _wrap_grads(res)
                    else:
                        out = fn.backward(node, *buf) if len(buf) > 1 else fn.backward(node, buf[0])
                        if out.__class__ is not tuple:
                            out = (out,)
                    if extra and node._in_meta is not None:
                        _check_user_grads(node, out)
                    if hooked or anomaly:
                        out = _post_checks(node, out, buf, anomaly)
                        if hooked:
                            start = None  # the hooks saw (and may keep) the results
                    if owned is not None and start is not None and fn._mat_forward:
                        _own_results(out, start, owned)
            del buf
            if out and len(out) != len(nexts):
                raise RuntimeError(
                    f"function {node.name()} returned an incorrect number of "
                    f"gradients (expected {len(nexts)}, got {len(out)})"
                )
            if release:  # Node.release, inline
                node._saved = None
                node._released = True
                node.meta = None
                if extra:
                    extra.clear()
        n_out = len(out)
        # Route the results to the next nodes (inline: once per edge).
        k = -1
        for nxt, nr in nexts:
            k += 1
            if nxt is None:
                continue
            nbuf = get_buffer(nxt)
            if nbuf is None:
                nbuf = buffers[nxt] = [None] * nxt._n_outputs
            if n_out:
                g = out[k]
                if g is not None:
                    prev = nbuf[nr]
                    if prev is None:
                        nbuf[nr] = g
                        if g.__class__ is PieceGrad:
                            partial.add(nxt)
                    elif prev.__class__ in PARTIAL or g.__class__ is PieceGrad:
                        nbuf[nr] = add_partial(prev, g, owned)
                        partial.add(nxt)
                    else:
                        nbuf[nr] = _sum(prev, g, owned)
                    del g, prev
            left = deps[nxt] - 1
            deps[nxt] = left
            if left == 0:
                if nbuf[0] is None and (len(nbuf) == 1 or all(b is None for b in nbuf)):
                    del buffers[nxt]
                    empty = _EmptyNode(nxt)
                    buffers[empty] = [None]
                    push_ready(empty)
                else:
                    push_ready(nxt)


def _own_results(out, start, owned) -> None:
    """The engine owns the gradients a built-in op's backward made (a serial newer than
    ``start``), unless one is returned for two inputs (then it is nobody's)."""
    for g in out:
        if g is not None and g.__class__ is not PieceGrad:
            m = g._impl.data
            if m.serial > start:
                if m in owned:
                    owned.discard(m)
                    m.serial = 0
                else:
                    owned.add(m)


def _tensors(buf) -> list:
    """A node's buffer with its Mats (``backward_mat`` results) wrapped as Tensors."""
    return [g if g is None else _as_tensor(g) for g in buf]


def _wrap_grads(res) -> tuple:
    """What an ``Op.backward_mat`` returned (a Mat, None, or a tuple of them) as the
    tuple of Tensors (or None) that ``backward`` would have returned."""
    return tuple(
        [
            None if m is None else Tensor._from_mat(m)
            for m in (res if res.__class__ is tuple else (res,))
        ]
    )


def _post_checks(node, out, buf, anomaly) -> tuple:
    """Run ``node``'s post hooks and the anomaly check on its results (as Tensors)."""
    out = tuple([g.tensor() if g.__class__ is PieceGrad else g for g in out])
    if node.post_hooks is not None:
        for hook in list(node.post_hooks):
            hook(out, tuple(buf))
    if anomaly:
        _check_anomaly(node, out)
    return out


def _check_user_grads(node, out) -> None:
    """User Functions: one gradient per input, each of its input's shape."""
    meta = node._in_meta
    name = node._fn_cls.__name__
    if len(out) != len(meta):
        raise RuntimeError(
            f"function {name}.backward returned an incorrect number of gradients "
            f"(expected {len(meta)}, got {len(out)})"
        )
    for k, (g, shape) in enumerate(zip(out, meta)):
        if g is None or shape is None:
            continue
        if not isinstance(g, Tensor):
            raise TypeError(
                f"function {name}.backward returned a {type(g).__name__} as the "
                f"gradient of input {k}; expected a Tensor or None"
            )
        if g.shape != shape:
            raise RuntimeError(
                f"function {name}.backward returned a gradient of shape "
                f"{list(g.shape)} for input {k}, which has shape {list(shape)}"
            )


def _sum(prev, g, owned):
    """``prev + g``, written into whichever of the two buffers the engine owns and
    nothing views; else into a new buffer, which the engine then owns."""
    if owned is None:  # the backward is recorded: a graph op (and no Mats in buffers)
        return prev + g
    pm = prev._impl.data if isinstance(prev, Tensor) else prev
    gm = g._impl.data if isinstance(g, Tensor) else g
    if not pm.same_kind_as(gm):
        owned.discard(pm)
        owned.discard(gm)
        out = _as_tensor(prev) + _as_tensor(g)
        owned.add(out._impl.data)
        return out
    if pm in owned:
        if pm.is_unaliased():
            owned.discard(gm)  # dropped
            pm.accumulate_(gm)
            return prev
        owned.discard(pm)
    if gm in owned:
        if gm.is_unaliased():
            gm.accumulate_(pm)
            return g
        owned.discard(gm)
    m = pm.add(gm)
    owned.add(m)
    return m


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


def _fill_missing(node, buf, owned):
    if node._released:  # release() cleared _out_meta: report the real problem
        raise RuntimeError(_RELEASED_MSG.format(name=node.name()))
    filled = list(buf)
    for k, g in enumerate(buf):
        if g is None:
            shape, dtype, mat_cls = node._out_meta[k]
            m = mat_cls.zeros(shape, dtype)
            if owned is not None:
                owned.add(m)
            filled[k] = Tensor._from_mat(m)
    return filled


def _check_anomaly(node, out) -> None:
    for k, g in enumerate(out):
        if g is not None and not g._impl.data.all_finite():
            where = format_forward_trace(node.trace)
            raise RuntimeError(
                f"Function '{node.name()}' returned nan or inf values in its gradient for "
                f"input {k}. The forward op was created at:\n{where}"
            )


def _run_tensor_hooks(node, buf, owned) -> None:
    if node.pre_hooks is not None:
        for nr, hooks in node.pre_hooks.items():
            for hook in list(hooks):
                if buf[nr] is not None:
                    if owned:
                        owned.discard(buf[nr]._impl.data)  # the hook may keep it
                    new = hook(buf[nr])
                    if new is not None:
                        buf[nr] = new
    if node.retained is not None:
        for nr, ref in node.retained.items():
            impl = ref()
            if impl is not None and buf[nr] is not None:
                _store_grad(impl, buf[nr], owned)


def _capture_targets(node, buf, targets, results, owned) -> None:
    for nr, g in enumerate(buf):
        k = targets.get((node, nr))
        if k is not None and g is not None:
            g = _as_tensor(g)
            if owned:
                owned.discard(g._impl.data)  # returned to the caller
            results[k] = g if results[k] is None else results[k] + g


def _accumulate(impl, grad, owned) -> None:
    """Store ``grad`` (a Tensor, or a Mat from the engine's buffers) into the leaf
    ``impl``'s ``.grad``, after its dtype cast and hooks."""
    gd, ld = (grad._impl.data if isinstance(grad, Tensor) else grad).dtype, impl.data.dtype
    if gd is not ld and gd != ld:
        # computed in another dtype (an operand cast in the forward, as a float64 0-d
        # tensor meeting a float32 tensor): the leaf's dtype, as torch casts it
        grad = _as_tensor(grad).to(Tensor._wrap(impl).dtype)
    if impl.hooks:
        grad = _as_tensor(grad)
        if owned:
            owned.discard(grad._impl.data)  # the hooks may keep it
        for hook in list(impl.hooks):
            new = hook(grad)
            if new is not None:
                grad = new
    _store_grad(impl, grad, owned)
    for hook in list(impl.post_hooks or ()):
        hook(Tensor._wrap(impl))


def _as_tensor(g):
    """A buffer's gradient (a Tensor or a Mat) as a Tensor."""
    return g if isinstance(g, Tensor) else Tensor._from_mat(g)


def _store_grad(impl, grad, owned) -> None:
    """Add ``grad`` (a Tensor or a Mat) into ``impl.grad``: the first gradient is taken
    over without a copy when the engine owns its buffer (ownership passes to the
    ``.grad``)."""
    with _accumulate_lock:
        old = impl.grad
        if old is None:
            if owned is None:  # create_graph: the graph's own tensor
                impl.grad = grad
                return
            m = grad._impl.data if isinstance(grad, Tensor) else grad
            if m in owned and m.is_unaliased() and m.is_contiguous():
                owned.discard(m)  # now the .grad's
            else:
                m = m.copy()
            impl.grad = Tensor._from_mat(m)
        elif owned is None or old._impl.requires_grad:
            impl.grad = old + _as_tensor(grad)
        else:
            old._impl.data.iadd(grad._impl.data if isinstance(grad, Tensor) else grad)
