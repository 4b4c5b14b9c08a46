"""Samplers: the order in which a map-style dataset is visited.

Every sampler here is a pure function of ``(seed, epoch)``: iterating twice within
an epoch gives the same order, and :meth:`set_epoch` selects another one.
:class:`~nnkit.data.DataLoader` calls ``set_epoch`` before each epoch, so shuffling
changes between epochs and a resumed loader reproduces the order exactly.

Samplers also offer ``indices()``, the whole epoch as one ``int64`` array, which
:class:`BatchSampler` slices instead of iterating sample by sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sized

import numpy as np

from nnkit.data.dataset import draw_seed

__all__ = [
    "BatchSampler",
    "DistributedBatchSampler",
    "DistributedSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "epoch_rng",
]


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """The generator that shuffles epoch ``epoch`` of a sampler seeded with ``seed``.

    Args:
        seed: the sampler's (or loader's) seed.
        epoch: the epoch number; it is mixed into the seed, so epochs differ.

    Returns:
        A fresh ``numpy.random.Generator``.

    Example:
        >>> bool((epoch_rng(0, 1).permutation(5) == epoch_rng(0, 1).permutation(5)).all())
        True
    """
    return np.random.default_rng([int(seed), int(epoch)])


class Sampler:
    """Base class: iterating a sampler yields dataset indices.

    Subclasses implement ``__iter__`` (and ``__len__`` where known). Defining
    ``indices()`` (the epoch as one array) and ``set_epoch(epoch)`` is optional.

    Example:
        >>> class Reverse(Sampler):
        ...     def __init__(self, n): self.n = n
        ...     def __iter__(self): return iter(range(self.n - 1, -1, -1))
        ...     def __len__(self): return self.n
        >>> list(Reverse(3))
        [2, 1, 0]
    """

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class _ArraySampler(Sampler):
    """A sampler whose epoch is one index array built by :meth:`indices`."""

    epoch = 0

    def indices(self) -> np.ndarray:
        raise NotImplementedError

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order the next iteration yields.

        Args:
            epoch: a non-negative integer.
        """
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices().tolist())


class SequentialSampler(_ArraySampler):
    """Yields ``0, 1, ..., len(data_source) - 1``.

    Args:
        data_source: the sized dataset to visit.

    Example:
        >>> list(SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __len__(self) -> int:
        return len(self.data_source)

    def indices(self) -> np.ndarray:
        """The epoch's indices as one ``int64`` array.

        Returns:
            ``arange(len(data_source))``.
        """
        return np.arange(len(self.data_source), dtype=np.int64)


class RandomSampler(_ArraySampler):
    """Yields the dataset's indices in a random order that depends on (seed, epoch).

    Args:
        data_source: the sized dataset to visit.
        replacement: draw with replacement (then ``num_samples`` may exceed the size).
        num_samples: how many indices per epoch; defaults to ``len(data_source)``.
        seed: the seed; ``None`` draws one from nnkit's global generator now.

    Raises:
        ValueError: if ``num_samples`` is not positive, or exceeds the dataset's
            size without replacement.

    Example:
        >>> s = RandomSampler(range(4), seed=0)
        >>> sorted(s)
        [0, 1, 2, 3]
    """

    def __init__(
        self,
        data_source: Sized,
        *,
        replacement: bool = False,
        num_samples: int | None = None,
        seed: int | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = bool(replacement)
        self._num_samples = num_samples
        self.seed = draw_seed() if seed is None else int(seed)
        n = self.num_samples
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"RandomSampler: num_samples must be a positive integer, got {n}")
        if not self.replacement and n > len(data_source):
            raise ValueError(
                f"RandomSampler: num_samples={n} exceeds the dataset size "
                f"{len(data_source)}; pass replacement=True"
            )

    @property
    def num_samples(self) -> int:
        """The number of indices one epoch yields."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __len__(self) -> int:
        return self.num_samples

    def indices(self) -> np.ndarray:
        """The epoch's indices as one ``int64`` array.

        Returns:
            A permutation (or, with replacement, ``num_samples`` draws) seeded by
                ``(seed, epoch)``.
        """
        rng, n = epoch_rng(self.seed, self.epoch), len(self.data_source)
        if self.replacement:
            return rng.integers(0, n, size=self.num_samples, dtype=np.int64)
        return rng.permutation(n)[: self.num_samples].astype(np.int64, copy=False)

    def state_dict(self) -> dict:
        """The sampler's seed and epoch (checkpoint protocol)."""
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.seed, self.epoch = int(state["seed"]), int(state["epoch"])


class SubsetRandomSampler(_ArraySampler):
    """Yields the given indices in a random order that depends on (seed, epoch).

    Args:
        indices: the dataset indices to visit.
        seed: the seed; ``None`` draws one from nnkit's global generator now.

    Example:
        >>> sorted(SubsetRandomSampler([5, 7, 9], seed=1))
        [5, 7, 9]
    """

    def __init__(self, indices: Iterable[int], *, seed: int | None = None) -> None:
        self._indices = np.asarray(list(indices), dtype=np.int64)
        self.seed = draw_seed() if seed is None else int(seed)

    def __len__(self) -> int:
        return len(self._indices)

    def indices(self) -> np.ndarray:
        """The epoch's indices as one ``int64`` array.

        Returns:
            The subset's indices in an order seeded by ``(seed, epoch)``.
        """
        return self._indices[epoch_rng(self.seed, self.epoch).permutation(len(self._indices))]


class DistributedSampler(_ArraySampler):
    """Shards a dataset across ``num_replicas`` processes (PyTorch semantics).

    Every rank computes the same (shuffled) order from ``seed + epoch``, pads it by
    repeating indices from its start until it divides evenly (or, with
    ``drop_last``, cuts the tail), and takes every ``num_replicas``-th index from
    position ``rank``. The shards are disjoint except for the padding and together
    cover the dataset; all ranks get the same number of samples.

    Args:
        dataset: the sized dataset to shard.
        num_replicas: the number of processes.
        rank: this process's rank, ``0 <= rank < num_replicas``.
        shuffle: shuffle the order each epoch.
        seed: the seed; it must be the same on every rank.
        drop_last: drop the tail instead of padding.

    Raises:
        ValueError: if ``num_replicas`` or ``rank`` are out of range.

    Example:
        >>> list(DistributedSampler(range(5), 2, 1, shuffle=False))
        [1, 3, 0]
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int,
        rank: int,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(
                f"DistributedSampler: num_replicas must be a positive integer, got {num_replicas}"
            )
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(
                f"DistributedSampler: invalid rank {rank}, rank should be in "
                f"the interval [0, {num_replicas - 1}]"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = bool(shuffle), int(seed), bool(drop_last)
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __len__(self) -> int:
        return self.num_samples

    def indices(self) -> np.ndarray:
        """This rank's indices for the current epoch as one ``int64`` array.

        Returns:
            This rank's share of the (shuffled, padded or dropped to a multiple of the
                ranks) epoch order.
        """
        n = len(self.dataset)
        if self.shuffle:
            order = epoch_rng(self.seed, self.epoch).permutation(n).astype(np.int64)
        else:
            order = np.arange(n, dtype=np.int64)
        if self.total_size > n:
            order = np.resize(order, self.total_size)  # repeats from the start, like torch
        return order[self.rank : self.total_size : self.num_replicas]


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into batches (1-d ``int64`` arrays).

    Unlike PyTorch, batches are NumPy arrays rather than lists; when the sampler
    offers ``indices()`` the epoch is built once and sliced.

    Args:
        sampler: any sampler or iterable of indices.
        batch_size: the number of indices per batch.
        drop_last: drop the final batch if it is smaller than ``batch_size``.

    Raises:
        ValueError: if ``batch_size`` is not a positive integer.

    Example:
        >>> [b.tolist() for b in BatchSampler(SequentialSampler(range(5)), 2, False)]
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(
                f"BatchSampler: batch_size must be a positive integer, got {batch_size!r}"
            )
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, bool(drop_last)

    def set_epoch(self, epoch: int) -> None:
        """Forward ``epoch`` to the wrapped sampler, if it takes one.

        Args:
            epoch: a non-negative integer.
        """
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[np.ndarray]:
        if hasattr(self.sampler, "indices"):
            order = np.asarray(self.sampler.indices(), dtype=np.int64)
        else:
            order = np.fromiter(self.sampler, dtype=np.int64)
        stop = len(order) - len(order) % self.batch_size if self.drop_last else len(order)
        for start in range(0, stop, self.batch_size):
            yield order[start : start + self.batch_size]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return math.ceil(len(self.sampler) / self.batch_size)


class DistributedBatchSampler(BatchSampler):
    """This rank's share of each *global* batch: the same batches as one process, split.

    The global batches are those a :class:`BatchSampler` makes of ``sampler`` on one
    process; rank ``r`` of ``num_replicas`` takes ``batch[r::num_replicas]`` of each.
    Nothing is repeated or dropped (unlike :class:`DistributedSampler`, which pads), so
    the ranks' shares of a step together are exactly one process's batch, and every
    rank takes the same number of steps. A last batch smaller than ``num_replicas``
    leaves some ranks an *empty* share: they still take the step (a data-parallel
    ``fit`` weights every rank's gradient by its number of samples).

    Args:
        sampler: the order of one process (e.g. a :class:`RandomSampler` with the seed
            every rank agrees on); it must give every rank the same order.
        batch_size: the global batch size.
        drop_last: drop the last global batch if it is smaller than ``batch_size``.
        num_replicas: the number of processes.
        rank: this process's rank, ``0 <= rank < num_replicas``.

    Raises:
        ValueError: if ``num_replicas``, ``rank`` or ``batch_size`` are out of range.

    Example:
        >>> shares = DistributedBatchSampler(SequentialSampler(range(5)), 4, False, 2, 1)
        >>> [b.tolist() for b in shares]
        [[1, 3], []]
    """

    def __init__(
        self, sampler: Iterable[int], batch_size: int, drop_last: bool, num_replicas: int, rank: int
    ) -> None:
        super().__init__(sampler, batch_size, drop_last)
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(
                "DistributedBatchSampler: num_replicas must be a positive "
                f"integer, got {num_replicas}"
            )
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(
                f"DistributedBatchSampler: invalid rank {rank}, rank should be in "
                f"the interval [0, {num_replicas - 1}]"
            )
        self.num_replicas, self.rank = num_replicas, rank

    def __iter__(self) -> Iterator[np.ndarray]:
        for batch in super().__iter__():
            yield batch[self.rank :: self.num_replicas]

    def state_dict(self) -> dict:
        """The wrapped sampler's state (its seed and epoch), if it has one."""
        return self.sampler.state_dict() if hasattr(self.sampler, "state_dict") else {}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        if state and hasattr(self.sampler, "load_state_dict"):
            self.sampler.load_state_dict(state)
