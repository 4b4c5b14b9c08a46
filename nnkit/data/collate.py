"""The default collate function: a list of samples in, one batch out."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nnkit.autograd.ops import stack
from nnkit.data.dataset import SampleBatch, _is_tensor

__all__ = ["default_collate", "empty_like_batch"]


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a sequence of samples into one batch, recursing into containers.

    The type of the first sample decides:

    * NumPy arrays and NumPy scalars are stacked along a new first axis (``np.stack``);
    * nnkit Tensors are stacked with ``nnkit.stack`` (Tensors stay Tensors);
    * Python numbers become a 1-d NumPy array (``int64``/``float64``/``bool``, as
      ``np.asarray`` picks);
    * strings and bytes are returned as a list (``None`` is an error, as in torch);
    * mappings are collated key by key into a ``dict``; tuples (named tuples
      included) and lists are collated position by position into the same type;
    * a :class:`~nnkit.data.SampleBatch` is already stacked: its columns are returned.

    Args:
        batch: the samples of one batch, all of the same structure.

    Returns:
        The batch, with the structure of one sample.

    Raises:
        TypeError: for a sample type it does not know how to stack.
        ValueError: if the samples have different shapes or container sizes.

    Example:
        >>> b = default_collate([{"x": np.zeros(2), "y": 1}, {"x": np.ones(2), "y": 0}])
        >>> b["x"].shape, b["y"].tolist()
        ((2, 2), [1, 0])
    """
    if isinstance(batch, SampleBatch):
        return batch.columns
    if len(batch) == 0:
        raise ValueError("default_collate: the batch is empty")
    return _collate(list(batch), "batch")


def _collate(samples: list, where: str) -> Any:
    missing = [i for i, s in enumerate(samples) if s is None]
    if missing:
        raise TypeError(
            f"default_collate: sample(s) {missing[:10]} of the batch hold None at {where}: "
            "the dataset returned None (return arrays, numbers, tuples or dicts, or pass a "
            "collate_fn)"
        )
    first = samples[0]
    if isinstance(first, (np.ndarray, np.generic)):
        return _stack_arrays(samples, where)
    if _is_tensor(first):
        return _stack_tensors(samples, where)
    if isinstance(first, (str, bytes)):
        return samples
    if isinstance(first, numbers.Number):
        return np.asarray(samples)
    if isinstance(first, Mapping):
        return {key: _collate([s[key] for s in samples], f"{where}[{key!r}]") for key in first}
    if isinstance(first, (tuple, list)):
        return _collate_sequences(samples, where)
    raise TypeError(
        f"default_collate: cannot batch samples of type {type(first).__name__} "
        f"at {where}; pass a collate_fn"
    )


def _collate_sequences(samples: list, where: str) -> Any:
    size = len(samples[0])
    for i, s in enumerate(samples):
        if len(s) != size:
            raise ValueError(
                f"default_collate: samples at {where} have different lengths "
                f"(sample 0 has {size}, sample {i} has {len(s)})"
            )
    fields = [_collate([s[j] for s in samples], f"{where}[{j}]") for j in range(size)]
    first = samples[0]
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*fields)
    return tuple(fields) if isinstance(first, tuple) else fields


def _stack_arrays(samples: list, where: str) -> np.ndarray:
    try:
        return np.stack(samples)
    except ValueError:
        shapes = sorted({np.shape(s) for s in samples})
        raise ValueError(
            f"default_collate: cannot stack arrays of different shapes {shapes} at {where}"
        ) from None


def _stack_tensors(samples: list, where: str) -> Any:
    shapes = {tuple(s.shape) for s in samples}
    if len(shapes) > 1:
        raise ValueError(
            f"default_collate: cannot stack Tensors of different shapes {sorted(shapes)} at {where}"
        )
    return stack(samples, dim=0)


def empty_like_batch(batch: Any) -> Any:
    """``batch`` with zero samples: every array and Tensor cut to length 0 along its
    first axis, lists emptied, the structure (and dtypes, trailing shapes) kept.

    What a data-parallel rank whose share of a short last batch is empty receives.

    Args:
        batch: a collated batch: arrays and Tensors nested in tuples, lists and dicts.

    Returns:
        The same structure with zero samples.

    Raises:
        TypeError: for a leaf that is neither an array nor a Tensor.

    Example:
        >>> empty_like_batch((np.zeros((1, 3)), np.array([2])))[0].shape
        (0, 3)
    """
    if isinstance(batch, Mapping):
        return {key: empty_like_batch(value) for key, value in batch.items()}
    if isinstance(batch, tuple):
        parts = [empty_like_batch(value) for value in batch]
        return type(batch)(*parts) if hasattr(batch, "_fields") else tuple(parts)
    if isinstance(batch, list):  # a list of arrays keeps them; a list of strings empties
        parts = [
            v for v in batch if isinstance(v, (np.ndarray, Mapping, tuple, list)) or _is_tensor(v)
        ]
        return [empty_like_batch(v) for v in batch] if batch and len(parts) == len(batch) else []
    if isinstance(batch, np.ndarray) or _is_tensor(batch):
        return batch[:0]
    raise TypeError(f"cannot make an empty batch like a {type(batch).__name__}")
