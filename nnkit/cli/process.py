"""Whether the CLI's functions run as the ``nnkit`` command, which a stopped run ends."""

from __future__ import annotations

import signal
import threading

__all__ = ["ENDS_PROCESS", "ignore_signals_while_exiting"]

# Set by the console script's entry point; False when the functions are called in-process
# (tests, notebooks), whose signal handlers are left alone.
ENDS_PROCESS = False


def ignore_signals_while_exiting() -> None:
    """A run stopped by a signal ends the process: more Ctrl-C or SIGTERM while it exits
    would only print a traceback from wherever they land (a finalizer, say)."""
    if ENDS_PROCESS and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
