"""Accuracy metrics (Keras 3's ``accuracy_metrics``).

Each is a :class:`~nnkit.metrics.MeanMetricWrapper` of a per-sample 0/1 function, so the
value is the exact (weighted) fraction of the samples seen. Predictions may be
probabilities or logits wherever only their order matters (categorical and top-k
accuracies); ``BinaryAccuracy`` thresholds ``y_pred`` (use ``threshold=0.0`` for logits).
"""

from __future__ import annotations

import numbers
from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.metrics.base import (
    MeanMetricWrapper,
    check_class_ids,
    squeeze_or_expand_to_same_rank,
)

__all__ = [
    "Accuracy",
    "BinaryAccuracy",
    "CategoricalAccuracy",
    "SparseCategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy",
    "accuracy",
    "binary_accuracy",
    "categorical_accuracy",
    "sparse_categorical_accuracy",
    "top_k_categorical_accuracy",
    "sparse_top_k_categorical_accuracy",
    "in_top_k",
]


def accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """1.0 where ``y_true == y_pred`` elementwise (ranks aligned), else 0.0.

    Args:
        y_true: the targets.
        y_pred: the predictions.

    Returns:
        A float32 tensor of 0/1 values, of the targets' and predictions' aligned shape.

    Example:
        >>> accuracy(nnkit.tensor([1, 2, 3]), nnkit.tensor([1, 0, 3])).tolist()
        [1.0, 0.0, 1.0]
    """
    y_true = y_true.to(y_pred.dtype) if y_true.dtype != y_pred.dtype else y_true
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return (y_true == y_pred).float()


def binary_accuracy(y_true: Tensor, y_pred: Tensor, threshold: float = 0.5) -> Tensor:
    """1.0 where ``(y_pred > threshold)`` equals ``y_true`` elementwise, else 0.0.

    Args:
        y_true: the targets.
        y_pred: the predictions.
        threshold: the decision threshold on ``y_pred``.

    Returns:
        A float32 tensor of 0/1 values, of the aligned shape.

    Example:
        >>> binary_accuracy(nnkit.tensor([1.0, 0.0, 1.0]), nnkit.tensor([0.8, 0.6, 0.3])).tolist()
        [1.0, 0.0, 0.0]
    """
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = (y_pred > threshold).to(y_true.dtype)
    return (y_true == predicted).float()


def categorical_accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """1.0 where ``argmax(y_true, -1) == argmax(y_pred, -1)`` (one-hot targets).

    Args:
        y_true: one-hot targets of shape ``(..., C)``.
        y_pred: scores of shape ``(..., C)``.

    Returns:
        A float32 tensor of 0/1 values, one per sample.

    Example:
        >>> y_true = nnkit.tensor([[0.0, 1.0], [1.0, 0.0]])
        >>> categorical_accuracy(y_true, nnkit.tensor([[0.2, 0.8], [0.3, 0.7]])).tolist()
        [1.0, 0.0]
    """
    y_true = y_true.argmax(-1)
    org_shape = tuple(y_true.shape)
    reshape = False
    if y_true.ndim == y_pred.ndim:
        y_true = y_true.squeeze(-1)
        reshape = True
    matches = (y_true == y_pred.argmax(-1)).float()
    return matches.reshape(org_shape) if reshape else matches


def sparse_categorical_accuracy(y_true: Tensor, y_pred: Tensor) -> Tensor:
    """1.0 where the integer target equals ``argmax(y_pred, -1)``.

    Args:
        y_true: integer class ids, of shape ``(...)`` or ``(..., 1)``.
        y_pred: scores of shape ``(..., C)``.

    Returns:
        A float32 tensor of 0/1 values, one per sample.

    Example:
        >>> scores = nnkit.tensor([[0.2, 0.8], [0.3, 0.7]])
        >>> sparse_categorical_accuracy(nnkit.tensor([1, 0]), scores).tolist()
        [1.0, 0.0]
    """
    if y_pred.is_floating_point() and y_true.dtype != y_pred.dtype:
        y_true = y_true.to(y_pred.dtype)
    org_shape = tuple(y_true.shape)
    reshape = False
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true.squeeze(-1)
        reshape = True
    matches = (y_true == y_pred.argmax(-1).to(y_true.dtype)).float()
    if reshape:
        matches = matches.reshape(org_shape)
    if matches.ndim > 1 and matches.shape[-1] == 1:
        matches = matches.squeeze(-1)
    return matches


def in_top_k(targets: Tensor, predictions: Tensor, k: int) -> Tensor:
    """Whether each target class is among the ``k`` highest of its row of ``predictions``.

    As TensorFlow's ``in_top_k``: classes tied with the k-th score count as in the top k
    (a target is in when fewer than ``k`` scores are strictly higher); a non-finite target
    score is never in.

    Args:
        targets: integer class ids, shape ``(N,)``.
        predictions: scores, shape ``(N, C)``.
        k: how many of the highest scores count.

    Returns:
        A bool tensor of shape ``(N,)``.

    Example:
        >>> scores = nnkit.tensor([[0.1, 0.5, 0.4], [0.6, 0.3, 0.1]])
        >>> in_top_k(nnkit.tensor([2, 2]), scores, 2).tolist()
        [True, False]
    """
    num_classes = predictions.shape[-1]
    targets = targets.long()
    check_class_ids(targets, num_classes, "in_top_k")
    target_score = predictions.gather(1, targets.reshape(-1, 1))
    higher = (predictions > target_score).long().sum(-1)
    return (higher < k) & target_score.reshape(-1).isfinite()


def top_k_categorical_accuracy(y_true: Tensor, y_pred: Tensor, k: int = 5) -> Tensor:
    """1.0 where the one-hot target's class is among the ``k`` highest scores.

    Args:
        y_true: one-hot targets of shape ``(..., C)``.
        y_pred: scores of shape ``(..., C)``.
        k: how many of the highest scores count.

    Returns:
        A float32 tensor of 0/1 values, one per sample.

    Example:
        >>> scores = nnkit.tensor([[0.1, 0.5, 0.4], [0.6, 0.3, 0.1]])
        >>> y_true = nnkit.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
        >>> top_k_categorical_accuracy(y_true, scores, k=2).tolist()
        [1.0, 0.0]
    """
    y_true = y_true.argmax(-1)
    org_shape = tuple(y_true.shape)
    if y_pred.ndim > 2:
        y_pred = y_pred.reshape(-1, y_pred.shape[-1])
    reshape = y_true.ndim > 1
    if reshape:
        y_true = y_true.reshape(-1)
    matches = in_top_k(y_true, y_pred, k).float()
    return matches.reshape(org_shape) if reshape else matches


def sparse_top_k_categorical_accuracy(
    y_true: Tensor, y_pred: Tensor, k: int = 5, from_sorted_ids: bool = False
) -> Tensor:
    """1.0 where the integer target is among the ``k`` highest scores (or, with
    ``from_sorted_ids``, among the first ``k`` ids of each row of ``y_pred``).

    Args:
        y_true: integer class ids.
        y_pred: scores of shape ``(..., C)``, or class ids sorted by score with
            ``from_sorted_ids``.
        k: how many of the highest scores count.
        from_sorted_ids: ``y_pred`` holds class ids, best first.

    Returns:
        A float32 tensor of 0/1 values, one per sample.

    Example:
        >>> scores = nnkit.tensor([[0.1, 0.5, 0.4], [0.6, 0.3, 0.1]])
        >>> sparse_top_k_categorical_accuracy(nnkit.tensor([2, 2]), scores, k=2).tolist()
        [1.0, 0.0]
    """
    y_true = y_true.to(y_pred.dtype) if from_sorted_ids else y_true.long()
    org_shape = tuple(y_true.shape)
    if y_pred.ndim > 2:
        y_pred = y_pred.reshape(-1, y_pred.shape[-1])
    reshape = y_true.ndim > 1
    if reshape:
        y_true = y_true.reshape(-1)
    if from_sorted_ids:
        matches = (y_true.unsqueeze(1) == y_pred[:, :k]).any(1)
    else:
        matches = in_top_k(y_true, y_pred, k)
    matches = matches.float()
    return matches.reshape(org_shape) if reshape else matches


def _check_k(metric: MeanMetricWrapper, k: Any) -> None:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise metric._error("k", "it must be a positive integer", k)


class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels (exact equality, elementwise).

    Args:
        name: the metric's name (its key in the logs).
        dtype: the dtype of its state and result (default: nnkit's default float dtype).

    Example:
        >>> m = Accuracy(); m.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
        >>> float(m.result())
        0.75
    """

    def __init__(self, name: str = "accuracy", dtype: Any = None) -> None:
        super().__init__(accuracy, name=name, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches the binary labels.

    Args:
        name, dtype: as :class:`~nnkit.metrics.Metric`.
        threshold: the decision threshold on ``y_pred`` (0.5 for probabilities, 0.0 for
            logits).

    Example:
        >>> m = BinaryAccuracy(); m.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
        >>> float(m.result())
        0.75
    """

    def __init__(
        self, name: str = "binary_accuracy", dtype: Any = None, threshold: float = 0.5
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
            raise ValueError(
                "BinaryAccuracy: invalid `threshold` argument: it must be a "
                f"number. Received: threshold={threshold!r}"
            )
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "threshold": self.threshold}


class CategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred)`` matches the one-hot label's class.

    Args:
        name: the metric's name (its key in the logs).
        dtype: the dtype of its state and result (default: nnkit's default float dtype).

    Example:
        >>> m = CategoricalAccuracy()
        >>> m.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
        >>> float(m.result())
        0.5
    """

    def __init__(self, name: str = "categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(categorical_accuracy, name=name, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred)`` matches the integer label.

    Args:
        name: the metric's name (its key in the logs).
        dtype: the dtype of its state and result (default: nnkit's default float dtype).

    Example:
        >>> m = SparseCategoricalAccuracy()
        >>> m.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]])
        >>> float(m.result())
        0.5
    """

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype}


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label's class is among the ``k`` highest predictions.

    Args:
        k: how many of the best classes count (default 5).
        name, dtype: as :class:`~nnkit.metrics.Metric`.
    """

    def __init__(
        self, k: int = 5, name: str = "top_k_categorical_accuracy", dtype: Any = None
    ) -> None:
        _check_k(self, k)
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "k": self.k}


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label is among the ``k`` highest predictions.

    Args:
        k: how many of the best classes count (default 5).
        name, dtype: as :class:`~nnkit.metrics.Metric`.
        from_sorted_ids: ``y_pred`` holds, per row, class ids sorted by decreasing
            score (at least ``k`` of them) instead of the scores of every class.
    """

    def __init__(
        self,
        k: int = 5,
        name: str = "sparse_top_k_categorical_accuracy",
        dtype: Any = None,
        from_sorted_ids: bool = False,
    ) -> None:
        _check_k(self, k)
        super().__init__(
            sparse_top_k_categorical_accuracy,
            name=name,
            dtype=dtype,
            k=k,
            from_sorted_ids=from_sorted_ids,
        )
        self.k = k
        self.from_sorted_ids = bool(from_sorted_ids)

    def get_config(self) -> dict[str, Any]:
        config = {"name": self.name, "dtype": self.dtype, "k": self.k}
        if self.from_sorted_ids:
            config["from_sorted_ids"] = True
        return config
