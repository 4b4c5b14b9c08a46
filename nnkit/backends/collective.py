"""Host buffers for collective communication: the one place a communicator meets memory.

A communicator (MPI, in-process threads) moves and reduces contiguous host arrays.
:func:`host_buffer` hands it a Mat's values as such an array, sharing the Mat's own
memory where it can (a contiguous, writable CPU array), so that MPI's in-place
all-reduce writes straight into the tensor; :func:`commit_host_buffer` then makes the
Mat hold the buffer's values (a copy only when the buffer was not its memory) and bumps
the Storage's version, as every in-place write does. :func:`reduce_host_buffers` is
the arithmetic of an all-reduce done in Python (the thread communicator of the tests).
GPU Mats go through :mod:`nnkit.backends.nccl` instead, without a host round trip.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["host_buffer", "commit_host_buffer", "reduce_host_buffers", "REDUCE_OPS"]

REDUCE_OPS = ("sum", "max", "min")

_UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def host_buffer(mat) -> np.ndarray:
    """A C-contiguous, writable host ndarray holding ``mat``'s values.

    Args:
        mat: any Mat.

    Returns:
        ``mat``'s own array when it is a contiguous, writable NumPy array (writes to the
        buffer change the Mat), else a fresh copy.
    """
    array = mat.to_numpy()
    if type(array) is np.ndarray and array.flags.c_contiguous and array.flags.writeable:
        return array
    return np.array(array, copy=True, order="C")


def commit_host_buffer(mat, buffer: np.ndarray) -> None:
    """Make ``mat`` hold ``buffer``'s values after a collective wrote them.

    Args:
        mat: the Mat the buffer came from (:func:`host_buffer`).
        buffer: a host array of ``mat``'s shape.
    """
    if buffer is mat.to_numpy():
        mat.storage.bump()
        return
    mat.copy_(type(mat).from_host(buffer))


def reduce_host_buffers(buffers: Sequence[np.ndarray], op: str = "sum") -> np.ndarray:
    """Reduce equally shaped host arrays elementwise, in the order given.

    The fixed order makes every caller that passes the same buffers get bit-identical
    results, which is what keeps data-parallel replicas identical.

    Args:
        buffers: one array per rank.
        op: ``'sum'``, ``'max'`` or ``'min'``.

    Returns:
        A new array.

    Raises:
        ValueError: for another ``op`` or buffers of different shapes.
    """
    if op not in _UFUNCS:
        raise ValueError(f"unknown reduce op {op!r}; expected one of {REDUCE_OPS}")
    shapes = {b.shape for b in buffers}
    if len(shapes) != 1:
        raise ValueError(f"all-reduce of buffers with different shapes: {sorted(shapes)}")
    out = np.array(buffers[0], copy=True)
    for buffer in buffers[1:]:
        _UFUNCS[op](out, buffer, out=out)
    return out
