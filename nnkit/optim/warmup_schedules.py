"""Warm-up schedules of :mod:`nnkit.optim.lr_scheduler`: ``OneCycleLR`` and
``LinearWarmup``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nnkit.optim.optimizer import Optimizer
from nnkit.optim.plateau import ReduceLROnPlateau
from nnkit.optim.scheduler_base import LRScheduler, _check_optimizer, _per_group, _total_steps

__all__ = ["OneCycleLR", "LinearWarmup"]


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
        >>> opt = nnkit.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)
        >>> sched = OneCycleLR(opt, max_lr=0.1, total_steps=10)
        >>> lrs = []
        >>> for step in range(10):
        ...     lrs.append(round(sched.get_last_lr()[0], 5))
        ...     opt.step()                  # one training step (batch)
        ...     sched.step()
        >>> lrs
        [0.004, 0.052, 0.1, 0.09505, 0.08117, 0.06113, 0.03887, 0.01883, 0.00495, 0.0]
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
        >>> from nnkit.optim.lr_scheduler import CosineAnnealingLR
        >>> opt = nnkit.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
        >>> cosine = CosineAnnealingLR(opt, T_max=4)
        >>> sched = LinearWarmup(opt, warmup_steps=3, after=cosine)
        >>> lrs = []
        >>> for step in range(7):
        ...     lrs.append(round(sched.get_last_lr()[0], 6))
        ...     opt.step()
        ...     sched.step()
        >>> lrs                             # 3 warm-up steps, then the cosine
        [0.033333, 0.055556, 0.077778, 0.1, 0.085355, 0.05, 0.014645]
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
