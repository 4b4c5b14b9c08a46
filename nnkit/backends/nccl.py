"""NCCL collectives on GPU Mats, through ``cupy.cuda.nccl``.

:class:`NcclGroup` all-reduces and broadcasts a :class:`~nnkit.backends.cupy_backend.CupyMat`
in place on the GPU, on the current CUDA stream. NCCL needs every rank to join one
communicator identified by a unique id that rank 0 creates (:func:`unique_id`); the
caller ships it to the other ranks (MPI does, in
:class:`~nnkit.distributed.MPICommunicator`). Importing this module never fails for
want of CuPy or NCCL: :func:`supports` is then False for every Mat.

Note:
    This path is written against CuPy's documented NCCL API but has not yet run on a
    real multi-GPU machine.
"""

from __future__ import annotations

from typing import Any

from nnkit.backends.collective import REDUCE_OPS
from nnkit.backends.cupy_backend import CupyMat

try:  # guarded, as cupy_backend.py guards CuPy itself
    import cupy
    from cupy.cuda import nccl
except Exception:  # ImportError, or CUDA/NCCL libraries failing to load
    cupy = nccl = None

__all__ = ["NcclGroup", "available", "supports", "unique_id"]


def available() -> bool:
    """True when CuPy imported with its NCCL bindings."""
    return nccl is not None


def supports(mat: Any) -> bool:
    """Whether ``mat`` lives on a GPU that NCCL can reach (a CupyMat)."""
    if not available():
        return False
    return isinstance(mat, CupyMat)


def unique_id() -> Any:
    """A fresh NCCL id (created on rank 0, then sent to every rank).

    Raises:
        RuntimeError: if CuPy's NCCL bindings are missing.
    """
    _require()
    return nccl.get_unique_id()


def _require() -> None:
    if nccl is None:
        raise RuntimeError(
            "NCCL collectives need CuPy built with NCCL: "
            "pip install 'nnkit[cuda]' (cupy-cuda12x bundles NCCL)"
        )


def _dtype(dtype: Any) -> int:
    table = {
        "float16": nccl.NCCL_FLOAT16,
        "float32": nccl.NCCL_FLOAT32,
        "float64": nccl.NCCL_FLOAT64,
        "int32": nccl.NCCL_INT32,
        "int64": nccl.NCCL_INT64,
        "uint8": nccl.NCCL_UINT8,
        "bool": nccl.NCCL_UINT8,
    }
    name = cupy.dtype(dtype).name
    if name not in table:
        raise TypeError(f"NCCL cannot communicate dtype {name}")
    return table[name]


def _op(op: str) -> int:
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduce op {op!r}; expected one of {REDUCE_OPS}")
    return {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}[op]


class NcclGroup:
    """One rank's member of an NCCL communicator.

    Args:
        world_size: the number of ranks.
        uid: the id from :func:`unique_id` on rank 0, the same on every rank.
        rank: this rank.
        device_index: the GPU this rank communicates from.

    Raises:
        RuntimeError: if CuPy's NCCL bindings are missing.
    """

    def __init__(self, world_size: int, uid: Any, rank: int, device_index: int) -> None:
        _require()
        self.device_index = device_index
        with cupy.cuda.Device(device_index):
            self._comm = nccl.NcclCommunicator(world_size, uid, rank)

    def allreduce_(self, mat: Any, op: str = "sum") -> None:
        """Reduce ``mat`` over the ranks, in place."""
        array = self._contiguous(mat)
        with cupy.cuda.Device(self.device_index):
            stream = cupy.cuda.get_current_stream().ptr
            self._comm.allReduce(
                array.data.ptr, array.data.ptr, array.size, _dtype(array.dtype), _op(op), stream
            )
        self._commit(mat, array)

    def broadcast_(self, mat: Any, root: int = 0) -> None:
        """Overwrite ``mat`` with rank ``root``'s values, in place."""
        array = self._contiguous(mat)
        with cupy.cuda.Device(self.device_index):
            stream = cupy.cuda.get_current_stream().ptr
            self._comm.bcast(array.data.ptr, array.size, _dtype(array.dtype), root, stream)
        self._commit(mat, array)

    @staticmethod
    def _contiguous(mat: Any) -> Any:
        array = mat.array
        return array if array.flags.c_contiguous else cupy.ascontiguousarray(array)

    @staticmethod
    def _commit(mat: Any, array: Any) -> None:
        if array is mat.array:
            mat.storage.bump()
        else:
            mat.copy_(type(mat)(array))
