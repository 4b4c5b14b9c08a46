"""The base class of the learning-rate schedules of :mod:`nnkit.optim.lr_scheduler`
and the argument checks they share."""

from __future__ import annotations

import copy
from typing import Any

from nnkit.optim.optimizer import Optimizer, _plain

__all__ = ["LRScheduler"]


class LRScheduler:
    """Base class of learning-rate schedules.

    A subclass implements :meth:`get_lr`, the rates at epoch ``last_epoch``.

    Args:
        optimizer: the optimizer whose groups' ``'lr'`` is scheduled.
        last_epoch: index of the last completed epoch; -1 starts a new schedule. Any other
            value resumes one and needs ``'initial_lr'`` in every group.

    Attributes:
        base_lrs: each group's ``initial_lr``.
        last_epoch: the epoch (step) index of the current rates; 0 right after construction.

    Raises:
        TypeError: if ``optimizer`` is not an :class:`Optimizer`.
        KeyError: if resuming (``last_epoch != -1``) and a group lacks ``'initial_lr'``.

    Example:
        >>> from nnkit.optim.lr_scheduler import StepLR
        >>> opt = nnkit.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        >>> sched = StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for epoch in range(5):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()                  # after the epoch's training steps
        ...     sched.step()
        >>> lrs
        [0.1, 0.1, 0.05, 0.05, 0.025]
    """

    # Attributes left out of state_dict (the optimizer, callables, nested schedules).
    _unsaved: tuple[str, ...] = ("optimizer",)

    def __init__(self, optimizer: Optimizer, *, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"param 'initial_lr' is not specified in param_groups[{i}] "
                    "when resuming an optimizer"
                )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def get_lr(self) -> list[float]:
        """Returns each group's learning rate at epoch ``last_epoch``."""
        raise NotImplementedError

    def step(self) -> None:
        """Advances the schedule by one epoch (or batch) and updates the optimizer's rates."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """Returns the learning rates the last :meth:`step` set, one per group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Returns the schedule's state: every attribute but the optimizer (and callables).

        Returns:
            A dict of plain numbers, strings and lists of them.
        """
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if k not in self._unsaved}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores state saved by :meth:`state_dict`.

        Args:
            state_dict: a dict from :meth:`state_dict` (values may be NumPy scalars or
                arrays, as a checkpoint loader gives them).

        Raises:
            ValueError: if its keys are not those of this scheduler's state.
        """
        expected = {k for k in vars(self) if k not in self._unsaved}
        got = set(state_dict)
        if expected != got:
            raise ValueError(
                f"state dict does not match {type(self).__name__}: missing "
                f"{sorted(expected - got)}, unexpected {sorted(got - expected)}"
            )
        for key, value in state_dict.items():
            setattr(self, key, _plain(value, like=getattr(self, key)))


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _per_group(value: Any, name: str, optimizer: Optimizer) -> list[Any]:
    count = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise ValueError(f"expected {count} values for {name}, got {len(value)}")
        return list(value)
    return [value] * count


def _total_steps(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
    if total_steps is None:
        if epochs is None or steps_per_epoch is None:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Expected positive integer {name}, but got {value}")
        total_steps = epochs * steps_per_epoch
    if not isinstance(total_steps, int) or total_steps <= 0:
        raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
    return total_steps
