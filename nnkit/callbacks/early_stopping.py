"""``EarlyStopping``: stop training when a monitored quantity has stopped improving."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.factories import as_tensor
from nnkit.callbacks._monitor import MonitorComparison, resolve_mode
from nnkit.callbacks.callback import Callback

__all__ = ["EarlyStopping"]


class EarlyStopping(Callback):
    """Stop ``fit`` when ``monitor`` has not improved for ``patience`` epochs (Keras).

    An epoch improves when the value beats the best so far by more than ``min_delta``.
    With ``baseline``, the wait is only reset by values that also beat the baseline.
    With ``restore_best_weights``, the weights of the best epoch are put back when
    training ends (whether or not it stopped early).

    Args:
        monitor: the log to watch (``'val_loss'``, ``'val_accuracy'``, ``'loss'``...).
        min_delta: minimum change that counts as an improvement.
        patience: epochs without improvement before stopping.
        verbose: 1 prints a line when stopping or restoring.
        mode: ``'min'``, ``'max'`` or ``'auto'`` (``'max'`` for accuracy-like names).
        baseline: a value the monitored quantity must beat.
        restore_best_weights: restore the best epoch's weights at the end.
        start_from_epoch: epochs of warm-up before improvement is judged.

    Raises:
        ValueError: for an unknown mode.

    Example:
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> # min_delta=10: no epoch counts as an improvement, so patience=1 stops at once
        >>> stop = EarlyStopping(monitor="val_loss", min_delta=10.0, patience=1,
        ...                      restore_best_weights=True)
        >>> history = model.fit(x, y, epochs=10, validation_split=0.25, verbose=0,
        ...                     callbacks=[stop])
        >>> stop.stopped_epoch, history.epoch
        (1, [0, 1])
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ) -> None:
        super().__init__()
        self.compare = MonitorComparison(
            monitor, resolve_mode(mode, monitor, "EarlyStopping"), min_delta
        )
        self.monitor, self.patience, self.verbose = monitor, int(patience), verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.start_from_epoch = int(start_from_epoch)
        self._reset()

    def _reset(self) -> None:
        self.wait, self.stopped_epoch, self.best_epoch = 0, 0, 0
        self.best = self.compare.worst
        self.best_weights: dict | None = None

    @property
    def state_key(self) -> str:
        """The key of this callback's state in a checkpoint: one per monitored log."""
        return f"EarlyStopping:{self.monitor}"

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        current = self.compare.value(logs, "EarlyStopping")
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self._snapshot()  # the reference until something improves
        self.wait += 1
        if self.compare.improved(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self._snapshot()
            if self.baseline is None or self.compare.improved(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose:
                print(
                    f"Restoring model weights from the end of the best epoch: "
                    f"{self.best_epoch + 1}."
                )
            self.model.load_state_dict(self.best_weights)

    def _snapshot(self) -> dict:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def state_dict(self) -> dict[str, Any]:
        """Progress (wait, best, epochs) and, if kept, the best weights as arrays."""
        state: dict[str, Any] = {
            "wait": self.wait,
            "best": self.best,
            "best_epoch": self.best_epoch,
            "stopped_epoch": self.stopped_epoch,
        }
        if self.best_weights is not None:
            state["best_weights"] = {k: v.numpy() for k, v in self.best_weights.items()}
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s progress (after ``on_train_begin`` reset it)."""
        self.wait, self.best = int(state_dict["wait"]), float(state_dict["best"])
        self.best_epoch = int(state_dict["best_epoch"])
        self.stopped_epoch = int(state_dict["stopped_epoch"])
        weights = state_dict.get("best_weights")
        if weights is not None:
            self.best_weights = {k: as_tensor(v) for k, v in weights.items()}
