"""Turn what ``fit``/``evaluate``/``predict`` receive into batches on the model's device.

``x`` may be NumPy arrays (or anything ``np.asarray`` takes), nnkit Tensors, a
:class:`~nnkit.data.Dataset` or a :class:`~nnkit.data.DataLoader` (any re-iterable of
batches). Arrays and Datasets are wrapped in a DataLoader here, so the training loop
only ever sees loaders; a batch is ``(x, y)``, ``(x,)`` or a bare ``x``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

import nnkit
from nnkit.autograd.tensor import Tensor
from nnkit.data import DataLoader, Dataset, IterableDataset, TensorDataset

__all__ = ["make_loader", "split_validation", "unpack_batch", "batch_size_of", "to_device",
           "EpochIterator"]


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, Tensor, list, np.generic, int, float))


def _num_samples(x: Any) -> int:
    return int(x.shape[0]) if hasattr(x, "shape") and len(x.shape) else len(x)


def _as_array(x: Any, name: str) -> Any:
    if isinstance(x, Tensor):
        return x.detach()
    array = np.asarray(x)
    if array.ndim == 0:
        raise ValueError(f"{name} must have a batch dimension; got a scalar")
    return array


def make_loader(x: Any, y: Any = None, *, batch_size: int = 32, shuffle: bool = False,
                seed: int | None = None, caller: str = "fit") -> Iterable:
    """Wrap ``x`` (and ``y``) as an iterable of batches.

    Args:
        x: arrays/Tensors, a Dataset, or a DataLoader (any re-iterable of batches).
        y: targets aligned with array ``x``; must be None for a Dataset or DataLoader.
        batch_size: samples per batch when this function builds the loader.
        shuffle: shuffle each epoch (arrays and Datasets only).
        seed: the shuffling seed of a loader built here (None: drawn from nnkit's
            global generator when shuffling, 0 otherwise).
        caller: the public method, for error messages.

    Returns:
        ``x`` itself if it is already a loader, else a new :class:`DataLoader`.

    Raises:
        ValueError: if ``x`` is None, ``y`` is given with a Dataset/DataLoader, or ``x``
            and ``y`` have different lengths.
    """
    if x is None:
        raise ValueError(f"{caller}: x is required (arrays, Tensors, a Dataset or a DataLoader)")
    if seed is None and not shuffle:
        # an ordered loader needs no drawn seed: drawing one would move nnkit's global
        # random stream (dropout), so that a validation pass or an evaluate() between
        # epochs changed the training that follows
        seed = 0
    if not _is_array(x):
        if y is not None:
            raise ValueError(f"{caller}: y must be None when x is a {type(x).__name__}; the "
                             "targets come from x's batches (x, y)")
        if isinstance(x, (Dataset, IterableDataset)):
            return DataLoader(x, batch_size=batch_size,
                              shuffle=shuffle and not isinstance(x, IterableDataset), seed=seed)
        if not isinstance(x, Iterable):
            raise TypeError(f"{caller}: x must be arrays, Tensors, a Dataset or a DataLoader; "
                            f"got {type(x).__name__}")
        return x
    arrays = [_as_array(x, "x")] + ([] if y is None else [_as_array(y, "y")])
    if y is not None and _num_samples(arrays[0]) != _num_samples(arrays[1]):
        raise ValueError(f"{caller}: x and y have different lengths: x has "
                         f"{_num_samples(arrays[0])} samples, y has {_num_samples(arrays[1])}")
    return DataLoader(TensorDataset(*arrays), batch_size=batch_size, shuffle=shuffle, seed=seed)


def split_validation(x: Any, y: Any, validation_split: float) -> tuple[Any, Any, Any, Any]:
    """Keras's ``validation_split``: the *last* fraction of the samples, before shuffling.

    Args:
        x: arrays or Tensors.
        y: targets aligned with ``x`` (or None).
        validation_split: the fraction in ``(0, 1)`` held out for validation.

    Returns:
        ``(x_train, y_train, x_val, y_val)``.

    Raises:
        ValueError: if the fraction is outside ``[0, 1)``, ``x`` is a Dataset or a
            DataLoader, or a part would be empty.
    """
    if not 0.0 <= validation_split < 1.0:
        raise ValueError(f"validation_split must be in [0, 1); received {validation_split}")
    if not _is_array(x):
        raise ValueError("validation_split is only supported for arrays and Tensors, not a "
                         f"{type(x).__name__}; pass validation_data=... instead")
    x = _as_array(x, "x")
    n = _num_samples(x)
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"validation_split={validation_split} of {n} samples leaves an empty "
                         "training or validation set")
    y = None if y is None else _as_array(y, "y")
    return x[:split_at], _head(y, split_at), x[split_at:], _tail(y, split_at)


def _head(y: Any, k: int) -> Any:
    return None if y is None else y[:k]


def _tail(y: Any, k: int) -> Any:
    return None if y is None else y[k:]


def unpack_batch(batch: Any) -> tuple[Any, Any]:
    """Split a batch into ``(x, y)``; ``y`` is None for ``(x,)`` or a bare ``x``.

    Raises:
        ValueError: for a tuple of more than two parts (sample weights are not supported).
    """
    if isinstance(batch, (tuple, list)):
        if len(batch) == 1:
            return batch[0], None
        if len(batch) == 2:
            return batch[0], batch[1]
        raise ValueError(f"a batch must be (x, y) or (x,); got a {type(batch).__name__} of "
                         f"{len(batch)} parts (sample weights are not supported)")
    return batch, None


def batch_size_of(x: Any) -> int:
    """The first dimension of the first array/Tensor found in ``x`` (1 if none)."""
    if isinstance(x, (tuple, list)) and x:
        return batch_size_of(x[0])
    if isinstance(x, dict) and x:
        return batch_size_of(next(iter(x.values())))
    shape = getattr(x, "shape", ())
    return int(shape[0]) if len(shape) else 1


def to_device(data: Any, device: Any, float_dtype: Any) -> Any:
    """Move a (nested) batch to ``device`` as Tensors; floats become ``float_dtype``.

    Integer and boolean arrays (labels, masks) keep their dtype.
    """
    if isinstance(data, (tuple, list)):
        return type(data)(to_device(d, device, float_dtype) for d in data)
    if isinstance(data, dict):
        return {k: to_device(v, device, float_dtype) for k, v in data.items()}
    if isinstance(data, (np.ndarray, np.generic)):
        data = nnkit.as_tensor(np.asarray(data))
    if not isinstance(data, Tensor):
        return data
    dtype = float_dtype if data.is_floating_point() else None
    if data.device == device and (dtype is None or data.dtype == dtype):
        return data
    return data.to(device=device, dtype=dtype)


class EpochIterator:
    """Yields ``(step, batch)`` for one epoch at a time from a loader.

    Without ``steps_per_epoch`` an epoch is one pass over the loader. With it, each
    epoch takes that many batches from one persistent iterator that restarts the
    loader when it runs out (Keras semantics), so no batch is skipped.

    Args:
        loader: a re-iterable of batches.
        steps_per_epoch: batches per epoch, or None for one full pass.
    """

    def __init__(self, loader: Iterable, steps_per_epoch: int | None = None) -> None:
        if steps_per_epoch is not None and steps_per_epoch < 1:
            raise ValueError(f"steps_per_epoch must be a positive integer; received "
                             f"{steps_per_epoch}")
        self.loader, self.steps_per_epoch = loader, steps_per_epoch
        self._iterator: Iterator | None = None

    @property
    def num_steps(self) -> int | None:
        """Batches per epoch, or None if the loader has no length."""
        if self.steps_per_epoch is not None:
            return self.steps_per_epoch
        try:
            return len(self.loader)
        except TypeError:
            return None

    def reset(self) -> None:
        """Forget the open iterator: the next batch comes from a new ``iter(loader)``
        (after the loader's position was restored)."""
        self._iterator = None

    def epoch(self, start: int = 0) -> Iterator[tuple[int, Any]]:
        """The batches of the next epoch, numbered from ``start``.

        Args:
            start: the number of the first step (a resumed epoch starts where its
                restored loader stands, after ``start`` batches).
        """
        if self.steps_per_epoch is None:
            if start and self.num_steps is not None and start >= self.num_steps:
                return  # resumed after the epoch's last step (the loader points past it)
            yield from enumerate(self.loader, start)
            return
        for step in range(start, self.steps_per_epoch):
            batch = self._next_batch()
            if batch is None:
                return
            yield step, batch

    def _next_batch(self) -> Any:
        for _ in range(2):  # at most one restart: an empty loader ends the epoch
            if self._iterator is None:
                self._iterator = iter(self.loader)
            try:
                return next(self._iterator)
            except StopIteration:
                self._iterator = None
        return None

    def peek(self) -> Any:
        """The first batch of the loader, without moving a DataLoader's position."""
        state = self.loader.state_dict() if isinstance(self.loader, DataLoader) else None
        iterator = iter(self.loader)
        try:
            return next(iterator)
        finally:
            if hasattr(iterator, "close"):
                iterator.close()
            if state is not None:
                self.loader.load_state_dict(state)
