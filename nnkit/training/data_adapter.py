"""Turn what ``fit``/``evaluate``/``predict`` receive into batches on the model's device.

``x`` may be NumPy arrays (or anything ``np.asarray`` takes), nnkit Tensors, a
:class:`~nnkit.data.Dataset` or a :class:`~nnkit.data.DataLoader` (any re-iterable of
batches). Arrays and Datasets are wrapped in a DataLoader here, so the training loop
only ever sees loaders; a batch is ``(x, y)``, ``(x,)`` or a bare ``x``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from nnkit.autograd.factories import as_tensor, tensor
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import float64, int64
from nnkit.data import DataLoader, Dataset, IterableDataset, TensorDataset, default_collate

__all__ = [
    "make_loader",
    "split_validation",
    "unpack_batch",
    "unpack_x_y_sample_weight",
    "batch_size_of",
    "to_device",
    "EpochIterator",
    "resolve_verbose",
    "class_weight_table",
    "with_class_weight",
]

VERBOSITIES = (0, 1, 2, "auto")


def resolve_verbose(verbose: Any, caller: str = "fit") -> int:
    """Keras's ``verbose``: ``'auto'`` is a progress bar (1) when standard output is a
    terminal and one line per epoch (2) otherwise, so a redirected log holds no
    carriage returns.

    Args:
        verbose: 0, 1, 2 or ``'auto'``.
        caller: the method named in the error message.

    Returns:
        0, 1 or 2.

    Raises:
        ValueError: for a value other than 0, 1, 2 or ``'auto'``.
    """
    if verbose == "auto":
        isatty = getattr(sys.stdout, "isatty", None)
        return 1 if isatty is not None and isatty() else 2
    if isinstance(verbose, bool) or verbose not in VERBOSITIES:
        raise ValueError(f"{caller}: verbose must be 0, 1, 2 or 'auto'; received {verbose!r}")
    return int(verbose)


def _is_array(x: Any) -> bool:
    return isinstance(x, (np.ndarray, Tensor, list, np.generic, int, float)) or _is_structure(x)


def _is_structure(x: Any) -> bool:
    """Several arrays: a list/tuple of arrays or Tensors, or a dict of them (the inputs of
    a model with several inputs, the targets of one with several outputs)."""
    if isinstance(x, dict):
        return bool(x) and all(
            isinstance(v, (np.ndarray, Tensor)) or _is_structure(v) for v in x.values()
        )
    if isinstance(x, (list, tuple)):
        return bool(x) and all(isinstance(v, (np.ndarray, Tensor)) or _is_structure(v) for v in x)
    return False


def _leaves(x: Any) -> list:
    if isinstance(x, dict):
        return [leaf for v in x.values() for leaf in _leaves(v)]
    if _is_structure(x):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _pack(template: Any, leaves: Iterator) -> Any:
    if isinstance(template, dict):
        return {k: _pack(v, leaves) for k, v in template.items()}
    if _is_structure(template):
        return type(template)(_pack(v, leaves) for v in template)
    return next(leaves)


def _map(x: Any, fn: Callable[[Any], Any]) -> Any:
    """``x`` (an array or a structure of them, or None) with ``fn`` applied to each array."""
    return None if x is None else _pack(x, iter([fn(leaf) for leaf in _leaves(x)]))


class _Restructure:
    """A collate function that gives a batch the structure of ``fit``'s arguments: a
    list or dict of inputs (targets, weights) as the model takes them."""

    def __init__(self, parts: list) -> None:
        self.parts = parts  # the templates of x, y, w that were given

    def __call__(self, samples: Any) -> tuple:
        columns = iter(default_collate(samples))
        return tuple(_pack(part, columns) for part in self.parts)


def _num_samples(x: Any) -> int:
    return int(x.shape[0]) if hasattr(x, "shape") and len(x.shape) else len(x)


def _as_array(x: Any, name: str) -> Any:
    if isinstance(x, Tensor):
        return x.detach()
    array = np.asarray(x)
    if array.ndim == 0:
        raise ValueError(f"{name} must have a batch dimension; got a scalar")
    return array


def make_loader(
    x: Any,
    y: Any = None,
    sample_weight: Any = None,
    *,
    batch_size: int = 32,
    shuffle: bool = False,
    seed: int | None = None,
    caller: str = "fit",
) -> Iterable:
    """Wrap ``x`` (and ``y``, ``sample_weight``) as an iterable of batches.

    Args:
        x: arrays/Tensors, a Dataset, or a DataLoader (any re-iterable of batches).
        y: targets aligned with array ``x``; must be None for a Dataset or DataLoader.
        sample_weight: one weight per sample of array ``x`` (batches become
            ``(x, y, sample_weight)``); a Dataset or DataLoader gives weights as the
            third element of its items instead.
        batch_size: samples per batch when this function builds the loader.
        shuffle: shuffle each epoch (arrays and Datasets only).
        seed: the shuffling seed of a loader built here (None: drawn from nnkit's
            global generator when shuffling, 0 otherwise).
        caller: the public method, for error messages.

    Returns:
        ``x`` itself if it is already a loader, else a new :class:`DataLoader`.

    Raises:
        ValueError: if ``x`` is None, ``y`` or ``sample_weight`` is given with a
            Dataset/DataLoader, or ``x``, ``y`` and ``sample_weight`` have different lengths.
    """
    if x is None:
        raise ValueError(f"{caller}: x is required (arrays, Tensors, a Dataset or a DataLoader)")
    if seed is None and not shuffle:
        # an ordered loader needs no drawn seed: drawing one would move nnkit's global
        # random stream (dropout), so that a validation pass or an evaluate() between
        # epochs changed the training that follows
        seed = 0
    if not _is_array(x):
        if y is not None or sample_weight is not None:
            what = "y" if y is not None else "sample_weight"
            raise ValueError(
                f"{caller}: {what} must be None when x is a {type(x).__name__}; "
                "the targets (and weights) come from x's batches (x, y[, w])"
            )
        if isinstance(x, (Dataset, IterableDataset)):
            return DataLoader(
                x,
                batch_size=batch_size,
                shuffle=shuffle and not isinstance(x, IterableDataset),
                seed=seed,
            )
        if not isinstance(x, Iterable):
            raise TypeError(
                f"{caller}: x must be arrays, Tensors, a Dataset or a DataLoader; "
                f"got {type(x).__name__}"
            )
        return x
    if sample_weight is not None and y is None:
        raise ValueError(f"{caller}: sample_weight needs targets y")
    parts = [part for part in (x, y, sample_weight) if part is not None]
    arrays = []
    for what, part in zip(("x", "y", "sample_weight"), parts):
        for leaf in _leaves(part):
            array = _as_array(leaf, what)
            if arrays and _num_samples(array) != _num_samples(arrays[0]):
                if what == "sample_weight":
                    raise ValueError(
                        f"{caller}: sample_weight has {_num_samples(array)} "
                        f"entries for {_num_samples(arrays[0])} samples"
                    )
                raise ValueError(
                    f"{caller}: x and {what} have different lengths: x has "
                    f"{_num_samples(arrays[0])} samples, {what} has "
                    f"{_num_samples(array)}"
                )
            arrays.append(array)
    structured = any(_is_structure(part) for part in parts)
    return DataLoader(
        TensorDataset(*arrays),
        batch_size=batch_size,
        shuffle=shuffle,
        seed=seed,
        **({"collate_fn": _Restructure(parts)} if structured else {}),
    )


def split_validation(
    x: Any, y: Any, validation_split: float, sample_weight: Any = None
) -> tuple[tuple, tuple]:
    """Keras's ``validation_split``: the *last* fraction of the samples, before shuffling.

    Args:
        x: arrays or Tensors.
        y: targets aligned with ``x`` (or None).
        validation_split: the fraction in ``(0, 1)`` held out for validation.
        sample_weight: weights aligned with ``x`` (or None).

    Returns:
        ``((x_train, y_train, w_train), (x_val, y_val, w_val))``.

    Raises:
        ValueError: if the fraction is outside ``[0, 1)``, ``x`` is a Dataset or a
            DataLoader, or a part would be empty.
    """
    if not 0.0 <= validation_split < 1.0:
        raise ValueError(f"validation_split must be in [0, 1); received {validation_split}")
    if not _is_array(x):
        raise ValueError(
            "validation_split is only supported for arrays and Tensors, not a "
            f"{type(x).__name__}; pass validation_data=... instead"
        )
    x = _map(x, lambda a: _as_array(a, "x"))
    n = _num_samples(_leaves(x)[0])
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(
            f"validation_split={validation_split} of {n} samples leaves an empty "
            "training or validation set"
        )
    y = _map(y, lambda a: _as_array(a, "y"))
    w = _map(sample_weight, lambda a: _as_array(a, "sample_weight"))
    return (
        tuple(_map(part, lambda a: a[:split_at]) for part in (x, y, w)),
        tuple(_map(part, lambda a: a[split_at:]) for part in (x, y, w)),
    )


def unpack_x_y_sample_weight(batch: Any) -> tuple[Any, Any, Any]:
    """Split a batch into ``(x, y, sample_weight)`` (Keras's function of this name):
    ``y`` and ``sample_weight`` are None where the batch has no such part.

    Args:
        batch: ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``.

    Returns:
        ``(x, y, sample_weight)``.

    Raises:
        ValueError: for a tuple of more than three parts.
    """
    if isinstance(batch, (tuple, list)):
        if 1 <= len(batch) <= 3:
            return tuple(batch) + (None,) * (3 - len(batch))
        raise ValueError(
            f"a batch must be x, (x,), (x, y) or (x, y, sample_weight); got a "
            f"{type(batch).__name__} of {len(batch)} parts"
        )
    return batch, None, None


def unpack_batch(batch: Any) -> tuple[Any, Any]:
    """``(x, y)`` of a batch (see :func:`unpack_x_y_sample_weight`).

    Args:
        batch: as for :func:`unpack_x_y_sample_weight`.

    Returns:
        ``(x, y)``.
    """
    return unpack_x_y_sample_weight(batch)[:2]


def class_weight_table(class_weight: Any) -> list[float] | None:
    """Keras's ``class_weight`` ``{class: weight}`` as a list indexed by class; classes
    below the largest key that it does not name weigh 1.

    Args:
        class_weight: ``{class index: weight}``, or None.

    Returns:
        The list of weights, or None for None.

    Raises:
        ValueError: for keys that are not non-negative integers or weights that are not
            numbers.
    """
    if class_weight is None:
        return None
    if not isinstance(class_weight, dict) or not class_weight:
        raise ValueError(
            "fit: class_weight must be a non-empty dict {class index: weight}; "
            f"received {class_weight!r}"
        )
    bad = [
        k
        for k in class_weight
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0
    ]
    if bad:
        raise ValueError(
            f"fit: class_weight keys must be class indices (integers >= 0); got {bad[:5]}"
        )
    try:
        return [float(class_weight.get(c, 1.0)) for c in range(int(max(class_weight)) + 1)]
    except (TypeError, ValueError):
        raise ValueError(
            f"fit: class_weight values must be numbers; received {class_weight!r}"
        ) from None


def with_class_weight(batch: Any, table: list[float]) -> tuple[Any, Any, Any]:
    """``(x, y, w)`` with each sample weighted by its class (as Keras: the arg-max of a
    one-hot ``y`` of shape ``(N, C)``, else ``y`` rounded to an integer).

    Args:
        batch: ``(x, y)`` with one target Tensor.
        table: the weights by class (:func:`class_weight_table`).

    Returns:
        ``(x, y, weights)``, the weights a float64 Tensor of one value per sample.

    Raises:
        ValueError: if the batch has sample weights too, the model has several outputs,
            ``y`` has more than 2 dimensions, or a class has no weight.
    """
    x, y, sample_weight = unpack_x_y_sample_weight(batch)
    if sample_weight is not None:
        raise ValueError("You cannot use class_weight and sample_weight at the same time.")
    if not isinstance(y, Tensor):
        raise ValueError(
            "class_weight is only supported for models with a single output "
            f"(one target Tensor per batch); got a {type(y).__name__}"
        )
    if y.ndim > 2:
        raise ValueError(
            f"class_weight is not supported for targets of shape {tuple(y.shape)} "
            "(more than 2 dimensions)"
        )
    if y.ndim == 2 and y.shape[1] > 1:
        classes = y.argmax(-1)
    else:
        classes = y.reshape(-1).round() if y.is_floating_point() else y.reshape(-1)
        classes = classes.to(dtype=int64)
    if classes.numel():
        low, high = int(classes.min()), int(classes.max())
        if low < 0 or high >= len(table):
            raise ValueError(
                f"class_weight has no weight for class {low if low < 0 else high} "
                f"(its classes are 0 to {len(table) - 1})"
            )
    weights = tensor(table, dtype=float64, device=y.device)[classes]
    return x, y, weights


def batch_size_of(x: Any) -> int:
    """The first dimension of the first array/Tensor found in ``x`` (1 if none).

    Args:
        x: arrays, Tensors, or tuples/lists/dicts of them.

    Returns:
        The batch size, an int.
    """
    if isinstance(x, (tuple, list)) and x:
        return batch_size_of(x[0])
    if isinstance(x, dict) and x:
        return batch_size_of(next(iter(x.values())))
    shape = getattr(x, "shape", ())
    return int(shape[0]) if len(shape) else 1


def to_device(data: Any, device: Any, float_dtype: Any) -> Any:
    """Move a (nested) batch to ``device`` as Tensors; floats become ``float_dtype``.

    Integer and boolean arrays (labels, masks) keep their dtype.

    Args:
        data: arrays, Tensors and numbers, nested in tuples, lists and dicts.
        device: the target device.
        float_dtype: the dtype of floating point data.

    Returns:
        The same structure of Tensors.
    """
    if isinstance(data, (tuple, list)):
        return type(data)(to_device(d, device, float_dtype) for d in data)
    if isinstance(data, dict):
        return {k: to_device(v, device, float_dtype) for k, v in data.items()}
    if isinstance(data, (np.ndarray, np.generic)):
        data = as_tensor(np.asarray(data))
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
            raise ValueError(
                f"steps_per_epoch must be a positive integer; received {steps_per_epoch}"
            )
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

        Returns:
            An iterator of ``(step, batch)`` pairs.
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
        """The first batch of the loader, without moving a DataLoader's position.

        Returns:
            The batch.
        """
        state = self.loader.state_dict() if isinstance(self.loader, DataLoader) else None
        iterator = iter(self.loader)
        try:
            return next(iterator)
        finally:
            if hasattr(iterator, "close"):
                iterator.close()
            if state is not None:
                self.loader.load_state_dict(state)
