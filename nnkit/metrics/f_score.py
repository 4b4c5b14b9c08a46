"""F-scores: FBetaScore and F1Score (Keras 3's ``f_score_metrics``).

The state is the weighted TP/FP/FN per class (or in total for ``average='micro'``) plus
the weighted support per class, all sums over samples; the score is computed from them
in ``result()``, so it is exact over an epoch (not a mean of batch scores).
"""

from __future__ import annotations

import numbers
from typing import Any

from nnkit.autograd.factories import tensor
from nnkit.autograd.tensor import Tensor
from nnkit.metrics.base import Metric, to_tensor

__all__ = ["FBetaScore", "F1Score"]

EPSILON = 1e-7  # Keras's backend.epsilon()
_AVERAGES = (None, "micro", "macro", "weighted")
_STATE = ("true_positives", "false_positives", "false_negatives", "intermediate_weights")


class FBetaScore(Metric):
    """``(1 + beta²) * P * R / (beta² * P + R)`` for 2-D (multi-class or multi-label) data.

    Args:
        average: ``None`` (default: one score per class, a vector), ``'micro'`` (counts
            pooled over classes), ``'macro'`` (unweighted mean of the class scores) or
            ``'weighted'`` (mean weighted by each class's support).
        beta: the weight of recall (> 0).
        threshold: predictions above it are positive; ``None`` (default) makes each row's
            highest prediction the positive one (ties all positive, an all-zero row none).
        name, dtype: as :class:`~nnkit.metrics.Metric`.

    Inputs are ``(batch, num_classes)`` one-hot (or multi-hot) labels and scores; the
    state is built at the first ``update_state`` from ``num_classes``.
    """

    def __init__(
        self,
        average: str | None = None,
        beta: float = 1.0,
        threshold: float | None = None,
        name: str = "fbeta_score",
        dtype: Any = None,
    ) -> None:
        if average not in _AVERAGES:
            raise self._error(
                "average", "expected one of None, 'micro', 'macro', 'weighted'", average
            )
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not beta > 0:
            raise self._error("beta", "it must be a number > 0", beta)
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, numbers.Real)
            or not 0.0 < threshold <= 1.0
        ):
            raise self._error(
                "threshold", "it must be None or a number with 0 < threshold <= 1", threshold
            )
        super().__init__(name=name, dtype=dtype)
        self.average = average
        self.beta = float(beta)
        self.threshold = None if threshold is None else float(threshold)
        self.axis = None if average == "micro" else 0
        self._built = False
        self._num_classes: int | None = None

    def _build(self, y_true_shape: tuple[int, ...], y_pred_shape: tuple[int, ...]) -> None:
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2:
            raise ValueError(
                f"{type(self).__name__} ({self.name!r}) expects 2D inputs with "
                f"shape (batch_size, output_dim). Received input shapes: "
                f"y_pred.shape={tuple(y_pred_shape)} and "
                f"y_true.shape={tuple(y_true_shape)}."
            )
        self._num_classes = int(y_pred_shape[-1])
        shape: tuple[int, ...] = () if self.average == "micro" else (self._num_classes,)
        for name in _STATE:
            self.add_variable(shape, name=name)
        self._built = True

    def _build_like(self, other: Metric) -> None:
        n = other._num_classes  # type: ignore[attr-defined]
        self._build((0, n), (0, n))

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Accumulate TP/FP/FN and support.

        Args:
            y_true: 0/1 labels ``(batch, num_classes)``.
            y_pred: scores ``(batch, num_classes)``.
            sample_weight: per-sample ``(batch,)`` or per-entry weights.
        """
        y_pred = to_tensor(y_pred, self.dtype)
        y_true = to_tensor(y_true, self.dtype, y_pred.device)
        if not self._built:
            self._build(tuple(y_true.shape), tuple(y_pred.shape))
        if y_pred.numel() == 0:
            return
        if self.threshold is None:
            row_max = y_pred.amax(-1, keepdim=True)
            # the row's maximum is the prediction; an all-zero row predicts nothing
            predicted = (y_pred >= row_max) & (y_pred.abs() > 1e-9)
        else:
            predicted = y_pred > self.threshold
        y_pred = predicted.to(self.dtype)
        weight = None
        if sample_weight is not None:
            weight = to_tensor(sample_weight, self.dtype, y_pred.device)
            while weight.ndim < y_true.ndim:
                weight = weight.unsqueeze(-1)

        def weighted_sum(values: Tensor) -> Tensor:
            if weight is not None:
                values = values * weight
            return values.sum() if self.axis is None else values.sum(self.axis)

        self._assign_add("true_positives", weighted_sum(y_pred * y_true))
        self._assign_add("false_positives", weighted_sum(y_pred * (1 - y_true)))
        self._assign_add("false_negatives", weighted_sum((1 - y_pred) * y_true))
        self._assign_add("intermediate_weights", weighted_sum(y_true))

    def result(self) -> Tensor:
        if not self._built:
            return tensor(0.0, dtype=self.dtype)
        tp = self.true_positives
        precision = tp / (tp + self.false_positives + EPSILON)
        recall = tp / (tp + self.false_negatives + EPSILON)
        b2 = self.beta**2
        score = precision * recall / (b2 * precision + recall + EPSILON) * (1 + b2)
        if self.average == "weighted":
            weights = self.intermediate_weights / (self.intermediate_weights.sum() + EPSILON)
            return (score * weights).sum()
        if self.average is not None:  # micro, macro
            return score.mean()
        return score

    def reset_state(self) -> None:
        if self._built:
            super().reset_state()

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "average": self.average,
            "beta": self.beta,
            "threshold": self.threshold,
        }


class F1Score(FBetaScore):
    """The F-1 score: harmonic mean of precision and recall (``FBetaScore(beta=1)``).

    Args:
        average: ``None`` (per-class vector), ``'micro'``, ``'macro'`` or ``'weighted'``.
        threshold: ``None`` (each row's highest prediction is positive) or a number in
            ``(0, 1]``.
        name, dtype: as :class:`~nnkit.metrics.Metric`.

    Example:
        >>> m = F1Score(threshold=0.5)
        >>> m.update_state([[1, 1, 1], [1, 0, 0], [1, 1, 0]],
        ...                [[0.2, 0.6, 0.7], [0.2, 0.6, 0.6], [0.6, 0.8, 0.0]])
        >>> [round(v, 4) for v in m.result().tolist()]
        [0.5, 0.8, 0.6667]
    """

    def __init__(
        self,
        average: str | None = None,
        threshold: float | None = None,
        name: str = "f1_score",
        dtype: Any = None,
    ) -> None:
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        del config["beta"]
        return config
