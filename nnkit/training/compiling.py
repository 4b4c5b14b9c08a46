"""``Compiling``: ``Model.compile`` and what it sets up (the optimizer, the loss and the
metrics a model trains and evaluates with)."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.jit import compile as jit_compile_fn
from nnkit.optim import Optimizer
from nnkit.training.compile_utils import (
    CompileConfig,
    check_optimizer,
    make_optimizer,
    resolve_loss,
    resolve_metrics,
)

__all__ = ["Compiling"]


class Compiling:
    """Mixin of :class:`~nnkit.training.Trainer`: ``compile``, the compiled optimizer,
    and the compiled loss and metrics of one batch."""

    _compiled: CompileConfig | None = None

    # ------------------------------------------------------------------ compile
    def compile(
        self,
        optimizer: Any = "rmsprop",
        loss: Any = None,
        loss_weights: Any = None,
        metrics: Any = None,
        weighted_metrics: Any = None,
        *,
        lr: float | None = None,
        jit_compile: bool | str = "auto",
    ) -> None:
        """Configure the model for training.

        Args:
            optimizer: a name (``'sgd'``, ``'adam'``, ``'adamw'``, ``'rmsprop'``,
                ``'adagrad'``: Keras's optimizer of that name from :mod:`nnkit.optimizers`,
                with Keras's defaults and update rule), an
                :class:`~nnkit.optim.Optimizer` over this model's parameters, or a
                callable ``params -> Optimizer`` (e.g. ``functools.partial(SGD, lr=0.1)``).
                By name or callable, it is created when the model is built, so a lazily
                built model may be compiled before its first batch.
            loss: a name (``'cross_entropy'``, ``'sparse_categorical_crossentropy'``,
                ``'categorical_crossentropy'``, ``'mse'``, ``'mae'``, ``'bce'``,
                ``'bce_with_logits'``, ``'huber'``, ``'nll'``), a callable
                ``loss(y_pred, y_true) -> Tensor`` (e.g. a loss module), or a list of these,
                one per output of a multi-output model.
            loss_weights: with a list of losses, one weight each (the total loss is the
                weighted sum); with one loss, a single factor.
            metrics: a list of names of nnkit's metric functions (``'accuracy'``/``'acc'``,
                ``'binary_accuracy'``, ``'mae'``, ``'mse'``, ``'top_k_accuracy'``; batch
                means averaged over the epoch), names of :mod:`nnkit.metrics` (``'auc'``,
                ``'precision'``, ``'recall'``, ``'f1_score'``, ...), ``nnkit.metrics.Metric``
                objects (stateful: exact over the epoch) or callables
                ``metric(y_pred, y_true)``; logged under the name (or ``__name__``).
            weighted_metrics: names or Metric objects computed with the batches' sample
                weights (``sample_weight``/``class_weight`` of ``fit``).
            lr: the learning rate of an optimizer given by name or callable.
            jit_compile: Keras's flag. ``True`` runs ``train_step``, ``test_step`` and
                ``predict_step`` of ``fit``/``evaluate``/``predict`` through
                :func:`nnkit.compile` (recorded once, replayed as a kernel program; a
                step that cannot be replayed runs eagerly, with a warning naming why;
                not with a distributed ``fit``). ``False`` and ``"auto"`` (the default)
                run them eagerly: this version does not pick compilation by itself.

        Raises:
            ValueError: for an unknown optimizer, loss or metric name (the message lists
                the valid ones), ``lr`` with an optimizer instance, ``loss_weights``
                that do not match the losses, or a ``jit_compile`` other than True, False
                or ``"auto"``.
            TypeError: for an optimizer, loss or metric of an unsupported type.

        Example:
            >>> model = nnkit.Sequential(nn.Dense(16, activation="relu"), nn.Dense(3))
            >>> model.compile("adam", "cross_entropy", metrics=["accuracy"], lr=3e-3)
            >>> x, y = nnkit.randn(16, 4), nnkit.randint(0, 3, (16,))
            >>> history = model.fit(x, y, epochs=1, verbose=0)  # the optimizer is made here
            >>> type(model.optimizer), model.optimizer.param_groups[0]["lr"]
            (<class 'nnkit.optimizers.adam.Adam'>, 0.003)
            >>> sorted(history.history)
            ['accuracy', 'loss']
        """
        check_optimizer(optimizer, lr)
        if jit_compile is not True and jit_compile is not False and jit_compile != "auto":
            raise ValueError(f"jit_compile must be True, False or 'auto', got {jit_compile!r}")
        resolved_loss = resolve_loss(loss)
        weights = self._check_loss_weights(resolved_loss, loss_weights)
        metric_list = resolve_metrics(metrics)
        taken = {name for name, _ in metric_list}
        for name, fn in resolve_metrics(weighted_metrics, weighted=True):
            if name in taken:  # Keras's prefix for a metric both plain and weighted
                name = fn.name = f"weighted_{name}"
            metric_list.append((name, fn))
        config = CompileConfig(optimizer, lr, resolved_loss, weights, metric_list)
        config.jit_compile = jit_compile
        self.__dict__.pop("_jit_steps", None)
        if isinstance(optimizer, Optimizer):
            config.optimizer = optimizer
        elif isinstance(optimizer, str):  # made now, as Keras does; built on the first fit
            config.optimizer = make_optimizer(optimizer, lr, None)
        self._compiled = config

    @staticmethod
    def _check_loss_weights(loss: Any, loss_weights: Any) -> list[float] | None:
        if loss_weights is None:
            return None
        weights = [
            float(w)
            for w in (loss_weights if isinstance(loss_weights, (list, tuple)) else [loss_weights])
        ]
        expected = len(loss) if isinstance(loss, list) else 1
        if len(weights) != expected:
            raise ValueError(
                f"loss_weights has {len(weights)} entries but there are {expected} losses"
            )
        return weights

    @property
    def compiled(self) -> bool:
        """Whether :meth:`compile` has been called."""
        return self._compiled is not None

    @property
    def optimizer(self) -> Any:
        """The optimizer (None before compile, or before a lazy model is built)."""
        return None if self._compiled is None else self._compiled.optimizer

    @optimizer.setter
    def optimizer(self, value: Any) -> None:
        self._require_compiled("setting the optimizer")
        self._compiled.optimizer = value

    def _step_fn(self, name: str) -> Any:
        """``train_step``/``test_step``/``predict_step``, through :func:`nnkit.compile`
        when compiled with ``jit_compile=True`` (one compiled function per step kind)."""
        fn = getattr(self, name)
        if self._compiled is None or self._compiled.jit_compile is not True:
            return fn
        steps = self.__dict__.setdefault("_jit_steps", {})
        compiled = steps.get(name)
        if compiled is None or compiled.__wrapped__ != fn:
            compiled = steps[name] = jit_compile_fn(fn)
        return compiled

    def _jit_state_key(self) -> tuple:
        """Part of a compiled step's guard (``nnkit.jit.guards.state_key``): the
        stateful metrics' state tensors, which the step's program writes in place."""
        if self._compiled is None:
            return ()
        return tuple(metric.guard_key() for metric in self._compiled.stateful)

    def _require_compiled(self, caller: str) -> CompileConfig:
        if self._compiled is None:
            raise RuntimeError(
                f"You must call compile() first: {type(self).__name__} has no "
                f"optimizer or loss yet ({caller} needs them)"
            )
        return self._compiled

    # ------------------------------------------------------- the compiled loss
    def compute_loss(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        """The compiled loss of one batch (the weighted sum over outputs).

        Args:
            x: the inputs (unused by the default; available to overrides).
            y: the targets.
            y_pred: the model's outputs.
            sample_weight: one weight per sample, or None (Keras's weighting:
                ``sum(w_i * loss_i) / batch_size``). Passed only when the batch has weights
                (``sample_weight``/``class_weight`` of ``fit``), so an override with the
                three-argument signature keeps working without them.

        Returns:
            A 0-d Tensor.

        Raises:
            ValueError: if no loss was compiled, the batch has no targets, or a list of
                losses does not match the number of outputs.
        """
        return self._require_compiled("compute_loss").compute_loss(y, y_pred, sample_weight)

    def compute_metrics(
        self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None
    ) -> dict[str, Any]:
        """The compiled metrics of one batch (on the first output of a multi-output model).

        Stateful metrics are updated with the batch and give their running value;
        ``sample_weight`` weights the ``weighted_metrics``.

        Returns:
            ``{name: value}``, values as 0-d Tensors or numbers.

        Args:
            x: the batch's inputs (unused; Keras's signature).
            y: its targets.
            y_pred: the model's outputs.
            sample_weight: per-sample weights, or None.
        """
        return self._require_compiled("compute_metrics").compute_metrics(y, y_pred, sample_weight)
