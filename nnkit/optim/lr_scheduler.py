"""Learning-rate schedules with PyTorch's semantics.

Constructing a scheduler records each group's ``initial_lr`` and performs step 0 (it
sets the step-0 learning rate); every :meth:`LRScheduler.step` call then advances
``last_epoch`` by one and writes the new rates into the optimizer's groups. Call it after
``optimizer.step()``.

Rates are computed in closed form from ``base_lrs`` and ``last_epoch`` (they equal
PyTorch's recursive values up to rounding), so a scheduler's state is just a few numbers
and resuming is exact. Schedules therefore do not stack on one optimizer; wrap one in
another instead (:class:`LinearWarmup` takes ``after=``).

The base class lives in :mod:`nnkit.optim.scheduler_base`, the warm-up schedules in
:mod:`nnkit.optim.warmup_schedules` and ``ReduceLROnPlateau`` in
:mod:`nnkit.optim.plateau`; all are public here.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

from nnkit.optim.optimizer import Optimizer
from nnkit.optim.plateau import ReduceLROnPlateau
from nnkit.optim.scheduler_base import LRScheduler, _check_optimizer, _per_group
from nnkit.optim.warmup_schedules import LinearWarmup, OneCycleLR

__all__ = [
    "CosineAnnealingLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearWarmup",
    "MultiStepLR",
    "OneCycleLR",
    "ReduceLROnPlateau",
    "StepLR",
]


class StepLR(LRScheduler):
    """Decays each group's learning rate by ``gamma`` every ``step_size`` epochs.

    ``lr_t = base_lr * gamma ** (t // step_size)``

    Args:
        optimizer: the optimizer whose rates are scheduled.
        step_size: period of the decay, in epochs.
        gamma: multiplicative factor of the decay.
        last_epoch: index of the last epoch when resuming (-1 to start).

    Raises:
        ValueError: if ``step_size`` is not a positive integer.

    Example:
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

    def __init__(
        self, optimizer: Optimizer, step_size: int, *, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        if not isinstance(step_size, int) or step_size < 1:
            raise ValueError(f"step_size must be a positive integer, but got {step_size}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch=last_epoch)

    def get_lr(self) -> list[float]:
        return [lr * self.gamma ** (self.last_epoch // self.step_size) for lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Decays each group's learning rate by ``gamma`` at each milestone epoch.

    ``lr_t = base_lr * gamma ** (number of milestones <= t)``; a milestone given twice
    counts twice.

    Args:
        optimizer: the optimizer whose rates are scheduled.
        milestones: epoch indices at which to decay.
        gamma: multiplicative factor of the decay.
        last_epoch: index of the last epoch when resuming (-1 to start).

    Example:
        >>> opt = nnkit.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        >>> sched = MultiStepLR(opt, milestones=[1, 3], gamma=0.1)
        >>> lrs = []
        >>> for epoch in range(5):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()                  # after the epoch's training steps
        ...     sched.step()
        >>> lrs
        [0.1, 0.01, 0.01, 0.001, 0.001]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Sequence[int],
        *,
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch=last_epoch)

    def get_lr(self) -> list[float]:
        passed = bisect.bisect_right(self.milestones, self.last_epoch)
        return [lr * self.gamma**passed for lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Decays each group's learning rate by ``gamma`` every epoch.

    ``lr_t = base_lr * gamma ** t``

    Args:
        optimizer: the optimizer whose rates are scheduled.
        gamma: multiplicative factor of the decay.
        last_epoch: index of the last epoch when resuming (-1 to start).

    Example:
        >>> opt = nnkit.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        >>> sched = ExponentialLR(opt, gamma=0.5)
        >>> lrs = []
        >>> for epoch in range(4):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()                  # after the epoch's training steps
        ...     sched.step()
        >>> lrs
        [0.1, 0.05, 0.025, 0.0125]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, *, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch=last_epoch)

    def get_lr(self) -> list[float]:
        return [lr * self.gamma**self.last_epoch for lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneals each group's learning rate along a cosine from its base rate to ``eta_min``.

    ``lr_t = eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2``

    (SGDR without restarts; past ``T_max`` the rate climbs back along the same cosine,
    as in PyTorch.)

    Args:
        optimizer: the optimizer whose rates are scheduled.
        T_max: number of epochs of the half period.
        eta_min: the minimum learning rate.
        last_epoch: index of the last epoch when resuming (-1 to start).

    Raises:
        ValueError: if ``T_max`` is not positive.

    Example:
        >>> opt = nnkit.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        >>> sched = CosineAnnealingLR(opt, T_max=4, eta_min=0.01)
        >>> lrs = []
        >>> for epoch in range(6):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()                  # after the epoch's training steps
        ...     sched.step()
        >>> lrs
        [0.1, 0.08682, 0.055, 0.02318, 0.01, 0.02318]
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, *, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        if not T_max > 0:
            raise ValueError(f"T_max must be positive, but got {T_max}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch=last_epoch)

    def get_lr(self) -> list[float]:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (lr - self.eta_min) * cosine for lr in self.base_lrs]


class LambdaLR(LRScheduler):
    """Sets each group's learning rate to its base rate times a function of the epoch.

    ``lr_t = base_lr * lr_lambda(t)``

    The functions are not part of :meth:`state_dict` (as in PyTorch); rebuild the
    scheduler with the same functions before loading.

    Args:
        optimizer: the optimizer whose rates are scheduled.
        lr_lambda: a function of the epoch index, or a list of them, one per group.
        last_epoch: index of the last epoch when resuming (-1 to start).

    Raises:
        ValueError: if a list of functions does not have one per group.

    Example:
        >>> opt = nnkit.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        >>> sched = LambdaLR(opt, lambda t: 1 / (t + 1))
        >>> lrs = []
        >>> for epoch in range(4):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()                  # after the epoch's training steps
        ...     sched.step()
        >>> lrs
        [0.1, 0.05, 0.033333, 0.025]
    """

    _unsaved = ("optimizer", "lr_lambdas")

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        *,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.lr_lambdas = _per_group(lr_lambda, "lr_lambda", optimizer)
        super().__init__(optimizer, last_epoch=last_epoch)

    def get_lr(self) -> list[float]:
        return [lr * f(self.last_epoch) for lr, f in zip(self.base_lrs, self.lr_lambdas)]
