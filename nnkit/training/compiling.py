"""``Compiling``: ``Model.compile`` and what it sets up (the optimizer, the loss and the
metrics a model trains and evaluates with)."""

from __future__ import annotations

import functools
import warnings
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.jit.compiler import CompiledFunction
from nnkit.optim import Optimizer
from nnkit.training.compile_utils import (
    CompileConfig,
    StatefulMetric,
    check_optimizer,
    make_optimizer,
    resolve_loss,
    resolve_metrics,
)

__all__ = ["Compiling", "AUTO_MIN_STEPS"]

#: ``jit_compile="auto"`` compiles the ``train_step`` of a fit that plans at least this
#: many training steps (recording and checking a program costs about 5 to 20 eager
#: steps on the models measured; see docs/guides/compile.rst).
AUTO_MIN_STEPS = 64

_CALLABLES = (FunctionType, MethodType, BuiltinFunctionType, functools.partial)


def _own(obj: Any) -> bool:
    """Whether ``obj`` (a module, a loss, a metric, a function) is nnkit's own code, whose
    Python side effects a replay reproduces (none besides tensor writes)."""
    if isinstance(obj, functools.partial):
        return _own(obj.func)
    if isinstance(obj, (FunctionType, MethodType, BuiltinFunctionType, type)):
        module = getattr(obj, "__module__", None) or ""
    else:
        module = type(obj).__module__
    return module == "nnkit" or module.startswith("nnkit.")


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
        run_eagerly: bool = False,
        steps_per_execution: int = 1,
        jit_compile: bool | str = "auto",
        auto_scale_loss: bool = True,
        *,
        lr: float | None = None,
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
            run_eagerly: Keras's flag: True runs the steps of ``fit``/``evaluate``/
                ``predict`` eagerly, never through :func:`nnkit.compile` (for debugging;
                with ``jit_compile=True`` too, that is disabled with a warning, as in
                Keras). Settable later as ``model.run_eagerly``.
            steps_per_execution: Keras's batches per call of the step function; only 1
                (as with Keras's PyTorch backend): ``jit_compile`` is nnkit's way to cut
                the per-step overhead.
            jit_compile: Keras's flag. ``True`` runs ``train_step``, ``test_step`` and
                ``predict_step`` of ``fit``/``evaluate``/``predict`` through
                :func:`nnkit.compile` (recorded once, replayed as a kernel program; a
                step that cannot be replayed runs eagerly, with a warning naming why;
                not with a distributed ``fit``). ``False`` runs them eagerly.
                ``"auto"`` (the default) compiles ``fit``'s ``train_step`` where that is
                safe and worthwhile: the model is on the CPU, the ``fit`` is not
                distributed and plans at least ``AUTO_MIN_STEPS`` (64) training steps
                (or an unknown number; recording and checking a program cost about 5 to
                20 eager steps on the models measured), every module of the model is an
                nnkit layer whose functions (an activation) are nnkit's, and the loss and
                metrics are nnkit's: a replay does not repeat Python side effects, so a
                layer, loss or metric of your own, or an overridden ``train_step``,
                runs eagerly (pass ``True`` to compile them). ``evaluate``, ``predict``
                and validation run eagerly (a forward pass alone gains too little per
                replay). A step the recording refuses (hooks, anomaly detection,
                ``.item()``) then runs eagerly, silently, and so does every later call of
                that ``fit``. When the ``fit`` returns, its programs are dropped (their
                buffers freed, as an eager step's are). The results are bitwise those of
                ``False`` in every case.
            auto_scale_loss: Keras's flag, which wraps the optimizer in a loss-scaling
                one under a ``"mixed_float16"`` dtype policy; nnkit has no dtype policies,
                so it changes nothing (an optimizer's ``loss_scale_factor`` scales the
                loss by hand).
            lr: the learning rate of an optimizer given by name or callable.

        Raises:
            ValueError: for an unknown optimizer, loss or metric name (the message lists
                the valid ones), ``lr`` with an optimizer instance, ``loss_weights``
                that do not match the losses, a ``jit_compile`` other than True, False
                or ``"auto"``, or a ``steps_per_execution`` other than 1.
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
        if isinstance(steps_per_execution, bool) or steps_per_execution != 1:
            raise ValueError(
                f"steps_per_execution must be 1, got {steps_per_execution!r}: nnkit runs one "
                "batch per step call (as Keras's PyTorch backend does); jit_compile=True "
                "cuts the per-step overhead instead"
            )
        if run_eagerly and jit_compile is True:
            warnings.warn(
                "If `run_eagerly` is True, then `jit_compile` cannot also be True. "
                "Disabling `jit_compile`.",
                stacklevel=2,
            )
        if run_eagerly:
            jit_compile = False
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
        self.run_eagerly = bool(run_eagerly)
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
    def run_eagerly(self) -> bool:
        """Keras's flag (set by :meth:`compile`, settable later): whether the steps of
        ``fit``, ``evaluate`` and ``predict`` run eagerly whatever ``jit_compile``
        says."""
        return self.__dict__.get("_run_eagerly", False)

    @run_eagerly.setter
    def run_eagerly(self, value: bool) -> None:
        self.__dict__["_run_eagerly"] = bool(value)

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

    def _step_fn(self, name: str, planned: int | None = None) -> Any:
        """``train_step``/``test_step``/``predict_step``, through :func:`nnkit.compile`
        when compiled with ``jit_compile=True``, or with ``"auto"`` where
        :meth:`_auto_eager_reason` finds nothing against it (one compiled function per
        step kind); ``planned`` is the number of calls the loop plans (None: unknown)."""
        fn = getattr(self, name)
        config = self._compiled
        if config is None or config.jit_compile is False or self.run_eagerly:
            return fn
        compiled = self.__dict__.get("_jit_steps", {}).get(name)
        if compiled is not None and compiled.__wrapped__ != fn:
            compiled = None
        if config.jit_compile == "auto":
            if compiled is not None and compiled.fallbacks:
                return fn  # it could not replay: eager for the rest of the fit, silently
            if self._auto_eager_reason(name, planned) is not None:
                return fn
        if compiled is None:
            compiled = CompiledFunction(fn, warn=config.jit_compile is True)
            self.__dict__.setdefault("_jit_steps", {})[name] = compiled
        return compiled

    def _release_auto_programs(self) -> None:
        """At the end of a ``fit`` under ``jit_compile="auto"``: drop the training step's
        programs, so that the buffers they keep alive (one step's intermediates) are
        freed as an eager step's are; the next ``fit`` records again."""
        compiled = self.__dict__.get("_jit_steps", {}).get("train_step")
        if compiled is not None and self._compiled.jit_compile == "auto":
            compiled.clear()

    def _auto_eager_reason(self, name: str, planned: int | None = None) -> str | None:
        """Why ``jit_compile="auto"`` runs the step ``name`` eagerly, or None to compile
        it (the rule is in :meth:`compile`'s docstring)."""
        if name != "train_step":
            return "auto compiles only fit's train_step"
        if planned is not None and planned < AUTO_MIN_STEPS:
            return f"the fit plans fewer than {AUTO_MIN_STEPS} training steps"
        device, _ = self._target()
        if device.type != "cpu":
            return f"the model is on {device.type}, not the CPU"
        for module in self.modules():
            if not _own(module):
                return f"{type(module).__qualname__} is not an nnkit layer"
            for attr in vars(module).values():
                if type(attr) in _CALLABLES and not _own(attr):
                    return f"{type(module).__qualname__} calls {attr!r}, not an nnkit function"
        config = self._compiled
        losses = config.loss if isinstance(config.loss, list) else [config.loss]
        for fn in [*losses, *(m for _, m in config.metrics)]:
            if isinstance(fn, StatefulMetric):
                fn = fn.metric if fn.metric is not None else fn.identifier
            if fn is not None and not isinstance(fn, str) and not _own(fn):
                return f"the loss or metric {fn!r} is not nnkit's"
            inner = getattr(fn, "_fn", None)  # a MeanMetricWrapper's function
            if inner is not None and not _own(inner):
                return f"the metric function {inner!r} is not nnkit's"
        return None

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
    def compute_loss(
        self,
        x: Any = None,
        y: Any = None,
        y_pred: Any = None,
        sample_weight: Any = None,
        training: bool = True,
    ) -> Tensor:
        """The compiled loss of one batch (the weighted sum over outputs); Keras 3's
        signature, so a custom ``train_step`` may call ``self.compute_loss(y=y,
        y_pred=y_pred)``.

        Args:
            x: the inputs (unused by the default; available to overrides).
            y: the targets.
            y_pred: the model's outputs.
            sample_weight: one weight per sample, or None (Keras's weighting:
                ``sum(w_i * loss_i) / batch_size``). Passed only when the batch has weights
                (``sample_weight``/``class_weight`` of ``fit``), so an override with the
                three-argument signature keeps working without them.
            training: Keras's flag, which adds the layers' regularization losses when
                True; nnkit layers have none (no ``add_loss``), so it changes nothing.

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
