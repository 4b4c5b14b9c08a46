"""Array transforms for preparing data: scaling, one-hot encoding, composition.

They work on host-side NumPy arrays (before wrapping them in a dataset) and return
new arrays; integer inputs are scaled into ``float32``, floating inputs keep their
dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["Compose", "minmax_scale", "one_hot", "standardize"]


def _as_float(x: Any) -> np.ndarray:
    x = np.asarray(x)
    return x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float32)


def standardize(
    x: Any, *, mean: Any = None, std: Any = None, axis: int | None = 0, eps: float = 1e-8
) -> np.ndarray:
    """Shift and scale ``x`` to zero mean and unit standard deviation.

    .. math:: z = (x - \\mu) / \\max(\\sigma, \\epsilon)

    Pass the training set's statistics to transform a test set the same way.

    Args:
        x: the data.
        mean: the mean to subtract; by default ``x.mean(axis)``.
        std: the standard deviation to divide by; by default ``x.std(axis)``.
        axis: the axis statistics are computed over (0: per feature; ``None``:
            over everything).
        eps: the smallest divisor, so constant features do not divide by zero.

    Returns:
        The standardized array.

    Example:
        >>> x_train, x_test = np.array([[0.0], [2.0]]), np.array([[4.0]])
        >>> standardize(x_test, mean=x_train.mean(0), std=x_train.std(0)).tolist()
        [[3.0]]
    """
    x = _as_float(x)
    mean = x.mean(axis=axis, keepdims=True) if mean is None else np.asarray(mean, x.dtype)
    std = x.std(axis=axis, keepdims=True) if std is None else np.asarray(std, x.dtype)
    return ((x - mean) / np.maximum(std, eps)).astype(x.dtype, copy=False)


def minmax_scale(
    x: Any, *, feature_range: tuple[float, float] = (0.0, 1.0), axis: int | None = 0
) -> np.ndarray:
    """Rescale ``x`` linearly so its minimum and maximum map onto ``feature_range``.

    Constant features map onto the range's lower end.

    Args:
        x: the data.
        feature_range: ``(low, high)`` with ``low < high``.
        axis: the axis the extremes are taken over (0: per feature; ``None``: over
            everything).

    Returns:
        The rescaled array.

    Raises:
        ValueError: if ``low >= high``.

    Example:
        >>> minmax_scale(np.array([[1.0], [3.0], [5.0]])).ravel().tolist()
        [0.0, 0.5, 1.0]
    """
    low, high = feature_range
    if not low < high:
        raise ValueError(f"minmax_scale: feature_range must have low < high, got {feature_range}")
    x = _as_float(x)
    lo, hi = x.min(axis=axis, keepdims=True), x.max(axis=axis, keepdims=True)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (low + (x - lo) / span * (high - low)).astype(x.dtype, copy=False)


def one_hot(
    labels: Any, num_classes: int | None = None, *, dtype: np.dtype | type = np.float32
) -> np.ndarray:
    """Encode integer class labels as one-hot rows.

    Args:
        labels: integer labels of any shape, each in ``[0, num_classes)``.
        num_classes: the number of classes; by default ``labels.max() + 1``.
        dtype: the output dtype.

    Returns:
        An array of shape ``labels.shape + (num_classes,)``.

    Raises:
        TypeError: if the labels are not integers.
        ValueError: for negative labels or labels ``>= num_classes``.

    Example:
        >>> one_hot(np.array([0, 2]), 3).tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    labels = np.asarray(labels)
    if not np.issubdtype(labels.dtype, np.integer):
        raise TypeError(f"one_hot: labels must be integers, got dtype {labels.dtype}")
    if labels.size and labels.min() < 0:
        raise ValueError(f"one_hot: labels must be non-negative, found {labels.min()}")
    top = int(labels.max()) + 1 if labels.size else 0
    num_classes = top if num_classes is None else int(num_classes)
    if top > num_classes:
        raise ValueError(f"one_hot: label {top - 1} is out of range for num_classes={num_classes}")
    return np.eye(num_classes, dtype=dtype)[labels]


class Compose:
    """Chain callables: ``Compose([f, g])(x)`` is ``g(f(x))``.

    Args:
        transforms: the callables, applied in order.

    Example:
        >>> Compose([minmax_scale, lambda a: a * 2])(np.array([[0.0], [1.0]])).tolist()
        [[0.0], [2.0]]
    """

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, x: Any) -> Any:
        for transform in self.transforms:
            x = transform(x)
        return x

    def __repr__(self) -> str:
        inner = ", ".join(getattr(t, "__name__", repr(t)) for t in self.transforms)
        return f"Compose([{inner}])"
