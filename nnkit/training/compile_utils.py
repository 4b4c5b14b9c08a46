"""What ``Model.compile`` resolves: optimizers, losses and metrics by name or as objects.

Names follow Keras (``'adam'``, ``'sparse_categorical_crossentropy'``, ``'accuracy'``)
plus the torch-style short forms nnkit uses (``'cross_entropy'``, ``'bce'``). Losses
take ``(y_pred, y_true)`` like every nnkit loss, and models return logits, so
``'cross_entropy'`` and the Keras cross-entropy names all mean
:class:`~nnkit.nn.CrossEntropyLoss` on logits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nnkit.autograd.factories import as_tensor
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.layers import loss as losses
from nnkit.metrics import Metric, get_for_outputs
from nnkit.metrics import get as get_metric
from nnkit.optim import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop
from nnkit.optimizers import get as get_optimizer
from nnkit.training.metrics import METRICS

__all__ = ["CompileConfig", "resolve_loss", "resolve_metrics", "make_optimizer"]

# The PyTorch-style optimizers the CLI builds by name (``optimizer: {name: adam}``), with
# Keras's default learning rates; other hyper-parameters keep PyTorch's defaults.
# ``compile('adam')`` creates Keras's (:mod:`nnkit.optimizers`) instead.
OPTIMIZERS: dict[str, tuple[type, float]] = {
    "sgd": (SGD, 0.01),
    "adam": (Adam, 1e-3),
    "adamw": (AdamW, 1e-3),
    "rmsprop": (RMSprop, 1e-3),
    "adagrad": (Adagrad, 1e-3),
}

# name -> (loss class, whether the target is cast to the prediction's float dtype/shape)
LOSSES: dict[str, tuple[type, bool]] = {
    "cross_entropy": (losses.CrossEntropyLoss, False),
    "sparse_categorical_crossentropy": (losses.CrossEntropyLoss, False),
    "categorical_crossentropy": (losses.CrossEntropyLoss, True),
    "mse": (losses.MSELoss, True),
    "mean_squared_error": (losses.MSELoss, True),
    "mae": (losses.L1Loss, True),
    "mean_absolute_error": (losses.L1Loss, True),
    "bce": (losses.BCELoss, True),
    "binary_crossentropy": (losses.BCELoss, True),
    "bce_with_logits": (losses.BCEWithLogitsLoss, True),
    "huber": (losses.HuberLoss, True),
    "nll": (losses.NLLLoss, False),
}


def _unknown(kind: str, name: Any, valid: Sequence[str]) -> ValueError:
    return ValueError(f"Unknown {kind} {name!r}; valid names are: {', '.join(sorted(valid))}")


def _name_of(obj: Any) -> str:
    if isinstance(obj, str):
        return obj
    if isinstance(obj, NamedLoss):
        return obj.name
    return getattr(obj, "__name__", type(obj).__name__)


class NamedLoss:
    """A loss chosen by name: calls ``loss(y_pred, y_true)`` after adapting the target.

    For regression and binary losses an integer target becomes the prediction's float
    dtype, and a target with as many elements as the prediction takes its shape (so a
    ``(N,)`` target fits an ``(N, 1)`` output).

    Args:
        name: the name given to ``compile``.
    """

    def __init__(self, name: str) -> None:
        if name not in LOSSES:
            raise _unknown("loss", name, LOSSES)
        loss_cls, self.float_target = LOSSES[name]
        self.name, self.loss = name, loss_cls()

    def __call__(self, y_pred: Tensor, y_true: Tensor) -> Tensor:
        if self.float_target and isinstance(y_true, Tensor):
            if y_true.dtype != y_pred.dtype:
                y_true = y_true.to(dtype=y_pred.dtype)
            if y_true.shape != y_pred.shape and y_true.numel() == y_pred.numel():
                y_true = y_true.reshape(y_pred.shape)
        return self.loss(y_pred, y_true)

    def __repr__(self) -> str:
        return f"NamedLoss({self.name!r})"


def resolve_loss(loss: Any) -> Callable | list[Callable] | None:
    """A loss name, callable, or a list of them (one per model output).

    Args:
        loss: a name, a callable ``loss(y_pred, y_true)``, a list of them, or None.

    Returns:
        A callable, a list of callables, or None.

    Raises:
        ValueError: for an unknown name.
        TypeError: for something that is neither a name nor callable.
    """
    if loss is None:
        return None
    if isinstance(loss, (list, tuple)):
        return [resolve_loss(item) for item in loss]
    if isinstance(loss, str):
        return NamedLoss(loss)
    if not callable(loss):
        raise TypeError(f"loss must be a name or a callable; received {type(loss).__name__}")
    return loss


class StatefulMetric:
    """A :class:`nnkit.metrics.Metric` of ``compile``: updated batch after batch, reset at
    each epoch and each evaluation, its value exact over all samples seen (not a mean of
    batch means). A name is resolved at the first batch, from the targets' and outputs'
    shapes as Keras does (``'accuracy'`` of class indices is sparse categorical accuracy).

    Args:
        name: the log name.
        identifier: a Metric, or a name for :func:`nnkit.metrics.get_for_outputs`.
        weighted: a ``weighted_metrics`` entry (updated with the sample weights).
    """

    def __init__(self, name: str, identifier: Any, *, weighted: bool) -> None:
        self.name, self.identifier, self.weighted = name, identifier, weighted
        self.metric = identifier if isinstance(identifier, Metric) else None
        self._pending: list | None = None  # restored state for a metric not resolved yet

    @property
    def pending(self) -> bool:
        """Whether restored state waits for the metric to be resolved."""
        return self._pending is not None

    def resolve(self, y: Any, y_pred: Any) -> None:
        """Resolve a metric given by name from a batch's targets and outputs (nothing
        is added), then apply the restored state, if any."""
        if self.metric is None:
            self.metric = get_for_outputs(self.identifier, y, y_pred)
        if self._pending is not None:
            self.metric.update_state(y[:0], y_pred[:0])  # creates lazily made state
            self.metric.set_variables(self._pending)
            self._pending = None

    def update(self, y: Any, y_pred: Any, sample_weight: Any) -> None:
        """Add one batch (``sample_weight`` is ignored unless ``weighted``)."""
        self.resolve(y, y_pred)
        weight = sample_weight if self.weighted else None
        self.metric.update_state(y, y_pred, sample_weight=weight)

    def reset(self) -> None:
        """Forget every sample seen."""
        self._pending = None
        if self.metric is not None:
            self.metric.reset_state()

    def result(self) -> Any:
        """The value over every sample since the last reset (NaN before any): a float,
        or for a metric with several values (``F1Score(average=None)``, ``Precision``
        with a list of thresholds) a NumPy array of them, as Keras logs it."""
        if self.metric is None or not self.metric.variables:
            return float("nan")
        value = self.metric.result().detach()
        return float(value.item()) if value.ndim == 0 else value.numpy().copy()

    def value(self) -> Any:
        """:meth:`result` as a detached Tensor (0-d, or a vector), without reading it
        into Python (what a step returns; a compiled step can replay it); NaN before
        any sample."""
        metric = self.metric
        if metric is None or not metric.variables:
            return float("nan")
        return metric.result().detach()

    def guard_key(self) -> tuple:
        """What a compiled step depends on (see ``Model._jit_state_key``): the metric
        resolved or not, pending restored state, the identity of each state tensor."""
        metric = self.metric
        if metric is None:
            return (None, self._pending is not None)
        ids = tuple((id(v._impl), id(v._impl.data)) for v in metric.variables)
        return (id(metric), self._pending is not None, ids)

    def state(self) -> list:
        """The metric's variables as arrays (a checkpoint keeps them mid-epoch)."""
        if self._pending is not None:
            return list(self._pending)
        return (
            []
            if self.metric is None
            else [v.detach().numpy().copy() for v in self.metric.variables]
        )

    def load_state(self, arrays: list) -> None:
        """Restore :meth:`state` (applied at the first batch if not resolved yet)."""
        self.reset()
        if not arrays:
            return
        if self.metric is None or not self.metric.variables:
            self._pending = list(arrays)
        else:
            self.metric.set_variables(list(arrays))

    def allreduce(self, comm: Any) -> None:
        """Sum the variables over the ranks of ``comm`` (every rank must hold them)."""
        if self.metric is not None:
            for variable in self.metric.variables:
                comm.allreduce_(variable)


def resolve_metrics(metrics: Any, weighted: bool = False) -> list[tuple[str, Any]]:
    """``[(log_name, fn or StatefulMetric), ...]`` for ``compile``'s metrics.

    Names of nnkit's metric functions (``'accuracy'``, ``'mae'``, ...; means of batch
    values, exact for these) and callables ``fn(y_pred, y_true)`` are functions; other
    names (``'auc'``, ``'precision'``, ...) and :class:`nnkit.metrics.Metric` objects are
    stateful. Every ``weighted_metrics`` entry is stateful. A name logs under itself
    (``'acc'`` logs ``acc``); a callable under its ``__name__``, a Metric under its name.

    Args:
        metrics: a name, callable or Metric, or a list (or None).
        weighted: make every entry stateful (for ``weighted_metrics``).

    Returns:
        The list of ``(log_name, metric)`` pairs.

    Raises:
        ValueError: for an unknown name or two metrics logging under one name.
        TypeError: for something that is neither a name, a Metric nor callable.
    """
    if metrics is None:
        return []
    if isinstance(metrics, (str, Callable, Metric)) and not isinstance(metrics, (list, tuple)):
        metrics = [metrics]
    resolved = []
    for metric in metrics:
        if isinstance(metric, Metric):
            resolved.append((metric.name, StatefulMetric(metric.name, metric, weighted=weighted)))
        elif isinstance(metric, str):
            if metric in METRICS and not weighted:
                resolved.append((metric, METRICS[metric]))
                continue
            try:
                get_metric(metric)
            except ValueError as err:
                raise ValueError(
                    f"Unknown metric {metric!r}: neither one of nnkit's metric "
                    f"functions ({', '.join(sorted(METRICS))}) nor a name of "
                    f"nnkit.metrics ({err})"
                ) from None
            resolved.append((metric, StatefulMetric(metric, metric, weighted=weighted)))
        elif callable(metric) and not weighted:
            resolved.append((_name_of(metric), metric))
        else:
            raise TypeError(
                f"a {'weighted ' if weighted else ''}metric must be a name, an "
                f"nnkit.metrics.Metric{'' if weighted else ' or a callable'}; "
                f"received {type(metric).__name__}"
            )
    names = [name for name, _ in resolved]
    if len(set(names)) != len(names) or "loss" in names:
        raise ValueError(f"metrics must log under distinct names other than 'loss'; got {names}")
    return resolved


def check_optimizer(optimizer: Any, lr: float | None) -> None:
    """Validate an optimizer given to ``compile`` before it is created.

    Raises:
        ValueError: for an unknown name, or ``lr`` with an optimizer instance.
        TypeError: for something that is neither a name, an Optimizer nor callable.
    """
    if isinstance(optimizer, str):
        if optimizer.lower() not in OPTIMIZERS:
            raise _unknown("optimizer", optimizer, OPTIMIZERS)
    elif isinstance(optimizer, Optimizer):
        if lr is not None:
            raise ValueError(
                "compile(lr=...) applies to an optimizer given by name; set the "
                "learning rate on the optimizer instance instead"
            )
    elif not callable(optimizer):
        raise TypeError(
            "optimizer must be a name, an nnkit.optim.Optimizer, or a callable "
            f"params -> Optimizer; received {type(optimizer).__name__}"
        )


def make_optimizer(spec: Any, lr: float | None, params: list | None) -> Optimizer:
    """Create the optimizer over ``params`` (an instance is returned as is).

    Args:
        spec: an optimizer instance, a name (Keras's optimizer of that name, from
            :mod:`nnkit.optimizers`) or a callable ``spec(params[, lr=lr])``.
        lr: the learning rate for a name or callable, or None for its default.
        params: the model's parameters (None: a named optimizer is returned unbuilt);
            those that require grad are given to it (a frozen layer's are not).

    Returns:
        The optimizer.
    """
    if isinstance(spec, Optimizer):
        return spec
    # None: a name at compile, built on the model's parameters later
    trainable = None if params is None else [p for p in params if p.requires_grad]
    if isinstance(spec, str):  # Keras's optimizer of that name, as keras.Model.compile
        optimizer = get_optimizer(spec.lower())
        if lr is not None:
            optimizer.learning_rate = lr
        if trainable is not None:
            optimizer.build(trainable)
        return optimizer
    return spec(trainable) if lr is None else spec(trainable, lr=lr)


@dataclass
class CompileConfig:
    """Everything ``compile`` was given, resolved; the optimizer is made when built.

    Attributes:
        optimizer_spec: the name, instance or factory given.
        lr: the learning rate for a named optimizer (None: its default).
        loss: the loss callable, or a list of them, one per output.
        loss_weights: one weight per output loss (None: all 1).
        metrics: ``(log_name, fn or StatefulMetric)`` pairs, ``weighted_metrics``'
            included.
        optimizer: the optimizer (a name's is made at compile and built with the model;
            a factory's is made when the model is built).
        jit_compile: Keras's flag as given (True: steps run through ``nnkit.compile``).
    """

    optimizer_spec: Any
    lr: float | None
    loss: Any
    loss_weights: Sequence[float] | None
    metrics: list[tuple[str, Any]] = field(default_factory=list)
    optimizer: Optimizer | None = None
    jit_compile: Any = "auto"

    @property
    def stateful(self) -> list[StatefulMetric]:
        """The stateful metrics, in compile order."""
        return [fn for _, fn in self.metrics if isinstance(fn, StatefulMetric)]

    def reset_metrics(self) -> None:
        """Reset every stateful metric (at each epoch and each evaluation)."""
        for metric in self.stateful:
            metric.reset()

    def metric_results(self) -> dict[str, Any]:
        """``{name: value}`` of the stateful metrics over the samples since the reset.

        Returns:
            ``{name: float}`` (a NumPy array for a metric with several values).
        """
        return {metric.name: metric.result() for metric in self.stateful}

    def resolve_pending(self, y: Any, y_pred: Any) -> None:
        """Resolve the stateful metrics that hold restored state, from one batch's
        targets and outputs (as :meth:`compute_metrics` gets them; nothing is added)."""
        y_pred, y = _as_tuple(y_pred)[0].detach(), _as_tuple(y)[0]
        with no_grad():
            for metric in self.stateful:
                if metric.pending:
                    metric.resolve(y, y_pred)

    def compute_loss(self, y: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        """The loss of one batch: ``loss(y_pred, y)``, or the weighted sum over outputs.

        With ``sample_weight`` (one weight per sample), each output's loss is Keras's
        ``sum_over_batch_size`` of the weighted per-sample losses: ``sum(w_i * l_i) / N``,
        where ``l_i`` is sample ``i``'s loss averaged over its other dimensions.

        Args:
            y: the targets (one per output, or one).
            y_pred: the model's outputs.
            sample_weight: one weight per sample, or None.

        Returns:
            The loss, a 0-d Tensor (part of the autograd graph).

        Raises:
            ValueError: if there is no loss or no target, a list of losses does not
                match the number of outputs, or sample weights meet a loss that cannot
                give one value per sample.
        """
        if self.loss is None:
            raise ValueError(
                "No loss to compute: pass loss=... to compile(), or override "
                "train_step()/compute_loss()"
            )
        if y is None:
            raise ValueError("The batch has no targets: fit/evaluate need y (or (x, y) batches)")

        def one(fn: Callable, p: Any, t: Any) -> Tensor:
            return fn(p, t) if sample_weight is None else weighted_loss(fn, p, t, sample_weight)

        if not isinstance(self.loss, list):
            loss = one(self.loss, y_pred, y)
            return loss if self.loss_weights is None else loss * self.loss_weights[0]
        preds, targets = _as_tuple(y_pred), _as_tuple(y)
        if not len(preds) == len(targets) == len(self.loss):
            raise ValueError(
                f"compile() got {len(self.loss)} losses but the model returned "
                f"{len(preds)} outputs for {len(targets)} targets"
            )
        weights = self.loss_weights or [1.0] * len(preds)
        terms = [w * one(fn, p, t) for w, fn, p, t in zip(weights, self.loss, preds, targets)]
        return sum(terms[1:], terms[0])

    def compute_metrics(self, y: Any, y_pred: Any, sample_weight: Any = None) -> dict[str, Any]:
        """Every metric of one batch, on the first output of a multi-output model: the
        batch's value of a metric function, the running value of a stateful metric
        (updated with this batch).

        Args:
            y: the targets.
            y_pred: the model's outputs.
            sample_weight: weights for the ``weighted_metrics``, or None.

        Returns:
            ``{name: value}`` (empty without metrics or targets).
        """
        if not self.metrics or y is None:
            return {}
        y_pred, y = _as_tuple(y_pred)[0].detach(), _as_tuple(y)[0]
        logs = {}
        with no_grad():
            for name, fn in self.metrics:
                if isinstance(fn, StatefulMetric):
                    fn.update(y, y_pred, sample_weight)
                    logs[name] = fn.value()
                else:
                    logs[name] = fn(y_pred, y)
        return logs


def weighted_loss(loss: Callable, y_pred: Tensor, y_true: Any, sample_weight: Any) -> Tensor:
    """``sum(w_i * l_i) / N`` over the ``N`` samples of a batch (Keras's reduction).

    ``l_i`` is sample ``i``'s loss, computed with ``reduction='none'`` (so ``loss`` must
    be a loss named in ``compile`` or an nnkit loss module) and averaged over any
    dimensions after the batch's.

    Raises:
        ValueError: if ``loss`` has no ``reduction``, or the weights do not match the
            samples.
    """
    module = loss.loss if isinstance(loss, NamedLoss) else loss
    if not isinstance(getattr(module, "reduction", None), str):
        raise ValueError(
            "sample_weight and class_weight need the loss of each sample: give "
            "compile() a loss by name or an nnkit loss module (one with "
            f"reduction=); got {_name_of(loss)}"
        )
    previous, module.reduction = module.reduction, "none"
    try:
        values = loss(y_pred, y_true)
    finally:
        module.reduction = previous
    if values.ndim == 0:
        raise ValueError(
            f"sample_weight: the loss {_name_of(loss)} gave one value for the "
            "batch with reduction='none', not one per sample"
        )
    if values.ndim > 1:
        values = values.mean(dim=tuple(range(1, values.ndim)))
    weights = as_tensor(sample_weight, device=values.device)
    if weights.numel() != values.shape[0]:
        raise ValueError(
            f"sample_weight of shape {tuple(weights.shape)} does not give one weight "
            f"to each of the batch's {values.shape[0]} samples"
        )
    return (values * weights.to(dtype=values.dtype).reshape(values.shape)).mean()


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)
