"""``LearningRateScheduler``: set the learning rate each epoch from a schedule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nnkit.callbacks._monitor import monitored_number
from nnkit.callbacks.callback import Callback
from nnkit.optim.lr_scheduler import ReduceLROnPlateau

__all__ = ["LearningRateScheduler"]


class LearningRateScheduler(Callback):
    """Set the learning rate at the start of every epoch.

    ``schedule`` is either Keras's function ``schedule(epoch, lr) -> new_lr`` (epoch
    counted from 0, ``lr`` the current rate of the first parameter group; the result is
    set on every group), or an :mod:`nnkit.optim.lr_scheduler` object built over the
    model's optimizer, which is stepped once at the end of each epoch (PyTorch's
    per-epoch convention; a ``ReduceLROnPlateau`` scheduler is stepped with
    ``logs[monitor]``). The rate is added to the epoch's logs as ``learning_rate``.

    With ``interval='step'`` the schedule runs per training step instead: a scheduler
    object is stepped after every batch (for ``OneCycleLR``, warm-up and the like), a
    function is called before every batch as ``schedule(step, lr)`` with the global
    step counted from 0 across epochs.

    Args:
        schedule: the function or scheduler object.
        verbose: 1 prints the rate each epoch.
        monitor: the log given to a plateau scheduler's ``step``.
        interval: ``'epoch'`` (Keras's) or ``'step'``.

    Raises:
        TypeError: if ``schedule`` is neither callable nor has a ``step`` method.
        ValueError: for another ``interval``, or a plateau scheduler per step.

    Example:
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer=nnkit.optim.SGD(model.parameters(), lr=0.1), loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> def halve_every_2(epoch, lr):
        ...     return lr * 0.5 if epoch and epoch % 2 == 0 else lr
        >>> history = model.fit(x, y, epochs=5, verbose=0,
        ...                     callbacks=[LearningRateScheduler(halve_every_2)])
        >>> history.history["learning_rate"]
        [0.1, 0.1, 0.05, 0.05, 0.025]
    """

    def __init__(
        self,
        schedule: Callable[[int, float], float] | Any,
        verbose: int = 0,
        *,
        monitor: str = "val_loss",
        interval: str = "epoch",
    ) -> None:
        super().__init__()
        self._is_scheduler = hasattr(schedule, "step") and hasattr(schedule, "optimizer")
        if not (self._is_scheduler or callable(schedule)):
            raise TypeError(
                "LearningRateScheduler: schedule must be schedule(epoch, lr) -> lr "
                f"or an nnkit.optim.lr_scheduler object; got {type(schedule).__name__}"
            )
        if interval not in ("epoch", "step"):
            raise ValueError(
                f"LearningRateScheduler: interval must be 'epoch' or 'step'; received {interval!r}"
            )
        if interval == "step" and isinstance(schedule, ReduceLROnPlateau):
            raise ValueError(
                "LearningRateScheduler: a ReduceLROnPlateau scheduler watches an "
                "epoch's logs; use interval='epoch'"
            )
        self.schedule, self.verbose, self.monitor = schedule, verbose, monitor
        self.interval, self._step = interval, 0

    def _groups(self) -> list[dict]:
        return self.model.optimizer.param_groups

    def _apply(self, index: int, what: str) -> float:
        lr = self.schedule(index, float(self._groups()[0]["lr"]))
        if not isinstance(lr, (int, float)) or isinstance(lr, bool):
            raise TypeError(
                f"LearningRateScheduler: the schedule must return a float; got "
                f"{type(lr).__name__} at {what} {index}"
            )
        for group in self._groups():
            group["lr"] = float(lr)
        return float(lr)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self._is_scheduler or self.interval == "step":
            return
        lr = self._apply(epoch, "epoch")
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {lr:.4g}.")

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        if self.interval == "step" and not self._is_scheduler:
            self._apply(self._step, "step")

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.interval != "step":
            return
        self._step += 1
        if self._is_scheduler:
            self.schedule.step()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = float(self._groups()[0]["lr"])
        if not self._is_scheduler or self.interval == "step":
            return
        if isinstance(self.schedule, ReduceLROnPlateau):
            value = (logs or {})[self.monitor]
            self.schedule.step(monitored_number(value, self.monitor, "LearningRateScheduler"))
        else:
            self.schedule.step()

    def state_dict(self) -> dict[str, Any]:
        """The wrapped scheduler's state (a function's: none) and the step count."""
        return {
            "scheduler": self.schedule.state_dict() if self._is_scheduler else {},
            "step": self._step,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        if self._is_scheduler:
            self.schedule.load_state_dict(state_dict["scheduler"])
        self._step = int(state_dict.get("step", 0))
