"""Multi-process data parallelism: communicators, gradient averaging, launch detection.

Launched as ``mpiexec -n N nnkit train CONFIG.yaml`` (or ``mpiexec -n N python
script.py`` calling ``Model.fit``), every process trains a replica of the model on its
shard of each batch and the gradients are averaged across processes after backward,
so all replicas stay identical. ``pip install 'nnkit[distributed]'`` adds mpi4py; GPU
tensors are reduced with NCCL through CuPy.

Example:
    >>> comm = nnkit.distributed.init()           # MPI under mpiexec, else one process
    >>> model.fit(x, y, batch_size=64)             # automatic under mpiexec
    >>> ddp = nnkit.distributed.DistributedDataParallel(model, comm)   # custom loops
    >>> model = nnkit.distributed.SyncBatchNorm.convert_sync_batchnorm(model)  # global BN
"""

import importlib

from nnkit.distributed.communicator import Communicator, LocalCommunicator
from nnkit.distributed.gradient_sync import GradientSync, broadcast_module
from nnkit.distributed.launch import init, launched_world_size
from nnkit.distributed.mpi import MPICommunicator
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


_LAZY = {
    "DistributedDataParallel": "nnkit.distributed.data_parallel",
    "SyncBatchNorm": "nnkit.distributed.sync_batchnorm",
}


def __getattr__(name: str):
    # DistributedDataParallel and SyncBatchNorm are Modules, and nnkit.layers imports
    # fit, which imports this package: load them on first use to keep the import graph
    # acyclic.
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nnkit.distributed' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
