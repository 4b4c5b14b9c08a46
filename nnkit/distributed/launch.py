"""``init()``: find out how this process was launched and return its communicator.

``mpiexec``/``mpirun`` tell each process the size of its job through the environment:
Open MPI sets ``OMPI_COMM_WORLD_SIZE``, MPICH's Hydra and Intel MPI ``PMI_SIZE``,
MVAPICH ``MV2_COMM_WORLD_SIZE``, PMIx launchers ``PMIX_SIZE``. Reading them costs
nothing and needs no MPI library, so ``fit`` and the CLI can ask
:func:`launched_world_size` on every call and import mpi4py only when a job of more
than one process is really running.
"""

from __future__ import annotations

import os
import sys
import time

from nnkit.distributed.communicator import Communicator, LocalCommunicator
from nnkit.distributed.mpi import MPICommunicator, import_mpi
from nnkit.distributed.watchdog import check_timeout

__all__ = ["init", "launched_world_size", "MPI_SIZE_VARS"]

MPI_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE")
BACKENDS = ("auto", "mpi", "local")

_default: Communicator | None = None


def _launch_var() -> tuple[str, int] | None:
    """The first MPI size variable set to an integer, and its value."""
    for var in MPI_SIZE_VARS:
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return var, int(value)
    return None


def launched_world_size() -> int:
    """The number of processes ``mpiexec`` started in this job (1 if not launched by it).

    Returns:
        The process count, an int (1 outside ``mpiexec``).

    Example:
        >>> launched_world_size()   # a plain process; under "mpiexec -n 4 ..." it is 4
        1
    """
    found = _launch_var()
    return 1 if found is None else found[1]


def init(backend: str = "auto", *, timeout: float | None = None) -> Communicator:
    """The communicator of this process, created on the first call and cached.

    Args:
        backend: ``'auto'`` (MPI when launched by ``mpiexec`` with more than one
            process, else a :class:`LocalCommunicator`), ``'mpi'`` (always
            ``MPI.COMM_WORLD``) or ``'local'``.
        timeout: seconds a collective may wait for the other ranks before this rank
            prints which collective hung and aborts the whole job (a rank that is stuck,
            not crashed, would otherwise hang the job forever). None: the communicator
            keeps its timeout; a new MPI one takes the environment variable
            ``NNKIT_DISTRIBUTED_TIMEOUT`` (seconds) if set, else 1800. A number also
            updates the timeout of the communicator an earlier call returned.

    Returns:
        A :class:`Communicator`; later calls with a compatible backend return the same.

    Raises:
        ValueError: for an unknown backend, a ``timeout`` that is not a positive number,
            or an invalid ``NNKIT_DISTRIBUTED_TIMEOUT``.
        RuntimeError: if launched by ``mpiexec`` but mpi4py is missing (the message says
            ``pip install 'nnkit[distributed]'``), or if MPI sees fewer processes than
            ``mpiexec`` started (mpi4py built against another MPI than the launcher's).

    Example:
        >>> comm = nnkit.distributed.init()   # under mpiexec -n 2: (0, 2) and (1, 2)
        >>> comm.rank, comm.world_size
        (0, 1)
    """
    global _default
    if backend not in BACKENDS:
        raise ValueError(f"unknown distributed backend {backend!r}; expected one of {BACKENDS}")
    if timeout is not None:
        timeout = check_timeout(timeout)
    use_mpi = backend == "mpi" or (backend == "auto" and launched_world_size() > 1)
    if _default is None or isinstance(_default, MPICommunicator) != use_mpi:
        _default = _mpi_world(timeout) if use_mpi else LocalCommunicator()
    if timeout is not None and _default.timeout != timeout:
        _default.timeout = timeout
    return _default


def _mpi_world(timeout: float | None = None) -> MPICommunicator:
    found = _launch_var()
    if found is not None:
        var, size = found
        import_mpi(f"this is one of {size} processes started by mpiexec ({var}={size})")
    comm = MPICommunicator(timeout=timeout)
    if found is not None and comm.world_size != found[1]:
        raise RuntimeError(
            f"mpiexec started {found[1]} processes ({found[0]}={found[1]}) but MPI sees "
            f"{comm.world_size}: mpi4py is probably built against another MPI library than "
            "the mpiexec that launched it (use the mpiexec of that MPI, e.g. the one the "
            "'mpich' or 'openmpi' Python package installs next to mpi4py)"
        )
    if comm.world_size > 1:
        _abort_on_uncaught_exceptions(comm)
    return comm


def _abort_on_uncaught_exceptions(comm: MPICommunicator) -> None:
    """An exception that ends one rank ends the job: its traceback is printed (by that
    rank alone, prefixed with its number), then ``MPI_Abort`` stops the others, which
    would otherwise wait for it in their next collective forever (as ``python -m
    mpi4py`` does)."""
    previous = sys.excepthook

    def hook(kind, value, traceback):  # noqa: ANN001
        if issubclass(kind, KeyboardInterrupt):
            previous(kind, value, traceback)
            return
        previous(kind, value, traceback)
        print(
            f"[rank {comm.rank} of {comm.world_size}] {kind.__name__}: {value} -- aborting "
            "the whole job",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(0.2)  # let mpiexec forward the output before it ends every rank
        comm.abort(1)

    sys.excepthook = hook
