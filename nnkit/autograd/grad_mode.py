"""Thread-local autograd modes: grad mode, inference mode, anomaly mode.

Each thread has its own modes (a ``no_grad`` in one thread never affects another),
as Chainer's ``LocalConfig`` does, rather than class attributes shared by all threads.
"""

from __future__ import annotations

import functools
import threading

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
    "is_inference_mode_enabled",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
]


class _State(threading.local):
    def __init__(self) -> None:
        self.grad_enabled = True
        self.inference = False
        self.anomaly = False
        self.saved_hooks: list = []  # stack of (pack, unpack) for saved_tensors_hooks


state = _State()


def is_grad_enabled() -> bool:
    """Whether ops called in this thread record the graph."""
    return state.grad_enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _ModeContext:
    """Base of the mode context managers; also usable as a decorator."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapper

    _args: tuple = ()


class set_grad_enabled(_ModeContext):
    """Enable or disable graph recording: as a function call, context manager or decorator.

    Args:
        mode: True to record the graph, False not to.

    Example:
        >>> with nnkit.set_grad_enabled(False):
        ...     y = x * 2          # y.requires_grad is False
    """

    def __init__(self, mode: bool) -> None:
        self._args = (mode,)
        self._prev = state.grad_enabled
        state.grad_enabled = bool(mode)

    def __call__(self, fn):
        state.grad_enabled = self._prev  # used as a decorator: undo the call-time switch
        return super().__call__(fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        state.grad_enabled = self._prev
        return False


class no_grad(_ModeContext):
    """Context manager / decorator that disables graph recording in this thread.

    Example:
        >>> with nnkit.no_grad():
        ...     w -= lr * w.grad
    """

    def __enter__(self):
        self._prev = state.grad_enabled
        state.grad_enabled = False
        return self

    def __exit__(self, *exc):
        state.grad_enabled = self._prev
        return False


class enable_grad(_ModeContext):
    """Context manager / decorator that enables graph recording (inside ``no_grad``)."""

    def __enter__(self):
        self._prev = state.grad_enabled
        state.grad_enabled = True
        return self

    def __exit__(self, *exc):
        state.grad_enabled = self._prev
        return False


class inference_mode(_ModeContext):
    """Like :class:`no_grad`, and tensors made inside are marked as inference tensors.

    Args:
        mode: False makes this a no-op (as in PyTorch).
    """

    def __init__(self, mode: bool = True) -> None:
        self._args = (mode,)
        self._mode = mode

    def __enter__(self):
        self._prev = (state.grad_enabled, state.inference)
        if self._mode:
            state.grad_enabled = False
            state.inference = True
        return self

    def __exit__(self, *exc):
        state.grad_enabled, state.inference = self._prev
        return False


def is_anomaly_enabled() -> bool:
    return state.anomaly


class set_detect_anomaly(_ModeContext):
    """Turn anomaly detection on or off (function call, context manager or decorator)."""

    def __init__(self, mode: bool) -> None:
        self._args = (mode,)
        self._prev = state.anomaly
        state.anomaly = bool(mode)

    def __call__(self, fn):
        state.anomaly = self._prev
        return super().__call__(fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        state.anomaly = self._prev
        return False


class detect_anomaly(_ModeContext):
    """Context manager / decorator: record forward call sites and check backward for NaN/Inf.

    Inside it, a backward that produces NaN or Inf raises a ``RuntimeError`` naming the
    Function and showing where in user code its forward op was created.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self._args = (check_nan,)
        self._check = check_nan

    def __enter__(self):
        self._prev = state.anomaly
        state.anomaly = self._check
        return self

    def __exit__(self, *exc):
        state.anomaly = self._prev
        return False
