"""``FitState``: where a running ``fit`` is (what checkpoints and callbacks read), and
small helpers of the loops."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nnkit.autograd.factories import as_tensor
from nnkit.autograd.tensor import Tensor
from nnkit.training.distributed_fit import DistributedFit
from nnkit.training.metrics import MeanTracker

__all__ = ["FitState", "to_numpy", "concat_outputs", "num_steps", "returned_logs"]


@dataclass
class FitState:
    """Where a running ``fit`` is, and what callbacks may need from it.

    ``BackupAndRestore`` reads it to take a resumable snapshot and writes it back on a
    restore. The progress fields say which point of the run the model's current state
    belongs to: after step ``step`` of epoch ``epoch`` (``epoch_done`` False), or after
    the whole epoch, validation and its ``on_epoch_end`` callbacks (``epoch_done``).

    Attributes:
        loader: the training loader (its ``state_dict`` is checkpointed if it has one).
        callbacks: the :class:`~nnkit.callbacks.CallbackList` of the call.
        distributed: this rank's :class:`~nnkit.training.distributed_fit.DistributedFit`
            in a data-parallel run, else None.
        data: the epoch iterator over ``loader``.
        epoch: the epoch in progress (or just finished), from 0.
        step: the last finished step of ``epoch``, from 0 (-1: none yet).
        global_step: training steps finished in the whole run, across resumes.
        epoch_done: True once ``epoch`` has ended (``on_epoch_end`` ran).
        tracker: the running means of the epoch's logs.
        after_epoch_begin: a restore to apply right after the next ``on_epoch_begin``
            (a mid-epoch resume re-opens its epoch first, then restores the state).
        class_weight: ``fit``'s ``class_weight`` as weights indexed by class, or None.
        metrics: the compiled stateful metrics (their states are part of the progress).
        planned: the training steps the call plans (None: unknown; for
            ``jit_compile="auto"``).
    """

    loader: Iterable
    callbacks: Any
    distributed: DistributedFit | None = None
    data: Any = None
    epoch: int = 0
    step: int = -1
    global_step: int = 0
    epoch_done: bool = False
    tracker: MeanTracker = field(default_factory=MeanTracker)
    after_epoch_begin: Callable[[], None] | None = None
    class_weight: list[float] | None = None
    metrics: list = field(default_factory=list)
    planned: int | None = None

    @property
    def is_chief(self) -> bool:
        """True unless this is a data-parallel run and this process is not rank 0."""
        return self.distributed is None or self.distributed.is_chief

    def progress(self) -> dict[str, Any]:
        """The loop's position and the epoch's running sums, for a checkpoint.

        In a data-parallel run every rank must call it at the same point: the running
        sums of an unfinished epoch are those of all ranks together (a collective).

        Returns:
            A dict of plain values (epoch, step, global step, running sums).
        """
        tracker = self.tracker
        states = {m.name: m.state() for m in self.metrics}
        if self.distributed is not None and not self.epoch_done:  # else already reduced
            tracker = MeanTracker()
            tracker.load_state_dict(self.tracker.state_dict())
            tracker.allreduce(self.distributed.comm)
            states = {
                name: [
                    self.distributed.comm.allreduce_(as_tensor(a).clone()).numpy() for a in arrays
                ]
                for name, arrays in states.items()
            }
        return {
            "epoch": self.epoch,
            "step": self.step,
            "global_step": self.global_step,
            "epoch_done": self.epoch_done,
            "tracker": tracker.state_dict(),
            "metrics": states,
            "world_size": 1 if self.distributed is None else self.distributed.size,
        }

    def load_progress(self, progress: dict[str, Any]) -> None:
        """Restore :meth:`progress` (the loader is restored separately). In a
        data-parallel run rank 0 takes the saved sums of all ranks, the others none.

        Args:
            progress: a dict returned by :meth:`progress`.
        """
        self.epoch, self.step = int(progress["epoch"]), int(progress["step"])
        self.global_step, self.epoch_done = (
            int(progress["global_step"]),
            bool(progress["epoch_done"]),
        )
        saved = progress["tracker"]
        if not self.is_chief and not self.epoch_done:
            saved = {part: dict.fromkeys(saved[part], 0.0) for part in ("totals", "counts")}
        self.tracker = MeanTracker()
        self.tracker.load_state_dict(saved)
        states = progress.get("metrics", {})
        for metric in self.metrics:  # every rank but 0 restarts from zero, as the sums
            metric.load_state(
                list(states.get(metric.name, [])) if self.is_chief or self.epoch_done else []
            )
        if self.data is not None:
            self.data.reset()


def to_numpy(value: Any) -> Any:
    """Host NumPy copies of a (nested) model output.

    Args:
        value: a Tensor, an array-like, or tuples/lists/dicts of them.

    Returns:
        The same structure with ndarrays (Tensors detached and copied to the host).
    """
    if isinstance(value, (tuple, list)):
        return type(value)(to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    return value.detach().numpy() if isinstance(value, Tensor) else np.asarray(value)


def concat_outputs(batches: list) -> Any:
    """The per-batch outputs of ``predict`` joined along the batch axis.

    Args:
        batches: a non-empty list of outputs of :func:`to_numpy`, all of one structure.

    Returns:
        One output of that structure, each ndarray concatenated along axis 0.
    """
    first = batches[0]
    if isinstance(first, (tuple, list)):
        return type(first)(concat_outputs([b[i] for b in batches]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: concat_outputs([b[k] for b in batches]) for k in first}
    return np.concatenate(batches, axis=0)


def num_steps(loader: Iterable, limit: int | None = None) -> int | None:
    """The number of batches a loop over ``loader`` takes (at most ``limit``); None if
    unknown.

    Args:
        loader: the batches (a DataLoader or any iterable).
        limit: the largest number of steps, or None.

    Returns:
        The number of steps, or None when ``loader`` has no length and no ``limit`` is given.
    """
    try:
        total = len(loader)
    except TypeError:
        return limit
    return total if limit is None else min(total, limit)


def returned_logs(logs: dict, return_dict: bool) -> Any:
    """What ``evaluate`` and the ``*_on_batch`` methods return (Keras): ``logs``, or the
    loss alone if there is nothing else, else the list of the loss and the metrics."""
    if return_dict:
        return logs
    values = list(logs.values())
    return values[0] if len(values) == 1 else values
