"""``Watchdog``: a deadline on the collective in progress, so that a stuck rank ends the job.

A collective waits for every rank. If one rank stops taking part (stuck in a deadlock,
an endless loop or a hung file system, but still alive, so that no exception ends the
job), the others would wait in their next collective forever. Each
:class:`~nnkit.distributed.MPICommunicator` therefore keeps one daemon thread, a
:class:`Watchdog`, that knows when the collective in progress began: a collective
records its start before it enters MPI and clears it when it returns (a lock and two
assignments; no thread is started or woken per collective). If a collective is still in
progress ``timeout`` seconds after it began, the watchdog calls its ``on_timeout``
callback with a one-line message, and the communicator prints it and aborts the whole
job.

The timeout is, first to last: ``distributed.timeout`` in the CLI config (or
``timeout=`` of :func:`nnkit.distributed.init`), the environment variable
``NNKIT_DISTRIBUTED_TIMEOUT`` (seconds), and :data:`DEFAULT_TIMEOUT`, torch's default.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from numbers import Real
from typing import Any

__all__ = ["Watchdog", "DEFAULT_TIMEOUT", "TIMEOUT_ENV", "resolve_timeout", "check_timeout"]

DEFAULT_TIMEOUT = 1800.0
TIMEOUT_ENV = "NNKIT_DISTRIBUTED_TIMEOUT"
WHERE_SET = (
    "the timeout is distributed.timeout in the CLI config, timeout= of "
    f"nnkit.distributed.init, or the environment variable {TIMEOUT_ENV}"
)


def check_timeout(timeout: Any, name: str = "timeout") -> float:
    """``timeout`` as a float number of seconds, checked.

    Args:
        timeout: a positive number of seconds (``math.inf``: never time out).
        name: what to call it in the error message.

    Returns:
        ``timeout`` as a float.

    Raises:
        ValueError: if ``timeout`` is not a number (a bool is not), is NaN or is not > 0.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, Real) or math.isnan(timeout):
        raise ValueError(f"{name} must be a positive number of seconds; got {timeout!r}")
    if timeout <= 0:
        raise ValueError(f"{name} must be a positive number of seconds (> 0); got {timeout!r}")
    return float(timeout)


def resolve_timeout(timeout: Any = None) -> float:
    """The collective timeout in seconds: ``timeout``, else the environment's, else 1800.

    Args:
        timeout: a positive number of seconds; None for the value of the environment
            variable ``NNKIT_DISTRIBUTED_TIMEOUT`` if it is set (and not blank), else
            :data:`DEFAULT_TIMEOUT`.

    Returns:
        The timeout in seconds, a float.

    Raises:
        ValueError: if ``timeout`` is not a positive number (the message names
            ``timeout``), or if it is None and ``NNKIT_DISTRIBUTED_TIMEOUT`` is not a
            positive number of seconds (the message names the variable).

    Example:
        >>> resolve_timeout(60)
        60.0
        >>> import os
        >>> os.environ["NNKIT_DISTRIBUTED_TIMEOUT"] = "120"
        >>> resolve_timeout()
        120.0
        >>> del os.environ["NNKIT_DISTRIBUTED_TIMEOUT"]
        >>> resolve_timeout()
        1800.0
    """
    if timeout is not None:
        return check_timeout(timeout)
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isnan(value) or value <= 0:
        raise ValueError(
            f"environment variable {TIMEOUT_ENV}={text!r}: expected a positive number "
            "of seconds (e.g. 600)"
        )
    return value


class Watchdog:
    """Ends the job when a collective takes longer than ``timeout`` seconds.

    Call :meth:`begin` before a collective and :meth:`end` after it (or use
    :meth:`watch`). The watchdog thread starts on the first :meth:`begin` and sleeps
    until the deadline of the collective it last saw; a collective that ended in time
    costs it nothing. When a collective is still in progress at its deadline, it
    calls ``on_timeout(message)`` once, from its own thread, and stops watching.

    Args:
        timeout: seconds a collective may last (see :func:`check_timeout`).
        on_timeout: called with the one-line message; what a communicator passes
            prints it and aborts the job (it need not return).
        prefix: put first in the message, e.g. ``'[rank 0 of 2]'``.

    Raises:
        ValueError: for a timeout that is not a positive number.

    Example:
        >>> import time
        >>> dog = Watchdog(0.1, on_timeout=print, prefix="[rank 0 of 2]")
        >>> with dog.watch("barrier"):
        ...     time.sleep(1.0)                 # a collective that hangs
        [rank 0 of 2] barrier still waits for the other ranks after ... s (timeout 0.1 s): ...
    """

    def __init__(
        self, timeout: float, on_timeout: Callable[[str], Any], *, prefix: str = ""
    ) -> None:
        self._timeout = check_timeout(timeout)
        self._on_timeout = on_timeout
        self._prefix = prefix
        self._cond = threading.Condition(threading.Lock())
        self._what: Any = None  # the collective in progress (str or callable), or None
        self._started = 0.0
        self._idle = False  # the thread waits for a collective, with no deadline
        self._closed = False
        self._thread: threading.Thread | None = None
        self.fired = False

    @property
    def timeout(self) -> float:
        """Seconds a collective may last; setting it applies to the one in progress too."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        value = check_timeout(value)
        with self._cond:
            self._timeout = value
            self._cond.notify()

    def begin(self, what: str | Callable[[], str]) -> None:
        """Mark the start of a collective.

        Args:
            what: the collective, e.g. ``'allreduce of 10 float32 values'``; or a
                function returning that text, called only if it times out (cheaper).
        """
        with self._cond:
            self._what, self._started = what, time.monotonic()
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="nnkit-collective-watchdog", daemon=True
                )
                self._thread.start()
            elif self._idle:
                self._cond.notify()

    def end(self) -> None:
        """Mark the end of the collective in progress."""
        with self._cond:  # no notify: the thread finds it gone at the deadline it keeps
            self._what = None

    def watch(self, what: str | Callable[[], str]) -> _Watching:
        """A context manager around one collective: ``with dog.watch('barrier'): ...``.

        Args:
            what: the collective's name, or a callable giving it (called only on a timeout).

        Returns:
            A context manager.
        """
        return _Watching(self, what)

    def close(self) -> None:
        """Stop watching for good (the thread ends; later collectives are not watched)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        with self._cond:
            while True:
                if self._closed:
                    return
                if self._what is None:
                    self._idle = True
                    self._cond.wait()
                    self._idle = False
                    continue
                waited = time.monotonic() - self._started
                remaining = self._timeout - waited
                if remaining > 0:
                    wait = None if remaining >= threading.TIMEOUT_MAX else remaining
                    self._cond.wait(wait)
                    continue
                what = self._what
                self.fired = True
                break
        # outside the lock: on_timeout may take a while or never return
        self._on_timeout(self._message(what, waited))

    def _message(self, what: Any, waited: float) -> str:
        description = what() if callable(what) else str(what)
        lead = f"{self._prefix} " if self._prefix else ""
        return (
            f"{lead}{description} still waits for the other ranks after {waited:.1f} s "
            f"(timeout {self._timeout:g} s): a rank is stuck or far behind; aborting the "
            f"whole job ({WHERE_SET})"
        )


class _Watching:
    """``with watchdog.watch(what):`` (a class, cheaper than a generator context)."""

    __slots__ = ("_dog", "_what")

    def __init__(self, dog: Watchdog, what: str | Callable[[], str]) -> None:
        self._dog, self._what = dog, what

    def __enter__(self) -> None:
        self._dog.begin(self._what)

    def __exit__(self, *exc: object) -> None:
        self._dog.end()
