"""Whether the CLI's functions run as the ``nnkit`` command, which a stopped run ends."""

from __future__ import annotations

__all__ = ["ENDS_PROCESS"]

# Set by the console script's entry point; False when the functions are called in-process
# (tests, notebooks), whose signal handlers are left alone. When True, a run stopped by a
# signal ignores further signals while the process exits
# (``graceful_interrupts(final=True)``).
ENDS_PROCESS = False
