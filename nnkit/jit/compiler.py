"""``nnkit.compile``: record a training step once, replay it as a flat kernel program."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from nnkit.autograd.grad_mode import is_anomaly_enabled
from nnkit.autograd.tensor import Tensor
from nnkit.backends import recording, replay
from nnkit.backends.mat import ArrayMat
from nnkit.jit.guards import (
    GradTracker,
    arg_key,
    bind_grad,
    current_grad,
    discover,
    hooks_reason,
    state_key,
)

__all__ = ["CompiledFunction", "compile"]


def compile(fn=None, *, cache_size: int = 8):  # noqa: A001  (nnkit.compile, as torch.compile)
    """Compile a step function: record its Mat kernel calls once, then replay them.

    The first call with given guards runs ``fn`` eagerly while recording every kernel it
    runs (forward, ``backward()``, the optimizer's ``step()``); later calls with the same
    guards (once recorded a second time, to check that no Python value baked into the
    program changed between calls) replay that flat program on the same buffers, with
    no Tensor, graph node or autograd engine in between: the inputs are copied into the
    recorded input buffers, each kernel's result is put back where the recording's was,
    parameters and optimizer state are written in place, and ``.grad`` bindings are
    restored as the step left them. The optimizer's ``step()`` runs live at replay (it
    reads the current learning rate, so a scheduler works), and random draws (Dropout)
    advance nnkit's generator as the eager step would: replayed runs are bitwise equal
    to eager ones.

    Guards: the arguments' shapes, dtypes, devices and ``requires_grad`` (Python values
    by value, other objects by identity), grad and inference mode, and the training flag,
    parameters, buffers and Python attributes (numbers, strings and flags by value,
    functions by identity: a dropout rate a callback changes) of every Module, and the
    parameters of every Optimizer, that the function reaches (through its arguments,
    bound ``self``, closure or globals). A miss records again (a partial last batch gets
    its own program), up to ``cache_size`` programs. A step that cannot be replayed
    safely (``.item()``, ``.numpy()`` or a Python branch on data, hooks, anomaly mode, a
    kernel outside the recorded ones) runs eagerly, with one warning naming the reason
    (:attr:`CompiledFunction.fallbacks` lists the reasons met).

    ``Model.compile(jit_compile=True)`` runs ``fit``/``evaluate``/``predict`` through
    this; ``jit_compile="auto"`` (the default) compiles ``fit``'s training step only
    where that is safe and worthwhile, and falls back silently: the rule is in
    :meth:`nnkit.Model.compile`.

    Args:
        fn: the step function; with no ``fn``, returns a decorator (``@nnkit.compile``
            and ``@nnkit.compile(cache_size=4)`` both work).
        cache_size: the most programs recorded for one function; calls needing another
            one run eagerly (with a warning).

    Returns:
        A :class:`CompiledFunction` wrapping ``fn``. Its results are detached copies:
        Tensors without ``grad_fn``, which later calls never overwrite.

    Python side effects other than tensor writes, ``.grad`` bindings, random draws and
    optimizer steps are not repeated at replay: call ``scheduler.step()``, metrics and
    logging outside the compiled function. Gradients are the recorded buffers, refilled
    at each replay (copy ``p.grad`` to keep it across steps); one compiled function is
    not for concurrent calls from several threads.

    Example:
        >>> model = nn.Linear(3, 1)
        >>> opt = nnkit.optim.SGD(model.parameters(), lr=0.1)
        >>> @nnkit.compile
        ... def step(x, y):
        ...     opt.zero_grad()
        ...     loss = F.mse_loss(model(x), y)
        ...     loss.backward()
        ...     opt.step()
        ...     return loss
        >>> x, y = nnkit.ones(4, 3), nnkit.zeros(4, 1)
        >>> losses = [step(x, y) for _ in range(5)]
        >>> step.num_programs     # first call: grads None; later calls: grads bound
        2
        >>> step.num_replays      # the third call recorded again, to check the second
        2
        >>> bool(losses[3] < losses[0])
        True
    """
    if fn is None:
        return functools.partial(compile, cache_size=cache_size)
    return CompiledFunction(fn, cache_size=cache_size)


class _Eager:
    """A cache entry: calls with this key run eagerly, for ``reason``."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Program:
    """One recorded step: its kernel program, input buffers, output layout and the
    gradient bindings it depends on."""

    __slots__ = (
        "steps", "inputs", "outputs", "deps", "replays", "signature", "verified", "calls",
    )  # fmt: skip

    def __init__(self, steps, inputs, outputs, deps, signature) -> None:
        self.steps, self.inputs, self.outputs, self.deps = steps, inputs, outputs, deps
        self.signature = signature
        self.calls = None  # the steps as prebound callables (replay.build), at first replay
        self.replays = 0
        self.verified = False  # recorded twice with the same signature

    def matches(self) -> bool:
        """Whether the gradient bindings it read look now as they did when recorded."""
        for impl, before, read in self.deps:
            cur = current_grad(impl)
            if (cur is None) != (before is None):
                return False
            if read and cur is not before and not cur._impl.data.same_kind_as(before._impl.data):
                return False
        return True

    def replay(self, values) -> object:
        for buf, value in zip(self.inputs, values):
            if isinstance(buf, ArrayMat):
                buf.array[...] = value._impl.data.array
            else:
                buf[...] = value
        for impl, before, read in self.deps:
            cur = current_grad(impl)
            if read and cur is not before:  # the values it reads: the current gradient's
                before._impl.data.array[...] = cur._impl.data.array
                bind_grad(impl, before)
        if self.calls is None:
            self.calls = replay.build(self.steps)
        replay.run(self.calls)
        self.replays += 1
        return _build(self.outputs)


class CompiledFunction:
    """A step function compiled by :func:`compile` (see there)."""

    def __init__(self, fn, cache_size: int = 8, *, warn: bool = True) -> None:
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.cache_size = cache_size
        self._warn_on_fallback = warn  # False: fall back silently (jit_compile="auto")
        self._cache: dict = {}
        self._reasons: dict[str, None] = {}  # why calls ran eagerly, in order, once each
        self._discards = 0
        self._cleared_replays = 0  # replays of the programs that clear() dropped

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    @property
    def num_programs(self) -> int:
        """How many programs have been recorded (and are kept) for this function."""
        return sum(len(v) for v in self._cache.values() if isinstance(v, list))

    @property
    def num_replays(self) -> int:
        """How many calls replayed a recorded program (those dropped by :meth:`clear`
        included)."""
        live = sum(p.replays for v in self._cache.values() if isinstance(v, list) for p in v)
        return self._cleared_replays + live

    def clear(self) -> None:
        """Drop every recorded program (and the buffers it keeps alive) and forget why
        calls ran eagerly: the next call records again."""
        self._cleared_replays = self.num_replays
        self._cache.clear()
        self._reasons.clear()
        self._discards = 0

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """Why calls ran eagerly instead of recording or replaying (each reason once, in
        the order met; empty while every call recorded or replayed)."""
        return tuple(self._reasons)

    def _warn(self, reason: str) -> None:
        if reason not in self._reasons:
            self._reasons[reason] = None
            if not self._warn_on_fallback:
                return
            name = getattr(self._fn, "__qualname__", repr(self._fn))
            warnings.warn(
                f"nnkit.compile: {name} runs eagerly: {reason}", RuntimeWarning, stacklevel=3
            )

    def __call__(self, *args, **kwargs):
        fn = self._fn
        if recording.recording_here():  # called by a step being recorded: part of it
            return fn(*args, **kwargs)
        if is_anomaly_enabled():
            self._warn("anomaly detection is on")
            return fn(*args, **kwargs)
        objs = discover(fn, args, kwargs)
        key = (arg_key(args), arg_key(kwargs), state_key(objs))
        entry = self._cache.get(key)
        if isinstance(entry, _Eager):
            return fn(*args, **kwargs)
        values: list = []
        _collect((args, kwargs), values)
        for i, prog in enumerate(entry or ()):
            if prog.matches():
                if prog.verified:
                    return prog.replay(values)
                return self._record(key, objs, args, kwargs, check=i)
        reason = hooks_reason(objs)
        if reason is not None:
            self._cache[key] = _Eager(reason)
            self._warn(reason)
            return fn(*args, **kwargs)
        if self.num_programs >= self.cache_size:
            self._warn(f"it needs more than cache_size={self.cache_size} programs")
            return fn(*args, **kwargs)
        return self._record(key, objs, args, kwargs)

    def _record(self, key, objs, args, kwargs, check=None):
        """Run ``fn`` eagerly while recording; keep the program, or with ``check`` (the
        index of an unverified program of this key) compare the two recordings."""
        for v in _flat((args, kwargs)):
            if isinstance(v, Tensor) and v._impl.requires_grad:
                self._cache[key] = _Eager("an input tensor requires grad")
                self._warn("an input tensor requires grad")
                return self._fn(*args, **kwargs)
        bufs: list = []
        pargs, pkwargs = _substitute((args, kwargs), bufs)
        rec = recording.Recorder(inputs=[b for b in bufs])
        tracker = GradTracker(rec)
        with rec, tracker:
            out = self._fn(*pargs, **pkwargs)
        if state_key(objs) != key[2]:  # the step made or rebound parameters or buffers
            self._discards += 1
            if self._discards > 2:
                self._cache[key] = _Eager("the step makes or rebinds parameters or buffers")
                self._warn("the step makes or rebinds parameters or buffers")
            return out
        layout = _layout(out, rec)
        steps = rec.finish()
        if rec.reason is not None:
            self._cache[key] = _Eager(rec.reason)
            self._warn(rec.reason)
            return out
        deps = tracker.dependencies()
        roles = {id(b._impl.data): ("grad", k) for k, (_, b, _) in enumerate(deps) if b is not None}
        sig = rec.signature(roles)
        sig.append(("result", replay.token(layout, {**rec._role, **roles})))
        prog = Program(steps, bufs, layout, deps, sig)
        programs = self._cache.setdefault(key, [])
        if check is None:
            programs.append(prog)
        elif programs[check].signature == sig:
            prog.verified = True
            programs[check] = prog
        else:
            reason = _difference(programs[check].signature, sig)
            self._cache[key] = _Eager(reason)
            self._warn(reason)
        return _build(layout)


def _difference(a, b) -> str:
    """Why two recordings of one step differ (the first step where they do)."""
    for x, y in zip(a, b):
        if x != y:
            if x[0] != y[0]:
                return f"it ran other kernels on another call (`{x[0]}`, then `{y[0]}`)"
            return f"a Python value baked into `{x[0]}` changed between calls"
    return "it ran a different number of kernels on another call"


def _flat(obj):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flat(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _flat(o)
    else:
        yield obj


def _substitute(obj, bufs):
    """``obj`` with each tensor and array replaced by a private copy (``bufs`` gets the
    copies' Mats and arrays, in the order :func:`_collect` visits them)."""
    if isinstance(obj, Tensor):
        m = obj._impl.data.copy()
        bufs.append(m)
        return Tensor._from_mat(m)
    if isinstance(obj, np.ndarray):
        a = np.array(obj, copy=True)
        bufs.append(a)
        return a
    if isinstance(obj, (list, tuple)):
        return type(obj)(_substitute(o, bufs) for o in obj)
    if isinstance(obj, dict):
        return {k: _substitute(v, bufs) for k, v in obj.items()}
    return obj


def _collect(obj, values) -> None:
    if isinstance(obj, (Tensor, np.ndarray)):
        values.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _collect(o, values)
    elif isinstance(obj, dict):
        for o in obj.values():
            _collect(o, values)


def _layout(out, rec):
    """The step's result with each tensor replaced by its Mat (what a replay copies)."""
    if isinstance(out, Tensor):
        m = out._impl.data
        if not rec.known(m):
            rec.fail("it returns a tensor made outside the recorded kernels")
        return m
    if out is None:
        return None
    if isinstance(out, (list, tuple)):
        return type(out)(_layout(o, rec) for o in out)
    if isinstance(out, dict):
        return {k: _layout(v, rec) for k, v in out.items()}
    rec.fail(f"it returns a {type(out).__name__}, not tensors")
    return None


def _build(layout):
    """Fresh detached tensors holding the current values of the layout's Mats."""
    if isinstance(layout, ArrayMat):
        return Tensor._from_mat(layout.copy())
    if layout is None:
        return None
    if isinstance(layout, (list, tuple)):
        return type(layout)(_build(o) for o in layout)
    return {k: _build(v) for k, v in layout.items()}
