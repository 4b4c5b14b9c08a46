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
    """Whether ops called in this thread record the autograd graph.

    Returns:
        False inside :class:`no_grad`, :class:`inference_mode` or
        ``set_grad_enabled(False)``; True otherwise (the default).

    Example:
        >>> nnkit.is_grad_enabled()
        True
        >>> with nnkit.no_grad():
        ...     nnkit.is_grad_enabled()
        False
    """
    return state.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside an enabled :class:`inference_mode` block.

    Returns:
        A bool (False by default).

    Example:
        >>> with nnkit.inference_mode():
        ...     nnkit.is_inference_mode_enabled()
        True
        >>> nnkit.is_inference_mode_enabled()
        False
    """
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
    """Enable or disable graph recording in this thread: as a function call, a context
    manager or a decorator.

    Called as a function it switches the mode at once (and for good); as a context
    manager or decorator the previous mode is restored on exit, as in PyTorch.

    Args:
        mode: True to record the graph, False not to.

    Example:
        >>> x = nnkit.ones(2, requires_grad=True)
        >>> with nnkit.set_grad_enabled(False):
        ...     y = x * 2
        >>> y.requires_grad
        False
        >>> with nnkit.set_grad_enabled(True):
        ...     (x * 2).requires_grad
        True
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

    Results computed inside have ``requires_grad=False``; use it for evaluation and for
    updating parameters in place. Thread-local: other threads keep their mode.

    Example:
        >>> w = nnkit.tensor([1.0, 2.0], requires_grad=True)
        >>> (w * w).sum().backward()
        >>> with nnkit.no_grad():
        ...     w -= 0.1 * w.grad
        >>> w
        tensor([0.8000, 1.6000], requires_grad=True)
        >>> @nnkit.no_grad()
        ... def predict(x):
        ...     return x * w
        >>> predict(nnkit.ones(2)).requires_grad
        False
    """

    def __enter__(self):
        self._prev = state.grad_enabled
        state.grad_enabled = False
        return self

    def __exit__(self, *exc):
        state.grad_enabled = self._prev
        return False


class enable_grad(_ModeContext):
    """Context manager / decorator that enables graph recording, e.g. inside a
    :class:`no_grad` block.

    Example:
        >>> x = nnkit.ones(2, requires_grad=True)
        >>> with nnkit.no_grad():
        ...     with nnkit.enable_grad():
        ...         y = x * 2
        >>> y.requires_grad
        True
    """

    def __enter__(self):
        self._prev = state.grad_enabled
        state.grad_enabled = True
        return self

    def __exit__(self, *exc):
        state.grad_enabled = self._prev
        return False


class inference_mode(_ModeContext):
    """Like :class:`no_grad`, and :func:`is_inference_mode_enabled` is True inside;
    also a decorator.

    Unlike PyTorch, tensors made inside are ordinary tensors, not "inference tensors":
    they may later take part in recorded ops (PyTorch refuses to save them for
    backward). There is no extra speed-up over :class:`no_grad`.

    Args:
        mode: False makes this a no-op (as in PyTorch).

    Example:
        >>> x = nnkit.ones(2, requires_grad=True)
        >>> with nnkit.inference_mode():
        ...     y = x * 2
        >>> y.requires_grad
        False
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
    """Whether anomaly detection (see :class:`detect_anomaly`) is on in this thread.

    Returns:
        A bool (False by default).

    Example:
        >>> nnkit.autograd.is_anomaly_enabled()
        False
        >>> with nnkit.detect_anomaly():
        ...     nnkit.autograd.is_anomaly_enabled()
        True
    """
    return state.anomaly


class set_detect_anomaly(_ModeContext):
    """Turn anomaly detection on or off: as a function call, a context manager or a
    decorator (see :class:`detect_anomaly`).

    Args:
        mode: True to record forward call sites and check backward for NaN/Inf.

    Example:
        >>> with nnkit.set_detect_anomaly(True):
        ...     nnkit.autograd.is_anomaly_enabled()
        True
        >>> nnkit.autograd.is_anomaly_enabled()
        False
    """

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
    """Context manager / decorator: record forward call sites and check backward for
    NaN/Inf.

    Inside it, a backward that produces NaN or Inf raises a ``RuntimeError`` naming the
    Function and showing where in user code its forward op was created. It slows ops
    down: use it to debug.

    Args:
        check_nan: False records call sites without checking (as in PyTorch).

    Example:
        >>> x = nnkit.tensor([1.0], requires_grad=True)
        >>> with nnkit.detect_anomaly():  # doctest: +ELLIPSIS
        ...     (x * float("inf")).sum().backward()
        Traceback (most recent call last):
            ...
        RuntimeError: Function 'MulBackward' returned nan or inf values in its gradient ...
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
