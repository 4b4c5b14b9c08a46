"""``GradientSync``: average gradients across ranks as soon as backward has made them.

Data parallelism keeps one replica of the model per rank; each rank runs forward and
backward on its own shard of the batch, then every gradient is replaced by its mean
over the ranks, so each rank's optimizer takes the same step from the same weights.
With a loss that is a mean over equally sized shards, the averaged gradient *is* the
gradient of the whole batch.

The averaging is driven by ``register_post_accumulate_grad_hook``: the engine calls a
parameter's hook once per backward, after the gradient of that backward is added to
``.grad``. When the hooks of all parameters have fired, the gradients are final; they
are then flattened into one bucket per (device, dtype) and all-reduced together in
parameter order (one collective per backward, issued in the same order on every rank,
whatever order the engine visited the leaves in). Averaging after every backward is
also right under gradient accumulation: what earlier backwards accumulated is already
the same on every rank, and the mean of equal values is that value.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from nnkit.autograd.factories import ones, zeros
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops import cat
from nnkit.autograd.tensor import Tensor
from nnkit.distributed.communicator import Communicator

__all__ = ["GradientSync", "broadcast_module"]


def broadcast_module(module: Any, comm: Communicator, root: int = 0) -> None:
    """Copy rank ``root``'s parameters and buffers into every rank's ``module``.

    Args:
        module: a built :class:`~nnkit.nn.Module`, the same architecture on every rank.
        comm: the group.
        root: the rank whose values win.

    Raises:
        NotBuiltError: if a lazily built layer has not been called yet.
    """
    for tensor in [*module.parameters(), *module.buffers()]:
        comm.broadcast_(tensor, root)


def _unique(parameters: Iterable[Tensor]) -> list[Tensor]:
    seen: set[int] = set()
    unique = []
    for p in parameters:
        if p.requires_grad and id(p) not in seen:  # tied weights are reduced once
            seen.add(id(p))
            unique.append(p)
    return unique


class GradientSync:
    """Averages the gradients of ``parameters`` over ``comm`` after each backward.

    Args:
        parameters: the parameters of this rank's replica (those not requiring grad
            are ignored).
        comm: the group; with ``world_size == 1`` nothing is communicated.

    Note:
        Every parameter must receive a gradient in each backward on every rank (as
        with torch DDP's default). If some may not (a branch skipped on one rank),
        wrap the backward in :meth:`no_sync` and call :meth:`sync` yourself.

    Example:
        >>> from nnkit.distributed import ThreadGroup
        >>> def backward(comm):                 # two ranks, as threads of one process
        ...     layer = nn.Linear(2, 1)
        ...     sync = GradientSync(layer.parameters(), comm)
        ...     layer(nnkit.full((1, 2), float(comm.rank + 1))).sum().backward()
        ...     sync.remove()
        ...     return layer.weight.grad        # the mean of [[1, 1]] and [[2, 2]]
        >>> ThreadGroup(2).run(backward)
        [tensor([[1.5000, 1.5000]]), tensor([[1.5000, 1.5000]])]
    """

    def __init__(self, parameters: Iterable[Tensor], comm: Communicator) -> None:
        self.comm = comm
        self.parameters = _unique(parameters)
        #: The number of samples behind this rank's gradient in the coming backward, or
        #: None. With it, the gradients are averaged weighted by the ranks' counts (the
        #: gradient of the mean loss over every rank's samples, when ranks hold unequal
        #: shares of a batch; a rank with 0 samples contributes nothing), else plainly.
        self.weight: float | None = None
        self._ready: set[int] = set()
        self._enabled = True
        self._handles = [
            p.register_post_accumulate_grad_hook(self._hook(i))
            for i, p in enumerate(self.parameters)
        ]

    def _hook(self, index: int) -> Any:
        def on_grad_ready(_: Tensor) -> None:
            self._mark_ready(index)

        return on_grad_ready

    def _mark_ready(self, index: int) -> None:
        if not self._enabled:
            return
        self._ready.add(index)
        if len(self._ready) == len(self.parameters):
            self.sync()

    def sync(self) -> None:
        """Average every gradient over the ranks now (a missing ``.grad`` counts as zeros).

        Every rank must call it at the same point.
        """
        self._ready.clear()
        if self.comm.world_size == 1:
            return
        with no_grad():
            for indices in self._buckets().values():
                self._sync_bucket([self.parameters[i] for i in indices])

    def _buckets(self) -> dict[tuple[str, str], list[int]]:
        buckets: dict[tuple[str, str], list[int]] = {}
        for i, p in enumerate(self.parameters):
            buckets.setdefault((str(p.device), str(p.dtype)), []).append(i)
        return buckets

    def _sync_bucket(self, params: list[Tensor]) -> None:
        if self.weight is None:
            flat = cat([_flat_grad(p) for p in params])
            self.comm.allreduce_(flat, op="mean")
        else:  # sum of (count x mean gradient) and of the counts, in one collective
            one = ones(1, dtype=params[0].dtype, device=params[0].device)
            flat = cat([*(_flat_grad(p) for p in params), one])
            if self.weight:
                flat.mul_(float(self.weight))
            else:  # an empty share: its gradient is a mean of nothing (NaN or zeros)
                flat.zero_()
            self.comm.allreduce_(flat, op="sum")
            flat = flat[:-1].div_(flat[-1:].clamp(min=1.0))
        offset = 0
        for p in params:
            n = p.numel()
            mean = flat[offset : offset + n].reshape(p.shape)
            offset += n
            if p.grad is None:
                p.grad = mean.clone()
            else:
                p.grad.copy_(mean)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Skip averaging in the backwards run inside; the next synced one averages the sum.

        Example:
            >>> from nnkit.distributed import ThreadGroup
            >>> def accumulate(comm):
            ...     layer = nn.Linear(2, 1)
            ...     sync = GradientSync(layer.parameters(), comm)
            ...     x = nnkit.full((1, 2), float(comm.rank + 1))
            ...     with sync.no_sync():
            ...         layer(x).sum().backward()   # accumulate locally
            ...     layer(x).sum().backward()       # averages the accumulated gradient
            ...     return layer.weight.grad.tolist()
            >>> ThreadGroup(2).run(accumulate)      # mean of [[2, 2]] and [[4, 4]]
            [[[3.0, 3.0]], [[3.0, 3.0]]]
        """
        previous, self._enabled = self._enabled, False
        try:
            yield
        finally:
            self._enabled = previous
            self._ready.clear()

    def remove(self) -> None:
        """Remove the hooks: backward no longer communicates."""
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _flat_grad(p: Tensor) -> Tensor:
    if p.grad is None:
        return zeros(p.numel(), dtype=p.dtype, device=p.device)
    return p.grad.detach().reshape(-1)
