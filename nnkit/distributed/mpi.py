"""``MPICommunicator``: collectives between the processes ``mpiexec`` started (mpi4py).

CPU tensors travel as host buffers through ``MPI_Allreduce``/``MPI_Bcast`` (in place:
``MPI.IN_PLACE``, no extra copy for a contiguous tensor). GPU tensors go through NCCL
(:mod:`nnkit.backends.nccl`): the first GPU collective makes rank 0 create an NCCL id,
broadcasts it over MPI and opens an NCCL communicator on the tensor's GPU.

Every collective runs under a :class:`~nnkit.distributed.watchdog.Watchdog`: one that
is still waiting ``timeout`` seconds after it began (a rank stuck, but not crashed)
prints one line naming the rank and the collective to stderr and aborts the whole job.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from nnkit.backends import collective, nccl
from nnkit.distributed.communicator import Communicator
from nnkit.distributed.watchdog import Watchdog, check_timeout, resolve_timeout

__all__ = ["MPICommunicator", "import_mpi"]

INSTALL_HINT = "install with pip install 'nnkit[distributed]' (mpi4py)"


def import_mpi(reason: str = "") -> Any:
    """``mpi4py.MPI``, imported on first use (importing it initialises MPI).

    Args:
        reason: why MPI is needed, put first in the error message.

    Returns:
        The ``mpi4py.MPI`` module.

    Raises:
        RuntimeError: if mpi4py is not installed (the message says how to install it).
    """
    try:
        from mpi4py import MPI  # optional: mpi4py (and importing it initialises MPI)
    except ImportError as err:
        lead = f"{reason}: " if reason else ""
        raise RuntimeError(
            f"{lead}distributed training needs mpi4py, which is not "
            f"importable ({err}); {INSTALL_HINT}"
        ) from None
    return MPI


class MPICommunicator(Communicator):
    """The ranks of an MPI communicator (``MPI.COMM_WORLD`` by default).

    A collective still in progress ``timeout`` seconds after it began (some rank
    stopped taking part without crashing) makes this rank print one line to stderr,
    naming itself, the collective and how long it waited, and call :meth:`abort`, which
    ends every rank. Only the host side of an NCCL collective is watched (joining the
    NCCL communicator, queueing the operation), not its completion on the GPU.

    Args:
        comm: an ``mpi4py`` communicator; None for ``COMM_WORLD``.
        timeout: seconds a collective may wait for the other ranks; None for the
            environment variable ``NNKIT_DISTRIBUTED_TIMEOUT`` if set, else 1800 (30
            minutes, torch's default). Settable later through :attr:`timeout`.

    Raises:
        RuntimeError: if mpi4py is not installed.
        ValueError: if ``timeout`` (or, when it is None, ``NNKIT_DISTRIBUTED_TIMEOUT``)
            is not a positive number of seconds.

    Example:
        Run under ``mpiexec -n 2`` (so not as a doctest):

        >>> comm = MPICommunicator()  # doctest: +SKIP
        >>> comm.allreduce_scalar(comm.rank)  # 0 + 1 on both ranks  # doctest: +SKIP
        1.0
    """

    def __init__(self, comm: Any = None, *, timeout: float | None = None) -> None:
        seconds = resolve_timeout(timeout)
        self._MPI = import_mpi()
        self.comm = self._MPI.COMM_WORLD if comm is None else comm
        self.rank, self.world_size = self.comm.Get_rank(), self.comm.Get_size()
        self._nccl: nccl.NcclGroup | None = None
        self._watchdog = Watchdog(
            seconds, self._timed_out, prefix=f"[rank {self.rank} of {self.world_size}]"
        )

    @property
    def timeout(self) -> float:
        """Seconds a collective may wait for the other ranks before the job is aborted.

        Raises:
            ValueError: when set to anything but a positive number.
        """
        return self._watchdog.timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._watchdog.timeout = check_timeout(seconds)

    def _timed_out(self, message: str) -> None:
        """The watchdog's verdict (called from its thread while the main thread waits in
        MPI): print ``message``, then end every rank."""
        print(message, file=sys.stderr, flush=True)
        time.sleep(0.2)  # let mpiexec forward the line before it ends every rank
        try:
            if self._MPI.Query_thread() >= self._MPI.THREAD_MULTIPLE:
                self.abort(1)  # MPI_Abort from a second thread needs MPI_THREAD_MULTIPLE
        finally:  # without it (or if Abort returned): mpiexec ends the job when we exit
            _flush()
            os._exit(1)

    def abort(self, code: int = 1) -> None:
        """``MPI_Abort``: mpiexec ends every rank; stdout and stderr are flushed first.

        Args:
            code: the exit status of every rank.
        """
        _flush()
        self.comm.Abort(code)

    def barrier(self) -> None:
        """``MPI_Barrier``."""
        with self._watchdog.watch("barrier"):
            self.comm.Barrier()

    def _allreduce_mat(self, mat: Any, op: str) -> None:
        dog = self._watchdog
        dog.begin(lambda: f"allreduce ({op}) of {_values(mat)}")
        try:
            if nccl.supports(mat):
                self._nccl_group(mat).allreduce_(mat, op)
                return
            buffer = collective.host_buffer(mat)
            ops = {"sum": self._MPI.SUM, "max": self._MPI.MAX, "min": self._MPI.MIN}
            self.comm.Allreduce(self._MPI.IN_PLACE, buffer, op=ops[op])
        finally:
            dog.end()
        collective.commit_host_buffer(mat, buffer)

    def _broadcast_mat(self, mat: Any, root: int) -> None:
        dog = self._watchdog
        dog.begin(lambda: f"broadcast from rank {root} of {_values(mat)}")
        try:
            if nccl.supports(mat):
                self._nccl_group(mat).broadcast_(mat, root)
                return
            buffer = collective.host_buffer(mat)
            self.comm.Bcast(buffer, root=root)
        finally:
            dog.end()
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


def _values(mat: Any) -> str:
    """``'12345 float32 values'`` (what a collective moves, for the watchdog's message)."""
    return f"{mat.size} {mat.dtype} values"


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
