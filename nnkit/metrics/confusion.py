"""Confusion-matrix metrics: Precision and Recall (Keras 3's ``confusion_metrics``); the
counting shared with :class:`~nnkit.metrics.AUC`.

The state is the (weighted) count of true/false positives/negatives at each threshold,
where a prediction is *positive* at threshold ``t`` when ``y_pred > t`` and a label is
positive when nonzero. Multidimensional inputs are flattened (every element is one
prediction) unless ``AUC(multi_label=True)``.

Thresholds evenly spaced over ``[0, 1]`` (AUC's default grid) use Keras's bucketed
algorithm: each prediction, clipped to ``[0, 1]``, falls in bucket
``ceil(p * (T - 1)) - 1``; a reversed cumulative sum of the per-bucket counts gives the
counts at every threshold in ``O(N + T²)`` (the cumulative sum is a triangular matmul).
Other thresholds compare every prediction with every threshold (``O(N * T)``).
"""

from __future__ import annotations

import numbers
from typing import Any

from nnkit.autograd.factories import arange, ones, tensor, zeros
from nnkit.autograd.ops import triu, where
from nnkit.autograd.tensor import Tensor
from nnkit.metrics.base import (
    Metric,
    broadcast_weight,
    divide_no_nan,
    squeeze_or_expand_to_same_rank,
    to_tensor,
)

__all__ = [
    "Precision",
    "Recall",
    "update_confusion_matrix_variables",
    "is_evenly_distributed_thresholds",
    "NEG_INF",
]

NEG_INF = -1e10
EPSILON = 1e-7  # Keras's backend.epsilon()


def _check_thresholds(metric: Metric, thresholds: Any) -> list[float]:
    values = list(thresholds) if isinstance(thresholds, (list, tuple)) else [thresholds]
    bad = [
        t
        for t in values
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not 0 <= t <= 1
    ]
    if not values or bad:
        raise metric._error("thresholds", "threshold values must be numbers in [0, 1]", thresholds)
    return [float(t) for t in values]


def _check_optional_int(metric: Metric, argument: str, value: Any, minimum: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        kind = "a positive integer" if minimum > 0 else "a non-negative integer"
        raise metric._error(argument, f"it must be None or {kind}", value)


def is_evenly_distributed_thresholds(thresholds: list[float]) -> bool:
    """Whether ``thresholds`` is ``[0, 1/(n-1), ..., 1]`` (n >= 3), as Keras decides it
    (``numpy.allclose`` with ``atol=1e-7``).

    Args:
        thresholds: the thresholds, in order.

    Returns:
        True if they are evenly spaced from 0 to 1.
    """
    n = len(thresholds)
    if n < 3:
        return False
    return all(
        abs(t - i / (n - 1)) <= EPSILON + 1e-5 * abs(i / (n - 1)) for i, t in enumerate(thresholds)
    )


def filter_top_k(x: Tensor, k: int) -> Tensor:
    """Keep the ``k`` largest entries of the last dim of ``x``, the rest set to NEG_INF.

    Ties are broken towards the lower index (as ``tf.math.top_k``); memory is
    ``O(x.numel() * C)`` for ``C`` classes.
    """
    c = x.shape[-1]
    xi, xj = x.unsqueeze(-1), x.unsqueeze(-2)  # [..., i, j] compares x_j with x_i
    idx = arange(c, device=x.device)
    earlier = idx.reshape(1, c) < idx.reshape(c, 1)  # j < i
    rank = ((xj > xi) | ((xj == xi) & earlier)).long().sum(-1)
    mask = (rank < k).to(x.dtype)
    return x * mask + NEG_INF * (1 - mask)


def update_confusion_matrix_variables(
    metric: Metric,
    variables: dict[str, str],
    y_true: Any,
    y_pred: Any,
    thresholds: list[float],
    top_k: int | None = None,
    class_id: int | None = None,
    sample_weight: Any = None,
    multi_label: bool = False,
    label_weights: Tensor | None = None,
    thresholds_distributed_evenly: bool = False,
) -> None:
    """Add the weighted confusion counts of one batch to ``metric``'s state.

    Args:
        metric: the metric whose state is updated.
        variables: ``{"tp"|"fp"|"tn"|"fn": state attribute name}``.
        y_true, y_pred: labels (cast to bool) and predictions, same shape up to a
            trailing 1.
        thresholds: the thresholds (Python floats), sorted.
        top_k: only the ``top_k`` highest predictions of each row count as positive.
        class_id: restrict to this column of the last dim.
        sample_weight: broadcastable to ``y_true`` (rank 0, equal, or one less).
        multi_label: keep the last dim (counts per label) instead of flattening.
        label_weights: per-label weights multiplied into the flattened counts.
        thresholds_distributed_evenly: use the bucketed algorithm.
    """
    name = type(metric).__name__
    y_pred = to_tensor(y_pred, metric.dtype)
    y_true = to_tensor(y_true, metric.dtype, y_pred.device)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(
            f"{name} ({metric.name!r}): `y_true` and `y_pred` must have the same "
            f"shape; got {tuple(y_true.shape)} and {tuple(y_pred.shape)}"
        )
    if sample_weight is not None:
        sample_weight = to_tensor(sample_weight, metric.dtype, y_pred.device).unsqueeze(-1)
        _, sample_weight = squeeze_or_expand_to_same_rank(
            y_true, sample_weight, expand_rank_1=False
        )
    if top_k is not None:
        y_pred = filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.ndim == 1:
            raise ValueError(
                f"{name}: when `class_id` is given, y_pred must be a 2D array "
                f"of shape (num_samples, num_classes); got {tuple(y_pred.shape)}"
            )
        if class_id >= y_pred.shape[-1]:
            raise ValueError(
                f"{name}: `class_id`={class_id} is out of range for {y_pred.shape[-1]} classes"
            )
        y_true = y_true[..., class_id : class_id + 1]
        y_pred = y_pred[..., class_id : class_id + 1]
    if y_pred.numel() == 0:
        return
    weights = None
    if sample_weight is not None:
        weights = broadcast_weight(metric, sample_weight, tuple(y_pred.shape))
    if label_weights is not None:
        lw = broadcast_weight(
            metric, label_weights.to(y_pred.device).unsqueeze(0), tuple(y_pred.shape)
        )
        weights = lw if weights is None else weights * lw
    if thresholds_distributed_evenly:
        with_epsilon = thresholds[0] < 0.0 or thresholds[-1] > 1.0
        counts = _counts_bucketed(
            y_true, y_pred, len(thresholds), weights, multi_label, with_epsilon
        )
    else:
        counts = _counts_tiled(y_true, y_pred, thresholds, weights, multi_label)
    for key, attr in variables.items():
        metric._assign_add(attr, counts[key])


def _counts_bucketed(
    y_true: Tensor,
    y_pred: Tensor,
    num_thresholds: int,
    weights: Tensor | None,
    multi_label: bool,
    with_epsilon: bool,
) -> dict[str, Tensor]:
    y_pred = y_pred.clamp(0.0, 1.0)
    y_true = (y_true != 0).to(y_pred.dtype)
    if not multi_label:
        y_true, y_pred = y_true.reshape(-1), y_pred.reshape(-1)
        weights = None if weights is None else weights.reshape(-1)
    true_labels = y_true if weights is None else y_true * weights
    false_labels = (1.0 - y_true) if weights is None else (1.0 - y_true) * weights
    # predictions must be strictly greater than a threshold: bucket = ceil(p*(T-1)) - 1
    buckets = (y_pred * float(num_thresholds - 1)).ceil() - 1.0
    if with_epsilon:  # every p in [0, 1] exceeds the first threshold (0 - eps)
        buckets = buckets.clamp(min=0.0)
    buckets = buckets.long()
    valid = (buckets >= 0).to(y_pred.dtype)  # a segment sum drops negative ids
    buckets = buckets.clamp(min=0)
    size = num_thresholds
    if multi_label:
        num_labels = y_pred.shape[1]
        labels = arange(num_labels, device=y_pred.device).reshape(1, num_labels)
        buckets = buckets * num_labels + labels
        size = num_thresholds * num_labels
    flat = buckets.reshape(-1)

    def histogram(values: Tensor) -> Tensor:
        hist = zeros(size, dtype=values.dtype, device=values.device)
        hist = hist.scatter_add(0, flat, (values * valid).reshape(-1))
        return hist.reshape(num_thresholds, -1) if multi_label else hist

    # reversed cumulative sum over thresholds: count(t_i) = sum_{j >= i} bucket(j)
    upper = triu(ones(num_thresholds, num_thresholds, dtype=y_pred.dtype, device=y_pred.device))
    tp = upper @ histogram(true_labels)
    fp = upper @ histogram(false_labels)
    if multi_label:
        total_true, total_false = true_labels.sum(0), false_labels.sum(0)
    else:
        total_true, total_false = true_labels.sum(), false_labels.sum()
    return {"tp": tp, "fp": fp, "tn": total_false - fp, "fn": total_true - tp}


def _counts_tiled(
    y_true: Tensor,
    y_pred: Tensor,
    thresholds: list[float],
    weights: Tensor | None,
    multi_label: bool,
) -> dict[str, Tensor]:
    num = len(thresholds)
    thr = tensor(thresholds, dtype=y_pred.dtype, device=y_pred.device)
    if multi_label:
        pred_pos = y_pred.unsqueeze(0) > thr.reshape(num, 1, 1)  # (T, N, L)
        label_pos = (y_true != 0).unsqueeze(0)
        weights = None if weights is None else weights.unsqueeze(0)
    else:
        pred_pos = y_pred.reshape(1, -1) > thr.reshape(num, 1)  # (T, P)
        label_pos = (y_true != 0).reshape(1, -1)
        weights = None if weights is None else weights.reshape(1, -1)

    def count(cond: Tensor) -> Tensor:
        values = cond.to(y_pred.dtype) if weights is None else where(cond, weights, 0.0)
        return values.sum(1)

    pred_neg, label_neg = ~pred_pos, ~label_pos
    return {
        "tp": count(label_pos & pred_pos),
        "fp": count(label_neg & pred_pos),
        "tn": count(label_neg & pred_neg),
        "fn": count(label_pos & pred_neg),
    }


class _PrecisionRecallBase(Metric):
    _second: str = ""  # "false_positives" or "false_negatives"

    def __init__(
        self,
        thresholds: Any = None,
        top_k: int | None = None,
        class_id: int | None = None,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        _check_optional_int(self, "top_k", top_k, 1)
        _check_optional_int(self, "class_id", class_id, 0)
        parsed = (
            [0.5 if top_k is None else NEG_INF]
            if thresholds is None
            else _check_thresholds(self, thresholds)
        )
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        self.thresholds = parsed
        self._thresholds_distributed_evenly = is_evenly_distributed_thresholds(parsed)
        self.add_variable((len(parsed),), name="true_positives")
        self.add_variable((len(parsed),), name=self._second)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Accumulate the confusion counts of one batch.

        Args:
            y_true: labels (cast to bool), the shape of ``y_pred``.
            y_pred: predictions in ``[0, 1]`` (or scores, with ``thresholds=0``).
            sample_weight: weights of rank 0, of ``y_true``'s rank, or one less.
        """
        key = "fp" if self._second == "false_positives" else "fn"
        update_confusion_matrix_variables(
            self,
            {"tp": "true_positives", key: self._second},
            y_true,
            y_pred,
            thresholds=self.thresholds,
            top_k=self.top_k,
            class_id=self.class_id,
            sample_weight=sample_weight,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly,
        )

    def result(self) -> Tensor:
        tp = self.true_positives
        value = divide_no_nan(tp, tp + getattr(self, self._second))
        return value[0] if len(self.thresholds) == 1 else value

    def get_config(self) -> dict[str, Any]:
        thresholds = self.init_thresholds
        if isinstance(thresholds, tuple):
            thresholds = list(thresholds)
        return {
            **super().get_config(),
            "thresholds": thresholds,
            "top_k": self.top_k,
            "class_id": self.class_id,
        }


class Precision(_PrecisionRecallBase):
    """``TP / (TP + FP)``: the fraction of positive predictions that are correct.

    Args:
        thresholds: a float or a list of floats in ``[0, 1]``; ``y_pred > t`` is a positive
            prediction. One value per threshold (a vector if a list is given). Default
            0.5, or (with ``top_k``) no threshold.
        top_k: only the ``top_k`` highest predictions of each sample count as positive.
        class_id: compute the binary metric for this class (column) only.
        name, dtype: as :class:`~nnkit.metrics.Metric`.

    Example:
        >>> m = Precision(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); round(float(m.result()), 4)
        0.6667
    """

    _second = "false_positives"


class Recall(_PrecisionRecallBase):
    """``TP / (TP + FN)``: the fraction of positive labels predicted positive.

    Arguments as :class:`Precision`.

    Example:
        >>> m = Recall(); m.update_state([0, 1, 1, 1], [1, 0, 1, 1]); round(float(m.result()), 4)
        0.6667
    """

    _second = "false_negatives"
