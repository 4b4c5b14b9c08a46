"""``Callback``: the base class of everything that hooks into ``fit``/``evaluate``/``predict``."""

from __future__ import annotations

from typing import Any

from nnkit.layers.config import Configurable

__all__ = ["Callback"]


class Callback(Configurable):
    """Base class of callbacks; override the hooks you need (Keras hook names).

    ``Model.fit`` calls, in order: ``on_train_begin``, then per epoch
    ``on_epoch_begin``, ``on_train_batch_begin``/``on_train_batch_end`` per batch, the
    ``on_test_*`` hooks while validating, and ``on_epoch_end`` with the epoch's logs
    (``loss``, metrics, ``val_*``); finally ``on_train_end``. ``evaluate`` and
    ``predict`` call the ``on_test_*`` and ``on_predict_*`` hooks. Set
    ``self.model.stop_training = True`` to end training after the current batch.

    A callback whose progress must survive an interruption (see
    :class:`~nnkit.callbacks.BackupAndRestore`) implements :meth:`state_dict` and
    :meth:`load_state_dict`.

    In a data-parallel ``fit`` every process runs the callbacks with the same (averaged)
    logs, so decisions like early stopping agree; a callback that writes files or prints
    sets the class attribute ``rank_zero_only = True`` and then runs on rank 0 only.

    Attributes:
        model: the model being trained (set by :meth:`set_model`).
        params: ``{'verbose', 'epochs', 'steps'}`` of the current call.
        rank_zero_only: run only on rank 0 of a data-parallel ``fit`` (class attribute).

    Example:
        >>> class PrintLoss(Callback):
        ...     def on_epoch_end(self, epoch, logs=None):
        ...         print(epoch, round(logs["loss"], 4))
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> _ = model.fit(x, y, epochs=2, verbose=0, callbacks=[PrintLoss()])
        0 1.2616
        1 1.2485
    """

    rank_zero_only = False

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_model(self, model: Any) -> None:
        """Attach the model (called by the training loop).

        Args:
            model: the model.
        """
        self.model = model

    def set_params(self, params: dict[str, Any]) -> None:
        """Receive the loop's parameters (``verbose``, ``epochs``, ``steps``).

        Args:
            params: the parameters.
        """
        self.params = params

    def on_train_begin(self, logs: dict | None = None) -> None:
        """Called once at the start of ``fit``."""

    def on_train_end(self, logs: dict | None = None) -> None:
        """Called once at the end of ``fit`` with the last epoch's logs."""

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        """Called at the start of each epoch (``epoch`` counts from 0)."""

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Called at the end of each epoch with its logs (training and ``val_`` values)."""

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each training batch (``batch`` counts from 0 in each epoch)."""

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each training batch with the epoch's running means so far."""

    def on_test_begin(self, logs: dict | None = None) -> None:
        """Called at the start of ``evaluate`` and of each validation pass."""

    def on_test_end(self, logs: dict | None = None) -> None:
        """Called at the end of ``evaluate`` / validation with its logs."""

    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each evaluation batch."""

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each evaluation batch with the running means so far."""

    def on_predict_begin(self, logs: dict | None = None) -> None:
        """Called at the start of ``predict``."""

    def on_predict_end(self, logs: dict | None = None) -> None:
        """Called at the end of ``predict``."""

    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each prediction batch."""

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each prediction batch; ``logs['outputs']`` holds its output."""

    def state_dict(self) -> dict[str, Any]:
        """The callback's progress, for checkpoints (empty for a stateless callback)."""
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore progress saved by :meth:`state_dict`."""
