"""Regression metrics: MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError.

Keras's per-sample functions reduce over the **last** axis only: for targets of shape
``(N, 1)`` (or ``(N, D)``) each sample gives one value and the metric is the exact mean
over the samples seen. For 1-D targets of shape ``(N,)`` the last axis *is* the batch,
so one ``update_state`` call contributes a single value (the batch mean, counted as one
sample) — Keras 3 behaves the same way; ``RootMeanSquaredError`` is the exception (it
averages per element). Use ``(N, 1)`` targets for per-sample weighting.
"""

from __future__ import annotations

from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.metrics.base import (
    Mean,
    MeanMetricWrapper,
    squeeze_or_expand_to_same_rank,
    to_tensor,
)

__all__ = [
    "MeanSquaredError",
    "RootMeanSquaredError",
    "MeanAbsoluteError",
    "mean_squared_error",
    "mean_absolute_error",
]


def _last_axis_mean(t: Tensor) -> Tensor:
    return t if t.ndim == 0 else t.mean(-1)


def _aligned(y_true: Tensor, y_pred: Tensor) -> tuple[Tensor, Tensor]:
    if not y_pred.is_floating_point():
        y_pred = y_pred.float()
    y_true = y_true.to(y_pred.dtype) if y_true.dtype != y_pred.dtype else y_true
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def mean_squared_error(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean(square(y_true - y_pred), axis=-1)`` (Keras's ``mean_squared_error``).

    Args:
        y_true: the targets.
        y_pred: the predictions (ranks aligned with the targets).

    Returns:
        One value per sample (the last axis averaged away).

    Example:
        >>> mean_squared_error(nnkit.tensor([[0.0, 1.0]]), nnkit.tensor([[1.0, 1.0]])).tolist()
        [0.5]
    """
    y_true, y_pred = _aligned(y_true, y_pred)
    return _last_axis_mean((y_true - y_pred).square())


def mean_absolute_error(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``mean(abs(y_true - y_pred), axis=-1)`` (Keras's ``mean_absolute_error``).

    Args:
        y_true: the targets.
        y_pred: the predictions (ranks aligned with the targets).

    Returns:
        One value per sample (the last axis averaged away).

    Example:
        >>> mean_absolute_error(nnkit.tensor([[0.0, 1.0]]), nnkit.tensor([[1.0, 3.0]])).tolist()
        [1.5]
    """
    y_true, y_pred = _aligned(y_true, y_pred)
    return _last_axis_mean((y_true - y_pred).abs())


class MeanSquaredError(MeanMetricWrapper):
    """The mean of ``mean(square(y_true - y_pred), axis=-1)`` over the samples seen.

    Args:
        name: the metric's name (its key in the logs).
        dtype: the dtype of its state and result (default: nnkit's default float dtype).

    Example:
        >>> m = MeanSquaredError()
        >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]]); float(m.result())
        0.25
    """

    def __init__(self, name: str = "mean_squared_error", dtype: Any = None) -> None:
        super().__init__(mean_squared_error, name=name, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}


class MeanAbsoluteError(MeanMetricWrapper):
    """The mean of ``mean(abs(y_true - y_pred), axis=-1)`` over the samples seen.

    Args:
        name: the metric's name (its key in the logs).
        dtype: the dtype of its state and result (default: nnkit's default float dtype).

    Example:
        >>> m = MeanAbsoluteError()
        >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]]); float(m.result())
        0.25
    """

    def __init__(self, name: str = "mean_absolute_error", dtype: Any = None) -> None:
        super().__init__(mean_absolute_error, name=name, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}


class RootMeanSquaredError(Mean):
    """``sqrt`` of the (weighted) mean of ``square(y_pred - y_true)``.

    Errors of rank > 1 are averaged per sample first (as :class:`Mean` does); 1-D targets
    count each element as a sample.

    Args:
        name: the metric's name (its key in the logs).
        dtype: the dtype of its state and result (default: nnkit's default float dtype).

    Example:
        >>> m = RootMeanSquaredError()
        >>> m.update_state([[0, 1], [0, 0]], [[1, 1], [0, 0]]); float(m.result())
        0.5
    """

    def __init__(self, name: str = "root_mean_squared_error", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_pred = to_tensor(y_pred, self.dtype)
        y_true = to_tensor(y_true, self.dtype, y_pred.device)
        if y_pred.numel() == 0:
            return
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        self._update_values((y_pred - y_true).square(), sample_weight)

    def result(self) -> Tensor:
        return super().result().sqrt()
