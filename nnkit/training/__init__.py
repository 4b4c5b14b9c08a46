"""The training loop behind ``Model.compile``/``fit``/``evaluate``/``predict``.

:class:`Trainer` is the mixin :class:`nnkit.Model` inherits; :mod:`.metrics` holds the
metric functions that ``compile(metrics=[...])`` accepts by name.
"""

from nnkit.training import metrics
from nnkit.training.interrupt import TrainingInterrupted, graceful_interrupts
from nnkit.training.trainer import FitState, Trainer

__all__ = ["Trainer", "FitState", "metrics", "TrainingInterrupted", "graceful_interrupts"]
