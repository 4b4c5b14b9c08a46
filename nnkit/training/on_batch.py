"""Keras's single-batch methods of :class:`~nnkit.Model`: ``train_on_batch``,
``test_on_batch``, ``predict_on_batch`` and ``reset_metrics``.

Each runs one step (:meth:`~nnkit.training.Trainer.train_step`,
:meth:`~nnkit.training.Trainer.test_step`, :meth:`~nnkit.training.Trainer.predict_step`)
on the batch given, as Keras 3 does: the compiled metrics are reset first, so the values
returned are that batch's alone; the model's train/eval mode is restored afterwards.
``jit_compile=True`` runs the steps through :func:`nnkit.compile`; ``"auto"`` runs them
eagerly (one batch gives no replay count to pay for a recording).
"""

from __future__ import annotations

from typing import Any

from nnkit.autograd.grad_mode import no_grad
from nnkit.training import data_adapter as da
from nnkit.training.fit_state import returned_logs, to_numpy
from nnkit.training.metrics import MeanTracker

__all__ = ["OnBatch"]


def _batch(x: Any, y: Any, sample_weight: Any) -> tuple:
    if sample_weight is not None:
        return (x, y, sample_weight)
    return (x,) if y is None else (x, y)


class OnBatch:
    """Mixin of :class:`~nnkit.training.Trainer` (see the module docstring)."""

    def reset_metrics(self) -> None:
        """Reset the state of the compiled stateful metrics (Keras's ``reset_metrics``).

        Raises:
            RuntimeError: if :meth:`compile` was not called first.
        """
        self._require_compiled("reset_metrics")
        self._compiled.reset_metrics()

    def _one_batch_logs(self, logs: dict, batch: tuple, return_dict: bool) -> Any:
        tracker = MeanTracker()
        tracker.update(logs, da.batch_size_of(da.unpack_batch(batch)[0]))
        return returned_logs(self._logs(tracker), return_dict)

    def train_on_batch(
        self,
        x: Any,
        y: Any = None,
        sample_weight: Any = None,
        class_weight: dict | None = None,
        return_dict: bool = False,
    ) -> Any:
        """One training step on one batch (Keras's ``train_on_batch``).

        Args:
            x: the inputs (arrays or Tensors).
            y: the targets.
            sample_weight: one weight per sample, weighting the loss.
            class_weight: ``{class index: weight}`` (not with ``sample_weight``).
            return_dict: return ``{'loss': ..., <metric>: ...}``; otherwise the loss
                alone if there are no metrics, else the list of the loss and the
                metrics in that order (as :meth:`evaluate`).

        Returns:
            The batch's loss and metrics, as Python floats (NumPy arrays for a metric
            with several values).

        Raises:
            RuntimeError: if :meth:`compile` was not called first.
            ValueError: for ``class_weight`` with ``sample_weight``.

        Example:
            >>> model = nnkit.Sequential(nn.Dense(8, activation="relu"), nn.Dense(3))
            >>> model.compile("sgd", "cross_entropy", metrics=["accuracy"])
            >>> x, y = nnkit.randn(16, 4), nnkit.randint(0, 3, (16,))
            >>> loss, accuracy = model.train_on_batch(x, y)
            >>> sorted(model.train_on_batch(x, y, return_dict=True))
            ['accuracy', 'loss']
        """
        self._require_compiled("train_on_batch")
        table = da.class_weight_table(class_weight)
        if table is not None and sample_weight is not None:
            raise ValueError(
                "Arguments `sample_weight` and `class_weight` cannot be specified at the same time."
            )
        batch = self._to_device(_batch(x, y, sample_weight))
        self._build_on(da.unpack_batch(batch)[0])
        if table is not None:
            batch = da.with_class_weight(batch, table)
        self.reset_metrics()
        with self._mode(True):
            logs = self._step_fn("train_step", 1)(batch)
        return self._one_batch_logs(logs, batch, return_dict)

    def test_on_batch(
        self, x: Any, y: Any = None, sample_weight: Any = None, return_dict: bool = False
    ) -> Any:
        """The loss and metrics of one batch, in eval mode and under no_grad (Keras's
        ``test_on_batch``): as :meth:`train_on_batch` returns them, nothing updated.

        Raises:
            RuntimeError: if :meth:`compile` was not called first.
        """
        self._require_compiled("test_on_batch")
        batch = self._to_device(_batch(x, y, sample_weight))
        self.reset_metrics()
        with self._mode(False), no_grad():
            logs = self._step_fn("test_step")(batch)
        return self._one_batch_logs(logs, batch, return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        """The model's outputs for one batch as host NumPy arrays, in eval mode and under
        no_grad (Keras's ``predict_on_batch``; no ``compile`` needed)."""
        with self._mode(False), no_grad():
            return to_numpy(self._step_fn("predict_step")(self._to_device((x,))))
