"""The comparison shared by the callbacks that watch a logged quantity."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

__all__ = ["resolve_mode", "MonitorComparison", "monitored_number"]


def resolve_mode(mode: str, monitor: str, owner: str) -> str:
    """``'min'`` or ``'max'``; ``'auto'`` picks ``'max'`` for accuracy-like names.

    Raises:
        ValueError: for a mode other than ``'auto'``, ``'min'`` or ``'max'``.
    """
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max'; received {mode!r}")
    if mode != "auto":
        return mode
    name = monitor.removeprefix("val_")
    return "max" if ("acc" in name or name in ("auc", "precision", "recall", "f1")) else "min"


class MonitorComparison:
    """Whether a value improves on a reference by more than ``min_delta``.

    Args:
        monitor: the log name watched.
        mode: ``'min'`` or ``'max'`` (already resolved).
        min_delta: the smallest change that counts as an improvement (>= 0).
    """

    def __init__(self, monitor: str, mode: str, min_delta: float = 0.0) -> None:
        self.monitor, self.mode, self.min_delta = monitor, mode, abs(float(min_delta))

    @property
    def worst(self) -> float:
        """The starting "best" value: +inf for ``'min'``, -inf for ``'max'``."""
        return math.inf if self.mode == "min" else -math.inf

    def improved(self, current: float, reference: float) -> bool:
        """``current < reference - min_delta`` (``'min'``) or the mirror for ``'max'``."""
        if self.mode == "min":
            return current < reference - self.min_delta
        return current > reference + self.min_delta

    def value(self, logs: dict | None, owner: str) -> float | None:
        """The monitored value in ``logs``, or None (with a warning) if it is missing."""
        value = (logs or {}).get(self.monitor)
        if value is None:
            warnings.warn(
                f"{owner} is conditioned on metric '{self.monitor}', which is not "
                f"available; available metrics are: {', '.join(logs or {})}",
                RuntimeWarning,
                stacklevel=3,
            )
            return None
        return monitored_number(value, self.monitor, owner)


def monitored_number(value: Any, monitor: str, owner: str) -> float:
    """The logged ``value`` of ``monitor`` as a float.

    Raises:
        ValueError: naming the log, for a metric with several values (a vector such as
            ``F1Score(average=None)``'s), which has no single best.
    """
    if np.size(value) != 1:
        raise ValueError(
            f"{owner} monitors '{monitor}', a metric with {np.size(value)} values "
            f"(shape {tuple(np.shape(value))}), which has no single best: monitor a "
            "metric with one value (e.g. F1Score(average='macro'), or Precision with "
            "one threshold)"
        )
    return float(np.asarray(value).reshape(())) if np.ndim(value) else float(value)
