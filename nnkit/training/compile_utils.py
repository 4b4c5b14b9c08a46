"""What ``Model.compile`` resolves: optimizers, losses and metrics by name or as objects.

Names follow Keras (``'adam'``, ``'sparse_categorical_crossentropy'``, ``'accuracy'``)
plus the torch-style short forms nnkit uses (``'cross_entropy'``, ``'bce'``). Losses
take ``(y_pred, y_true)`` like every nnkit loss, and models return logits, so
``'cross_entropy'`` and the Keras cross-entropy names all mean
:class:`~nnkit.nn.CrossEntropyLoss` on logits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nnkit import optim
from nnkit.autograd.factories import as_tensor
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.layers import loss as losses
from nnkit.training.metrics import METRICS

__all__ = ["CompileConfig", "resolve_loss", "resolve_metrics", "make_optimizer"]

# Keras's default learning rates for optimizers chosen by name (``compile(lr=...)``
# overrides them); other hyper-parameters keep nnkit's (PyTorch's) defaults.
OPTIMIZERS: dict[str, tuple[type, float]] = {
    "sgd": (optim.SGD, 0.01),
    "adam": (optim.Adam, 1e-3),
    "adamw": (optim.AdamW, 1e-3),
    "rmsprop": (optim.RMSprop, 1e-3),
    "adagrad": (optim.Adagrad, 1e-3),
}

# name -> (loss class, whether the target is cast to the prediction's float dtype/shape)
LOSSES: dict[str, tuple[type, bool]] = {
    "cross_entropy": (losses.CrossEntropyLoss, False),
    "sparse_categorical_crossentropy": (losses.CrossEntropyLoss, False),
    "categorical_crossentropy": (losses.CrossEntropyLoss, True),
    "mse": (losses.MSELoss, True), "mean_squared_error": (losses.MSELoss, True),
    "mae": (losses.L1Loss, True), "mean_absolute_error": (losses.L1Loss, True),
    "bce": (losses.BCELoss, True), "binary_crossentropy": (losses.BCELoss, True),
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


def resolve_metrics(metrics: Any) -> list[tuple[str, Callable]]:
    """``[(log_name, fn), ...]`` for metric names and callables.

    A name logs under itself (``'acc'`` logs ``acc``); a callable under its
    ``__name__`` (or its class name).

    Raises:
        ValueError: for an unknown name or two metrics logging under one name.
        TypeError: for something that is neither a name nor callable.
    """
    if metrics is None:
        return []
    if isinstance(metrics, (str, Callable)) and not isinstance(metrics, (list, tuple)):
        metrics = [metrics]
    resolved = []
    for metric in metrics:
        if isinstance(metric, str):
            if metric not in METRICS:
                raise _unknown("metric", metric, METRICS)
            resolved.append((metric, METRICS[metric]))
        elif callable(metric):
            resolved.append((_name_of(metric), metric))
        else:
            raise TypeError(f"a metric must be a name or a callable; received "
                            f"{type(metric).__name__}")
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
    elif isinstance(optimizer, optim.Optimizer):
        if lr is not None:
            raise ValueError("compile(lr=...) applies to an optimizer given by name; set the "
                             "learning rate on the optimizer instance instead")
    elif not callable(optimizer):
        raise TypeError("optimizer must be a name, an nnkit.optim.Optimizer, or a callable "
                        f"params -> Optimizer; received {type(optimizer).__name__}")


def make_optimizer(spec: Any, lr: float | None, params: list) -> optim.Optimizer:
    """Create the optimizer over ``params`` (an instance is returned as is)."""
    if isinstance(spec, optim.Optimizer):
        return spec
    if isinstance(spec, str):
        cls, default_lr = OPTIMIZERS[spec.lower()]
        return cls(params, lr=default_lr if lr is None else lr)
    return spec(params) if lr is None else spec(params, lr=lr)


@dataclass
class CompileConfig:
    """Everything ``compile`` was given, resolved; the optimizer is made when built.

    Attributes:
        optimizer_spec: the name, instance or factory given.
        lr: the learning rate for a named optimizer (None: its default).
        loss: the loss callable, or a list of them, one per output.
        loss_weights: one weight per output loss (None: all 1).
        metrics: ``(log_name, fn)`` pairs.
        optimizer: the created optimizer (None until the model is built).
    """

    optimizer_spec: Any
    lr: float | None
    loss: Any
    loss_weights: Sequence[float] | None
    metrics: list[tuple[str, Callable]] = field(default_factory=list)
    optimizer: optim.Optimizer | None = None

    def to_json(self) -> str:
        """The configuration as JSON text (names of objects, not the objects)."""
        loss = ([_name_of(item) for item in self.loss] if isinstance(self.loss, list)
                else None if self.loss is None else _name_of(self.loss))
        return json.dumps({
            "optimizer": _name_of(self.optimizer_spec), "lr": self.lr, "loss": loss,
            "loss_weights": None if self.loss_weights is None else list(self.loss_weights),
            "metrics": [name for name, _ in self.metrics]})

    def compute_loss(self, y: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        """The loss of one batch: ``loss(y_pred, y)``, or the weighted sum over outputs.

        With ``sample_weight`` (one weight per sample), each output's loss is Keras's
        ``sum_over_batch_size`` of the weighted per-sample losses: ``sum(w_i * l_i) / N``,
        where ``l_i`` is sample ``i``'s loss averaged over its other dimensions.

        Raises:
            ValueError: if there is no loss or no target, a list of losses does not
                match the number of outputs, or sample weights meet a loss that cannot
                give one value per sample.
        """
        if self.loss is None:
            raise ValueError("No loss to compute: pass loss=... to compile(), or override "
                             "train_step()/compute_loss()")
        if y is None:
            raise ValueError("The batch has no targets: fit/evaluate need y (or (x, y) batches)")
        def one(fn: Callable, p: Any, t: Any) -> Tensor:
            return fn(p, t) if sample_weight is None else weighted_loss(fn, p, t, sample_weight)

        if not isinstance(self.loss, list):
            loss = one(self.loss, y_pred, y)
            return loss if self.loss_weights is None else loss * self.loss_weights[0]
        preds, targets = _as_tuple(y_pred), _as_tuple(y)
        if not len(preds) == len(targets) == len(self.loss):
            raise ValueError(f"compile() got {len(self.loss)} losses but the model returned "
                             f"{len(preds)} outputs for {len(targets)} targets")
        weights = self.loss_weights or [1.0] * len(preds)
        terms = [w * one(fn, p, t) for w, fn, p, t in zip(weights, self.loss, preds, targets)]
        return sum(terms[1:], terms[0])

    def compute_metrics(self, y: Any, y_pred: Any) -> dict[str, Any]:
        """Every metric of one batch, on the first output of a multi-output model."""
        if not self.metrics or y is None:
            return {}
        y_pred, y = _as_tuple(y_pred)[0], _as_tuple(y)[0]
        with no_grad():
            return {name: fn(y_pred.detach(), y) for name, fn in self.metrics}


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
        raise ValueError("sample_weight and class_weight need the loss of each sample: give "
                         "compile() a loss by name or an nnkit loss module (one with "
                         f"reduction=); got {_name_of(loss)}")
    previous, module.reduction = module.reduction, "none"
    try:
        values = loss(y_pred, y_true)
    finally:
        module.reduction = previous
    if values.ndim == 0:
        raise ValueError(f"sample_weight: the loss {_name_of(loss)} gave one value for the "
                         "batch with reduction='none', not one per sample")
    if values.ndim > 1:
        values = values.mean(dim=tuple(range(1, values.ndim)))
    weights = as_tensor(sample_weight, device=values.device)
    if weights.numel() != values.shape[0]:
        raise ValueError(f"sample_weight of shape {tuple(weights.shape)} does not give one weight "
                         f"to each of the batch's {values.shape[0]} samples")
    return (values * weights.to(dtype=values.dtype).reshape(values.shape)).mean()


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)
