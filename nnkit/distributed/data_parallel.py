"""``DistributedDataParallel``: a Module wrapper that keeps replicas identical (torch DDP).

For a hand-written training loop. ``Model.fit`` does the same by itself when it runs
under ``mpiexec`` (or is given ``distributed=comm``), without a wrapper.
"""

from __future__ import annotations

from typing import Any

from nnkit.distributed.communicator import Communicator
from nnkit.distributed.gradient_sync import GradientSync, broadcast_module
from nnkit.distributed.launch import init
from nnkit.layers.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Wraps a built module: rank 0's weights everywhere, gradients averaged after backward.

    At construction, rank 0's parameters and buffers are broadcast to every rank; from
    then on each ``backward`` through the wrapped module ends with every parameter's
    ``.grad`` replaced by its mean over the ranks (see
    :class:`~nnkit.distributed.GradientSync`), so identical optimizers keep the
    replicas identical. Give each rank its own shard of the data
    (:class:`~nnkit.data.DistributedSampler`). The state dict has the wrapped
    module's keys prefixed with ``module.``, as in PyTorch.

    Args:
        module: the replica of this rank, already built (lazy layers called once).
        comm: the group; None for :func:`nnkit.distributed.init`'s.
        broadcast: copy rank 0's weights at construction (turn off only when every
            rank already holds the same weights).

    Raises:
        NotBuiltError: if a lazily built layer of ``module`` has not been called yet.

    Example:
        >>> from nnkit.distributed import ThreadGroup
        >>> def train_step(comm):              # two ranks, as threads of one process
        ...     ddp = DistributedDataParallel(nn.Linear(2, 1), comm)
        ...     optimizer = nnkit.optim.SGD(ddp.parameters(), lr=0.1)
        ...     x_shard = nnkit.full((1, 2), float(comm.rank + 1))
        ...     optimizer.zero_grad()
        ...     ddp(x_shard).sum().backward()   # .grad: the mean over the ranks
        ...     optimizer.step()                # the same step on every rank
        ...     return ddp.module.weight.grad, ddp.module.weight
        >>> (g0, w0), (g1, w1) = ThreadGroup(2).run(train_step)
        >>> g0, nnkit.equal(w0, w1)
        (tensor([[1.5000, 1.5000]]), True)
    """

    def __init__(
        self, module: Module, comm: Communicator | None = None, *, broadcast: bool = True
    ) -> None:
        super().__init__()
        if comm is None:
            comm = init()
        self.module = module
        self.comm = comm
        if broadcast:
            broadcast_module(module, comm)
        self._sync = GradientSync(module.parameters(), comm)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped module's forward."""
        return self.module(*args, **kwargs)

    def no_sync(self) -> Any:
        """Accumulate gradients locally in the backwards inside (see ``GradientSync``).

        Returns:
            A context manager.
        """
        return self._sync.no_sync()

    def sync_gradients(self) -> None:
        """Average the gradients now; every rank must call it at the same point."""
        self._sync.sync()

    def detach_hooks(self) -> None:
        """Stop averaging gradients (the wrapped module keeps its weights)."""
        self._sync.remove()

    def extra_repr(self) -> str:
        return f"rank={self.comm.rank}, world_size={self.comm.world_size}"
