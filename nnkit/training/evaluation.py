"""``Evaluation``: ``evaluate`` and ``predict`` of a model (and the test loop that
``fit``'s validation shares), in eval mode and under ``no_grad``."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from nnkit.autograd.grad_mode import no_grad
from nnkit.training import data_adapter as da
from nnkit.training.fit_state import concat_outputs, num_steps, returned_logs, to_numpy
from nnkit.training.metrics import MeanTracker

__all__ = ["Evaluation"]


class Evaluation:
    """Mixin of :class:`~nnkit.training.Trainer`: the loops that do not train."""

    def evaluate(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        verbose: int | str = "auto",
        sample_weight: Any = None,
        steps: int | None = None,
        callbacks: Any = None,
        return_dict: bool = False,
    ) -> dict | list | float:
        """Loss and metrics of the model on ``x``/``y``, in eval mode and under no_grad.

        Args:
            x: arrays/Tensors (with ``y``), a Dataset or a DataLoader of ``(x, y)`` or
                ``(x, y, sample_weight)``.
            y: targets aligned with array/Tensor ``x``.
            batch_size: samples per batch (None: 32; ignored for a DataLoader).
            verbose: ``'auto'`` (a bar on a terminal, else one line), 0 silent, 1 a
                progress bar, 2 one line.
            sample_weight: one weight per sample of array ``x``, weighting the loss.
            steps: evaluate this many batches only (None: all).
            callbacks: callbacks receiving the ``on_test_*`` hooks.
            return_dict: return ``{'loss': ..., <metric>: ...}``; otherwise (Keras's
                default) the loss alone if there are no metrics, else the list of the
                loss and the metrics in that order.

        Returns:
            The means over all samples (each batch weighted by its size).

        Raises:
            RuntimeError: if :meth:`compile` was not called first.
            ValueError: for x/y of different lengths or a missing loss.

        Example:
            >>> x, y = nnkit.data.make_moons(64, noise=0.1)
            >>> model = nnkit.Sequential(nn.Dense(16, activation="relu"), nn.Dense(2))
            >>> model.compile("adam", "cross_entropy", metrics=["accuracy"], lr=0.01)
            >>> _ = model.fit(x, y, epochs=5, batch_size=16, verbose=0)
            >>> model.evaluate(x, y, verbose=0, return_dict=True)
            {'loss': 0.327..., 'accuracy': 0.859375}
            >>> model.evaluate(x, y, verbose=0)       # Keras's default: [loss, metrics...]
            [0.327..., 0.859375]
        """
        self._require_compiled("evaluate")
        loader = da.make_loader(
            x,
            y,
            sample_weight,
            batch_size=32 if batch_size is None else batch_size,
            caller="evaluate",
        )
        cbs = self._callbacks(callbacks, verbose, steps=num_steps(loader, steps))
        return returned_logs(self._test_loop(loader, cbs, steps), return_dict)

    def _test_loop(self, loader: Iterable, cbs: Any, steps: int | None = None) -> dict:
        tracker = MeanTracker()
        self._compiled.reset_metrics()
        cbs.on_test_begin()
        target = self._target()
        with self._mode(False), no_grad():
            for step, batch in enumerate(itertools.islice(loader, steps)):
                cbs.on_test_batch_begin(step)
                batch = self._to_device(batch, target)
                tracker.update(
                    self._step_fn("test_step")(batch), da.batch_size_of(da.unpack_batch(batch)[0])
                )
                cbs.on_test_batch_end(step, self._logs(tracker))
        logs = self._logs(tracker)
        cbs.on_test_end(logs)
        return logs

    # ----------------------------------------------------------------- predict
    def predict(
        self,
        x: Any,
        batch_size: int | None = None,
        verbose: int | str = "auto",
        steps: int | None = None,
        callbacks: Any = None,
    ) -> Any:
        """The model's outputs for ``x`` as host NumPy arrays (eval mode, no_grad).

        Args:
            x: arrays/Tensors, a Dataset or a DataLoader (targets in its batches are
                ignored).
            batch_size: samples per batch (None: 32; ignored for a DataLoader).
            verbose: ``'auto'`` (a bar on a terminal, else one line), 0 silent, 1 a
                progress bar, 2 one line.
            steps: predict this many batches only (None: all).
            callbacks: callbacks receiving the ``on_predict_*`` hooks.

        Returns:
            An ndarray of the outputs concatenated along the batch axis (a tuple/dict of
            ndarrays for a model with several outputs).

        Example:
            >>> model = nnkit.Sequential(nn.Dense(16, activation="relu"), nn.Dense(3))
            >>> logits = model.predict(nnkit.randn(5, 4), verbose=0)
            >>> type(logits).__name__, logits.shape
            ('ndarray', (5, 3))
            >>> probs = F.softmax(nnkit.tensor(logits), -1)
            >>> probs.sum(-1)
            tensor([1.0000, 1.0000, 1.0000, 1.0000, 1.0000])
        """
        loader = da.make_loader(
            x, None, batch_size=32 if batch_size is None else batch_size, caller="predict"
        )
        cbs = self._callbacks(callbacks, verbose, steps=num_steps(loader, steps))
        outputs = []
        cbs.on_predict_begin()
        target = self._target()
        with self._mode(False), no_grad():
            for step, batch in enumerate(itertools.islice(loader, steps)):
                cbs.on_predict_batch_begin(step)
                output = self._step_fn("predict_step")(self._to_device(batch, target))
                outputs.append(to_numpy(output))
                cbs.on_predict_batch_end(step, {"outputs": output})
        cbs.on_predict_end()
        return concat_outputs(outputs)
