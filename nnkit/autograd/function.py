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
``create_graph=True`` differentiates it again.
"""

from __future__ import annotations

import traceback
import weakref

from nnkit.autograd.grad_mode import state
from nnkit.backends.mat import ArrayMat

__all__ = ["Function", "Op", "Node", "AccumulateGrad", "RemovableHandle", "ShapeError"]


class ShapeError(ValueError, RuntimeError):
    """Raised when the shapes given to an op do not fit together."""


class RemovableHandle:
    """Returned by ``register_*hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks: list, fn) -> None:
        self._hooks = hooks
        self._fn = fn

    def remove(self) -> None:
        try:
            self._hooks.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_RELEASED_MSG = (
    "Trying to backward through the graph a second time (or to access saved tensors "
    "after they have been freed) at {name}. Saved tensors are freed after backward; "
    "call backward(retain_graph=True) the first time if you need to backward twice.")


class SavedTensor:
    """One tensor saved for backward, with the Storage version it had when saved."""

    __slots__ = ("mat", "impl", "grad_fn", "output_nr", "version", "kind", "packed")

    def unpack(self, node: "Node"):
        from nnkit.autograd.tensor import Tensor, TensorImpl

        if self.packed is not None:
            mat = self.packed[1](self.packed[0])._impl.data
        else:
            mat = self.mat
            found = mat.storage.version
            if found != self.version:
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation has been modified "
                    f"by an in-place operation: {node.name()} saved a tensor of shape "
                    f"{list(mat.shape)} at version {self.version}; it is now at version "
                    f"{found}. Use an out-of-place op, or clone() before modifying.")
        kind = self.kind
        if kind == "leaf":
            if self.packed is None:
                return Tensor._wrap(self.impl)
            impl = TensorImpl(mat, requires_grad=True)
            impl._grad_acc = weakref.ref(grad_edge(self.impl)[0])
            return Tensor._wrap(impl)
        if kind == "const" or self.grad_fn is None:
            return Tensor._wrap(TensorImpl(mat))
        impl = TensorImpl(mat, requires_grad=True)
        impl.grad_fn = self.grad_fn
        impl.output_nr = self.output_nr
        return Tensor._wrap(impl)


class Node:
    """A recorded op in the backward graph; also the ``ctx`` of its Function.

    Attributes:
        next_functions: one ``(node, output_nr)`` pair per forward positional input
            (``(None, 0)`` where that input needs no gradient).
        needs_input_grad: one bool per forward positional input.
    """

    __slots__ = ("_fn_cls", "next_functions", "needs_input_grad", "_to_save", "_saved",
                 "_released", "_n_outputs", "_out_meta", "pre_hooks", "retained",
                 "post_hooks", "_non_diff", "trace", "__dict__", "__weakref__")

    def __init__(self, fn_cls) -> None:
        self._fn_cls = fn_cls
        self._to_save = ()
        self._saved = None
        self._released = False
        self._out_meta = None
        self.pre_hooks = None
        self.retained = None
        self.post_hooks = None
        self._non_diff = None
        self.trace = None

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
        return tuple(None if s is None else s.unpack(self) for s in self._saved or ())

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

    def apply_backward(self, grads: tuple) -> tuple:
        """Run the Function's backward on one gradient per output."""
        if self._released:
            raise RuntimeError(_RELEASED_MSG.format(name=self.name()))
        out = self._fn_cls.backward(self, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        return out

    def release(self) -> None:
        """Free saved tensors and ctx attributes (after a backward without retain_graph)."""
        self._saved = None
        self._released = True
        self.__dict__.clear()


class AccumulateGrad:
    """The graph node of a leaf: accumulates incoming gradients into its ``.grad``."""

    __slots__ = ("impl", "next_functions", "__weakref__")
    _n_outputs = 1
    _released = False
    pre_hooks = retained = post_hooks = None

    def __init__(self, impl) -> None:
        self.impl = impl
        self.next_functions = ()

    def name(self) -> str:
        return "AccumulateGrad"

    @property
    def variable(self):
        from nnkit.autograd.tensor import Tensor

        return Tensor._wrap(self.impl)

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def grad_edge(impl):
    """The ``(node, output_nr)`` edge that gradients for ``impl`` flow into."""
    fn = impl.grad_fn
    if fn is not None:
        return (fn, impl.output_nr)
    ref = impl._grad_acc
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(impl)
        impl._grad_acc = weakref.ref(acc)
    return (acc, 0)


class _NoGraphCtx:
    """The ctx given to forward when no graph is recorded: saving is a no-op."""

    needs_input_grad = ()

    def save_for_backward(self, *tensors) -> None:
        pass

    def mark_non_differentiable(self, *outputs) -> None:
        pass


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

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        from nnkit.autograd.tensor import Tensor

        impls = [a._impl if isinstance(a, Tensor) else None for a in args]
        record = state.grad_enabled and any(
            i is not None and i.requires_grad for i in impls)
        _check_devices(cls, impls)
        if not record:
            return _run_forward(cls, _NoGraphCtx(), args, impls, kwargs, None)
        node = Node(cls)
        node.needs_input_grad = tuple(i is not None and i.requires_grad for i in impls)
        node.next_functions = tuple(
            grad_edge(i) if i is not None and i.requires_grad else (None, 0) for i in impls)
        if state.anomaly:
            node.trace = traceback.format_stack()[:-2]
        return _run_forward(cls, node, args, impls, kwargs, node)


class Op(Function):
    """Base of the built-in ops: ``forward`` gets and returns Mats.

    Tensor arguments reach ``forward`` as their Mats; other arguments as given.
    ``forward`` returns a Mat or a tuple of Mats; ``save_for_backward`` takes Mats
    (an input's, an output, or an intermediate) and ``saved_tensors`` gives them
    back as Tensors connected to the graph.
    """

    _mat_forward = True


def _check_devices(cls, impls) -> None:
    dev = None
    for i in impls:
        if i is None:
            continue
        d = i.data.device
        if dev is None:
            dev = d
        elif d is not dev and d != dev:
            raise RuntimeError(
                f"{cls.__name__.lower()}: expected all tensors on the same device, "
                f"found {dev} and {d}")


def _call_forward(cls, ctx, args, impls, kwargs):
    if cls._mat_forward:
        fargs = [a if i is None else i.data for a, i in zip(args, impls)]
        try:
            return cls.forward(ctx, *fargs, **kwargs)
        except ValueError as exc:
            if isinstance(exc, ShapeError):
                raise
            shapes = ", ".join(str(tuple(i.data.shape)) for i in impls if i is not None)
            raise ShapeError(f"{cls.__name__.lower()}: invalid input shapes {shapes}: "
                             f"{exc}") from None
    prev = state.grad_enabled
    state.grad_enabled = False
    try:
        return cls.forward(ctx, *args, **kwargs)
    finally:
        state.grad_enabled = prev


def _run_forward(cls, ctx, args, impls, kwargs, node):
    from nnkit.autograd.tensor import Tensor, TensorImpl

    out = _call_forward(cls, ctx, args, impls, kwargs)
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    if cls._mat_forward:
        mats = outs
    else:
        mats = tuple(None if o is None else _as_tensor_out(cls, o)._impl.data for o in outs)
    if node is None:
        res = tuple(None if m is None else Tensor._wrap(TensorImpl(m)) for m in mats)
        return res[0] if single else res
    non_diff = node._non_diff or ()
    results = []
    for k, m in enumerate(mats):
        if m is None:
            results.append(None)
            continue
        diff = m.dtype.kind == "f" and not any(
            (d is m) or (not cls._mat_forward and d is outs[k]) for d in non_diff)
        impl = TensorImpl(m, requires_grad=diff)
        for i in impls:  # a view of an input remembers its base (in-place checks)
            if i is not None and i.data.storage is m.storage:
                impl._base = i._base or i
                break
        if diff:
            impl.grad_fn = node
            impl.output_nr = k
        results.append(Tensor._wrap(impl))
    node._n_outputs = len(mats)
    if len(mats) > 1:
        node._out_meta = tuple(None if m is None else (m.shape, m.dtype, type(m))
                               for m in mats)
    _resolve_saved(cls, node, args, impls, outs, mats)
    node._non_diff = None
    return results[0] if single else tuple(results)


def _as_tensor_out(cls, o):
    from nnkit.autograd.tensor import Tensor

    if not isinstance(o, Tensor):
        raise TypeError(f"{cls.__name__}.forward must return Tensors (or a tuple of them), "
                        f"got {type(o).__name__}")
    return o


def _resolve_saved(cls, node, args, impls, outs, mats) -> None:
    """Turn what forward passed to save_for_backward into SavedTensors."""
    from nnkit.autograd.tensor import Tensor, TensorImpl

    hooks = state.saved_hooks[-1] if state.saved_hooks else None
    saved = []
    for obj in node._to_save:
        if obj is None:
            saved.append(None)
            continue
        s = SavedTensor()
        s.impl = None
        s.grad_fn = None
        s.output_nr = 0
        s.packed = None
        s.kind = "const"
        mat = obj._impl.data if isinstance(obj, Tensor) else obj
        if not isinstance(mat, ArrayMat):
            raise TypeError(f"{cls.__name__}: save_for_backward takes tensors, got "
                            f"{type(obj).__name__}")
        for a, i in zip(args, impls):
            if i is not None and (a is obj or i.data is obj):
                s.impl = i
                s.grad_fn = i.grad_fn
                s.output_nr = i.output_nr
                s.kind = "leaf" if i.grad_fn is None and i.requires_grad else "input"
                break
        else:
            for k, (o, m) in enumerate(zip(outs, mats)):
                if o is obj or m is obj:
                    s.grad_fn = node if m.dtype.kind == "f" else None
                    s.output_nr = k
                    s.kind = "output"
                    break
        s.mat = mat
        s.version = mat.storage.version
        if s.kind != "leaf":
            s.impl = None
        if hooks is not None:
            s.packed = (hooks[0](Tensor._wrap(TensorImpl(mat))), hooks[1])
            s.mat = None
        saved.append(s)
    node._saved = saved
    node._to_save = ()
