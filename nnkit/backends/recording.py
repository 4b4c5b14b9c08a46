"""Recording a step as a flat program of Mat kernel calls (what :func:`nnkit.compile` runs).

While a :class:`Recorder` records, every public method of the Mat classes is wrapped
(the classes are patched for the recording only, so eager code pays nothing when nobody
records). The outermost call made on the recording thread becomes one :class:`Step` of
the program: the original function, its arguments (the very Mats it got) and the Mats
it made. Replaying the program (:mod:`nnkit.backends.replay`) calls the same functions
on the same Mats and puts each new result into the Mat recorded for it (written there
with ``out=`` for a single ufunc or matmul, else its array rebound, or copied into where
other objects may hold the array), so every Mat made during the recording keeps its
identity and holds the replayed values: gradients, the loss and the optimizer's buffers
all stay where Python code put them. Views of recorded Mats need no step (they see the new
values), and constants made from Python values are not made again.

Kernel functions outside the Mat classes report to the recorder through :func:`kernel`
(a recorded step whose outputs are refilled, a state object's attributes included), and
Python code that must run live at replay (an optimizer's ``step``, which reads the
learning rate and the step counts) through :func:`opaque`. What cannot be replayed
(a value read from data into Python, a data-dependent shape, an array made outside the
recorded kernels) makes the recording :attr:`Recorder.reason` say why; the caller then
runs the function eagerly.
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref

import numpy as np

from nnkit.backends import recording_plans as plans
from nnkit.backends.device import _mat_classes
from nnkit.backends.mat import ArrayMat, next_serial
from nnkit.backends.replay import Rebind, attrs, root_array, token

__all__ = ["Recorder", "Step", "active", "kernel", "opaque", "recording_here", "unsafe"]

#: The Recorder recording now (one at a time), or None.
_active = None
_lock = threading.Lock()

#: Methods that hand data to Python (or whose result's shape depends on it): the reason.
_UNSAFE = {
    "item": "`.item()` reads a value from data into Python",
    "tolist": "`.tolist()` reads values from data into Python",
    "to_numpy": "`.numpy()` hands the data to Python",
    "all_finite": "a finiteness check reads data into Python",
    "allclose": "`allclose` reads data into Python",
    "array_equal": "`equal` reads data into Python",
    "nonzero": "`nonzero` gives a shape that depends on data",
    "__dlpack__": "DLPack hands the data to Python",
    "_written": "a kernel writes a Mat in place outside the Mat interface",
}
#: Class methods making a Mat from Python values alone (no Mat, no generator).
_CONSTANT = {
    "from_data", "from_host", "zeros", "ones", "full", "empty", "arange", "linspace",
    "eye", "scalar", "wrap",
}  # fmt: skip
#: Methods writing into their receiver (besides every name ending in ``_``).
_INPLACE = {"setitem", "iadd", "isub", "imul", "idiv", "iclip", "iaxpy"}
#: Kernel modules whose functions are not recorded as steps.
_NOT_KERNELS = {"nnkit.backends.optim_kernels"}
#: Private methods that outside code calls: recorded when called from outside.
_PRIVATE = ("_new", "_view", "_written", "__dlpack__")
#: Constant Mats that recordings made (a scalar cache may keep them): what they hold, so
#: that a recording that finds one made already names it as the one that made it did.
_CONSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def recording_here() -> bool:
    """Whether this thread is recording a step (a compiled function called inside one
    runs inline, as part of the outer program)."""
    r = _active
    return r is not None and r.thread == threading.get_ident()


def unsafe(reason: str) -> None:
    """Tell a recording on this thread, if any, that what happens now cannot be
    replayed (setting the random state, say); the step then runs eagerly."""
    r = _active
    if r is not None and r.thread == threading.get_ident():
        r.fail(reason)


def active():
    """The Recorder recording now on this thread (outside any recorded call), or None."""
    r = _active
    if r is None or r.depth or r.thread != threading.get_ident():
        return None
    return r


class Step:
    """One instruction: ``fn(*args, **kwargs)``, its fresh results put into ``outs``
    (Mats, arrays or state objects laid out like the result; None where nothing is
    kept)."""

    __slots__ = ("fn", "args", "kwargs", "outs", "name")

    def __init__(self, fn, args, kwargs, outs, name):
        self.fn, self.args, self.kwargs, self.outs, self.name = fn, args, kwargs, outs, name

    def __repr__(self) -> str:
        return f"Step({self.name})"


def _mats(obj, found):
    """Collect the Mats and raw arrays in ``obj`` (args, nested lists/tuples/dicts)."""
    if isinstance(obj, ArrayMat):
        found.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _mats(o, found)
    elif isinstance(obj, dict):
        for o in obj.values():
            _mats(o, found)
    elif hasattr(obj, "__array_interface__") or hasattr(obj, "__cuda_array_interface__"):
        found.append(obj)
    return found


def _subclasses(cls) -> set:
    """``cls`` and all its subclasses."""
    found = {cls}
    for sub in cls.__subclasses__():
        found |= _subclasses(sub)
    return found


def _caller() -> str:
    """``module.function`` of the innermost frame outside this module."""
    f = sys._getframe(1)
    while f is not None and f.f_globals.get("__name__") == __name__:
        f = f.f_back
    if f is None:
        return "?"
    return f"{f.f_globals.get('__name__')}.{f.f_code.co_name}"


def _kind(obj):
    return getattr(getattr(obj, "dtype", None), "kind", None)


def _is_rng(obj) -> bool:
    return hasattr(obj, "bit_generator")


class Recorder:
    """Records the Mat calls of one run of a function (see the module docstring).

    Use as a context manager on the thread that runs the function; ``inputs`` are Mats
    (and host arrays) that the caller refills before each replay.
    """

    def __init__(self, inputs=()) -> None:
        self.thread = threading.get_ident()
        self.depth = 0
        self.program: list = []
        self.reason: str | None = None
        self._known: dict[int, object] = {}  # id -> Mat or array made by a recorded step
        self._inputs = {id(m): m for m in inputs}
        # what each object is to the program (for comparing two recordings)
        self._role: dict[int, tuple] = {id(m): ("in", k) for k, m in enumerate(inputs)}
        self._n = 0
        self._receivers: set[int] = set()  # Mats written by an identity step
        self._raw: set[int] = set()  # arrays that other objects hold directly
        self._viewed: set[int] = set()  # Storages that a recorded view shares
        self._readonly: set[int] = set()  # results that cannot be copied into
        self.used: set[int] = set()  # pre-existing Mats a step reads
        self._dropped: set[int] = set()  # constant steps that finish() leaves out
        self._patched: list = []
        self.start = next_serial()

    # ----------------------------------------------------------------- patching
    def __enter__(self) -> "Recorder":
        global _active
        if _active is not None and _active.thread == self.thread:
            raise RuntimeError("nnkit.compile: this thread is recording a step already")
        _lock.acquire()  # one recording at a time: another thread's waits
        try:
            for cls in _subclasses(ArrayMat) | set(_mat_classes.values()):
                self._patch(cls)
            self._patch_kernels()
        except BaseException:
            self.__exit__()
            raise
        _active = self
        return self

    def __exit__(self, *exc) -> None:
        global _active
        _active = None
        for owner, name, old in reversed(self._patched):
            if old is None:
                delattr(owner, name)
            else:
                setattr(owner, name, old)
        self._patched.clear()
        _lock.release()

    def _patch(self, cls) -> None:
        for name, wrapped in plans.class_plan(cls, _wrap, _PRIVATE):
            self._patched.append((cls, name, vars(cls).get(name)))
            setattr(cls, name, wrapped)

    def _patch_kernels(self) -> None:
        """Wrap the public functions of the ``nnkit.backends.*_kernels`` modules (not
        the optimizer kernels, which run inside an optimizer's live ``step``), there and
        wherever a loaded nnkit module imported them by name."""
        for mod, k, v, wrapped in plans.kernel_plan(kernel, _NOT_KERNELS):
            self._patched.append((mod, k, v))
            setattr(mod, k, wrapped)

    # ---------------------------------------------------------------- recording
    def fail(self, reason: str) -> None:
        """Mark the recording unusable (the first reason is kept)."""
        if self.reason is None:
            self.reason = reason

    def known(self, m) -> bool:
        """Whether the replay can reach ``m``: made before the recording (state), an
        input, or made by a recorded step."""
        i = id(m)
        if i in self._known or i in self._inputs:
            return True
        if isinstance(m, ArrayMat) and m.serial < self.start:
            self.used.add(i)
            return True
        return False

    def append(self, fn, args=(), kwargs=None, name=None) -> None:
        """Add a step run as is at replay (``fn(*args, **kwargs)``, result unused)."""
        self.program.append(Step(fn, args, kwargs or {}, None, name or fn.__name__))

    def call(self, name, fn, args, kwargs):
        """Run a Mat method ``fn`` and record it."""
        self.depth += 1
        try:
            res = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        if self.reason is not None:
            return res
        reason = _UNSAFE.get(name)
        if reason is not None:
            self.fail(reason)
            return res
        ins = _mats((args, kwargs), [])
        if name == "getitem" and any(_kind(i) == "b" for i in ins[1:]):
            self.fail("boolean-mask indexing gives a shape that depends on data")
            return res
        rng = any(_is_rng(a) for a in args)
        in_ids = set()
        for m in ins:
            if not self.known(m):
                if isinstance(m, ArrayMat) or name in ("_new", "_view", "wrap"):
                    what = "a tensor" if isinstance(m, ArrayMat) else "an array"
                    self.fail(
                        f"{what} made outside the recorded kernels reaches `{name}`"
                        f" (in {_caller()})"
                    )
                    return res
                continue  # a host array given to a creation method: a constant
            in_ids.add(id(m))
            if not isinstance(m, ArrayMat):
                self._raw.add(id(m))
        outs, fresh, _ = self._outputs(res, ins, in_ids)
        inplace = name in _INPLACE or name.endswith("_")
        if inplace and ins and isinstance(ins[0], ArrayMat):
            self._receivers.add(id(ins[0]))
        if fresh or inplace or rng:
            const = name in _CONSTANT and not in_ids and not rng
            step = Step(fn, tuple(args), dict(kwargs), outs if fresh else None, name)
            self.program.append((step, const))
            if const and fresh and isinstance(res, ArrayMat):
                self._constant(res, name, args, kwargs)
        return res

    def _constant(self, m, name, args, kwargs) -> None:
        """Name the constant ``m`` by its value, not by when it was made: a later
        recording may find it made already (cached) or make it again."""
        if self._role.get(id(m)) == ("new", self._n - 1):
            self._n -= 1
        tok = ("const", name, _value(args), _value(kwargs))
        self._role[id(m)] = tok
        self._role[id(m.array)] = ("array",) + tok
        _CONSTS[m] = tok

    def _outputs(self, res, ins, in_ids):
        """The layout of ``res`` for refilling: fresh Mats kept, views and inputs None."""
        if isinstance(res, ArrayMat):
            if id(res) in in_ids or any(res is m for m in ins):
                return None, False, True
            s = res._storage
            if (
                s is not None
                and any(isinstance(m, ArrayMat) and m._storage is s for m in ins)
                or any(res.array is m for m in ins)
            ):
                self._known[id(res)] = res  # a view (or alias) of a recorded Mat
                self._assign(res)
                self._role.setdefault(id(res.array), ("array",) + self._role[id(res)])
                if s is not None:
                    self._viewed.add(id(s))
                return None, False, False
            self._own(res)
            return res, True, False
        if isinstance(res, (tuple, list)):
            layout, fresh, identity = [], False, False
            for r in res:
                lo, f, i = self._outputs(r, ins, in_ids)
                layout.append(lo)
                fresh, identity = fresh or f, identity or i
            return layout, fresh, identity
        return None, False, False

    def _own(self, m) -> None:
        a = m.array
        if isinstance(a, np.generic):  # a 0-d result as NumPy gives it: make it writable
            m.array = np.asarray(a)
        elif not self._writable(a):  # e.g. a broadcast view of a temporary
            self._readonly.add(id(m))
        self._known[id(m)] = m
        self._known[id(m.array)] = m.array
        self._assign(m)
        self._role[id(m.array)] = ("array",) + self._role[id(m)]

    @staticmethod
    def _writable(a) -> bool:
        flags = getattr(a, "flags", None)
        return flags is None or getattr(flags, "writeable", True)

    def call_kernel(self, fn, args, kwargs):
        """Run a kernel function and record it; its outputs (arrays, Mats, state
        objects) are refilled in place at replay."""
        self.depth += 1
        try:
            res = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        if self.reason is not None:
            return res
        for m in _mats((args, kwargs), []):
            if not isinstance(m, ArrayMat):  # an array (a Mat's): pinned, not rebound
                self._raw.add(id(m))
            elif not self.known(m):
                self.fail(f"a tensor made outside the recorded kernels reaches `{fn.__name__}`")
                return res
        if _has_scalar(res):
            self.fail(f"`{fn.__name__}` returns a value to Python")
            return res
        self._claim(res)
        self.program.append((Step(fn, tuple(args), dict(kwargs), res, fn.__name__), False))
        return res

    def _assign(self, obj) -> None:
        self._role[id(obj)] = ("new", self._n)
        self._n += 1

    def signature(self, roles=None) -> list:
        """The program with every object replaced by what it is to the program (an
        input, the k-th thing made, a piece of state, a Python value): two recordings
        of one step have equal signatures unless a Python value baked into one of them
        (a learning rate computed in Python, a step count) changed between the calls.
        ``roles`` names more objects (the gradients the step read, say)."""
        role = {id(m): tok for m, tok in list(_CONSTS.items())}
        role.update({id(m.array): ("array",) + tok for m, tok in list(_CONSTS.items())})
        role.update(self._role)
        role.update(roles or {})
        sig = []
        for item in self.program:
            step = item if isinstance(item, Step) else item[0]
            if id(step) in self._dropped:
                continue  # a constant nobody writes: not part of the program
            if not isinstance(item, Step) and item[1]:  # a constant: its host data by value
                sig.append((step.name, _value(step.args), _value(step.kwargs)))
                continue
            sig.append((step.name, token(step.args, role), token(step.kwargs, role)))
        return sig

    def _claim(self, obj) -> None:
        """Mark what a kernel returned as made by a recorded step (held directly)."""
        if isinstance(obj, ArrayMat):
            self._own(obj)
            self._raw.add(id(obj.array))
        elif isinstance(obj, (tuple, list)):
            for o in obj:
                self._claim(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                self._claim(o)
        elif hasattr(obj, "__array_interface__") or hasattr(obj, "__cuda_array_interface__"):
            self._known[id(obj)] = obj
            self._raw.add(id(obj))
            self._assign(obj)
        elif hasattr(obj, "__slots__") or hasattr(obj, "__dict__"):
            self._assign(obj)
            for k in attrs(obj):
                v = getattr(obj, k, None)
                if hasattr(v, "__array_interface__") or hasattr(v, "__cuda_array_interface__"):
                    self._known[id(v)] = v
                    self._raw.add(id(v))

    def call_opaque(self, fn, args, kwargs):
        """Run ``fn`` live now and at every replay (its Mat calls are not recorded)."""
        self.depth += 1
        try:
            res = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        self.append(fn, tuple(args), dict(kwargs), getattr(fn, "__qualname__", None))
        return res

    def finish(self) -> list:
        """The program as a list of Steps, each with how its results are refilled."""
        program = []
        for item in self.program:
            if isinstance(item, Step):
                program.append(item)
                continue
            step, const = item
            if step.outs is not None and _all_rebindable(step.outs, self):
                if const:
                    self._dropped.add(id(step))
                    continue  # a constant nobody writes: it keeps its recorded value
                step.outs = Rebind(step.outs)
            elif step.outs is not None and not _readonly_refillable(step.outs, self):
                self.fail(f"a read-only result of `{step.name}` is viewed or written")
            program.append(step)
        return program


def _value(obj):
    """:func:`token` of a constant's arguments, with host arrays named by value."""
    if isinstance(obj, np.ndarray):
        return ("nd", obj.dtype.str, obj.shape, obj.tobytes())
    if isinstance(obj, (tuple, list)):
        return tuple(_value(o) for o in obj)
    if isinstance(obj, dict):
        return tuple((k, _value(v)) for k, v in obj.items())
    return token(obj, {})


def _all_rebindable(layout, rec) -> bool:
    if layout is None:
        return True
    if isinstance(layout, ArrayMat):
        s = layout._storage
        return (
            (s is None or id(s) not in rec._viewed)
            and id(layout) not in rec._receivers
            and id(layout.array) not in rec._raw
        )
    if isinstance(layout, (list, tuple)):
        return all(_all_rebindable(x, rec) for x in layout)
    return False


def _has_scalar(obj) -> bool:
    """Whether ``obj`` (a kernel's result) holds a number rather than arrays."""
    if isinstance(obj, (bool, int, float, complex, np.generic)):
        return True
    if isinstance(obj, (tuple, list)):
        return any(_has_scalar(o) for o in obj)
    if isinstance(obj, dict):
        return any(_has_scalar(o) for o in obj.values())
    return False


def _readonly_refillable(layout, rec) -> bool:
    """Whether each read-only result in ``layout`` (a broadcast view of a temporary,
    say) can be refilled through the writable array it views (see ``replay.refill``):
    one that no recorded Mat or kernel holds, so only the result and its views see it."""
    if isinstance(layout, ArrayMat):
        if id(layout) not in rec._readonly:
            return True
        root = root_array(layout.array)
        return (
            root is not layout.array
            and Recorder._writable(root)
            and id(root) not in rec._known
            and id(root) not in rec._raw
            and not any(root is m.array for m in rec._inputs.values() if isinstance(m, ArrayMat))
        )
    if isinstance(layout, (list, tuple)):
        return all(_readonly_refillable(x, rec) for x in layout)
    return True


def _wrap(name, fn):
    def method(*args, **kwargs):
        r = _active
        if r is None or r.depth or r.thread != threading.get_ident():
            return fn(*args, **kwargs)
        return r.call(name, fn, args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__wrapped__ = fn
    method._nnkit_recording_wrapper = True  # replay.unwrap skips it
    method.__doc__ = fn.__doc__
    return method


def kernel(fn):
    """Decorate a kernel function so that a recording records it as one step; outside a
    recording it costs one global check.

    Its arguments may be Mats, Mats' arrays (``mat.array``: the step holds them, so
    those Mats keep their arrays at replay), state objects and Python values; what it
    returns (arrays, Mats, state objects with array attributes, tuples, lists and dicts
    of them) is refilled in place at each replay, so code holding the results (an
    ``Op``'s ``ctx``) sees the replayed values.
    """

    @functools.wraps(fn)
    def run_kernel(*args, **kwargs):
        r = _active
        if r is None or r.depth or r.thread != threading.get_ident():
            return fn(*args, **kwargs)
        return r.call_kernel(fn, args, kwargs)

    return run_kernel


def opaque(fn):
    """Decorate a function that a recording must not look into: at replay it runs live
    (an optimizer's ``step``: the learning rate and step counts are read then)."""

    @functools.wraps(fn)
    def run_opaque(*args, **kwargs):
        r = _active
        if r is None or r.depth or r.thread != threading.get_ident():
            return fn(*args, **kwargs)
        return r.call_opaque(fn, args, kwargs)

    return run_opaque
