"""Shared helpers of the benchmarks: timing medians and optional PyTorch."""

from __future__ import annotations

import os
import statistics
import time

from nnkit.backends.blas_info import openblas_core


def median_time(fn, *, repeats: int = 7, warmup: int = 2, number: int = 1) -> float:
    """Median wall time of ``number`` calls of ``fn`` (seconds per call)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def interleaved_medians(fns: dict, *, repeats: int = 15, warmup: int = 2, number: int = 1) -> dict:
    """Median seconds per call of each function, timed in alternation.

    Alternating the contenders round by round exposes them to the same machine load,
    so their ratio stays meaningful on a noisy machine.
    """
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times[name].append((time.perf_counter() - t0) / number)
    return {name: statistics.median(ts) for name, ts in times.items()}


def try_torch(threads: int):
    """PyTorch with ``threads`` intra-op threads, or None when it is not installed.

    Its OpenMP threads are told to sleep rather than spin between ops
    (``OMP_WAIT_POLICY=PASSIVE``): spinning threads would steal the cores that
    NumPy's BLAS needs in the alternating timings.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    return torch


def blas_threads() -> int:
    """Threads the BLAS uses (from the usual env vars; else the core count)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var):
            return int(os.environ[var])
    return os.cpu_count() or 1


def env_line() -> str:
    """Threads, the OpenBLAS kernel family NumPy runs (what threadpoolctl reports), the
    ``OPENBLAS_CORETYPE`` pin if any, and the CPU count: compare figures only where
    this line is the same."""
    return (
        f"threads={blas_threads()} kernel={openblas_core() or 'unknown'}"
        f" OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')} cpus={os.cpu_count()}"
    )
