"""What ``fit`` does differently when it runs data-parallel over several ranks.

``Model.fit`` stays one loop; when it runs on a group of more than one rank (under
``mpiexec``, or given ``distributed=comm``) it asks a :class:`DistributedFit` to:

* shard the training data: each rank iterates its part of every *global* batch
  through a :class:`~nnkit.data.DistributedBatchSampler` (``batch_size`` is the global
  batch, Keras's convention; each rank takes ``batch_size / world_size`` samples), with
  the seed of rank 0, so the union of the ranks' batches is exactly the batch a
  single process would draw with the same seed, for any dataset size: nothing is
  padded or repeated, and a short last batch leaves some ranks fewer samples or none;
* start every rank from rank 0's weights and average gradients after each backward
  (:class:`~nnkit.distributed.GradientSync`), each rank's weighted by its number of
  samples in the batch, so the step is one process's step on the whole batch;
* average the epoch's logs over all samples of all ranks, and make the ranks agree on
  ``stop_training``, so that callbacks (EarlyStopping, ReduceLROnPlateau, ...) take the
  same decisions everywhere;
* keep progress bars and callbacks marked ``rank_zero_only`` (checkpoints, CSV logs)
  on rank 0.

Validation data is evaluated whole on every rank (the replicas are identical, so
they agree without communicating).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from nnkit.autograd.factories import tensor
from nnkit.backends.dtypes import int64
from nnkit.data import (
    DataLoader,
    DistributedBatchSampler,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
)
from nnkit.distributed import (
    Communicator,
    GradientSync,
    broadcast_module,
    init,
    launched_world_size,
)
from nnkit.distributed.sync_batchnorm import fit_group
from nnkit.training.metrics import MeanTracker

__all__ = ["DistributedFit", "resolve_communicator"]


def resolve_communicator(distributed: Any) -> Communicator | None:
    """The group ``fit`` trains over, or None to train as a single process.

    Args:
        distributed: None (use MPI when ``mpiexec`` launched more than one process),
            False (never), True (:func:`nnkit.distributed.init`, required) or a
            :class:`~nnkit.distributed.Communicator`.

    Returns:
        The :class:`~nnkit.distributed.Communicator`, or None.

    Raises:
        TypeError: for another value.
        RuntimeError: from :func:`nnkit.distributed.init` (e.g. mpi4py missing).
    """
    if distributed is None:
        distributed = launched_world_size() > 1
    if distributed is False:
        return None
    if distributed is True:
        distributed = init()
    if not isinstance(distributed, Communicator):
        raise TypeError(
            "fit: distributed must be None, a bool or an "
            f"nnkit.distributed.Communicator; received {type(distributed).__name__}"
        )
    return distributed if distributed.world_size > 1 else None


class DistributedFit:
    """One rank's share of a data-parallel ``fit``.

    Args:
        comm: the group (``world_size > 1``).
    """

    def __init__(self, comm: Communicator) -> None:
        self.comm = comm
        self._sync: GradientSync | None = None

    @property
    def is_chief(self) -> bool:
        """True on rank 0."""
        return self.comm.is_chief

    @property
    def size(self) -> int:
        """The number of processes."""
        return self.comm.world_size

    # ------------------------------------------------------------------ data
    def shard(self, loader: Iterable) -> Iterable:
        """This rank's loader over its shard of ``loader``'s batches.

        A :class:`DataLoader` over a map-style dataset, in order or shuffled by a
        :class:`RandomSampler`, is rebuilt with a :class:`DistributedBatchSampler`: the
        global batches of one process with rank 0's seed, each split across the ranks
        (``batch_size / world_size`` samples each; nothing repeated, so a last batch
        may leave a rank fewer or none). One that already has a DistributedSampler or
        DistributedBatchSampler, one over an IterableDataset, or any other iterable is
        taken to yield this rank's batches already and is returned as is.

        Args:
            loader: the loader of the whole data (a DataLoader, or any iterable of batches).

        Returns:
            The loader this rank iterates.

        Raises:
            ValueError: if the batch size is not divisible by the world size, or the
                loader has another sampler or a batch sampler.
        """
        if (
            not isinstance(loader, DataLoader)
            or isinstance(loader.dataset, IterableDataset)
            or isinstance(loader.sampler, DistributedSampler)
            or isinstance(loader.batch_sampler, DistributedBatchSampler)
        ):
            return loader
        shuffle, seed = self._order(loader)
        world = self.comm.world_size
        if loader.batch_size % world:
            raise ValueError(
                f"fit: batch_size={loader.batch_size} is the global batch and "
                f"must be divisible by the {world} processes"
            )
        order = (
            RandomSampler(loader.dataset, seed=seed)
            if shuffle
            else SequentialSampler(loader.dataset)
        )
        shares = DistributedBatchSampler(
            order, loader.batch_size, loader.drop_last, world, self.comm.rank
        )
        return DataLoader(
            loader.dataset,
            batch_sampler=shares,
            collate_fn=loader.collate_fn,
            seed=seed,
            num_workers=loader.num_workers,
            prefetch=loader.prefetch,
        )

    def _order(self, loader: DataLoader) -> tuple[bool, int]:
        """Whether ``loader`` shuffles, and the seed of rank 0's order."""
        sampler = loader.sampler
        if isinstance(sampler, SequentialSampler):
            return False, self._agree(loader.seed)
        if (
            type(sampler) is RandomSampler
            and not sampler.replacement
            and sampler.num_samples == len(loader.dataset)
        ):
            return True, self._agree(sampler.seed)
        raise ValueError(
            "fit: cannot shard a DataLoader with a "
            f"{type(sampler or loader.batch_sampler).__name__} across processes; "
            "give it a nnkit.data.DistributedSampler instead"
        )

    def _agree(self, seed: int) -> int:
        """Rank 0's ``seed``, on every rank."""
        value = tensor([int(seed)], dtype=int64)
        return int(self.comm.broadcast_(value).item())

    # --------------------------------------------------------------- replicas
    @contextlib.contextmanager
    def replicated(self, model: Any) -> Iterator[None]:
        """Broadcast rank 0's weights, then average gradients (and make this group the
        one of the model's SyncBatchNorm layers) until the block ends.

        Args:
            model: the model trained.
        """
        broadcast_module(model, self.comm)
        self._sync = GradientSync(model.parameters(), self.comm)
        try:
            with fit_group(model, self.comm, lambda: getattr(self._sync, "weight", None)):
                yield
        finally:
            self._sync.remove()
            self._sync = None

    def set_batch_size(self, n: int) -> None:
        """This rank's share of the coming global batch has ``n`` samples (maybe 0): its
        gradient is weighted by ``n`` in the average, as one process's mean over the
        whole batch would weight it.

        Args:
            n: this rank's number of samples in the batch.
        """
        if self._sync is not None:
            self._sync.weight = n

    def broadcast_buffers(self, model: Any) -> None:
        """Give every rank rank 0's buffers (e.g. BatchNorm's running statistics).

        Args:
            model: the model.
        """
        for buffer in model.buffers():
            self.comm.broadcast_(buffer)

    # ------------------------------------------------------------ logs, stop
    def reduce(self, tracker: MeanTracker, metrics: list) -> None:
        """Make the epoch's running sums and the stateful metrics' states those of every
        rank's samples (in place, on every rank).

        Args:
            tracker: the epoch's running means.
            metrics: the stateful metrics.
        """
        tracker.allreduce(self.comm)
        for metric in metrics:
            metric.allreduce(self.comm)

    def any(self, flag: bool) -> bool:
        """True on every rank if ``flag`` is True on some rank.

        Args:
            flag: this rank's flag.

        Returns:
            The flag of the group.
        """
        return self.comm.allreduce_scalar(float(bool(flag)), op="max") > 0

    def max_int(self, value: int) -> int:
        """The largest of every rank's ``value`` (a small non-negative integer).

        Args:
            value: this rank's value.

        Returns:
            The maximum over the ranks.
        """
        return int(self.comm.allreduce_scalar(float(value), op="max"))

    # -------------------------------------------------------------- callbacks
    def callbacks(self, callbacks: Any, verbose: int) -> tuple[Any, int]:
        """The callbacks and verbosity of this rank: rank 0 keeps everything; the others
        drop ``rank_zero_only`` callbacks and the progress bar.

        Args:
            callbacks: the user's callbacks (or None).
            verbose: the requested verbosity.

        Returns:
            ``(callbacks, verbose)`` for this rank.
        """
        if self.is_chief or callbacks is None:
            return callbacks, verbose if self.is_chief else 0
        return [cb for cb in callbacks if not getattr(cb, "rank_zero_only", False)], 0
