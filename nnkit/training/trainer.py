"""The Keras-style training API of :class:`~nnkit.Model`: compile, fit, evaluate, predict.

There is one loop for every backend (STYLE §18). It is built from small overridable
units, as in Keras's ``trainer.py``: :meth:`Trainer.train_step`,
:meth:`Trainer.test_step` and :meth:`Trainer.predict_step` handle one batch (already on
the model's device) and return a dict of logs (or the outputs); the loop averages the
logs over the epoch, weighting each batch by its size, and drives the callbacks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.backends.device import device as as_device
from nnkit.backends.dtypes import get_default_dtype
from nnkit.callbacks import BackupAndRestore, CallbackList
from nnkit.data import DataLoader
from nnkit.training import data_adapter as da
from nnkit.training import interrupt
from nnkit.training.compile_utils import make_optimizer
from nnkit.training.compiling import Compiling
from nnkit.training.distributed_fit import DistributedFit, resolve_communicator
from nnkit.training.evaluation import Evaluation
from nnkit.training.fit_state import FitState
from nnkit.training.metrics import MeanTracker
from nnkit.training.on_batch import OnBatch
from nnkit.training.saving import Saving

__all__ = ["Trainer", "FitState"]


class Trainer(Compiling, Evaluation, OnBatch, Saving):
    """Mixin that gives :class:`~nnkit.Model` ``compile``/``fit``/``evaluate``/``predict``.

    Attributes:
        optimizer: the compiled optimizer; created over the parameters when the model is
            built (at the first ``fit`` batch for a lazily built model).
        stop_training: set to True (by a callback) to end ``fit`` after the current batch.
        history: the :class:`~nnkit.callbacks.History` of the last ``fit``.
    """

    _fit_state: FitState | None = None
    stop_training: bool = False
    history: Any = None
    #: the loop's bookkeeping, which no step reads (not part of a compiled step's guard)
    _jit_untracked = frozenset(
        {"stop_training", "_initial_epoch", "_sample_shape", "name", "_run_eagerly"}
    )

    # ------------------------------------------------------------------- steps
    def train_step(self, batch: Any) -> dict[str, Any]:
        """One optimisation step on one batch: forward, loss, backward, optimizer step.

        Override it for custom training (GANs, gradient accumulation, ...); the loop
        averages whatever it returns over the epoch.

        Args:
            batch: ``(x, y)``, ``(x, y, sample_weight)`` or ``(x,)``, already on the
                model's device.

        Returns:
            The batch's logs: ``{'loss': ..., <metric>: ...}`` (Tensors or numbers).

        Example:
            >>> class Clipped(nnkit.Sequential):
            ...     def train_step(self, batch):
            ...         x, y = batch
            ...         loss = self.compute_loss(x, y, self(x))
            ...         self.optimizer.zero_grad(); loss.backward()
            ...         nnkit.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
            ...         self.optimizer.step()
            ...         return {"loss": loss}
            >>> model = Clipped(nn.Linear(4, 2))
            >>> model.compile("sgd", "mse")
            >>> history = model.fit(nnkit.randn(16, 4), nnkit.randn(16, 2), epochs=2, verbose=0)
            >>> len(history.history["loss"])
            2
        """
        x, y, sample_weight = da.unpack_x_y_sample_weight(batch)
        y_pred = self._forward(x)
        loss = self._loss(x, y, y_pred, sample_weight)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"loss": loss.detach(), **self._metrics(x, y, y_pred, sample_weight)}

    def test_step(self, batch: Any) -> dict[str, Any]:
        """Loss and metrics of one batch, without updating anything (runs under no_grad).

        Args:
            batch: ``(x, y)`` or ``(x, y, sample_weight)``, already on the model's device.

        Returns:
            The batch's logs: ``{'loss': ..., <metric>: ...}``.
        """
        x, y, sample_weight = da.unpack_x_y_sample_weight(batch)
        y_pred = self._forward(x)
        return {
            "loss": self._loss(x, y, y_pred, sample_weight),
            **self._metrics(x, y, y_pred, sample_weight),
        }

    def predict_step(self, batch: Any) -> Any:
        """The model's output for one batch (targets in the batch are ignored).

        Args:
            batch: ``x``, ``(x,)`` or ``(x, y)``, already on the model's device.

        Returns:
            The output Tensor (or structure of Tensors).
        """
        x, _ = da.unpack_batch(batch)
        return self._forward(x)

    def _loss(self, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> Tensor:
        y = self._targets_by_output(y, y_pred)
        if sample_weight is None:  # an override of compute_loss may not take the weights
            return self.compute_loss(x, y, y_pred)
        return self.compute_loss(x, y, y_pred, sample_weight=sample_weight)

    def _targets_by_output(self, y: Any, y_pred: Any) -> Any:
        """Targets given as ``{output name: array}`` in the order of the outputs."""
        if not isinstance(y, dict) or isinstance(y_pred, dict):
            return y
        names = getattr(self, "output_names", None) or []
        missing = [name for name in names if name not in y]
        if not names or missing:
            raise ValueError(
                f"targets given by name {sorted(y)} must name every output of "
                f"the model {names}; missing {missing}"
            )
        return [y[name] for name in names]

    def _metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict[str, Any]:
        y = self._targets_by_output(y, y_pred)
        if sample_weight is None:  # an override of compute_metrics may not take weights
            return self.compute_metrics(x, y, y_pred)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def _forward(self, x: Any) -> Any:
        return self(*x) if isinstance(x, tuple) else self(x)

    # ------------------------------------------------------------------ helpers
    def _target(self) -> tuple[Any, Any]:
        """The device and float dtype batches are moved to: those of the parameters."""
        for store in ("_parameters", "_buffers"):
            for _, tensor in self._named_members(store, "", True):
                if tensor.is_floating_point():
                    return tensor.device, tensor.dtype
        device, dtype = self.__dict__.get("_placement", (None, None))  # set by Module.to
        return as_device(device or "cpu"), dtype or get_default_dtype()

    def _to_device(self, batch: Any, target: tuple | None = None) -> Any:
        """``batch`` as Tensors on the parameters' device and float dtype (``target``:
        :meth:`_target`'s answer, which a loop asks once)."""
        device, dtype = target or self._target()
        return da.to_device(batch, device, dtype)

    @contextlib.contextmanager
    def _mode(self, training: bool) -> Iterator[None]:
        """Run in train/eval mode, restoring the model's previous mode afterwards."""
        was_training = self.training
        self.train(training)
        try:
            yield
        finally:
            self.train(was_training)

    def _build_for_fit(self, data: da.EpochIterator) -> None:
        """Build lazy layers on the first batch, then create the optimizer (Keras order)."""
        self._build_on(da.unpack_batch(self._to_device(data.peek()))[0])

    def _build_on(self, x: Any) -> None:
        """Build lazy layers on the inputs ``x`` (on the model's device), then create the
        optimizer (Keras order)."""
        if hasattr(x, "shape"):
            self._sample_shape = tuple(x.shape[1:])  # lets summary() show output shapes
        if not all(m.built for m in self.modules()):
            with self._mode(False), no_grad():
                self._forward(x)
        config = self._compiled
        if config.optimizer is None:
            config.optimizer = make_optimizer(
                config.optimizer_spec, config.lr, list(self.parameters())
            )
        elif not getattr(config.optimizer, "built", True):  # a Keras-style optimizer
            config.optimizer.build([p for p in self.parameters() if p.requires_grad])

    def _callbacks(
        self,
        callbacks: Any,
        verbose: int,
        *,
        history: bool = False,
        epochs: int = 1,
        steps: int | None = None,
    ) -> Any:
        verbose = da.resolve_verbose(verbose)
        if isinstance(callbacks, CallbackList):
            return callbacks
        return CallbackList(
            callbacks,
            add_history=history,
            add_progbar=verbose != 0,
            model=self,
            verbose=verbose,
            epochs=epochs,
            steps=steps,
        )

    # --------------------------------------------------------------------- fit
    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        epochs: int = 1,
        verbose: int | str = "auto",
        callbacks: Any = None,
        validation_split: float = 0.0,
        validation_data: Any = None,
        shuffle: bool = True,
        class_weight: dict | None = None,
        sample_weight: Any = None,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        validation_batch_size: int | None = None,
        validation_freq: int = 1,
        *,
        seed: int | None = None,
        distributed: Any = None,
    ) -> Any:
        """Train the model for ``epochs`` epochs (Keras 3's arguments and defaults).

        Args:
            x: inputs as NumPy arrays or Tensors (with ``y``), a
                :class:`~nnkit.data.Dataset`, or a :class:`~nnkit.data.DataLoader` (or any
                re-iterable) yielding ``(x, y)`` or ``(x, y, sample_weight)`` batches.
            y: targets aligned with array/Tensor ``x``; None for a Dataset/DataLoader.
            batch_size: samples per batch (None: 32; ignored for a DataLoader).
            epochs: the index of the last epoch, plus one (training runs epochs
                ``initial_epoch .. epochs - 1``).
            verbose: ``'auto'`` (a bar on a terminal, else one line per epoch), 0
                silent, 1 a tqdm bar per epoch, 2 one line per epoch.
            callbacks: :class:`~nnkit.callbacks.Callback` instances.
            validation_split: fraction of array/Tensor samples held out for validation:
                the *last* ones, taken before shuffling (Keras semantics).
            validation_data: ``(x_val, y_val)`` or ``(x_val, y_val, val_sample_weight)``
                arrays/Tensors, or a Dataset/DataLoader; takes precedence over
                ``validation_split``.
            shuffle: reshuffle array/Dataset samples every epoch.
            class_weight: ``{class index: weight}``: each training sample's loss is
                weighted by its class's weight (classes not named weigh 1; single-output
                models; not with ``sample_weight``).
            sample_weight: one weight per sample of array ``x``: the loss is
                ``sum(w_i * loss_i) / batch_size`` (Keras). The logged loss is weighted,
                the metrics are not.
            initial_epoch: the epoch to start at (to resume a run by hand; a loader built
                here from arrays or a Dataset shuffles as an uninterrupted run's epoch
                ``initial_epoch`` would, given ``seed``). For exact resumption of
                everything (mid-epoch too), use :class:`~nnkit.callbacks.BackupAndRestore`.
            steps_per_epoch: batches per epoch; the loader is restarted when exhausted.
            validation_steps: validation batches per validation (None: all).
            validation_batch_size: the validation batch size (None: ``batch_size``).
            validation_freq: validate after every ``validation_freq``-th epoch.
            seed: the shuffling seed of the loader built over arrays/Datasets (None draws
                one from nnkit's global generator).
            distributed: train data-parallel over a group of processes: None (the
                default) does so when ``mpiexec`` launched more than one process, False
                never, True requires it; or give a
                :class:`~nnkit.distributed.Communicator`. Then ``batch_size`` is the
                global batch (each of N ranks takes ``batch_size / N`` samples of it),
                the logs are means over all ranks, and only rank 0 shows progress and
                runs callbacks marked ``rank_zero_only`` (checkpoints, CSV logs); see
                :mod:`nnkit.training.distributed_fit`.

        Returns:
            A :class:`~nnkit.callbacks.History` (``history.history['loss']``, ...).

        Raises:
            RuntimeError: if :meth:`compile` was not called first, or launched by
                ``mpiexec`` without mpi4py installed.
            ValueError: for x/y of different lengths, y with a Dataset/DataLoader,
                ``validation_split`` outside ``[0, 1)`` or with a Dataset/DataLoader,
                ``class_weight`` with ``sample_weight``, a ``validation_freq`` that is not a
                positive integer, or (data-parallel) a ``batch_size`` not divisible by the
                number of processes.

        Example:
            >>> x, y = nnkit.data.make_moons(64, noise=0.1)     # 64 points, 2 classes
            >>> model = nnkit.Sequential(nn.Dense(16, activation="relu"), nn.Dense(2))
            >>> model.compile("adam", "cross_entropy", metrics=["accuracy"], lr=0.01)
            >>> history = model.fit(x, y, epochs=5, batch_size=16, validation_split=0.25,
            ...                     verbose=0)
            >>> sorted(history.history)
            ['accuracy', 'loss', 'val_accuracy', 'val_loss']
            >>> history.history["val_accuracy"][-1]
            0.75
        """
        self._require_compiled("fit")
        verbose = da.resolve_verbose(verbose)
        table = da.class_weight_table(class_weight)
        if table is not None and sample_weight is not None:
            raise ValueError("You cannot use class_weight and sample_weight at the same time.")
        if (
            isinstance(validation_freq, bool)
            or not isinstance(validation_freq, int)
            or (validation_freq < 1)
        ):
            raise ValueError(
                f"fit: validation_freq must be a positive integer; received {validation_freq!r}"
            )
        comm = resolve_communicator(distributed)
        dist = None if comm is None else DistributedFit(comm)
        batch_size = 32 if batch_size is None else batch_size
        train, val = self._fit_data(
            x, y, sample_weight, batch_size, validation_split, validation_data, shuffle, seed
        )
        val = self._validation_loader(val, validation_batch_size or batch_size)
        if initial_epoch and train is not x and isinstance(train, DataLoader):
            # a loader built here shuffles epoch k as an uninterrupted run's epoch k
            train.load_state_dict({"epoch": initial_epoch, "position": 0, "seed": train.seed})
        if dist is not None:
            train = dist.shard(train)
            callbacks, verbose = dist.callbacks(callbacks, verbose)
        data = da.EpochIterator(train, steps_per_epoch)
        self._build_for_fit(data)
        cbs = self._callbacks(callbacks, verbose, history=True, epochs=epochs, steps=data.num_steps)
        self._fit_state = FitState(
            train,
            cbs,
            dist,
            data,
            epoch=initial_epoch - 1,
            epoch_done=True,
            class_weight=table,
            metrics=self._compiled.stateful,
        )
        self.stop_training = False
        self._initial_epoch = initial_epoch
        replicated = contextlib.nullcontext() if dist is None else dist.replicated(self)
        try:
            with self._mode(True), replicated:
                cbs.on_train_begin()
                logs = self._fit_epochs(
                    self._initial_epoch, epochs, data, (val, validation_freq, validation_steps), cbs
                )
                finalize = getattr(self.optimizer, "finalize_variable_values", None)
                if finalize is not None:  # Keras: use_ema's averages become the weights
                    finalize([p for p in self.parameters() if p.requires_grad])
                cbs.on_train_end(logs)
        finally:
            self._fit_state = None
            self._release_auto_programs()
        return cbs.history

    @staticmethod
    def _fit_data(
        x: Any,
        y: Any,
        sample_weight: Any,
        batch_size: int,
        validation_split: float,
        validation_data: Any,
        shuffle: bool,
        seed: int | None,
    ) -> tuple:
        """The training loader and the validation data (as given, or split off)."""
        if validation_data is None and validation_split:
            (x, y, sample_weight), validation_data = da.split_validation(
                x, y, validation_split, sample_weight
            )
        train = da.make_loader(
            x, y, sample_weight, batch_size=batch_size, shuffle=shuffle, seed=seed
        )
        return train, validation_data

    @staticmethod
    def _validation_loader(validation_data: Any, batch_size: int) -> Iterable | None:
        if validation_data is None:
            return None
        if isinstance(validation_data, tuple):
            if len(validation_data) not in (2, 3):
                raise ValueError(
                    "validation_data must be (x_val, y_val), (x_val, y_val, "
                    "val_sample_weight), a Dataset or a DataLoader; got a tuple "
                    f"of {len(validation_data)} items"
                )
            return da.make_loader(*validation_data, batch_size=batch_size, caller="fit")
        return da.make_loader(validation_data, batch_size=batch_size, caller="fit")

    def _fit_epochs(
        self, first: int, epochs: int, data: da.EpochIterator, validation: tuple, cbs: Any
    ) -> dict:
        state, logs = self._fit_state, {}
        val, validation_freq, validation_steps = validation
        state.planned = None if data.num_steps is None else (epochs - first) * data.num_steps
        for epoch in range(first, epochs):
            state.epoch, state.step, state.epoch_done = epoch, -1, False
            state.tracker = MeanTracker()
            self._compiled.reset_metrics()
            cbs.on_epoch_begin(epoch)
            if state.after_epoch_begin is not None:  # resuming in the middle of this epoch
                restore, state.after_epoch_begin = state.after_epoch_begin, None
                restore()
            logs = self._train_epoch(data, cbs)
            if val is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._test_loop(val, cbs, validation_steps)
                logs.update({f"val_{k}": v for k, v in val_logs.items()})
            state.epoch_done = True
            cbs.on_epoch_end(epoch, logs)
            self._check_interrupt(cbs)
            if self._stop_requested():
                break
        return logs

    def _train_epoch(self, data: da.EpochIterator, cbs: Any) -> dict:
        self.train()
        state = self._fit_state
        # the step function for this epoch (jit_compile decides it once per epoch)
        step_fn = self._step_fn("train_step", state.planned) if state.distributed is None else None
        target = self._target()
        for step, batch in data.epoch(start=state.step + 1):
            cbs.on_train_batch_begin(step)
            batch = self._to_device(batch, target)
            if state.class_weight is not None:
                batch = da.with_class_weight(batch, state.class_weight)
            size = da.batch_size_of(da.unpack_batch(batch)[0])
            if state.distributed is not None:
                state.distributed.set_batch_size(size)
            state.tracker.update((step_fn or self.train_step)(batch), size)
            state.step, state.global_step = step, state.global_step + 1
            cbs.on_train_batch_end(step, self._logs(state.tracker))
            self._check_interrupt(cbs)
            if self._stop_requested():
                break
        self._resolve_restored_metrics(data)
        dist = state.distributed
        if dist is not None:
            dist.broadcast_buffers(self)  # e.g. running statistics, so validation agrees
            dist.reduce(state.tracker, self._compiled.stateful)
        return self._logs(state.tracker)

    def _resolve_restored_metrics(self, data: da.EpochIterator) -> None:
        """After a resume at an epoch's last batch (no batch left to resolve them), the
        metrics named in ``compile`` holding restored state are resolved from one
        batch's outputs (eval mode, no_grad: nothing changes), so that the epoch's logs
        are their values, not NaN."""
        config = self._compiled
        if not any(metric.pending for metric in config.stateful):
            return
        x, y, _ = da.unpack_x_y_sample_weight(self._to_device(data.peek()))
        with self._mode(False), no_grad():
            y_pred = self._forward(x)
        config.resolve_pending(self._targets_by_output(y, y_pred), y_pred)

    def _logs(self, tracker: MeanTracker) -> dict[str, Any]:
        """The running logs: means of the batches' values, stateful metrics' own results."""
        logs = tracker.result()
        logs.update(self._compiled.metric_results())
        return logs

    def _check_interrupt(self, cbs: Any) -> None:
        """After a step or an epoch: if a signal asked to stop, checkpoint and raise.

        Raises:
            TrainingInterrupted: with the point reached and the checkpoint written.
        """
        signum = interrupt.requested()
        state = self._fit_state
        if state.distributed is not None:  # every rank stops at the same step
            signum = state.distributed.max_int(signum or 0) or None
        if signum is None:
            return
        path = None
        for cb in cbs:
            if isinstance(cb, BackupAndRestore):
                path = cb.save_now() or path
        interrupt.stopping()
        raise interrupt.TrainingInterrupted(
            signum, state.epoch, -1 if state.epoch_done else state.step, path
        )

    def _stop_requested(self) -> bool:
        """``stop_training``; in a data-parallel run, True on all ranks if set on one."""
        dist = self._fit_state.distributed
        if dist is not None:
            self.stop_training = dist.any(self.stop_training)
        return self.stop_training
