"""``MPICommunicator``: collectives between the processes ``mpiexec`` started (mpi4py).

CPU tensors travel as host buffers through ``MPI_Allreduce``/``MPI_Bcast`` (in place:
``MPI.IN_PLACE``, no extra copy for a contiguous tensor). GPU tensors go through NCCL
(:mod:`nnkit.backends.nccl`): the first GPU collective makes rank 0 create an NCCL id,
broadcasts it over MPI and opens an NCCL communicator on the tensor's GPU.
"""

from __future__ import annotations

from typing import Any

from nnkit.backends import collective, nccl
from nnkit.distributed.communicator import Communicator

__all__ = ["MPICommunicator", "import_mpi"]

INSTALL_HINT = "install with pip install 'nnkit[distributed]' (mpi4py)"


def import_mpi(reason: str = "") -> Any:
    """``mpi4py.MPI``, imported on first use (importing it initialises MPI).

    Args:
        reason: why MPI is needed, put first in the error message.

    Raises:
        RuntimeError: if mpi4py is not installed (the message says how to install it).
    """
    try:
        from mpi4py import MPI
    except ImportError as err:
        lead = f"{reason}: " if reason else ""
        raise RuntimeError(
            f"{lead}distributed training needs mpi4py, which is not "
            f"importable ({err}); {INSTALL_HINT}"
        ) from None
    return MPI


class MPICommunicator(Communicator):
    """The ranks of an MPI communicator (``MPI.COMM_WORLD`` by default).

    Args:
        comm: an ``mpi4py`` communicator; None for ``COMM_WORLD``.

    Raises:
        RuntimeError: if mpi4py is not installed.

    Example:
        >>> # mpiexec -n 2 python -c "..."
        >>> comm = MPICommunicator()
        >>> comm.allreduce_scalar(comm.rank)     # 0 + 1 on both ranks
        1.0
    """

    def __init__(self, comm: Any = None) -> None:
        self._MPI = import_mpi()
        self.comm = self._MPI.COMM_WORLD if comm is None else comm
        self.rank, self.world_size = self.comm.Get_rank(), self.comm.Get_size()
        self._nccl: nccl.NcclGroup | None = None

    def abort(self, code: int = 1) -> None:
        """``MPI_Abort``: mpiexec ends every rank; stdout and stderr are flushed first."""
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        self.comm.Abort(code)

    def barrier(self) -> None:
        """``MPI_Barrier``."""
        self.comm.Barrier()

    def _allreduce_mat(self, mat: Any, op: str) -> None:
        if nccl.supports(mat):
            self._nccl_group(mat).allreduce_(mat, op)
            return
        buffer = collective.host_buffer(mat)
        ops = {"sum": self._MPI.SUM, "max": self._MPI.MAX, "min": self._MPI.MIN}
        self.comm.Allreduce(self._MPI.IN_PLACE, buffer, op=ops[op])
        collective.commit_host_buffer(mat, buffer)

    def _broadcast_mat(self, mat: Any, root: int) -> None:
        if nccl.supports(mat):
            self._nccl_group(mat).broadcast_(mat, root)
            return
        buffer = collective.host_buffer(mat)
        self.comm.Bcast(buffer, root=root)
        collective.commit_host_buffer(mat, buffer)

    def _nccl_group(self, mat: Any) -> nccl.NcclGroup:
        """The NCCL communicator of this rank's GPU (one GPU per rank), opened once."""
        index = mat.device.index or 0
        if self._nccl is None:
            uid = nccl.unique_id() if self.rank == 0 else None
            uid = self.comm.bcast(uid, root=0)
            self._nccl = nccl.NcclGroup(self.world_size, uid, self.rank, index)
        elif self._nccl.device_index != index:
            raise RuntimeError(
                f"rank {self.rank} communicates from cuda:"
                f"{self._nccl.device_index}; got a tensor on cuda:{index} "
                "(use one GPU per rank)"
            )
        return self._nccl
