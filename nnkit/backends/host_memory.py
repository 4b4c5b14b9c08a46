"""Host memory: keep the memory a training step frees for the next step (glibc's malloc).

A training step makes and frees the same large arrays every step (activations, their
gradients, im2col columns). glibc's malloc gives a block of 128 KiB or more its own
``mmap`` (the threshold rises to the largest block freed so far, up to 32 MiB) and hands
the top of its heap back to the system once more than twice that threshold is free;
each page handed back costs a page fault (the kernel zeroes 4 KiB) when the next step
takes it again. In a virtual machine a fault costs several microseconds: measured on
this project's 2-core VMs, the ConvNet step of ``benchmarks/bench_cnn.py`` took 32-38 ms
with ~2 000 faults per step and 23 ms without, and which of the two a process got
depended on the order of its earlier allocations.

:func:`keep_freed_memory` sets malloc's thresholds so that blocks up to 32 MiB come from
the heap and up to ``limit`` bytes of freed memory stay in it: the steps after the first
fault no pages. The price is resident memory: the process keeps up to ``limit`` bytes
it has freed (its peak is unchanged). ``nnkit train``, ``evaluate`` and ``predict`` call
it at start (``NNKIT_KEEP_FREED_MEMORY=0`` in the environment leaves malloc as it is);
a library user may call it once before training. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["keep_freed_memory", "DEFAULT_LIMIT"]

#: The freed memory kept by default: 512 MiB.
DEFAULT_LIMIT = 512 << 20

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_MMAP_MAX = 32 << 20  # the largest mmap threshold glibc accepts on 64-bit systems


def _libc():
    """glibc, or None (another C library or system)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols, the C library's among them
    except OSError:
        return None
    ok = hasattr(libc, "gnu_get_libc_version") and hasattr(libc, "mallopt")  # (musl: no)
    return libc if ok else None


def keep_freed_memory(limit: int = DEFAULT_LIMIT) -> bool:
    """Keep up to ``limit`` bytes of freed memory in the C heap (see the module).

    Args:
        limit: bytes of free memory the heap may keep at its top before it hands any
            back to the system (at least 32 MiB).

    Returns:
        True where the thresholds were set (glibc), False elsewhere (nothing changed).

    Raises:
        ValueError: if ``limit`` is under 32 MiB.
    """
    if limit < _MMAP_MAX:
        raise ValueError(f"keep_freed_memory: limit must be at least 32 MiB, got {limit}")
    libc = _libc()
    if libc is None:
        return False
    return bool(
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX)
        and libc.mallopt(_M_TRIM_THRESHOLD, ctypes.c_int(min(limit, 2**31 - 1)))
    )
