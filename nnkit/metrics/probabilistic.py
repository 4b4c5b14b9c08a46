"""Crossentropy metrics (Keras 3's ``probabilistic_metrics``).

Each is the (weighted) mean over samples of Keras's per-sample loss function:

- probabilities are clipped to ``[1e-7, 1 - 1e-7]`` before the log (categorical ones are
  first renormalised to sum to 1 along ``axis``), as every Keras backend does;
- logits (``from_logits=True``) use the exact log-sigmoid / log-softmax (no clipping), as
  Keras's TensorFlow and PyTorch backends do.

``BinaryCrossentropy`` averages the elementwise loss over the last axis: targets of
shape ``(N, 1)`` give one value per sample. (Keras raises for ``y_true`` of shape
``(N,)`` against ``y_pred`` of shape ``(N, 1)``; nnkit aligns the ranks instead, the
way Keras's other metrics do.) For 1-D ``(N,)`` inputs the last axis is the batch, so
one ``update_state`` call adds the batch mean as one sample, as in Keras.
"""

from __future__ import annotations

import numbers
from typing import Any

from nnkit.autograd.ops.activation import log_softmax, logsigmoid
from nnkit.autograd.tensor import Tensor
from nnkit.metrics.base import (
    MeanMetricWrapper,
    check_class_ids,
    squeeze_or_expand_to_same_rank,
)

__all__ = [
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy",
    "binary_crossentropy",
    "categorical_crossentropy",
    "sparse_categorical_crossentropy",
]

EPSILON = 1e-7  # Keras's backend.epsilon()


def _float_pred(y_pred: Tensor) -> Tensor:
    return y_pred if y_pred.is_floating_point() else y_pred.float()


def binary_crossentropy(
    y_true: Tensor,
    y_pred: Tensor,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Tensor:
    """``mean(-(y log p + (1 - y) log(1 - p)), axis)`` (Keras's ``binary_crossentropy``).

    Args:
        y_true: 0/1 (or soft) targets, the shape of ``y_pred`` after rank alignment.
        y_pred: probabilities (or logits).
        from_logits: ``y_pred`` holds logits rather than probabilities.
        axis: the axis the mean is taken over.
        label_smoothing: squeeze the targets towards 0.5 by this fraction.

    Returns:
        One loss per sample: ``y_pred``'s shape without ``axis``.

    Example:
        >>> binary_crossentropy(nnkit.tensor([[1.0, 0.0]]), nnkit.tensor([[0.9, 0.2]]))
        tensor([0.1643])
    """
    y_pred = _float_pred(y_pred)
    y_true = y_true.to(y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(
            "binary_crossentropy: `y_true` and `y_pred` must have the same "
            f"shape; got {tuple(y_true.shape)} and {tuple(y_pred.shape)}"
        )
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        bce = -(y_true * logsigmoid(y_pred) + (1.0 - y_true) * logsigmoid(-y_pred))
    else:
        p = y_pred.clamp(EPSILON, 1.0 - EPSILON)
        bce = -(y_true * p.log() + (1.0 - y_true) * (1.0 - p).log())
    return bce if bce.ndim == 0 else bce.mean(axis)


def _log_probs(y_pred: Tensor, from_logits: bool, axis: int) -> Tensor:
    if from_logits:
        return log_softmax(y_pred, dim=axis)
    p = y_pred / y_pred.sum(axis, keepdim=True)
    return p.clamp(EPSILON, 1.0 - EPSILON).log()


def categorical_crossentropy(
    y_true: Tensor,
    y_pred: Tensor,
    from_logits: bool = False,
    label_smoothing: float = 0.0,
    axis: int = -1,
) -> Tensor:
    """``-sum(y_true * log(y_pred), axis)`` for one-hot (or soft) targets.

    Args:
        y_true: one-hot (or soft) targets, the shape of ``y_pred``.
        y_pred: probabilities (renormalised along ``axis``) or logits.
        from_logits: ``y_pred`` holds logits rather than probabilities.
        axis: the class axis.
        label_smoothing: mix this fraction of the uniform distribution into the targets.

    Returns:
        One loss per sample: ``y_pred``'s shape without ``axis``.

    Example:
        >>> y_true = nnkit.tensor([[0.0, 1.0, 0.0]])
        >>> categorical_crossentropy(y_true, nnkit.tensor([[0.05, 0.9, 0.05]]))
        tensor([0.1054])
    """
    y_pred = _float_pred(y_pred)
    y_true = y_true.to(y_pred.dtype)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(
            "categorical_crossentropy: `y_true` and `y_pred` must have the "
            f"same shape; got {tuple(y_true.shape)} and {tuple(y_pred.shape)}"
        )
    if y_pred.ndim < 1:
        raise ValueError("categorical_crossentropy: inputs must be at least rank 1")
    if label_smoothing:
        num_classes = y_pred.shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    return -(y_true * _log_probs(y_pred, from_logits, axis)).sum(axis)


def sparse_categorical_crossentropy(
    y_true: Tensor,
    y_pred: Tensor,
    from_logits: bool = False,
    ignore_class: int | None = None,
    axis: int = -1,
) -> Tensor | tuple[Tensor, Tensor]:
    """``-log(y_pred[target])`` for integer targets (Keras's
    ``sparse_categorical_crossentropy``); with ``ignore_class``, ``(values, mask)``.

    Args:
        y_true: integer class ids: ``y_pred``'s shape without ``axis`` (or with it of size 1).
        y_pred: probabilities (renormalised along ``axis``) or logits.
        from_logits: ``y_pred`` holds logits rather than probabilities.
        axis: the class axis.
        ignore_class: a class id whose samples are masked out.

    Returns:
        One loss per sample, or ``(values, mask)`` with ``ignore_class``.

    Example:
        >>> sparse_categorical_crossentropy(nnkit.tensor([1]), nnkit.tensor([[0.05, 0.9, 0.05]]))
        tensor([0.1054])
    """
    y_pred = _float_pred(y_pred)
    if y_true.ndim == y_pred.ndim and y_true.shape[axis] == 1:
        y_true = y_true.squeeze(axis)
    log_prob = _log_probs(y_pred, from_logits, axis).movedim(axis, -1)
    num_classes = log_prob.shape[-1]
    if tuple(y_true.shape) != tuple(log_prob.shape[:-1]):
        raise ValueError(
            "sparse_categorical_crossentropy: `y_true` must have the shape of "
            "`y_pred` without its class axis; got "
            f"{tuple(y_true.shape)} and {tuple(y_pred.shape)}"
        )
    target = y_true.long()
    mask = None
    if ignore_class is not None:
        mask = target != ignore_class
        target = target.masked_fill(~mask, 0)
    check_class_ids(target, num_classes, "sparse_categorical_crossentropy")
    values = -log_prob.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    if mask is None:
        return values
    return values.masked_fill(~mask, 0.0), mask


def _check_from_logits(metric: MeanMetricWrapper, from_logits: Any) -> None:
    if not isinstance(from_logits, bool):
        raise metric._error("from_logits", "it must be True or False", from_logits)


def _check_label_smoothing(metric: MeanMetricWrapper, label_smoothing: Any) -> None:
    if (
        isinstance(label_smoothing, bool)
        or not isinstance(label_smoothing, numbers.Real)
        or not 0 <= label_smoothing <= 1
    ):
        raise metric._error("label_smoothing", "it must be a number in [0, 1]", label_smoothing)


def _check_axis(metric: MeanMetricWrapper, axis: Any) -> None:
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise metric._error("axis", "it must be an integer", axis)


class BinaryCrossentropy(MeanMetricWrapper):
    """The crossentropy between binary labels and predicted probabilities (or logits).

    Args:
        name, dtype: as :class:`~nnkit.metrics.Metric`.
        from_logits: ``y_pred`` are logits.
        label_smoothing: in ``[0, 1]``; labels become ``y * (1 - s) + 0.5 * s``.

    Example:
        >>> m = BinaryCrossentropy()
        >>> m.update_state([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]])
        >>> round(float(m.result()), 5)
        0.81492
    """

    def __init__(
        self,
        name: str = "binary_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        label_smoothing: float = 0,
    ) -> None:
        _check_from_logits(self, from_logits)
        _check_label_smoothing(self, label_smoothing)
        super().__init__(
            binary_crossentropy,
            name=name,
            dtype=dtype,
            from_logits=from_logits,
            label_smoothing=label_smoothing,
        )
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dtype": self.dtype,
            "from_logits": self.from_logits,
            "label_smoothing": self.label_smoothing,
        }


class CategoricalCrossentropy(MeanMetricWrapper):
    """The crossentropy between one-hot labels and predicted distributions (or logits).

    Args:
        name, dtype: as :class:`~nnkit.metrics.Metric`.
        from_logits: ``y_pred`` are logits.
        label_smoothing: in ``[0, 1]``; labels become ``y * (1 - s) + s / num_classes``.
        axis: the class axis (default -1).

    Example:
        >>> m = CategoricalCrossentropy()
        >>> m.update_state([[0, 1, 0], [0, 0, 1]], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
        >>> round(float(m.result()), 5)
        1.17694
    """

    def __init__(
        self,
        name: str = "categorical_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        label_smoothing: float = 0,
        axis: int = -1,
    ) -> None:
        _check_from_logits(self, from_logits)
        _check_label_smoothing(self, label_smoothing)
        _check_axis(self, axis)
        super().__init__(
            categorical_crossentropy,
            name=name,
            dtype=dtype,
            from_logits=from_logits,
            label_smoothing=label_smoothing,
            axis=axis,
        )
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dtype": self.dtype,
            "from_logits": self.from_logits,
            "label_smoothing": self.label_smoothing,
            "axis": self.axis,
        }


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """The crossentropy between integer labels and predicted distributions (or logits).

    Args:
        name, dtype: as :class:`~nnkit.metrics.Metric`.
        from_logits: ``y_pred`` are logits.
        ignore_class: a label value whose samples are left out (weight 0).
        axis: the class axis of ``y_pred`` (default -1).

    Example:
        >>> m = SparseCategoricalCrossentropy()
        >>> m.update_state([1, 2], [[0.05, 0.95, 0], [0.1, 0.8, 0.1]])
        >>> round(float(m.result()), 5)
        1.17694
    """

    def __init__(
        self,
        name: str = "sparse_categorical_crossentropy",
        dtype: Any = None,
        from_logits: bool = False,
        ignore_class: int | None = None,
        axis: int = -1,
    ) -> None:
        _check_from_logits(self, from_logits)
        _check_axis(self, axis)
        if ignore_class is not None and (
            isinstance(ignore_class, bool) or not isinstance(ignore_class, numbers.Integral)
        ):
            raise self._error("ignore_class", "it must be None or an integer", ignore_class)
        super().__init__(
            sparse_categorical_crossentropy,
            name=name,
            dtype=dtype,
            from_logits=from_logits,
            ignore_class=ignore_class,
            axis=axis,
        )
        self.from_logits = from_logits
        self.ignore_class = ignore_class
        self.axis = axis

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dtype": self.dtype,
            "from_logits": self.from_logits,
            "ignore_class": self.ignore_class,
            "axis": self.axis,
        }
