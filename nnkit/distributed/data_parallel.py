"""``DistributedDataParallel``: a Module wrapper that keeps replicas identical (torch DDP).

For a hand-written training loop. ``Model.fit`` does the same by itself when it runs
under ``mpiexec`` (or is given ``distributed=comm``), without a wrapper.
"""

from __future__ import annotations

from typing import Any

from nnkit.distributed.communicator import Communicator
from nnkit.distributed.gradient_sync import GradientSync, broadcast_module
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
        >>> comm = nnkit.distributed.init()
        >>> ddp = DistributedDataParallel(model, comm)
        >>> optimizer = nnkit.optim.SGD(ddp.parameters(), lr=0.1)
        >>> loss = loss_fn(ddp(x_shard), y_shard); optimizer.zero_grad(); loss.backward()
        >>> optimizer.step()                 # the same step on every rank
    """

    def __init__(
        self, module: Module, comm: Communicator | None = None, *, broadcast: bool = True
    ) -> None:
        super().__init__()
        if comm is None:
            from nnkit.distributed.launch import init

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
        """Accumulate gradients locally in the backwards inside (see ``GradientSync``)."""
        return self._sync.no_sync()

    def sync_gradients(self) -> None:
        """Average the gradients now; every rank must call it at the same point."""
        self._sync.sync()

    def detach_hooks(self) -> None:
        """Stop averaging gradients (the wrapped module keeps its weights)."""
        self._sync.remove()

    def extra_repr(self) -> str:
        return f"rank={self.comm.rank}, world_size={self.comm.world_size}"
