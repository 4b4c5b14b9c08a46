"""DataLoader: batches, shuffling, background loading and resumable epochs."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from nnkit.data.collate import default_collate, empty_like_batch
from nnkit.data.dataset import Dataset, IterableDataset, draw_seed
from nnkit.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from nnkit.data.worker import (
    WorkerInfo,
    current_worker_id,
    iter_background,
    iter_threaded,
    loading_context,
)

__all__ = ["DataLoader"]


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive integer" if minimum == 1 else "a non-negative integer"
        raise ValueError(f"DataLoader: {name} must be {kind}, got {value!r}")


class DataLoader:
    """Iterates a dataset in batches, optionally shuffled and loaded in background threads.

    Each ``iter(loader)`` is a new epoch. Shuffling is a pure function of the
    loader's ``seed`` and the epoch number, so equal seeds give equal batches and
    every epoch has a different order. With ``num_workers > 0``, batches are loaded
    by worker threads, at most ``prefetch`` batches per worker ahead of the consumer,
    and arrive in exactly the order (and with exactly the random draws, see
    :func:`~nnkit.data.sample_rng`) of ``num_workers=0``. :meth:`state_dict` records
    the epoch, the position in it and the seed, so a restored loader yields exactly
    the batches that remained.

    Datasets defining ``__getitems__(indices)`` (like :class:`TensorDataset`) are
    fetched one batch per call; others sample by sample.

    Args:
        dataset: a map-style :class:`Dataset` (anything with ``__len__`` and
            ``__getitem__``) or an :class:`IterableDataset`.
        batch_size: samples per batch.
        shuffle: visit the samples in a new random order each epoch.
        sampler: a custom sampler (excludes ``shuffle``). Samplers with
            ``set_epoch`` (e.g. :class:`DistributedSampler`) are told each epoch.
        batch_sampler: yields whole batches of indices (excludes ``batch_size``,
            ``shuffle``, ``sampler`` and ``drop_last``).
        drop_last: drop the last batch if it is incomplete.
        collate_fn: turns a list of samples into a batch; default
            :func:`default_collate`.
        seed: the seed of shuffling and of :func:`~nnkit.data.sample_rng`; ``None``
            draws one from nnkit's global generator now (``nnkit.manual_seed``
            makes it reproducible).
        num_workers: worker threads; 0 loads in the calling thread.
        prefetch: batches in flight per worker (``num_workers > 0``).

    Raises:
        ValueError: for a non-positive ``batch_size``/``prefetch``, a negative
            ``num_workers``, conflicting options or an empty dataset.

    Example:
        >>> from nnkit.data import TensorDataset
        >>> ds = TensorDataset(np.arange(10.0).reshape(5, 2), np.arange(5))
        >>> loader = DataLoader(ds, batch_size=2, shuffle=True, seed=0)
        >>> [y.tolist() for _, y in loader]   # one epoch; 3 batches, the last of 1
        [[2, 4], [3, 0], [1]]
    """

    def __init__(
        self,
        dataset: Dataset | IterableDataset,
        batch_size: int = 1,
        shuffle: bool = False,
        *,
        sampler: Sampler | None = None,
        batch_sampler: Iterable[Sequence[int]] | None = None,
        drop_last: bool = False,
        collate_fn: Callable[[list], Any] | None = None,
        seed: int | None = None,
        num_workers: int = 0,
        prefetch: int = 2,
    ) -> None:
        _check_int("batch_size", batch_size, 1)
        _check_int("num_workers", num_workers, 0)
        _check_int("prefetch", prefetch, 1)
        self.dataset, self.batch_size, self.drop_last = dataset, int(batch_size), bool(drop_last)
        self.num_workers, self.prefetch = int(num_workers), int(prefetch)
        self.collate_fn = default_collate if collate_fn is None else collate_fn
        self.seed = draw_seed() if seed is None else int(seed)
        self._iterable, self._owns_sampler = isinstance(dataset, IterableDataset), False
        if self._iterable:
            self._check_iterable_options(shuffle, sampler, batch_sampler)
            self.sampler, self.batch_sampler = None, None
        else:
            if len(dataset) == 0:
                raise ValueError(
                    f"DataLoader: dataset is empty ({type(dataset).__name__} has length 0)"
                )
            self._build_samplers(shuffle, sampler, batch_sampler)
        self._epoch, self._position, self._started, self._token = 0, 0, False, None

    def _check_iterable_options(self, shuffle: bool, sampler: Any, batch_sampler: Any) -> None:
        if shuffle or sampler is not None or batch_sampler is not None:
            raise ValueError(
                "DataLoader: shuffle, sampler and batch_sampler do not apply to "
                "an IterableDataset; shuffle inside the dataset instead"
            )

    def _build_samplers(self, shuffle: bool, sampler: Any, batch_sampler: Any) -> None:
        if batch_sampler is not None:
            if self.batch_size != 1 or shuffle or sampler is not None or self.drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler is mutually exclusive with "
                    "batch_size, shuffle, sampler and drop_last"
                )
            self.sampler, self.batch_sampler, self.batch_size = None, batch_sampler, None
            return
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler is mutually exclusive with shuffle")
        self._owns_sampler = sampler is None
        if shuffle:
            sampler = RandomSampler(self.dataset, seed=self.seed)
        elif sampler is None:
            sampler = SequentialSampler(self.dataset)
        self.sampler = sampler
        self.batch_sampler = BatchSampler(sampler, self.batch_size, self.drop_last)

    def __len__(self) -> int:
        """The number of batches in one epoch.

        Raises:
            TypeError: for an :class:`IterableDataset` without ``__len__``.
        """
        if not self._iterable:
            return len(self.batch_sampler)
        if not hasattr(self.dataset, "__len__"):
            raise TypeError("DataLoader: len() needs an IterableDataset with __len__")
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    @property
    def epoch(self) -> int:
        """The epoch the current (or next) iterator covers, counted from 0."""
        return self._epoch

    def __iter__(self) -> Iterator[Any]:
        if self._started:  # the previous epoch was abandoned: start the next one
            self._epoch, self._position = self._epoch + 1, 0
        self._started, self._token = True, object()
        return self._run_epoch(self._epoch, self._position, self._token)

    def _run_epoch(self, epoch: int, start: int, token: object) -> Iterator[Any]:
        batches = self._load(epoch, start)
        try:
            for batch in batches:
                if self._token is token:
                    self._position += 1
                yield batch
        finally:
            batches.close()
        if self._token is token:
            self._epoch, self._position, self._started = epoch + 1, 0, False

    def _load(self, epoch: int, start: int) -> Iterator[Any]:
        if self._iterable:
            batches = itertools.islice(self._stream(epoch), start, None)
            if self.num_workers == 0:
                return (b for b in batches)
            return iter_background(batches, maxsize=self.num_workers * self.prefetch)
        if hasattr(self.batch_sampler, "set_epoch"):
            self.batch_sampler.set_epoch(epoch)
        tasks = itertools.islice(enumerate(self.batch_sampler), start, None)
        if self.num_workers == 0:
            return (self._fetch(epoch, i, idx) for i, idx in tasks)
        return iter_threaded(
            tasks,
            lambda i, idx: self._fetch_in_worker(epoch, i, idx),
            num_workers=self.num_workers,
            prefetch=self.prefetch,
        )

    def _fetch(self, epoch: int, batch_index: int, indices: Any) -> Any:
        with loading_context(self.seed, epoch):
            return self._fetch_batch(batch_index, indices)

    def _fetch_in_worker(self, epoch: int, batch_index: int, indices: Any) -> Any:
        info = WorkerInfo(current_worker_id(), self.num_workers, self.seed, epoch, self.dataset)
        with loading_context(self.seed, epoch, info):
            return self._fetch_batch(batch_index, indices)

    def _fetch_batch(self, batch_index: int, indices: Any) -> Any:
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size == 0 and len(self.dataset):
            # an empty share of a data-parallel batch: the structure of a real batch
            return empty_like_batch(self._fetch_batch(batch_index, np.zeros(1, np.int64)))
        getitems = getattr(self.dataset, "__getitems__", None)
        try:
            samples = self._samples(indices) if getitems is None else getitems(indices)
        except Exception as exc:
            _add_note(exc, f"(raised while DataLoader loaded batch {batch_index})")
            raise
        try:
            return self.collate_fn(samples)
        except (TypeError, ValueError) as exc:  # name the batch in the message itself
            shown = indices.tolist()[:16]
            more = ", ..." if len(indices) > 16 else ""
            raise type(exc)(
                f"{exc} (collating batch {batch_index}, dataset indices {str(shown)[:-1]}{more}])"
            ) from exc
        except Exception as exc:
            _add_note(exc, f"(raised while DataLoader collated batch {batch_index})")
            raise

    def _samples(self, indices: np.ndarray) -> list:
        samples = []
        for i in indices.tolist():
            try:
                samples.append(self.dataset[i])
            except Exception as exc:
                _add_note(exc, f"(raised by dataset[{i}])")
                raise
        return samples

    def _stream(self, epoch: int) -> Iterator[Any]:
        """Batches of an IterableDataset, collated in the thread that iterates it."""
        # One thread drains the stream, so a dataset sharding by worker must see one worker.
        worker = WorkerInfo(0, 1, self.seed, epoch, self.dataset)
        worker = worker if self.num_workers else None
        # the context is set around each pull from the dataset, never across a yield: a
        # generator abandoned mid-epoch is finalised later, maybe in another thread,
        # where restoring its context would clobber that thread's
        with loading_context(self.seed, epoch, worker):
            samples = iter(self.dataset)
        while True:
            with loading_context(self.seed, epoch, worker):
                chunk = list(itertools.islice(samples, self.batch_size))
                if not chunk or (len(chunk) < self.batch_size and self.drop_last):
                    return
                batch = self.collate_fn(chunk)
            yield batch

    def state_dict(self) -> dict:
        """The loader's position, for checkpoints.

        Returns:
            ``{"epoch": int, "position": int, "seed": int}`` (plus ``"sampler"`` and
            ``"batch_sampler"`` when they have a non-empty ``state_dict``): the epoch
            in progress, the number of its batches already yielded, and the seed. At
            the end of an epoch it points at the start of the next one.

        Example:
            >>> from nnkit.data import TensorDataset
            >>> loader = DataLoader(TensorDataset(np.arange(6)), batch_size=2)
            >>> it = iter(loader); _ = next(it)
            >>> loader.state_dict()["position"]
            1
        """
        epoch, position = self._epoch, self._position
        if not self._iterable and position >= _length(self):
            epoch, position = epoch + 1, 0
        state = {"epoch": epoch, "position": position, "seed": self.seed}
        if hasattr(self.sampler, "state_dict"):
            state["sampler"] = self.sampler.state_dict()
        if hasattr(self.batch_sampler, "state_dict") and self.batch_sampler.state_dict():
            state["batch_sampler"] = self.batch_sampler.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict`: the next ``iter(loader)`` resumes there.

        Args:
            state: a dict returned by :meth:`state_dict`.

        Raises:
            KeyError: if a key is missing.
            ValueError: if the position lies outside the epoch.
        """
        missing = [k for k in ("epoch", "position", "seed") if k not in state]
        if missing:
            raise KeyError(f"DataLoader.load_state_dict: missing keys {missing}")
        epoch, position = int(state["epoch"]), int(state["position"])
        limit = float("inf") if self._iterable else _length(self)
        if epoch < 0 or not 0 <= position <= limit:
            raise ValueError(
                f"DataLoader.load_state_dict: invalid epoch {epoch} / position "
                f"{position} (an epoch has {limit} batches)"
            )
        self.seed = int(state["seed"])
        if "sampler" in state and hasattr(self.sampler, "load_state_dict"):
            self.sampler.load_state_dict(state["sampler"])
        elif self._owns_sampler and isinstance(self.sampler, RandomSampler):
            self.sampler.seed = self.seed
        if "batch_sampler" in state and hasattr(self.batch_sampler, "load_state_dict"):
            self.batch_sampler.load_state_dict(state["batch_sampler"])
        self._epoch, self._position, self._started, self._token = epoch, position, False, None

    def __repr__(self) -> str:
        return (
            f"DataLoader(dataset={type(self.dataset).__name__}, "
            f"batch_size={self.batch_size}, drop_last={self.drop_last}, "
            f"num_workers={self.num_workers}, seed={self.seed})"
        )


def _length(loader: DataLoader) -> float:
    try:
        return len(loader)
    except TypeError:  # a batch_sampler without __len__
        return float("inf")


def _add_note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(note)
