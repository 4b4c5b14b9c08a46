"""Metric functions for ``Model.compile(metrics=[...])`` and the running mean of logs.

A metric is a function ``metric(y_pred, y_true) -> Tensor | float`` giving the mean
over one batch (the argument order of nnkit's losses: prediction first). The training
loop averages each batch value weighted by the batch size, so the epoch value of
``accuracy`` or ``mae`` is the exact mean over the samples seen.

Predictions are logits or scores, as nnkit models return them: ``accuracy`` takes the
``argmax`` over the class dimension, ``binary_accuracy`` thresholds at 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from nnkit.autograd.factories import tensor
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import float64

__all__ = [
    "accuracy",
    "binary_accuracy",
    "mean_absolute_error",
    "mean_squared_error",
    "top_k_accuracy",
    "MeanTracker",
    "METRICS",
]


def _as_float_tensor(t: Tensor) -> Tensor:
    return t if t.is_floating_point() else t.float()


def accuracy(y_pred: Tensor, y_true: Tensor) -> Tensor:
    """Fraction of samples whose highest-scoring class is the true class.

    Args:
        y_pred: scores ``(N, C)`` (logits or probabilities), or ``(N,)``/``(N, 1)``
            probabilities of a binary problem (thresholded at 0.5).
        y_true: class indices ``(N,)``, or one-hot/probability targets ``(N, C)``.

    Returns:
        A 0-d float Tensor in ``[0, 1]``.

    Example:
        >>> accuracy(nnkit.tensor([[0.1, 2.0], [3.0, 0.0]]), nnkit.tensor([1, 1])).item()
        0.5
    """
    if y_pred.ndim == 1 or y_pred.shape[-1] == 1:
        return binary_accuracy(y_pred, y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == y_pred.shape[-1]:
        y_true = y_true.argmax(-1)
    return (y_pred.argmax(-1) == y_true.reshape(y_pred.shape[:-1])).float().mean()


def binary_accuracy(y_pred: Tensor, y_true: Tensor, threshold: float = 0.5) -> Tensor:
    """Fraction of samples where ``y_pred > threshold`` equals the 0/1 target.

    Args:
        y_pred: probabilities, any shape matching ``y_true`` up to a trailing 1.
        y_true: 0/1 targets.
        threshold: the decision threshold (use 0.0 for logits).

    Returns:
        A 0-d float Tensor in ``[0, 1]``.
    """
    predicted = (y_pred > threshold).reshape(-1)
    return (predicted == (y_true.reshape(-1) > 0.5)).float().mean()


def mean_absolute_error(y_pred: Tensor, y_true: Tensor) -> Tensor:
    """Mean of ``|y_pred - y_true|`` over every element.

    Args:
        y_pred: the predictions.
        y_true: the targets, reshaped to ``y_pred``'s shape.

    Returns:
        A 0-d float Tensor.
    """
    return (y_pred - _as_float_tensor(y_true).reshape(y_pred.shape)).abs().mean()


def mean_squared_error(y_pred: Tensor, y_true: Tensor) -> Tensor:
    """Mean of ``(y_pred - y_true) ** 2`` over every element.

    Args:
        y_pred: the predictions.
        y_true: the targets, reshaped to ``y_pred``'s shape.

    Returns:
        A 0-d float Tensor.
    """
    return ((y_pred - _as_float_tensor(y_true).reshape(y_pred.shape)) ** 2).mean()


def top_k_accuracy(y_pred: Tensor, y_true: Tensor, k: int = 5) -> Tensor:
    """Fraction of samples whose true class is among the ``k`` highest scores.

    A class ranks within the top ``k`` when fewer than ``k`` classes score strictly
    higher (ties count in the sample's favour, as in Keras).

    Args:
        y_pred: scores ``(N, C)``.
        y_true: class indices ``(N,)`` or one-hot targets ``(N, C)``.
        k: how many of the best classes count.

    Returns:
        A 0-d float Tensor in ``[0, 1]``.
    """
    if y_true.ndim == y_pred.ndim:
        y_true = y_true.argmax(-1)
    true_score = y_pred.gather(1, y_true.reshape(-1, 1))
    higher = (y_pred > true_score).float().sum(-1)
    return (higher < k).float().mean()


# Keras spellings and short forms, mapped to the function and the name it logs under.
METRICS: dict[str, Callable[[Tensor, Tensor], Any]] = {
    "accuracy": accuracy,
    "acc": accuracy,
    "binary_accuracy": binary_accuracy,
    "mae": mean_absolute_error,
    "mean_absolute_error": mean_absolute_error,
    "mse": mean_squared_error,
    "mean_squared_error": mean_squared_error,
    "top_k_accuracy": top_k_accuracy,
}


def to_float(value: Any) -> float:
    """A log value (Tensor, NumPy scalar or number) as a Python float."""
    if isinstance(value, Tensor):
        return float(value.detach().item())
    return float(value)


def to_value(value: Any) -> Any:
    """A log value as a Python float, or as a float64 NumPy array for a value with
    dimensions (a vector metric's, as Keras keeps it)."""
    if isinstance(value, Tensor):
        value = value.detach()
        return float(value.item()) if value.ndim == 0 else value.numpy().astype(np.float64)
    if isinstance(value, (np.ndarray, list, tuple)):
        array = np.asarray(value, dtype=np.float64)
        return float(array) if array.ndim == 0 else array
    return float(value)


class MeanTracker:
    """Running means of named values, each batch weighted by its size (a value with
    dimensions, a vector, is averaged elementwise and given as a NumPy array).

    Example:
        >>> t = MeanTracker(); t.update({"loss": 1.0}, 3); t.update({"loss": 3.0}, 1)
        >>> t.result()
        {'loss': 1.5}
    """

    def __init__(self) -> None:
        self._totals: dict[str, Any] = {}
        self._counts: dict[str, float] = {}

    def update(self, logs: Mapping[str, Any], weight: float) -> None:
        """Add one batch's values, weighted by ``weight`` (its number of samples).

        Args:
            logs: ``{name: value}`` of the batch (numbers, Tensors or arrays).
            weight: the batch's number of samples.
        """
        for name, value in logs.items():
            # an empty batch (weight 0: a rank's empty share of a data-parallel batch)
            # registers the name without its value, which is NaN for a mean of nothing
            value = to_value(value) * weight if weight else 0.0
            self._totals[name] = self._totals.get(name, 0.0) + value
            self._counts[name] = self._counts.get(name, 0.0) + weight

    def allreduce(self, comm: Any) -> None:
        """Sum the totals and weights over the ranks of ``comm``, in place.

        Afterwards :meth:`result` is the mean over every rank's samples. Every rank must
        have tracked the same names (as the same ``train_step`` produces).

        Args:
            comm: a :class:`~nnkit.distributed.Communicator`.
        """
        names = list(self._totals)
        parts = [np.ravel(np.asarray(self._totals[n], dtype=np.float64)) for n in names]
        sizes = [p.size for p in parts]
        packed = tensor(
            np.concatenate(parts + [np.asarray([self._counts[n] for n in names], np.float64)]),
            dtype=float64,
        )
        values = comm.allreduce_(packed).numpy()
        start = 0
        for name, size in zip(names, sizes):
            total = values[start : start + size]
            old = self._totals[name]
            self._totals[name] = total.reshape(np.shape(old)) if np.ndim(old) else float(total[0])
            start += size
        self._counts = {n: float(c) for n, c in zip(names, values[start:])}

    def state_dict(self) -> dict[str, dict[str, Any]]:
        """The weighted sums and weights so far (a mid-epoch checkpoint keeps them)."""
        return {"totals": dict(self._totals), "counts": dict(self._counts)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self._totals = {str(k): to_value(v) for k, v in state["totals"].items()}
        self._counts = {str(k): float(v) for k, v in state["counts"].items()}

    def result(self) -> dict[str, Any]:
        """The mean of every value seen so far (NaN for a name with zero weight)."""
        return {
            name: (total / self._counts[name] if self._counts[name] else math.nan)
            for name, total in self._totals.items()
        }
