"""Replaying a recorded program (see :mod:`nnkit.backends.recording`).

:func:`build` turns the program into a flat list of argument-free callables, made once:

* a step whose kernel is one NumPy ufunc, reduction or matmul (``add``, ``tanh``,
  ``matmul``, ``sum``, ``relu`` and the fused activation gradients, ...) writes straight
  into the recorded result's array with ``out=`` (no allocation, no copy; the same
  ufunc loop on the same operands, so the values are bitwise those of the method);
* a fused kernel marked :func:`writes_into` (layer norm, attention, the cross-entropy's
  gradient) is called with the recorded results as ``out=`` and writes into them, by
  the same operations as when it makes new ones (nothing to copy);
* every other step calls its function and puts the fresh result where the recording's
  was, by rebinding a Mat's array or by copying into it (and into arrays and state
  objects that other code holds).
"""

from __future__ import annotations

import functools

import numpy as np

from nnkit.backends.fp_errors import QUIET, STATE
from nnkit.backends.mat import ArrayMat

__all__ = [
    "Rebind", "attrs", "build", "rebind", "refill", "root_array", "run", "token", "writes_into",
]  # fmt: skip


class Rebind:
    """Marks a layout whose Mats are rebound (their arrays replaced, no copy)."""

    __slots__ = ("layout",)

    def __init__(self, layout):
        self.layout = layout


def token(obj, role):
    """What ``obj`` is to a program, comparable between two recordings (see
    :meth:`~nnkit.backends.recording.Recorder.signature`)."""
    r = role.get(id(obj))
    if r is not None:
        return r
    if obj is None or isinstance(obj, (bool, int, str, bytes)):
        return (type(obj).__name__, obj)
    if isinstance(obj, float):
        return ("float", obj.hex())
    if isinstance(obj, np.generic):
        return ("np", obj.dtype.str, obj.tobytes())
    if isinstance(obj, (tuple, list)):
        return tuple(token(o, role) for o in obj)
    if isinstance(obj, dict):
        return tuple((k, token(v, role)) for k, v in obj.items())
    if isinstance(obj, (np.dtype, type)):
        return ("type", obj)
    if isinstance(obj, slice):
        return ("slice", token(obj.start, role), token(obj.stop, role), token(obj.step, role))
    impl = getattr(obj, "_impl", None)
    if impl is not None and isinstance(getattr(impl, "data", None), ArrayMat):
        return ("tensor", token(impl.data, role))
    # state (parameters and their arrays, optimizers, generators): by identity
    return ("obj", id(obj))


def attrs(obj):
    """The data attributes of a state object (its slots and instance dict)."""
    names = _slot_names(type(obj))
    d = getattr(obj, "__dict__", None)
    return names + [n for n in d if not n.startswith("__")] if d else names


@functools.cache
def _slot_names(klass) -> list:
    """The ``__slots__`` names of ``klass`` and its bases (a kernel's state class: asked
    at every replay of the step that made it)."""
    names = []
    for k in klass.__mro__:
        slots = getattr(k, "__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return [n for n in names if not n.startswith("__")]


_UNSET = object()


def refill(old, new) -> None:
    """Put the replayed result ``new`` into the recorded ``old`` (same layout)."""
    if old is None:
        return
    if isinstance(old, ArrayMat):
        a = old.array
        if getattr(a.flags, "writeable", True):  # (CuPy's arrays have no such flag)
            a[...] = new.array
        else:  # a read-only view (a broadcast): refill the array it views
            root_array(a)[...] = root_array(new.array)
    elif isinstance(old, (tuple, list)):
        for o, n in zip(old, new):
            refill(o, n)
    elif isinstance(old, dict):
        for k, o in old.items():
            refill(o, new[k])
    elif hasattr(old, "__array_interface__") or hasattr(old, "__cuda_array_interface__"):
        old[...] = new
    elif isinstance(old, (int, float, bool, str, type(None))):
        return
    else:  # a state object: take the new one's attributes (those it has set)
        for k in attrs(old):
            v = getattr(new, k, _UNSET)
            if v is not _UNSET:
                setattr(old, k, v)


def root_array(a):
    """The array that the view ``a`` ultimately views (``a`` itself if none)."""
    while isinstance(getattr(a, "base", None), type(a)):
        a = a.base
    return a


def rebind(old, new) -> None:
    """Rebind the recorded Mats of ``old`` to the arrays of ``new`` (same layout)."""
    if old is None:
        return
    if isinstance(old, ArrayMat):
        old.array = new.array
    else:
        for o, n in zip(old, new):
            rebind(o, n)


def run(calls) -> None:
    """Replay a program built by :func:`build`, with NumPy's floating-point errors
    quiet as in eager mode (``Op.apply``): a ``log(0)`` gives ``-inf``, no warning."""
    token = STATE.get() is not QUIET and STATE.set(QUIET)
    try:
        for call in calls:
            call()
    finally:
        if token:
            STATE.reset(token)


def build(program) -> list:
    """The finished ``program`` as a flat list of argument-free callables (made once)."""
    return [_fast(step) or _into(step) or _generic(step) for step in program]


def writes_into(fn):
    """Mark a kernel function taking ``out=`` (keyword only): the layout of its results
    (Mats, arrays, None where it makes none), which it then writes into, by the same
    operations on the same values as when it makes new ones, and returns."""
    fn.writes_into = True
    return fn


def _into(step):
    """``fn(*args, out=recorded results)`` for a kernel marked :func:`writes_into`, or
    None (another kernel, a state object among the results, or not NumPy's arrays)."""
    fn, outs = unwrap(step.fn), step.outs
    if not getattr(fn, "writes_into", False) or outs is None or type(outs) is Rebind:
        return None
    if not _plain_numpy(outs):
        return None
    return functools.partial(fn, *step.args, out=outs, **step.kwargs)


def _plain_numpy(layout) -> bool:
    """Whether every result in ``layout`` is a writable NumPy array (or a Mat of one)."""
    if layout is None:
        return True
    if isinstance(layout, ArrayMat):
        if layout.xp is not np:
            return False
        layout = layout.array
    if isinstance(layout, (tuple, list)):
        return all(_plain_numpy(x) for x in layout)
    return type(layout) is np.ndarray and layout.flags.writeable


def unwrap(fn):
    """``fn`` without the recording's method wrappers (see ``recording._wrap``)."""
    while getattr(fn, "_nnkit_recording_wrapper", False):
        fn = fn.__wrapped__
    return fn


def _generic(step):
    fn, args, kwargs, outs = unwrap(step.fn), step.args, step.kwargs, step.outs
    if outs is None:
        return functools.partial(fn, *args, **kwargs)
    if type(outs) is Rebind:
        lay = outs.layout
        if isinstance(lay, ArrayMat):

            def call():
                lay.array = fn(*args, **kwargs).array

        else:

            def call():
                rebind(lay, fn(*args, **kwargs))

    else:

        def call():
            refill(outs, fn(*args, **kwargs))

    return call


#: Mat methods that are one ufunc of their operands' arrays: method name -> ufunc name.
_UNARY = {
    "neg": "negative", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
    "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
    "abs": "absolute", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "logical_not": "logical_not", "invert": "invert", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite",
}  # fmt: skip
_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide",
    "floordiv": "floor_divide", "remainder": "remainder", "fmod": "fmod",
    "maximum": "maximum", "minimum": "minimum", "eq": "equal", "ne": "not_equal",
    "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
}  # fmt: skip
_OTHER = (
    "pow", "relu", "matmul", "sum", "mean", "amax", "amin", "copy", "tanh_grad",
    "sigmoid_grad", "relu_grad", "zeros", "ones", "full", "astype", "where",
)  # fmt: skip


def _method(name):
    f = getattr(ArrayMat, name, None)
    return getattr(f, "__func__", f)


#: The unpatched ArrayMat methods (a step runs the fast path only for these very ones).
_ORIG = {name: _method(name) for name in (*_UNARY, *_BINARY, *_OTHER)}


def _fast(step):
    """An ``out=`` closure computing ``step`` in place, or None where none applies."""
    name, outs = step.name, step.outs
    if _ORIG.get(name) is None or unwrap(step.fn) is not _ORIG[name]:
        return None
    lay = outs.layout if type(outs) is Rebind else outs
    if not isinstance(lay, ArrayMat) or lay.xp is not np:
        return None
    o = lay.array
    if type(o) is not np.ndarray or not o.flags.writeable:
        return None
    args, kwargs = step.args, step.kwargs
    mats = [a for a in args if isinstance(a, ArrayMat)]
    if any(m.xp is not np or type(m.array) is not np.ndarray for m in mats):
        return None
    if any(np.may_share_memory(o, m.array) for m in mats if m is not lay):
        return None
    if name in ("zeros", "ones", "full"):
        value = {"zeros": 0, "ones": 1}.get(name)
        if value is None:
            value = kwargs.get("value", args[2] if len(args) > 2 else None)
        return functools.partial(o.fill, value)
    if kwargs or not mats or mats[0] is not args[0]:
        return _fast_kw(name, args, kwargs, o)
    a = args[0]
    if name in _UNARY and len(args) == 1:
        return _ufunc1(getattr(np, _UNARY[name]), a, o)
    if name in _BINARY and len(args) == 2 and isinstance(args[1], ArrayMat):
        return _ufunc2(getattr(np, _BINARY[name]), a, args[1], o)
    return _fast_kw(name, args, kwargs, o)


def _ufunc1(u, a, o):
    def call():
        u(a.array, out=o)

    return call


def _ufunc2(u, a, b, o):
    def call():
        u(a.array, b.array, out=o)

    return call


def _arg(args, kwargs, k, key, default):
    return kwargs.get(key, args[k] if len(args) > k else default)


def _fast_kw(name, args, kwargs, o):
    """The fast paths with keyword arguments or more than one ufunc."""
    a = args[0] if args else None
    if not isinstance(a, ArrayMat):
        return None
    x = a.array
    if name == "pow" and len(args) == 2 and not kwargs:
        b = args[1]
        if isinstance(b, ArrayMat) and not (x.dtype.kind in "iu" and b.dtype.kind in "iu"):
            return _ufunc2(np.power, a, b, o)
        return None
    if name == "relu" and len(args) == 1 and not kwargs:
        zero = np.zeros((), x.dtype)

        def relu():
            np.maximum(a.array, zero, out=o)

        return relu
    if name == "matmul":
        b = _arg(args, kwargs, 1, "other", None)
        ta, tb = _arg(args, kwargs, 2, "ta", False), _arg(args, kwargs, 3, "tb", False)
        if not isinstance(b, ArrayMat) or len(args) + len(kwargs) > 4:
            return None

        def matmul():
            u, v = a.array, b.array
            np.matmul(u.swapaxes(-1, -2) if ta else u, v.swapaxes(-1, -2) if tb else v, out=o)

        return matmul
    if name in ("sum", "mean", "amax", "amin"):
        return _reduction(name, args, kwargs, a, o)
    if name == "copy" and len(args) == 1 and not kwargs:
        return functools.partial(_copy, a, o)
    if name == "astype" and len(args) + len(kwargs) == 2:  # a cast (a copy: not a view)
        return functools.partial(_copy, a, o)
    if name == "where" and len(args) == 3 and not kwargs:
        u, v = args[1], args[2]
        if isinstance(u, ArrayMat) and isinstance(v, ArrayMat) and x.dtype.kind == "b":
            return functools.partial(_where, a, u, v, o)
    if name in ("tanh_grad", "sigmoid_grad", "relu_grad") and len(args) == 2 and not kwargs:
        return _activation_grad(name, a, args[1], o)
    return None


def _copy(a, o):
    np.copyto(o, a.array, casting="unsafe")


def _where(c, u, v, o):
    np.copyto(o, v.array, casting="unsafe")
    np.copyto(o, u.array, casting="unsafe", where=c.array)


def _reduction(name, args, kwargs, a, o):
    x = a.array
    axis = _arg(args, kwargs, 1, "axis", None)
    keepdims = _arg(args, kwargs, 2, "keepdims", False)
    if len(args) + len(kwargs) > (4 if name == "sum" else 3):
        return None
    if name == "sum":
        dtype = _arg(args, kwargs, 3, "dtype", None)
        if x.dtype.kind != "f" or dtype not in (None, x.dtype) or o.dtype != x.dtype:
            return None
    if name in ("amax", "amin"):
        u = np.maximum if name == "amax" else np.minimum
        return functools.partial(_reduce, u, a, axis, keepdims, o)
    if name == "sum":
        return functools.partial(_reduce, np.add, a, axis, keepdims, o)
    # mean: the method's own path for float32/64 with something to average
    n = x.size if axis is None else _count(x.shape, axis)
    if not n or x.dtype.kind != "f" or x.dtype.itemsize < 4 or o.dtype != x.dtype:
        return None

    def mean():
        np.add.reduce(a.array, axis=axis, keepdims=keepdims, out=o)
        np.true_divide(o, n, out=o)

    return mean


def _reduce(u, a, axis, keepdims, o):
    u.reduce(a.array, axis=axis, keepdims=keepdims, out=o)


def _count(shape, axis) -> int:
    if isinstance(axis, int):
        return shape[axis]
    n = 1
    for k in axis:
        n *= shape[k]
    return n


def _activation_grad(name, g, y, o):
    """The fused activation gradients of ``ArrayMat``, in the same order of operations."""
    if not isinstance(y, ArrayMat) or y.array.dtype.kind != "f":
        return None
    # work arrays in ``y``'s memory order (a channels-last convolution output, say):
    # a C-order one would make every pass a strided one (2x slower than eager's)
    if name == "relu_grad":
        mask = np.empty_like(y.array, dtype=bool)

        def relu_grad():
            np.greater(y.array, 0, out=mask)
            np.multiply(g.array, mask, out=o)

        return relu_grad
    tmp = np.empty_like(y.array)
    if name == "tanh_grad":  # g * (1 - y * y)

        def tanh_grad():
            u = y.array
            np.multiply(u, u, out=tmp)
            np.subtract(1, tmp, out=tmp)
            np.multiply(g.array, tmp, out=o)

        return tanh_grad

    def sigmoid_grad():  # g * y * (1 - y)
        u = y.array
        np.multiply(g.array, u, out=o)
        np.subtract(1, u, out=tmp)
        np.multiply(o, tmp, out=o)

    return sigmoid_grad
