"""``ReduceLROnPlateau`` of :mod:`nnkit.optim.lr_scheduler`: lower the rate when a
monitored value stops improving."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nnkit.optim.optimizer import Optimizer
from nnkit.optim.scheduler_base import LRScheduler, _check_optimizer, _per_group

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(LRScheduler):
    """Reduces the learning rate when a metric has stopped improving.

    Each :meth:`step` takes the monitored metric. It is better than the best so far when
    (for ``mode='min'``) ``metric < best * (1 - threshold)`` (``threshold_mode='rel'``) or
    ``metric < best - threshold`` (``'abs'``); ``'max'`` mirrors this. After more than
    ``patience`` steps without improvement, each group's rate becomes
    ``max(lr * factor, min_lr)`` (skipped if that changes it by ``eps`` or less), and the
    count pauses for ``cooldown`` steps.

    Args:
        optimizer: the optimizer whose rates are scheduled.
        mode: ``'min'`` (the metric should fall) or ``'max'``.
        factor: multiplicative factor of a reduction, < 1.
        patience: number of steps without improvement tolerated before a reduction.
        threshold: how much better than the best a metric must be to count.
        threshold_mode: ``'rel'`` or ``'abs'``.
        cooldown: steps to wait after a reduction before counting again.
        min_lr: lower bound of the rate, or one per group.
        eps: minimal change of the rate; smaller reductions are skipped.

    Raises:
        ValueError: for ``factor >= 1``, an unknown mode or threshold mode, or a ``min_lr``
            list without one value per group.

    Example:
        >>> opt = nnkit.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        >>> sched = ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
        >>> for val_loss in [1.0, 0.8, 0.9, 0.9, 0.9, 0.7]:
        ...     sched.step(val_loss)        # once per epoch, with the validation loss
        ...     print(round(opt.param_groups[0]["lr"], 6))
        0.1
        0.1
        0.1
        0.05
        0.05
        0.05
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        *,
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | Sequence[float] = 0,
        eps: float = 1e-8,
    ) -> None:
        _check_optimizer(optimizer)
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.optimizer = optimizer
        self.min_lrs = list(_per_group(min_lr, "min_lr", optimizer))
        self.mode, self.factor, self.patience, self.eps = mode, factor, patience, eps
        self.threshold, self.threshold_mode, self.cooldown = threshold, threshold_mode, cooldown
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def is_better(self, current: float, best: float) -> bool:
        """Returns whether ``current`` improves on ``best`` by more than the threshold."""
        sign = 1.0 if self.mode == "min" else -1.0
        if self.threshold_mode == "rel":
            return sign * current < sign * best * (1.0 - sign * self.threshold)
        return sign * current < sign * best - self.threshold

    def step(self, metric: Any) -> None:  # type: ignore[override]
        """Records one value of the monitored metric and reduces the rates if it stalled.

        Args:
            metric: the metric, a number or a one-element Tensor/array.
        """
        current = float(metric.item() if hasattr(metric, "item") else metric)
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs):
            new_lr = max(group["lr"] * self.factor, min_lr)
            if group["lr"] - new_lr > self.eps:
                group["lr"] = new_lr
