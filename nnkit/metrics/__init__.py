"""Stateful metrics with Keras 3's names, arguments, defaults and values.

Each metric accumulates state over batches with ``update_state(y_true, y_pred,
sample_weight=None)`` (``Mean``/``Sum``: ``update_state(values, sample_weight=None)``),
returns its value with ``result()`` (a 0-d Tensor; a vector for ``F1Score(average=None)``
and for ``Precision``/``Recall`` with a list of thresholds) and starts over with
``reset_state()``. ``metric(y_true, y_pred)`` is ``update_state`` then ``result``.

Distributed / merged evaluation: every state variable (``metric.variables``) is a sum
over the samples seen, so states of disjoint shards add up. Either all-reduce (SUM) each
tensor of ``metric.variables`` and call ``metric.stateless_result(reduced)`` (or
``metric.set_variables(reduced)`` then ``result()``), or combine metric objects with
``metric.merge_state(others)``.

``get(identifier)`` resolves Keras's string names — class names (``'AUC'``), their
snake_case forms (``'auc'``, ``'binary_accuracy'``) and the short aliases (``'acc'``,
``'mse'``, ``'mae'``, ``'bce'``, upper-case too) — to new instances, and
``{"class_name": ..., "config": ...}`` dicts to configured ones.
Note: ``'accuracy'``/``'acc'`` give :class:`Accuracy` (exact equality), as
``keras.metrics.get`` does; ``compile(metrics=['accuracy'])`` in Keras instead picks
Binary/Sparse/CategoricalAccuracy from the shapes of the targets and outputs — that is
:func:`get_for_outputs`, the resolver for ``compile``.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from nnkit.metrics.accuracy import (
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy,
)
from nnkit.metrics.auc import AUC
from nnkit.metrics.base import Mean, MeanMetricWrapper, Metric, Sum, to_snake_case
from nnkit.metrics.confusion import Precision, Recall
from nnkit.metrics.f_score import F1Score, FBetaScore
from nnkit.metrics.probabilistic import (
    BinaryCrossentropy,
    CategoricalCrossentropy,
    SparseCategoricalCrossentropy,
)
from nnkit.metrics.regression import MeanAbsoluteError, MeanSquaredError, RootMeanSquaredError

__all__ = [
    "Metric",
    "Mean",
    "Sum",
    "MeanMetricWrapper",
    "MeanSquaredError",
    "RootMeanSquaredError",
    "MeanAbsoluteError",
    "Accuracy",
    "BinaryAccuracy",
    "CategoricalAccuracy",
    "SparseCategoricalAccuracy",
    "TopKCategoricalAccuracy",
    "SparseTopKCategoricalAccuracy",
    "Precision",
    "Recall",
    "AUC",
    "F1Score",
    "FBetaScore",
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "SparseCategoricalCrossentropy",
    "get",
    "get_for_outputs",
    "serialize",
    "deserialize",
    "ALL_OBJECTS",
    "ALL_OBJECTS_DICT",
]

ALL_OBJECTS: tuple[type[Metric], ...] = (
    Mean,
    Sum,
    MeanSquaredError,
    RootMeanSquaredError,
    MeanAbsoluteError,
    Accuracy,
    BinaryAccuracy,
    CategoricalAccuracy,
    SparseCategoricalAccuracy,
    TopKCategoricalAccuracy,
    SparseTopKCategoricalAccuracy,
    Precision,
    Recall,
    AUC,
    F1Score,
    FBetaScore,
    BinaryCrossentropy,
    CategoricalCrossentropy,
    SparseCategoricalCrossentropy,
)

#: every name ``get`` resolves: class names, snake_case names and Keras's short aliases
ALL_OBJECTS_DICT: dict[str, type[Metric]] = {cls.__name__: cls for cls in ALL_OBJECTS}
ALL_OBJECTS_DICT.update({to_snake_case(cls.__name__): cls for cls in ALL_OBJECTS})
ALL_OBJECTS_DICT.update(
    {
        "acc": Accuracy,
        "ACC": Accuracy,
        "bce": BinaryCrossentropy,
        "BCE": BinaryCrossentropy,
        "mse": MeanSquaredError,
        "MSE": MeanSquaredError,
        "mae": MeanAbsoluteError,
        "MAE": MeanAbsoluteError,
        "rmse": RootMeanSquaredError,
        "RMSE": RootMeanSquaredError,
    }
)


def serialize(metric: Metric) -> dict[str, Any]:
    """``{"module", "class_name", "config", "registered_name"}`` for a metric, as Keras's
    ``serialize_keras_object`` lays it out.

    Args:
        metric: a :class:`Metric`.

    Returns:
        The dict; :func:`deserialize` rebuilds the metric from it.
    """
    if not isinstance(metric, Metric):
        raise ValueError(f"serialize: expected a nnkit.metrics.Metric, got {metric!r}")
    return {
        "module": "nnkit.metrics",
        "class_name": type(metric).__name__,
        "config": metric.get_config(),
        "registered_name": None,
    }


def deserialize(
    config: Mapping[str, Any], custom_objects: Mapping[str, Any] | None = None
) -> Metric:
    """A metric from :func:`serialize`'s dict (``class_name`` + ``config``).

    Args:
        config: a dict written by :func:`serialize`.
        custom_objects: ``{class_name: class}`` for metrics not built into nnkit.

    Returns:
        A new metric.
    """
    if not isinstance(config, Mapping) or "class_name" not in config:
        raise ValueError(
            f"deserialize: expected a dict with 'class_name' and 'config'; got {config!r}"
        )
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or ALL_OBJECTS_DICT.get(name)
    if cls is None:
        raise ValueError(f"deserialize: unknown metric class {name!r}; pass it in `custom_objects`")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier: Any) -> Metric | Callable[..., Any] | None:
    """Resolve a metric identifier to a metric (Keras's ``keras.metrics.get``).

    Args:
        identifier: ``None``; a string name (``'accuracy'``, ``'acc'``, ``'auc'``,
            ``'AUC'``, ``'mse'``, ``'top_k_categorical_accuracy'``, ...); a
            ``{"class_name": ..., "config": ...}`` dict; a :class:`Metric` class
            (instantiated with its defaults) or instance (returned as is); or another
            callable (a metric function, returned as is).

    Returns:
        A new metric instance for names, dicts and classes; ``identifier`` itself for
        instances and functions; ``None`` for ``None``.

    Raises:
        ValueError: an unknown name (with the closest known names) or another object.
    """
    if identifier is None:
        return None
    if isinstance(identifier, Mapping):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = ALL_OBJECTS_DICT.get(identifier)
        if cls is None:
            close = difflib.get_close_matches(identifier, list(ALL_OBJECTS_DICT), n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ValueError(f"Could not interpret metric identifier: {identifier!r}.{hint}")
        return cls()
    if inspect.isclass(identifier) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")


def get_for_outputs(identifier: Any, y_true: Any, y_pred: Any) -> Metric:
    """Resolve a ``compile(metrics=[...])`` entry for one output, as Keras's compile does.

    ``'accuracy'``/``'acc'`` (any case) become :class:`BinaryAccuracy` when ``y_pred``'s
    last dim is 1, :class:`SparseCategoricalAccuracy` when ``y_true`` has lower rank
    than ``y_pred`` (or a last dim of 1 against more classes), and
    :class:`CategoricalAccuracy` otherwise; other identifiers go through :func:`get`,
    and a plain function is wrapped in :class:`MeanMetricWrapper`. A string identifier
    becomes the metric's name (``'acc'`` logs as ``acc``, ``'mse'`` as ``mse``).

    Args:
        identifier: as :func:`get` (not ``None``).
        y_true, y_pred: a batch of targets and outputs (anything with ``.shape``).

    Returns:
        A :class:`Metric` instance named after a string ``identifier``.
    """
    if identifier is None:
        raise ValueError("Expected metric, received `None`")
    if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc"):
        t_shape, p_shape = tuple(y_true.shape), tuple(y_pred.shape)
        t_last = t_shape[-1] if t_shape else 1
        p_last = p_shape[-1] if p_shape else 1
        if p_last == 1:
            metric: Any = BinaryAccuracy(name=identifier)
        elif len(t_shape) < len(p_shape) or (t_last == 1 and p_last > 1):
            metric = SparseCategoricalAccuracy(name=identifier)
        else:
            metric = CategoricalAccuracy(name=identifier)
        return metric
    metric = get(identifier)
    if not isinstance(metric, Metric):
        metric = MeanMetricWrapper(metric)
    if isinstance(identifier, str):
        metric.name = identifier
    return metric
