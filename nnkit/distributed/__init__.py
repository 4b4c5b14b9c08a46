"""Multi-process data parallelism: communicators, gradient averaging, launch detection.

Launched as ``mpiexec -n N nnkit train CONFIG.yaml`` (or ``mpiexec -n N python
script.py`` calling ``Model.fit``), every process trains a replica of the model on its
shard of each batch and the gradients are averaged across processes after backward,
so all replicas stay identical. ``pip install 'nnkit[distributed]'`` adds mpi4py; GPU
tensors are reduced with NCCL through CuPy.

Under ``mpiexec``, ``Model.fit`` is data parallel by itself; in one process,
:func:`init` returns the group of that process alone. A :class:`ThreadGroup` runs N
ranks as N threads of one process, which is how the examples below (and the tests)
show several ranks without ``mpiexec``:

Example:
    >>> comm = nnkit.distributed.init()          # MPI under mpiexec, else one process
    >>> comm
    LocalCommunicator(rank=0, world_size=1)
    >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
    >>> def train(comm):                          # what each of 2 processes would run
    ...     model = nnkit.Sequential(nn.Linear(4, 2))
    ...     model.compile(optimizer="sgd", loss="mse")
    ...     model.fit(x, y, batch_size=8, epochs=2, verbose=0, distributed=comm)
    ...     return model[0].weight
    >>> w0, w1 = nnkit.distributed.ThreadGroup(2).run(train)
    >>> nnkit.equal(w0, w1)                       # the replicas stay identical
    True
"""

from nnkit.distributed.communicator import Communicator, LocalCommunicator
from nnkit.distributed.data_parallel import DistributedDataParallel
from nnkit.distributed.gradient_sync import GradientSync, broadcast_module
from nnkit.distributed.launch import init, launched_world_size
from nnkit.distributed.mpi import MPICommunicator
from nnkit.distributed.sync_batchnorm import SyncBatchNorm
from nnkit.distributed.thread_group import ThreadCommunicator, ThreadGroup

__all__ = [
    "Communicator",
    "LocalCommunicator",
    "MPICommunicator",
    "ThreadGroup",
    "ThreadCommunicator",
    "DistributedDataParallel",
    "SyncBatchNorm",
    "GradientSync",
    "broadcast_module",
    "init",
    "launched_world_size",
]
