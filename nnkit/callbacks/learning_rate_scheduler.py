"""``LearningRateScheduler``: set the learning rate each epoch from a schedule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nnkit.callbacks.callback import Callback

__all__ = ["LearningRateScheduler"]


class LearningRateScheduler(Callback):
    """Set the learning rate at the start of every epoch.

    ``schedule`` is either Keras's function ``schedule(epoch, lr) -> new_lr`` (epoch
    counted from 0, ``lr`` the current rate of the first parameter group; the result is
    set on every group), or an :mod:`nnkit.optim.lr_scheduler` object built over the
    model's optimizer, which is stepped once at the end of each epoch (PyTorch's
    per-epoch convention; a ``ReduceLROnPlateau`` scheduler is stepped with
    ``logs[monitor]``). The rate is added to the epoch's logs as ``learning_rate``.

    Args:
        schedule: the function or scheduler object.
        verbose: 1 prints the rate each epoch.
        monitor: the log given to a plateau scheduler's ``step``.

    Raises:
        TypeError: if ``schedule`` is neither callable nor has a ``step`` method.

    Example:
        >>> def halve_every_10(epoch, lr):
        ...     return lr * 0.5 if epoch and epoch % 10 == 0 else lr
        >>> model.fit(x, y, epochs=30, callbacks=[LearningRateScheduler(halve_every_10)])
    """

    def __init__(self, schedule: Callable[[int, float], float] | Any, verbose: int = 0,
                 *, monitor: str = "val_loss") -> None:
        super().__init__()
        self._is_scheduler = hasattr(schedule, "step") and hasattr(schedule, "optimizer")
        if not (self._is_scheduler or callable(schedule)):
            raise TypeError("LearningRateScheduler: schedule must be schedule(epoch, lr) -> lr "
                            f"or an nnkit.optim.lr_scheduler object; got {type(schedule).__name__}")
        self.schedule, self.verbose, self.monitor = schedule, verbose, monitor

    def _groups(self) -> list[dict]:
        return self.model.optimizer.param_groups

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self._is_scheduler:
            return
        lr = self.schedule(epoch, float(self._groups()[0]["lr"]))
        if not isinstance(lr, (int, float)) or isinstance(lr, bool):
            raise TypeError(f"LearningRateScheduler: the schedule must return a float; got "
                            f"{type(lr).__name__} at epoch {epoch}")
        for group in self._groups():
            group["lr"] = float(lr)
        if self.verbose:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {lr:.4g}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = float(self._groups()[0]["lr"])
        if not self._is_scheduler:
            return
        from nnkit.optim.lr_scheduler import ReduceLROnPlateau

        if isinstance(self.schedule, ReduceLROnPlateau):
            self.schedule.step((logs or {})[self.monitor])
        else:
            self.schedule.step()

    def state_dict(self) -> dict[str, Any]:
        """The wrapped scheduler's state (empty for a schedule function)."""
        return self.schedule.state_dict() if self._is_scheduler else {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        if self._is_scheduler:
            self.schedule.load_state_dict(state_dict)
