"""AUC: the area under the ROC or precision-recall curve, Keras 3's bucketed estimate.

Keras does not compute the exact (rank-based) AUC that ``sklearn.metrics.roc_auc_score``
gives. It counts TP/FP/TN/FN at ``num_thresholds`` fixed thresholds —
``[-1e-7, 1/(T-1), 2/(T-1), ..., (T-2)/(T-1), 1 + 1e-7]`` — and sums a Riemann
approximation of the curve through those points: with ``summation_method=
'interpolation'`` the ROC area is the trapezoid rule
``sum_i (FPR_i - FPR_{i+1}) * (TPR_i + TPR_{i+1}) / 2`` and the PR area uses Davis &
Goadrich's interpolation. Predictions closer together than ``1/(T-1)`` share a bucket
and count as tied, so the value differs from the exact AUC by up to about the fraction
of positive/negative pairs that fall in a common bucket (typically ~1e-3 with the
default 200 thresholds). nnkit reproduces Keras's algorithm (and so Keras's values), not
scikit-learn's. The state (counts per threshold) is a sum over samples, so it is exact
over an epoch and mergeable across ranks.
"""

from __future__ import annotations

import numbers
from typing import Any

from nnkit.autograd.factories import tensor
from nnkit.autograd.ops import where
from nnkit.autograd.ops.elementwise import sigmoid
from nnkit.autograd.tensor import Tensor
from nnkit.metrics.base import Metric, divide_no_nan, to_tensor
from nnkit.metrics.confusion import (
    EPSILON,
    _check_thresholds,
    is_evenly_distributed_thresholds,
    update_confusion_matrix_variables,
)

__all__ = ["AUC"]

_CURVES = {"roc": "ROC", "pr": "PR", "prgain": "PRGAIN"}
_SUMMATIONS = ("interpolation", "majoring", "minoring")
_STATE = ("true_positives", "false_positives", "true_negatives", "false_negatives")


class AUC(Metric):
    """Approximate AUC (area under the ROC or PR curve) over bucketed thresholds.

    Args:
        num_thresholds: how many thresholds to use (> 1; default 200). Ignored when
            ``thresholds`` is given.
        curve: ``'ROC'`` (default), ``'PR'`` (precision-recall) or ``'PRGAIN'``.
        summation_method: ``'interpolation'`` (default: trapezoids for ROC, Davis &
            Goadrich for PR), ``'minoring'`` or ``'majoring'`` (lower/upper Riemann sums).
        name, dtype: as :class:`~nnkit.metrics.Metric`.
        thresholds: explicit thresholds in ``[0, 1]`` (the endpoints ``-1e-7`` and
            ``1 + 1e-7`` are added; ``num_thresholds`` becomes ``len(thresholds) + 2``).
        multi_label: compute one AUC per label (last dim of 2-D inputs) and average them;
            when False (default) every element is one prediction.
        num_labels: the number of labels, to build the state before any data
            (``multi_label`` only; otherwise it is taken from the first batch).
        label_weights: non-negative weights per label: for ``multi_label`` the weights
            of the label AUCs in their average, otherwise weights of each label's
            predictions in the flattened counts.
        from_logits: ``y_pred`` are logits (a sigmoid is applied first).

    Example:
        >>> m = AUC(num_thresholds=3)
        >>> m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9]); float(m.result())
        0.75
    """

    def __init__(
        self,
        num_thresholds: int = 200,
        curve: str = "ROC",
        summation_method: str = "interpolation",
        name: str | None = None,
        dtype: Any = None,
        thresholds: Any = None,
        multi_label: bool = False,
        num_labels: int | None = None,
        label_weights: Any = None,
        from_logits: bool = False,
    ) -> None:
        if not isinstance(curve, str) or curve.lower() not in _CURVES:
            raise self._error("curve", "expected one of 'ROC', 'PR', 'PRGAIN'", curve)
        if not isinstance(summation_method, str) or summation_method.lower() not in _SUMMATIONS:
            raise self._error(
                "summation_method",
                "expected one of 'interpolation', 'majoring', 'minoring'",
                summation_method,
            )
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            inner = sorted(_check_thresholds(self, thresholds))
            self.num_thresholds = len(inner) + 2
            self._thresholds_distributed_evenly = is_evenly_distributed_thresholds(
                [0.0] + inner + [1.0]
            )
        else:
            if (
                isinstance(num_thresholds, bool)
                or not isinstance(num_thresholds, numbers.Integral)
                or num_thresholds <= 1
            ):
                raise self._error("num_thresholds", "it must be an integer > 1", num_thresholds)
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self._thresholds_distributed_evenly = True
        if num_labels is not None:
            if not multi_label:
                raise self._error(
                    "num_labels", "it is needed only when `multi_label` is True", num_labels
                )
            if (
                isinstance(num_labels, bool)
                or not isinstance(num_labels, numbers.Integral)
                or num_labels < 1
            ):
                raise self._error("num_labels", "it must be a positive integer", num_labels)
        # endpoints below 0 and above 1 absorb floating point imprecision
        self._thresholds = [0.0 - EPSILON] + inner + [1.0 + EPSILON]
        self.curve = _CURVES[curve.lower()]
        self.summation_method = summation_method.lower()
        super().__init__(name=name, dtype=dtype)
        self.multi_label = bool(multi_label)
        self.num_labels = num_labels
        self._label_weights_init = label_weights
        self.label_weights = None
        if label_weights is not None:
            self.label_weights = to_tensor(label_weights, self.dtype)
            if self.label_weights.ndim != 1 or bool((self.label_weights < 0).any().item()):
                raise self._error(
                    "label_weights", "expected a 1-D list of non-negative weights", label_weights
                )
        self._from_logits = bool(from_logits)
        self._built = False
        self._num_labels: int | None = None
        if self.multi_label:
            if num_labels:
                self._build((None, num_labels))
        else:
            self._build(None)

    @property
    def thresholds(self) -> list[float]:
        """The thresholds, endpoints included."""
        return list(self._thresholds)

    def _build(self, shape: Any) -> None:
        if self.multi_label:
            if len(shape) != 2:
                raise ValueError(
                    f"AUC ({self.name!r}): `y_pred` must have rank 2 when "
                    f"`multi_label=True`; got shape {tuple(shape)}"
                )
            self._num_labels = int(shape[1])
            var_shape: tuple[int, ...] = (self.num_thresholds, self._num_labels)
        else:
            var_shape = (self.num_thresholds,)
        for name in _STATE:
            self.add_variable(var_shape, name=name)
        self._built = True

    def _build_like(self, other: Metric) -> None:
        self._build((None, other._num_labels))  # type: ignore[attr-defined]

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Accumulate the confusion counts at every threshold.

        Args:
            y_true: labels (cast to bool), the shape of ``y_pred``.
            y_pred: probabilities in ``[0, 1]`` (logits with ``from_logits=True``).
            sample_weight: weights of rank 0, of ``y_true``'s rank, or one less.
        """
        y_pred = to_tensor(y_pred, self.dtype)
        if not self._built:
            self._build(tuple(y_pred.shape))
        if self._from_logits:
            y_pred = sigmoid(y_pred)
        update_confusion_matrix_variables(
            self,
            {
                "tp": "true_positives",
                "tn": "true_negatives",
                "fp": "false_positives",
                "fn": "false_negatives",
            },
            y_true,
            y_pred,
            self._thresholds,
            sample_weight=sample_weight,
            multi_label=self.multi_label,
            label_weights=None if self.multi_label else self.label_weights,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly,
        )

    def _average_labels(self, by_label: Tensor) -> Tensor:
        if self.label_weights is None:
            return by_label.mean()
        lw = self.label_weights.to(by_label.device)
        return divide_no_nan((by_label * lw).sum(), lw.sum())

    def interpolate_pr_auc(self) -> Tensor:
        """The PR-AUC by Davis & Goadrich's interpolation (Keras's closed form): within
        each interval TP and P = TP + FP vary linearly, and the area is
        ``slope * (dTP + intercept * log(P_A / P_B)) / (TP_B + FN_B)``.

        Returns:
            A 0-d Tensor: the area under the precision-recall curve.
        """
        n = self.num_thresholds
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        dtp = tp[: n - 1] - tp[1:]
        p = tp + fp
        dp = p[: n - 1] - p[1:]
        prec_slope = divide_no_nan(dtp, dp.clamp(min=0.0))
        intercept = tp[1:] - prec_slope * p[1:]
        both = (p[: n - 1] > 0) & (p[1:] > 0)
        ratio = divide_no_nan(p[: n - 1], p[1:].clamp(min=0.0))
        safe_ratio = where(both, ratio, 1.0)
        increment = divide_no_nan(
            prec_slope * (dtp + intercept * safe_ratio.log()), (tp[1:] + fn[1:]).clamp(min=0.0)
        )
        if self.multi_label:
            return self._average_labels(increment.sum(0))
        return increment.sum()

    def result(self) -> Tensor:
        if not self._built:  # nothing seen (multi_label without num_labels)
            return tensor(0.0, dtype=self.dtype)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self.interpolate_pr_auc()
        n = self.num_thresholds
        tp, fp = self.true_positives, self.false_positives
        tn, fn = self.true_negatives, self.false_negatives
        recall = divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = divide_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, divide_no_nan(tp, tp + fp)
        else:  # PRGAIN
            scaling = divide_no_nan(tp + fn, tn + fp)
            recall_gain = 1.0 - scaling * divide_no_nan(fn, tp)
            precision_gain = 1.0 - scaling * divide_no_nan(fp, tp)
            no_tp = tp == 0
            recall_gain = where(no_tp, 0.0, recall_gain).clamp(min=0.0)
            precision_gain = where(no_tp, 1.0, precision_gain)
            x, y = recall_gain, precision_gain
        if self.summation_method == "interpolation":
            heights = (y[: n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = y[: n - 1].minimum(y[1:])
        else:
            heights = y[: n - 1].maximum(y[1:])
        riemann = (x[: n - 1] - x[1:]) * heights
        if self.multi_label:
            return self._average_labels(riemann.sum(0))
        return riemann.sum()

    def reset_state(self) -> None:
        if self._built:
            super().reset_state()

    def get_config(self) -> dict[str, Any]:
        lw = self._label_weights_init
        if lw is not None and not isinstance(lw, list):
            lw = to_tensor(lw).tolist()
        config = {
            "num_thresholds": self.num_thresholds,
            "curve": self.curve,
            "summation_method": self.summation_method,
            "multi_label": self.multi_label,
            "num_labels": self.num_labels,
            "label_weights": lw,
            "from_logits": self._from_logits,
        }
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return {**super().get_config(), **config}
