"""Dataset classes: the map-style and iterable protocols and their combinators.

A map-style :class:`Dataset` answers ``len(ds)`` and ``ds[i]``; it may also define
``__getitems__(indices)`` to fetch a whole batch at once, which :class:`DataLoader`
then calls instead of indexing sample by sample (the way PyTorch does). An
:class:`IterableDataset` is a stream: it only answers ``iter(ds)``.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from nnkit.autograd.tensor import Tensor
from nnkit.random import default_generator

__all__ = [
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "SampleBatch",
    "Subset",
    "TensorDataset",
    "random_split",
]


class Dataset:
    """Base class of map-style datasets: a sized collection indexed by integers.

    Subclasses implement ``__getitem__(index)`` and ``__len__()``. They may also
    implement ``__getitems__(indices)``, taking a 1-d ``int64`` NumPy array and
    returning the samples for those indices as a sequence (a list, or a
    :class:`SampleBatch` holding already-stacked columns); :class:`DataLoader` then
    fetches each batch with one call.

    Example:
        >>> class Squares(Dataset):
        ...     def __len__(self):
        ...         return 10
        ...     def __getitem__(self, i):
        ...         return np.float32(i * i)
        >>> float(Squares()[3])
        9.0
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset:
    """Base class of stream-style datasets: subclasses implement ``__iter__``.

    :class:`DataLoader` batches the stream in order; samplers and shuffling do not
    apply. Defining ``__len__`` (the number of samples) is optional and lets
    ``len(loader)`` work.

    Example:
        >>> class Count(IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(5))
        >>> list(Count())
        [0, 1, 2, 3, 4]
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SampleBatch(Sequence):
    """The samples of one batch, stored as already-stacked columns.

    ``__getitems__`` of an array dataset returns this: it behaves as the list of
    per-sample tuples (so any ``collate_fn`` can consume it), while the default
    collate function returns :attr:`columns` directly, without re-stacking.

    Args:
        columns: one batched array (or Tensor) per field, all with the same first
            dimension.

    Example:
        >>> b = SampleBatch((np.zeros((2, 3)), np.array([4, 5])))
        >>> len(b), int(b[1][1])
        (2, 5)
    """

    def __init__(self, columns: tuple) -> None:
        self.columns = tuple(columns)

    def __len__(self) -> int:
        return len(self.columns[0])

    def __getitem__(self, i: int) -> tuple:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return tuple(col[i] for col in self.columns)


def _is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


class TensorDataset(Dataset):
    """A dataset of aligned arrays: sample ``i`` is ``(a[i], b[i], ...)``.

    Accepts NumPy arrays (anything ``np.asarray`` takes) and nnkit Tensors, and keeps
    each in the type it came in, so arrays give array batches and Tensors give Tensor
    batches. Batches are gathered by indexing each array with the whole index array
    at once (``__getitems__``), not sample by sample.

    Args:
        *arrays: arrays or Tensors sharing their first dimension.

    Raises:
        ValueError: if no array is given, an array is 0-d, or the first dimensions
            differ.

    Example:
        >>> ds = TensorDataset(np.ones((4, 2)), np.arange(4))
        >>> x, y = ds[3]; x.shape, int(y)
        ((2,), 3)
    """

    def __init__(self, *arrays: Any) -> None:
        if not arrays:
            raise ValueError("TensorDataset: needs at least one array or Tensor")
        self.tensors = tuple(a if _is_tensor(a) else np.asarray(a) for a in arrays)
        sizes = [_first_dim(a, i) for i, a in enumerate(self.tensors)]
        if any(s != sizes[0] for s in sizes):
            detail = ", ".join(f"array {i} has {s}" for i, s in enumerate(sizes))
            raise ValueError(f"TensorDataset: size mismatch in the first dimension ({detail})")

    def __len__(self) -> int:
        return _first_dim(self.tensors[0], 0)

    def __getitem__(self, index: int) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __getitems__(self, indices: np.ndarray) -> SampleBatch:
        return SampleBatch(tuple(_take(t, indices) for t in self.tensors))


def _first_dim(array: Any, position: int) -> int:
    shape = tuple(array.shape)
    if not shape:
        raise ValueError(f"TensorDataset: array {position} is 0-d; it needs a first dimension")
    return shape[0]


def _take(array: Any, indices: np.ndarray) -> Any:
    if isinstance(array, np.ndarray):
        # np.take on axis 0 is the fastest row gather NumPy offers.
        return np.take(array, indices, axis=0)
    return array[indices]


class Subset(Dataset):
    """The samples of ``dataset`` at the given indices, in that order.

    Args:
        dataset: a map-style dataset.
        indices: the indices into ``dataset`` (any 1-d sequence of integers).

    Example:
        >>> sub = Subset(TensorDataset(np.arange(10)), [7, 2])
        >>> len(sub), int(sub[0][0])
        (2, 7)
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[int(self.indices[index])]

    def __getitems__(self, indices: np.ndarray) -> Any:
        mapped = self.indices[np.asarray(indices, dtype=np.int64)]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(mapped)
        return [self.dataset[i] for i in mapped.tolist()]


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other.

    Args:
        datasets: a non-empty sequence of map-style datasets.

    Raises:
        ValueError: if ``datasets`` is empty.
        TypeError: if one of them is an :class:`IterableDataset`.

    Example:
        >>> ds = ConcatDataset([TensorDataset(np.arange(3)), TensorDataset(np.arange(2))])
        >>> len(ds), int(ds[4][0])
        (5, 1)
    """

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: needs at least one dataset")
        for i, ds in enumerate(self.datasets):
            if isinstance(ds, IterableDataset):
                raise TypeError(f"ConcatDataset: dataset {i} is an IterableDataset")
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"ConcatDataset: index out of range for length {len(self)}")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def _split_lengths(lengths: Sequence[float], n: int) -> list[int]:
    """Turn ``lengths`` (counts, or fractions summing to 1) into counts summing to n."""
    if not lengths:
        raise ValueError("random_split: lengths is empty")
    if any(x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative, got {list(lengths)}")
    is_fraction = math.isclose(sum(lengths), 1.0) and sum(lengths) != n
    if is_fraction and all(0 <= x <= 1 for x in lengths):
        counts = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(counts)):  # hand out the remainder round-robin, like torch
            counts[i % len(counts)] += 1
        return counts
    if any(int(x) != x for x in lengths):
        raise ValueError(
            f"random_split: lengths must be integers or fractions summing to 1, got {list(lengths)}"
        )
    counts = [int(x) for x in lengths]
    if sum(counts) != n:
        raise ValueError(
            f"random_split: lengths sum to {sum(counts)} but the dataset has {n} samples"
        )
    return counts


def random_split(
    dataset: Dataset, lengths: Sequence[float], *, seed: int | None = None
) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping :class:`Subset` s.

    Args:
        dataset: a map-style dataset.
        lengths: the size of each part, as counts summing to ``len(dataset)`` or as
            fractions summing to 1 (floors, with the remainder handed out one by one
            from the first part on, as PyTorch does).
        seed: seeds the permutation; ``None`` draws a seed from nnkit's global
            generator (so ``nnkit.manual_seed`` makes it reproducible).

    Returns:
        One :class:`Subset` per entry of ``lengths``.

    Raises:
        ValueError: if the lengths are negative, not integers or fractions, or do
            not add up to the dataset's size.

    Example:
        >>> train, val = random_split(TensorDataset(np.arange(10)), [0.8, 0.2], seed=0)
        >>> len(train), len(val)
        (8, 2)
    """
    n = len(dataset)
    counts = _split_lengths(list(lengths), n)
    if seed is None:
        seed = draw_seed()
    perm = np.random.default_rng(seed).permutation(n)
    bounds = np.cumsum([0] + counts)
    return [Subset(dataset, perm[a:b]) for a, b in itertools.pairwise(bounds)]


def draw_seed() -> int:
    """Draw a fresh 63-bit seed from nnkit's global generator.

    Returns:
        A non-negative Python int.

    Example:
        >>> import nnkit.random
        >>> _ = nnkit.random.manual_seed(0); a = draw_seed()
        >>> _ = nnkit.random.manual_seed(0); a == draw_seed()
        True
    """
    return int(default_generator().integers(0, 2**63 - 1))
