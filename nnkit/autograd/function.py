"""Function and Node: one differentiable op, and its place in the graph.

A :class:`Function` subclass defines a static ``forward(ctx, ...)`` and
``backward(ctx, *grad_outputs)``; ``Function.apply(...)`` runs forward and, when any
input requires grad and grad mode is on, records a :class:`Node` (which is also the
``ctx`` both methods receive) linking the outputs to the inputs' nodes.

Two flavours share the mechanism:

* user Functions (``class MyOp(Function)``) get and return Tensors in ``forward``,
  as in PyTorch;
* built-in ops subclass :class:`Op`, whose ``forward`` gets and returns
  :class:`~nnkit.backends.mat.ArrayMat` objects (no Tensor wrapping on the hot path).

Either way ``backward`` receives Tensors and is written with Tensor ops, so
``create_graph=True`` differentiates it again. A hot built-in op also has a
``backward_mat``, the same computation on Mats, which the engine runs when the backward
is not recorded (see :class:`Op`). ``Op.apply`` is the hottest code in nnkit (every
op of every forward, and of a backward's Tensor ops), hence its plain style: the unary
and binary cases unrolled, the Node and the result's Tensor made without ``__init__``.
"""

from __future__ import annotations

import traceback

from nnkit.autograd.grad_mode import state
from nnkit.autograd.handles import RemovableHandle
from nnkit.autograd.saved import _RELEASED_MSG, resolve_saved
from nnkit.autograd.tensor import AccumulateGrad, Tensor, TensorImpl, grad_edge
from nnkit.backends.fp_errors import QUIET as _FP_QUIET
from nnkit.backends.fp_errors import STATE as _FP_STATE

__all__ = [
    "Function",
    "Op",
    "Node",
    "AccumulateGrad",
    "RemovableHandle",
    "ShapeError",
    "NO_GRAPH",
]

# Set only while nnkit.onnx traces a model: ``hook(cls, args, kwargs)`` runs the op.
trace_hook = None
# Entering and leaving NumPy's quiet floating-point state (bound once: Op.apply is hot)
_fp_get, _fp_set, _fp_reset = _FP_STATE.get, _FP_STATE.set, _FP_STATE.reset


class ShapeError(ValueError, RuntimeError):
    """Raised when the shapes given to an op do not fit together."""


class Node:
    """A recorded op in the backward graph; also the ``ctx`` of its Function.

    Attributes:
        next_functions: one ``(node, output_nr)`` pair per forward positional input
            (``(None, 0)`` where that input needs no gradient).
        needs_input_grad: one bool per forward positional input.
    """

    __slots__ = (
        "_fn_cls",
        "next_functions",
        "needs_input_grad",
        "_saved",
        "_released",
        "_n_outputs",
        "_to_save",
        "meta",
        "__dict__",
        "__weakref__",
    )
    # Rarely set attributes live in the instance __dict__ (with ctx attributes), so a
    # new node pays only for the slots above; ``meta`` (the operands' shapes and dtypes
    # that the broadcasting ops keep for backward; None until set, cleared on release)
    # is a slot as it is set on most nodes.
    _out_meta = None
    _in_meta = None
    pre_hooks = None
    retained = None
    post_hooks = None
    _non_diff = None
    trace = None

    def __init__(self, fn_cls) -> None:
        self._fn_cls = fn_cls
        self._saved = None
        self._released = False
        self._n_outputs = 1
        self._to_save = ()
        self.meta = None

    # ---- ctx API used inside forward / backward
    def save_for_backward(self, *tensors) -> None:
        """Keep ``tensors`` (inputs, outputs or intermediates) for backward."""
        self._to_save = tensors

    def mark_non_differentiable(self, *outputs) -> None:
        """Outputs that never carry a gradient (e.g. argmax indices)."""
        self._non_diff = outputs

    @property
    def saved_tensors(self) -> tuple:
        if self._released:
            raise RuntimeError(_RELEASED_MSG.format(name=self.name()))
        saved = self._saved
        if not saved:
            return ()
        if len(saved) == 1:  # the common cases without a comprehension's frame
            s = saved[0]
            return (None if s is None else s.unpack(self),)
        if len(saved) == 2:
            s, r = saved
            return (None if s is None else s.unpack(self), None if r is None else r.unpack(self))
        return tuple([None if s is None else s.unpack(self) for s in saved])

    @property
    def saved_mats(self) -> tuple:
        """What ``saved_tensors`` gives, as the bare Mats: for ``Op.backward_mat``."""
        if self._released:
            raise RuntimeError(_RELEASED_MSG.format(name=self.name()))
        saved = self._saved
        if not saved:
            return ()
        if len(saved) == 1:
            s = saved[0]
            return (None if s is None else s.unpack_mat(self),)
        if len(saved) == 2:
            s, r = saved
            return (
                None if s is None else s.unpack_mat(self),
                None if r is None else r.unpack_mat(self),
            )
        return tuple([None if s is None else s.unpack_mat(self) for s in saved])

    # ---- graph API
    def name(self) -> str:
        return f"{self._fn_cls.__name__}Backward"

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node's backward."""
        if self.post_hooks is None:
            self.post_hooks = []
        self.post_hooks.append(fn)
        return RemovableHandle(self.post_hooks, fn)

    def release(self) -> None:
        """Free saved tensors and ctx attributes (after a backward without retain_graph)."""
        self._saved = None
        self._released = True
        self.meta = None
        self.__dict__.clear()


class _NoGraphCtx:
    """The ctx given to forward when no graph is recorded: saving is a no-op."""

    needs_input_grad = ()

    def save_for_backward(self, *tensors) -> None:
        pass

    def mark_non_differentiable(self, *outputs) -> None:
        pass


class _OpNoGraphCtx:
    """The ctx of a built-in op's forward when no graph is recorded: one shared
    instance that saves nothing and forgets what forward sets on it (Op forwards
    never read back their ctx attributes; user Functions get a _NoGraphCtx each)."""

    __slots__ = ()
    needs_input_grad = ()

    def save_for_backward(self, *mats) -> None:
        pass

    def mark_non_differentiable(self, *outputs) -> None:
        pass

    def __setattr__(self, name, value) -> None:
        pass


_OP_NO_GRAPH = _OpNoGraphCtx()
#: The ctx with which a ``backward_mat`` runs another op's forward on Mats.
NO_GRAPH = _OP_NO_GRAPH

_NO_EDGE = (None, 0)
_alloc = object.__new__
_NEEDS_ONE = (True,)


class Function:
    """Base class of differentiable operations.

    Subclass it with static ``forward(ctx, *args, **kwargs)`` and
    ``backward(ctx, *grad_outputs)``; call it through ``MyFn.apply(*args)``.

    ``backward`` returns one gradient (a Tensor or None) per positional argument of
    ``forward``. Inside ``forward`` use ``ctx.save_for_backward``; inside ``backward``
    read ``ctx.saved_tensors`` and ``ctx.needs_input_grad``.

    Example:
        >>> class Square(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, grad_output):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * grad_output
        >>> y = Square.apply(nnkit.tensor([3.0], requires_grad=True))
    """

    _mat_forward = False
    _view_op = False
    backward_mat = None  # built-in ops only (see Op)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on ``args``, recording the graph when grad is needed."""
        if trace_hook is not None:
            return trace_hook(cls, args, kwargs)
        impls = [a._impl if isinstance(a, Tensor) else None for a in args]
        _check_devices(cls, [i.data for i in impls if i is not None])
        record = state.grad_enabled and any(i is not None and i.requires_grad for i in impls)
        ctx = _new_node(cls, impls) if record else _NoGraphCtx()
        if record:
            ctx._in_meta = tuple(None if i is None else i.data.shape for i in impls)
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            state.grad_enabled = prev
        for o in out if out.__class__ is tuple else (out,):
            if o is not None and not isinstance(o, Tensor):
                raise TypeError(
                    f"{cls.__name__}.forward must return Tensors (or a tuple of "
                    f"them), got {type(o).__name__}"
                )
        return _finish(cls, ctx if record else None, args, impls, out)


class Op(Function):
    """Base of the built-in ops: ``forward`` gets and returns Mats.

    Tensor arguments reach ``forward`` as their Mats; other arguments as given.
    ``forward`` returns a Mat or a tuple of Mats; ``save_for_backward`` takes Mats
    (an input's, an output, or an intermediate) and ``saved_tensors`` gives them
    back as Tensors connected to the graph. Set ``_view_op = True`` on ops whose
    output may view an input's memory.

    A hot op may also define ``backward_mat(ctx, *grad_output_mats)``: its backward on
    Mats (the same kernels as ``backward``, in the same order, so the results are
    bitwise equal), returning one Mat or None per forward input as ``backward`` does.
    The engine runs it instead of ``backward`` when the backward pass is not recorded
    (no ``create_graph``), sparing the Tensor ops their wrapping; it reads
    ``ctx.saved_mats`` (``saved_tensors`` as Mats) and may run another op's forward on
    Mats as ``Other.forward(NO_GRAPH, ...)``. ``backward`` stays the definition (and
    the one ``create_graph`` differentiates): a subclass that overrides ``backward``
    without ``backward_mat`` does not inherit its parent's.
    """

    _mat_forward = True

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "backward" in cls.__dict__ and "backward_mat" not in cls.__dict__:
            cls.backward_mat = None

    @classmethod
    def apply(cls, *args, **kwargs):
        if trace_hook is not None:
            return trace_hook(cls, args, kwargs)
        n = len(args)
        if n == 2:  # a binary op (the common case): the loop below, unrolled
            a, b = args
            if isinstance(a, Tensor):
                ia = a._impl
                ma = ia.data
                if isinstance(b, Tensor):
                    ib = b._impl
                    mb = ib.data
                    if ma.__class__ is not mb.__class__ or ma.multi_device:
                        _check_devices(cls, [ma, mb])
                    record = ia.requires_grad or ib.requires_grad
                else:
                    ib, mb = None, b
                    record = ia.requires_grad
            elif isinstance(b, Tensor):
                ia, ma = None, a
                ib = b._impl
                mb = ib.data
                record = ib.requires_grad
            else:
                ia = ib = None
                ma, mb = a, b
                record = False
            mats = (ma, mb)
        elif n == 1:  # a unary op
            a = args[0]
            if isinstance(a, Tensor):
                ia = a._impl
                mats = (ia.data,)
                record = ia.requires_grad
            else:
                mats, record = args, False
        else:
            mats = []
            record = False
            mcls = None
            for a in args:
                if isinstance(a, Tensor):
                    i = a._impl
                    m = i.data
                    if mcls is None:
                        mcls = m.__class__
                    elif m.__class__ is not mcls or mcls.multi_device:
                        _check_devices(cls, [t._impl.data for t in args if isinstance(t, Tensor)])
                    mats.append(m)
                    if i.requires_grad:
                        record = True
                else:
                    mats.append(a)
        if record and state.grad_enabled:
            # Record the node (inline _new_node: the forward of every op with a graph)
            node = ctx = _alloc(Node)  # Node(cls), inline as the result's Tensor below
            node._fn_cls = cls
            node._saved = None
            node._released = False
            node._n_outputs = 1
            node._to_save = ()
            node.meta = None
            if n == 1:  # a unary op: its one argument is a Tensor requiring grad
                impls = [ia]
                fn = ia.grad_fn
                node.needs_input_grad = _NEEDS_ONE
                node.next_functions = ((fn, ia.output_nr) if fn is not None else grad_edge(ia),)
            elif n == 2:  # a binary op (the common case), without the lists below
                impls = [ia, ib]
                if ia is not None and ia.requires_grad:
                    fn = ia.grad_fn
                    ea = (fn, ia.output_nr) if fn is not None else grad_edge(ia)
                    na = True
                else:
                    ea, na = _NO_EDGE, False
                if ib is not None and ib.requires_grad:
                    fn = ib.grad_fn
                    eb = (fn, ib.output_nr) if fn is not None else grad_edge(ib)
                    nb = True
                else:
                    eb, nb = _NO_EDGE, False
                node.needs_input_grad = (na, nb)
                node.next_functions = (ea, eb)
            else:
                impls = [None] * n
                needs = [False] * n
                edges = [_NO_EDGE] * n
                k = 0
                for a in args:
                    if isinstance(a, Tensor):
                        i = impls[k] = a._impl
                        if i.requires_grad:
                            needs[k] = True
                            fn = i.grad_fn
                            edges[k] = (fn, i.output_nr) if fn is not None else grad_edge(i)
                    k += 1
                node.needs_input_grad = tuple(needs)
                node.next_functions = tuple(edges)
            if state.anomaly:
                node.trace = traceback.format_stack()[:-1]
        else:  # no graph: every backward without create_graph runs its ops here
            node = impls = None  # impls made only where needed (views, errors)
            ctx = _OP_NO_GRAPH
        # NumPy's floating-point errors quiet, as torch (see nnkit.backends.fp_errors)
        token = _fp_get() is not _FP_QUIET and _fp_set(_FP_QUIET)
        try:
            out = cls.forward(ctx, *mats, **kwargs) if kwargs else cls.forward(ctx, *mats)
        except ValueError as exc:
            raise _shape_error(cls, exc, impls or _impls_of(args)) from None
        except ZeroDimCast as exc:  # rare: run again on the 0-d operand cast in the graph
            return cls.apply(*_cast_zero_dim(cls, args, exc), **kwargs)
        finally:
            if token:
                _fp_reset(token)
        if out.__class__ is not tuple and (node is None or node._non_diff is None):
            # One output, built here rather than in _finish to spare a call: with no
            # graph (every op of a backward without create_graph) a plain Tensor; with
            # one (the common forward), connected to the node. The Tensor and its
            # TensorImpl are made inline, without TensorImpl's __init__ (a call from C,
            # slow): every slot is set here (tests/autograd/test_inline_objects.py).
            res = _alloc(Tensor)
            res._impl = impl = _alloc(TensorImpl)
            impl.data = out
            impl.grad = None
            impl.output_nr = 0
            if node is None:
                impl.grad_fn = None
                impl.requires_grad = False
            else:
                if out.dtype.kind == "f":
                    impl.grad_fn = node
                    impl.requires_grad = True
                else:
                    impl.grad_fn = None
                    impl.requires_grad = False
                if node._to_save:
                    resolve_saved(cls, node, mats, impls, (out,), (out,))
            if cls._view_op:
                _mark_view(impl, impls or _impls_of(args), (cls, tuple(mats[1:]), kwargs))
            return res
        # (impls is None only without a node, where _finish does not read it for an Op)
        return _finish(cls, node, mats, impls, out, kwargs)


class ZeroDimCast(Exception):
    """Raised by an Op's forward (``ops/_util.as_mat_pair``) with a graph when a 0-d
    operand (Mat ``mat``) must take a dimensioned one's ``dtype`` (PyTorch's promotion).
    ``Op.apply`` casts it in the graph and runs again: saved for backward, it is then a
    tensor of the graph, not a constant (double backward reaches the operand)."""

    def __init__(self, mat, dtype) -> None:
        super().__init__("a 0-d operand needs a cast")
        self.mat, self.dtype = mat, dtype


def _cast_zero_dim(cls, args, exc) -> list:
    """``args`` with the Tensor whose Mat is ``exc.mat`` cast (Tensor.to) to ``exc.dtype``."""
    hit = [isinstance(a, Tensor) and a._impl.data is exc.mat for a in args]
    if not any(hit):
        raise RuntimeError(f"{cls.__name__}: ZeroDimCast for a Mat that is none of its inputs")
    return [a.to(dtype=exc.dtype) if h else a for a, h in zip(args, hit)]


def _impls_of(args) -> list:
    """The TensorImpl of each Tensor argument, None for the others."""
    return [a._impl if isinstance(a, Tensor) else None for a in args]


_SHAPE_WORDS = ("shape", "dimension", "axis", "axes", "size", "concatenat", "mismatch")


def _shape_error(cls, exc, impls):
    """A forward's ValueError (raised by the array library: op forwards raise their own
    errors as ShapeError, TypeError, RuntimeError, ...) as an error naming the op.

    A broadcast failure is a ShapeError naming the op and the input shapes, in nnkit's
    words; another shape complaint a ShapeError with the library's detail; any other
    ValueError (a value the library refuses) a RuntimeError naming the op.
    """
    if isinstance(exc, ShapeError):
        return exc
    name = cls.__name__.lower()
    shapes = " and ".join(str(tuple(i.data.shape)) for i in impls if i is not None)
    text = str(exc)
    if "broadcast" in text:
        return ShapeError(f"{name}: the shapes {shapes} do not broadcast together")
    if any(w in text.lower() for w in _SHAPE_WORDS):
        return ShapeError(f"{name}: invalid input shapes {shapes}: {text}")
    return RuntimeError(f"{name}: {text}")


def _plain(m):
    """Wrap an output Mat that carries no graph."""
    t = Tensor.__new__(Tensor)
    t._impl = TensorImpl(m, False)
    return t


def _mark_view(impl, impls, step) -> None:
    """A view of an input remembers its base and how it was made from it.

    ``step`` is ``(op class, non-tensor args, kwargs)``; the recipe (steps from the
    base) lets an in-place op on the view be replayed on the base (see
    ``ops/inplace.py``). User Functions give no step: their views get no recipe.
    """
    storage = impl.data.storage
    for i in impls:
        if i is not None and i.data.storage is storage:
            if i._base is None:
                impl._base = i
                impl._view_recipe = None if step is None else (step,)
            else:
                impl._base = i._base
                parent = i._view_recipe
                impl._view_recipe = None if step is None or parent is None else parent + (step,)
            return


def _new_node(cls, impls):
    node = Node(cls)
    needs = []
    edges = []
    for i in impls:
        if i is not None and i.requires_grad:
            needs.append(True)
            fn = i.grad_fn
            edges.append((fn, i.output_nr) if fn is not None else grad_edge(i))
        else:
            needs.append(False)
            edges.append(_NO_EDGE)
    node.needs_input_grad = tuple(needs)
    node.next_functions = tuple(edges)
    if state.anomaly:
        node.trace = traceback.format_stack()[:-2]
    return node


def _check_devices(cls, mats) -> None:
    dev = None
    for m in mats:
        d = m.device
        if dev is None:
            dev = d
        elif d is not dev and d != dev:
            raise RuntimeError(
                f"{cls.__name__.lower()}: expected all tensors on the same device, "
                f"found {dev} and {d}"
            )


def _finish(cls, node, args, impls, out, kwargs=None):
    """Wrap what ``forward`` returned as Tensors: the one path of ``Function.apply``
    and ``Op.apply``.

    ``out`` is a Mat or a tuple of Mats (an Op), a Tensor or a tuple of Tensors (a user
    Function). With a node, the outputs are connected to it and the saved tensors
    resolved.
    """
    mat_forward = cls._mat_forward
    if out.__class__ is not tuple and mat_forward and node is not None and node._non_diff is None:
        # one Mat with a graph (the common case), without the tuple bookkeeping below
        diff = out.kind == "f"
        impl = TensorImpl(out, diff)
        if diff:
            impl.grad_fn = node
        if node._to_save:
            resolve_saved(cls, node, args, impls, (out,), (out,))
        res = Tensor.__new__(Tensor)
        res._impl = impl
        if cls._view_op:
            _mark_view(impl, impls, (cls, tuple(args[1:]), kwargs))
        return res
    single = out.__class__ is not tuple
    outs = (out,) if single else out
    mats = outs if mat_forward else tuple([None if o is None else o._impl.data for o in outs])
    if node is None:
        res = tuple([None if m is None else _plain(m) for m in mats])
        if not mat_forward:
            for r in res:
                if r is not None:
                    _mark_view(r._impl, impls, None)
        return res[0] if single else res
    non_diff = node._non_diff
    results = []
    for k, m in enumerate(mats):
        if m is None:
            results.append(None)
            continue
        diff = m.kind == "f"
        if non_diff and any(d is m or d is outs[k] for d in non_diff):
            diff = False
        impl = TensorImpl(m, diff)
        if not mat_forward:
            _mark_view(impl, impls, None)
        if diff:
            impl.grad_fn = node
            impl.output_nr = k
        t = Tensor.__new__(Tensor)
        t._impl = impl
        results.append(t)
    n = len(mats)
    node._n_outputs = n
    if n > 1:
        node._out_meta = tuple(
            [None if m is None else (m.shape, m.dtype, m.__class__) for m in mats]
        )
    if node._to_save:
        resolve_saved(cls, node, args, impls, outs, mats)
    if non_diff is not None:
        node._non_diff = None
    return results[0] if single else tuple(results)
