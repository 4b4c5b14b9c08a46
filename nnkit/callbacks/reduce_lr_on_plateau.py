"""``ReduceLROnPlateau``: lower the learning rate when a metric has stopped improving."""

from __future__ import annotations

from typing import Any

from nnkit.callbacks._monitor import MonitorComparison, resolve_mode
from nnkit.callbacks.callback import Callback

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` after ``patience`` epochs without progress.

    Keras semantics: an epoch improves when ``monitor`` beats the best by more than
    ``min_delta``; after ``patience`` epochs that do not, each parameter group's
    ``lr`` becomes ``max(lr * factor, min_lr)``, then ``cooldown`` epochs pass before
    counting again. The current rate is added to the epoch's logs as
    ``learning_rate`` (first parameter group).

    Args:
        monitor: the log to watch.
        factor: the multiplier, in ``(0, 1)``.
        patience: epochs without improvement before a reduction.
        verbose: 1 prints a line per reduction.
        mode: ``'min'``, ``'max'`` or ``'auto'``.
        min_delta: the smallest change that counts as an improvement.
        cooldown: epochs to wait after a reduction.
        min_lr: the lower bound of the rate.

    Raises:
        ValueError: if ``factor`` is not below 1 or the mode is unknown.

    Example:
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer=nnkit.optim.SGD(model.parameters(), lr=0.1), loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> # min_delta=10: no epoch after the first counts as an improvement
        >>> plateau = ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=10.0)
        >>> history = model.fit(x, y, epochs=4, verbose=0, callbacks=[plateau])
        >>> history.history["learning_rate"]
        [0.1, 0.1, 0.05, 0.025]
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: int = 0,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0.0,
    ) -> None:
        super().__init__()
        if not 0.0 < factor < 1.0:
            raise ValueError(
                f"ReduceLROnPlateau does not support a factor >= 1.0 (or <= 0); "
                f"received factor={factor}"
            )
        self.monitor, self.factor, self.patience = monitor, float(factor), int(patience)
        self.verbose, self.cooldown, self.min_lr = verbose, int(cooldown), float(min_lr)
        self.compare = MonitorComparison(
            monitor, resolve_mode(mode, monitor, "ReduceLROnPlateau"), min_delta
        )
        self._reset()

    def _reset(self) -> None:
        self.best, self.wait, self.cooldown_counter = self.compare.worst, 0, 0

    @property
    def state_key(self) -> str:
        """The key of this callback's state in a checkpoint: one per monitored log."""
        return f"ReduceLROnPlateau:{self.monitor}"

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        groups = self.model.optimizer.param_groups
        if logs is not None:
            logs["learning_rate"] = float(groups[0]["lr"])
        current = self.compare.value(logs, "ReduceLROnPlateau")
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.compare.improved(current, self.best):
            self.best, self.wait = current, 0
        elif self.cooldown_counter == 0:
            self.wait += 1
            if self.wait >= self.patience:
                self._reduce(epoch, groups)

    def _reduce(self, epoch: int, groups: list[dict]) -> None:
        reducible = [group for group in groups if group["lr"] > self.min_lr]
        if not reducible:  # already at min_lr: keep counting, as Keras does
            return
        for group in reducible:
            group["lr"] = max(group["lr"] * self.factor, self.min_lr)
        if self.verbose:
            print(
                f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to "
                f"{groups[0]['lr']:.4g}."
            )
        self.cooldown_counter, self.wait = self.cooldown, 0

    def state_dict(self) -> dict[str, Any]:
        """The best value, the wait and the cooldown count."""
        return {"best": self.best, "wait": self.wait, "cooldown_counter": self.cooldown_counter}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.best = float(state_dict["best"])
        self.wait = int(state_dict["wait"])
        self.cooldown_counter = int(state_dict["cooldown_counter"])
