"""What a compiled step's program depends on: the guard key, the state objects a
function reaches, and the gradient bindings it reads and writes while recorded."""

from __future__ import annotations

import functools
from types import BuiltinFunctionType, FunctionType, MethodType

import numpy as np

from nnkit.autograd.grad_mode import is_grad_enabled, is_inference_mode_enabled
from nnkit.autograd.tensor import Tensor, TensorImpl
from nnkit.backends import recording
from nnkit.layers.module import Module
from nnkit.metrics.base import Metric
from nnkit.optim.optimizer import Optimizer

__all__ = ["GradTracker", "arg_key", "discover", "hooks_reason", "state_key"]

#: TensorImpl's own ``grad`` slot (the tracker puts a property in front of it).
_GRAD = TensorImpl.__dict__["grad"]
_VALUES = (int, float, bool, str, bytes, complex, type(None))
_CALLABLES = (FunctionType, MethodType, BuiltinFunctionType, functools.partial)
_TRACKED = frozenset((*_VALUES, *_CALLABLES))


def arg_key(obj):
    """A hashable description of an argument: a tensor's shape, dtype, device and
    ``requires_grad``; an array's shape and dtype; a Python value itself; any other
    object its identity."""
    if isinstance(obj, Tensor):
        m = obj._impl.data
        return ("T", m.shape, m.dtype, type(m), m.device, obj._impl.requires_grad)
    if isinstance(obj, np.ndarray):
        return ("A", obj.shape, obj.dtype)
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(arg_key(o) for o in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, arg_key(v)) for k, v in obj.items()))
    if isinstance(obj, _VALUES):
        return ("V", type(obj), obj)
    return ("O", id(obj))


def discover(fn, args, kwargs) -> list:
    """The Modules, Optimizers and Metrics ``fn`` reaches through its arguments, its bound
    ``self`` (and that object's attributes), its closure, defaults and the globals its
    code names."""
    found: dict[int, object] = {}
    _visit(args, found, -1)
    _visit(kwargs, found, -1)
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        _visit(owner, found, 0)
    f = getattr(fn, "__func__", fn)
    code = getattr(f, "__code__", None)
    for cell in getattr(f, "__closure__", None) or ():
        try:
            _visit(cell.cell_contents, found, 1)
        except ValueError:  # an empty cell
            pass
    _visit(getattr(f, "__defaults__", None) or (), found, 0)
    if code is not None:
        g = getattr(f, "__globals__", {})
        for name in code.co_names:
            if name in g:
                _visit(g[name], found, 1)
    return list(found.values())


def _visit(obj, found, depth) -> None:
    if isinstance(obj, (Module, Optimizer, Metric)):
        found.setdefault(id(obj), obj)
    elif depth < 2 and isinstance(obj, (list, tuple)):
        for o in obj:
            _visit(o, found, depth + 1)
    elif depth < 2 and isinstance(obj, dict):
        for o in obj.values():
            _visit(o, found, depth + 1)
    elif depth < 1 and hasattr(obj, "__dict__") and not isinstance(obj, type):
        for o in vars(obj).values():
            _visit(o, found, depth + 1)


def _params(obj):
    if isinstance(obj, Module):  # (not parameters(): a lazy module may be unbuilt yet)
        return [p for m in obj.modules() for p in m._parameters.values() if p is not None]
    return [p for g in obj.param_groups for p in g["params"]]


def state_key(objs) -> tuple:
    """Grad and inference mode, each module's training flag and whether it is built,
    and the identity of every parameter and buffer (a rebound or new one makes another
    key), with whether hooks are registered on them. A lazily built module not built
    yet has none: building it makes another key. A module whose class defines
    ``_jit_state_key(self)`` adds what it returns (a Keras model: the identity of its
    compiled metrics' state tensors). A Metric adds the identity of its state tensors."""
    parts: list = [is_grad_enabled(), is_inference_mode_enabled()]
    for o in objs:
        if isinstance(o, Module):
            parts.append(_module_key(o))
            extra = getattr(type(o), "_jit_state_key", None)
            if extra is not None:  # more state the step writes (a model's metrics)
                parts.append(extra(o))
        elif isinstance(o, Metric):  # its state tensors, which the step writes in place
            parts.append(tuple((id(v._impl), id(v._impl.data)) for v in o.variables))
        else:
            parts.append(tuple(_param_key(p) for g in o.param_groups for p in g["params"]))
    return tuple(parts)


def _param_key(p) -> tuple:
    i = p._impl
    return (id(i), id(i.data), i.requires_grad, bool(i.hooks or i.post_hooks))


def _module_key(root) -> tuple:
    """One walk over ``root`` and its descendants (each once): per module, its training
    flag, whether it is built and has forward hooks, its parameters and buffers."""
    key: list = []
    seen: set = set()
    stack = [root]
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        key.append(
            (
                m.training,
                getattr(m, "built", True),
                bool(m._forward_hooks or m._forward_pre_hooks),
                tuple(_param_key(p) for p in m._parameters.values() if p is not None),
                tuple(id(b._impl.data) for b in m._buffers.values() if b is not None),
                _attrs_key(m),
            )
        )
        stack.extend(c for c in reversed(m._modules.values()) if c is not None)
    return tuple(key)


def _attrs_key(m) -> tuple:
    """A module's own attributes as the guard sees them: Python values (a dropout rate,
    a flag a callback sets) by value, functions (an activation) by identity; other
    objects (the parameter, buffer and submodule tables are covered above) not at all,
    nor the names in the class's ``_jit_untracked`` (a model's bookkeeping)."""
    skip = getattr(type(m), "_jit_untracked", None)
    if skip is None:
        return tuple([v for v in vars(m).values() if type(v) in _TRACKED])
    return tuple([v for k, v in vars(m).items() if type(v) in _TRACKED and k not in skip])


def hooks_reason(objs) -> str | None:
    """Why hooks on the reached modules or parameters rule out a replay, or None."""
    for o in objs:
        if isinstance(o, Metric):
            continue
        if isinstance(o, Module):
            for m in o.modules():
                if m._forward_hooks or m._forward_pre_hooks:
                    return "a module has forward hooks"
        for p in _params(o):
            if p._impl.hooks or p._impl.post_hooks:
                return "a parameter has gradient hooks"
    return None


class GradTracker:
    """While a step is recorded, sees every read and write of a TensorImpl's ``grad``
    (a property stands in front of the slot for the recording only): writes become
    steps of the program, and the first access of each tensor says whether the program
    depends on the binding it found."""

    def __init__(self, rec) -> None:
        self.rec = rec
        self.first: dict[int, tuple] = {}  # id(impl) -> (impl, 'r' | 'w', binding before)
        self._saved: list = []

    def __enter__(self) -> "GradTracker":
        TensorImpl.grad = property(self._get, self._set)
        for name in ("register_hook", "register_post_accumulate_grad_hook"):
            self._saved.append((name, Tensor.__dict__[name]))
            setattr(Tensor, name, self._hook_guard(Tensor.__dict__[name]))
        return self

    def __exit__(self, *exc) -> None:
        TensorImpl.grad = _GRAD
        for name, fn in self._saved:
            setattr(Tensor, name, fn)

    def _hook_guard(self, fn):
        def register(tensor, hook):
            if recording.active() is self.rec:
                self.rec.fail("a hook is registered inside the step")
            return fn(tensor, hook)

        return register

    def _get(self, impl):
        value = _GRAD.__get__(impl, TensorImpl)
        if recording.active() is self.rec and id(impl) not in self.first:
            self.first[id(impl)] = (impl, "r", value)
        return value

    def _set(self, impl, value) -> None:
        rec = self.rec
        if recording.active() is rec:
            try:
                before = _GRAD.__get__(impl, TensorImpl)
            except AttributeError:  # the slot's first write: a TensorImpl being made
                _GRAD.__set__(impl, value)
                return
            if id(impl) not in self.first:
                self.first[id(impl)] = (impl, "w", before)
            if value is not None and not rec.known(value._impl.data):
                rec.fail("a gradient made outside the recorded kernels is assigned")
            rec.append(_GRAD.__set__, (impl, value), name="set grad")
        _GRAD.__set__(impl, value)

    def dependencies(self) -> list:
        """``(impl, binding before, whether the program reads its values)`` for each
        tensor whose gradient the recording read before writing it."""
        deps = []
        for impl, kind, before in self.first.values():
            if kind == "r":
                read = before is not None and id(before._impl.data) in self.rec.used
                deps.append((impl, before, read))
        return deps


def current_grad(impl):
    """``impl.grad`` read through the slot itself."""
    return _GRAD.__get__(impl, TensorImpl)


def bind_grad(impl, value) -> None:
    _GRAD.__set__(impl, value)
