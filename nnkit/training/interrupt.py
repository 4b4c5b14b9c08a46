"""Graceful interruption of ``fit``: a first SIGINT/SIGTERM stops after the current step.

Inside :func:`graceful_interrupts`, the first SIGINT (Ctrl-C) or SIGTERM does not
raise at once: it is recorded, ``fit`` finishes the training step in progress, every
:class:`~nnkit.callbacks.BackupAndRestore` among its callbacks writes a resumable
checkpoint of that exact point, and ``fit`` raises :class:`TrainingInterrupted`. A
second signal raises ``KeyboardInterrupt`` at once (an atomic checkpoint write in
progress is abandoned, never left half-written, and the last complete one stays).

Example:
    >>> import os, tempfile
    >>> from nnkit.callbacks import BackupAndRestore, Callback
    >>> from nnkit.training import graceful_interrupts, TrainingInterrupted
    >>> class CtrlC(Callback):           # stands in for a Ctrl-C during the third step
    ...     def on_train_batch_end(self, batch, logs=None):
    ...         if batch == 2:
    ...             request()
    >>> model = nnkit.Sequential(nn.Linear(4, 2))
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
    >>> backup = BackupAndRestore(os.path.join(tempfile.mkdtemp(), "backup"))
    >>> try:
    ...     with graceful_interrupts():
    ...         model.fit(x, y, epochs=5, batch_size=4, verbose=0,
    ...                   callbacks=[CtrlC(), backup])
    ... except TrainingInterrupted as stop:
    ...     print(f"stopped at epoch {stop.epoch + 1}, step {stop.step + 1}")
    ...     print(os.path.basename(stop.checkpoint))
    stopped at epoch 1, step 3
    backup-0000000003.h5
    >>> history = model.fit(x, y, epochs=5, batch_size=4, verbose=0, callbacks=[backup])
    >>> history.epoch                    # resumed mid-epoch 1: the history is complete
    [0, 1, 2, 3, 4]
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator, Sequence

__all__ = ["TrainingInterrupted", "graceful_interrupts", "requested", "request", "stopping"]

_pending: int | None = None
_active = 0  # how many graceful_interrupts blocks are open
_final = False  # the process ends when a signal stops the block (see graceful_interrupts)
_stopping = False  # fit is raising TrainingInterrupted: later signals change nothing


class TrainingInterrupted(Exception):
    """``fit`` stopped at a signal after finishing a step; its state can be resumed.

    Attributes:
        signum: the signal received (``signal.SIGINT``, ``signal.SIGTERM``).
        epoch: the epoch in progress, counted from 0.
        step: the last finished step of that epoch, counted from 0 (-1: none yet, or
            the epoch had finished).
        checkpoint: the resumable checkpoint written at that point, or None if no
            ``BackupAndRestore`` was among the callbacks.

    Args:
        signum: the signal received.
        epoch: the epoch in progress, counted from 0.
        step: the last finished step of that epoch (-1: none).
        checkpoint: the path of the resumable checkpoint written, or None.
    """

    def __init__(self, signum: int, epoch: int, step: int, checkpoint: str | None) -> None:
        self.signum, self.epoch, self.step, self.checkpoint = signum, epoch, step, checkpoint
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        super().__init__(
            f"training interrupted by {name} at epoch {epoch + 1}, step {step + 1}"
            + (f"; resumable checkpoint: {checkpoint}" if checkpoint else "")
        )

    @property
    def exit_code(self) -> int:
        """The shell's status for death by this signal: 128 + signum (130, 143)."""
        return 128 + int(self.signum)


def requested() -> int | None:
    """The signal received inside :func:`graceful_interrupts`, or None.

    Returns:
        The signal number, or None.
    """
    return _pending if _active else None


def request(signum: int = signal.SIGINT) -> None:
    """Inside :func:`graceful_interrupts`: stop ``fit`` after its current step, as a
    first ``signum`` would (outside such a block this does nothing).

    Args:
        signum: the signal to act as.
    """
    global _pending
    if _active:
        _pending = int(signum)


def stopping() -> None:
    """``fit`` is about to raise :class:`TrainingInterrupted` (its checkpoint written):
    a signal from now on is ignored rather than turned into ``KeyboardInterrupt`` in
    the middle of the unwinding."""
    global _stopping
    if _active:
        _stopping = True


def _handler(signum: int, frame: object) -> None:
    global _pending
    if _stopping:
        return
    if _pending is not None:  # the second signal: give up at once
        if _final:
            _ignore(signal.SIGINT, signal.SIGTERM)
        raise KeyboardInterrupt
    _pending = signum


def _ignore(*signals: int) -> None:
    for sig in signals:
        signal.signal(sig, signal.SIG_IGN)


@contextlib.contextmanager
def graceful_interrupts(
    signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM), *, final: bool = False
) -> Iterator[None]:
    """Within the block, a first ``signals`` stops ``fit`` after its current step.

    Outside the main thread (where Python cannot install signal handlers) this does
    nothing. The previous handlers are restored on exit.

    Args:
        signals: the signals to catch.
        final: the process ends when a signal stops the block (a command line
            program): from the abort, or from leaving the block by the interruption,
            ``signals`` are ignored instead of the previous handlers restored, so that a
            further Ctrl-C cannot raise inside the unwinding (in a finalizer, say).
    """
    global _pending, _active, _final, _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _handler) for sig in signals}
    _pending, _active, _final = None, _active + 1, final
    stopped = False
    try:
        yield
    except (TrainingInterrupted, KeyboardInterrupt):
        stopped = True
        raise
    finally:
        if final and stopped:
            _ignore(*signals)
        else:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        _pending, _active, _final, _stopping = None, _active - 1, False, False
