"""Learning-rate schedules with PyTorch's semantics.

Constructing a scheduler records each group's ``initial_lr`` and performs step 0 (it
sets the step-0 learning rate); every :meth:`LRScheduler.step` call then advances
``last_epoch`` by one and writes the new rates into the optimizer's groups. Call it after
``optimizer.step()``.

Rates are computed in closed form from ``base_lrs`` and ``last_epoch`` (they equal
PyTorch's recursive values up to rounding), so a scheduler's state is just a few numbers
and resuming is exact. Schedules therefore do not stack on one optimizer; wrap one in
another instead (:class:`LinearWarmup` takes ``after=``).
"""

from __future__ import annotations

import bisect
import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

from nnkit.optim.optimizer import Optimizer, _plain

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
        >>> sched = StepLR(opt, step_size=30, gamma=0.1)
        >>> for epoch in range(100):
        ...     train_one_epoch(opt)
        ...     sched.step()
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
        >>> sched = StepLR(opt, step_size=30, gamma=0.1)   # 0.05 ... then 0.005 at t=30
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
        >>> sched = MultiStepLR(opt, milestones=[30, 80], gamma=0.1)
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
        >>> sched = ExponentialLR(opt, gamma=0.95)
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
        >>> sched = CosineAnnealingLR(opt, T_max=100, eta_min=1e-5)
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
        >>> sched = LambdaLR(opt, lambda t: 0.95**t)
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


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin, 2017): warm up to ``max_lr``, then anneal down.

    Call :meth:`step` after every batch. With ``T = total_steps`` and ``P = pct_start * T``,
    the rate (per group) goes::

        initial_lr = max_lr / div_factor   ->  max_lr                over steps 0 .. P - 1
        max_lr                             ->  initial_lr / final_div_factor   .. T - 1

    each leg annealed by ``anneal(start, end, pct)`` (``'cos'``:
    ``end + (start - end) * (1 + cos(pi * pct)) / 2``; ``'linear'``:
    ``start + (end - start) * pct``). With ``three_phase`` the rate goes up over
    ``0 .. P - 1``, back down to ``initial_lr`` over ``.. 2P - 2``, then to the minimum.
    With ``cycle_momentum`` the momentum (or Adam's ``beta1``) moves inversely, between
    ``max_momentum`` and ``base_momentum``.

    Args:
        optimizer: the optimizer whose rates are scheduled.
        max_lr: peak learning rate, or one per group.
        total_steps: number of steps in the cycle; or give ``epochs`` and
            ``steps_per_epoch``.
        epochs: number of epochs (with ``steps_per_epoch``).
        steps_per_epoch: number of steps per epoch (with ``epochs``).
        pct_start: fraction of the cycle spent increasing the rate.
        anneal_strategy: ``'cos'`` or ``'linear'``.
        cycle_momentum: cycle the momentum (``'momentum'`` or ``'betas'[0]``) inversely.
        base_momentum: lowest momentum, or one per group.
        max_momentum: highest momentum, or one per group.
        div_factor: ``initial_lr = max_lr / div_factor``.
        final_div_factor: ``min_lr = initial_lr / final_div_factor``.
        three_phase: use the three-phase variant.
        last_epoch: index of the last step when resuming (-1 to start).

    Raises:
        ValueError: for a missing or non-positive step count, ``pct_start`` outside [0, 1],
            an unknown ``anneal_strategy``, a per-group list of the wrong length, cycling
            momentum on an optimizer without momentum, or stepping past ``total_steps``.

    Example:
        >>> sched = OneCycleLR(opt, max_lr=0.1, epochs=10, steps_per_epoch=len(loader))
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | Sequence[float],
        total_steps: int | None = None,
        *,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.85,
        max_momentum: float | Sequence[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not 0.0 <= pct_start <= 1.0:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self.pct_start = pct_start
        self.anneal_strategy = anneal_strategy
        self.three_phase = three_phase
        self.cycle_momentum = cycle_momentum
        self.use_beta1 = "betas" in optimizer.defaults
        if last_epoch == -1:
            self._init_groups(optimizer, max_lr, div_factor, final_div_factor)
            if cycle_momentum:
                self._init_momentum(optimizer, base_momentum, max_momentum)
        super().__init__(optimizer, last_epoch=last_epoch)

    def _init_groups(
        self, optimizer: Optimizer, max_lr: Any, div_factor: float, final_div_factor: float
    ) -> None:
        for group, peak in zip(optimizer.param_groups, _per_group(max_lr, "max_lr", optimizer)):
            group["initial_lr"] = peak / div_factor
            group["max_lr"] = peak
            group["min_lr"] = group["initial_lr"] / final_div_factor

    def _init_momentum(self, optimizer: Optimizer, base: Any, top: Any) -> None:
        if "momentum" not in optimizer.defaults and not self.use_beta1:
            raise ValueError(
                "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
            )
        bases = _per_group(base, "base_momentum", optimizer)
        tops = _per_group(top, "max_momentum", optimizer)
        for group, low, high in zip(optimizer.param_groups, bases, tops):
            self._set_momentum(group, high)
            group["base_momentum"] = low
            group["max_momentum"] = high

    def _set_momentum(self, group: dict[str, Any], momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def _phases(self) -> list[tuple[float, str, str, str, str]]:
        # (last step of the phase, start lr key, end lr key, start/end momentum keys)
        peak = float(self.pct_start * self.total_steps)
        last = self.total_steps - 1
        if self.three_phase:
            return [
                (peak - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (2 * peak - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (last, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        return [
            (peak - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            (last, "max_lr", "min_lr", "base_momentum", "max_momentum"),
        ]

    def _position(self) -> tuple[tuple[float, str, str, str, str], float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. "
                f"The specified number of total steps is {self.total_steps}"
            )
        *phases, last = self._phases()
        start = 0.0
        for phase in phases:
            if step <= phase[0]:
                return phase, (step - start) / (phase[0] - start)
            start = phase[0]
        return last, (step - start) / (last[0] - start)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        (_, lr_from, lr_to, _, _), pct = self._position()
        return [self._anneal(g[lr_from], g[lr_to], pct) for g in self.optimizer.param_groups]

    def step(self) -> None:
        super().step()
        if self.cycle_momentum:
            (_, _, _, m_from, m_to), pct = self._position()
            for group in self.optimizer.param_groups:
                self._set_momentum(group, self._anneal(group[m_from], group[m_to], pct))


class LinearWarmup(LRScheduler):
    """Ramps the learning rate up linearly, then hands over to another schedule.

    For ``t < warmup_steps``::

        lr_t = base_lr * (start_factor + (1 - start_factor) * t / warmup_steps)

    and from ``t = warmup_steps`` on, the rates of ``after`` at its epoch
    ``t - warmup_steps`` (or ``base_lr`` when ``after`` is None). This equals PyTorch's
    ``SequentialLR([LinearLR(opt, start_factor, total_iters=warmup_steps), after],
    milestones=[warmup_steps])``.

    Args:
        optimizer: the optimizer whose rates are scheduled.
        warmup_steps: length of the ramp, in steps.
        after: the schedule that follows, built on the same optimizer (before this one).
        start_factor: the fraction of the base rate used at step 0, in [0, 1].
        last_epoch: index of the last step when resuming (-1 to start).

    Raises:
        ValueError: for a negative ``warmup_steps``, ``start_factor`` outside [0, 1], or an
            ``after`` on another optimizer.
        TypeError: if ``after`` is a :class:`ReduceLROnPlateau` (it needs a metric).

    Example:
        >>> cosine = CosineAnnealingLR(opt, T_max=900)
        >>> sched = LinearWarmup(opt, warmup_steps=100, after=cosine)
    """

    _unsaved = ("optimizer", "after")

    def __init__(
        self,
        optimizer: Optimizer,
        warmup_steps: int,
        after: LRScheduler | None = None,
        *,
        start_factor: float = 1.0 / 3,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise ValueError(f"warmup_steps must be a non-negative integer, got {warmup_steps}")
        if not 0.0 <= start_factor <= 1.0:
            raise ValueError(f"start_factor must be in [0, 1], but got {start_factor}")
        if isinstance(after, ReduceLROnPlateau):
            raise TypeError("LinearWarmup cannot hand over to ReduceLROnPlateau")
        if after is not None and after.optimizer is not optimizer:
            raise ValueError("LinearWarmup and the schedule it wraps must share one optimizer")
        self.warmup_steps = warmup_steps
        self.start_factor = start_factor
        self.after = after
        super().__init__(optimizer, last_epoch=last_epoch)

    def get_lr(self) -> list[float]:
        t = self.last_epoch
        if t < self.warmup_steps:
            factor = self.start_factor + (1 - self.start_factor) * t / self.warmup_steps
            return [lr * factor for lr in self.base_lrs]
        if self.after is None:
            return list(self.base_lrs)
        self.after.last_epoch = t - self.warmup_steps - 1
        self.after.step()
        return self.after.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["after"] = None if self.after is None else self.after.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        after = state.pop("after", None)
        if (after is None) != (self.after is None):
            raise ValueError(
                "state dict and scheduler disagree on whether there is an `after` schedule"
            )
        super().load_state_dict(state)
        if self.after is not None:
            self.after.load_state_dict(after)


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
        >>> sched = ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=3)
        >>> for epoch in range(100):
        ...     sched.step(validate(model))
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
