"""``History``: records every epoch's logs; ``fit`` returns it."""

from __future__ import annotations

from typing import Any

import numpy as np

from nnkit.callbacks.callback import Callback

__all__ = ["History"]


class History(Callback):
    """Collects the logs of each epoch; ``Model.fit`` adds one and returns it.

    Attributes:
        history: ``{log_name: [value per epoch]}``, e.g. ``history['val_loss']``.
        epoch: the indices of the epochs recorded (from ``initial_epoch`` on).
        params: the loop's parameters (``verbose``, ``epochs``, ``steps``).

    Example:
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> history = model.fit(x, y, epochs=3, validation_split=0.25, verbose=0)
        >>> len(history.history["val_loss"]), history.epoch
        (3, [0, 1, 2])
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[float]] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for name, value in (logs or {}).items():
            self.history.setdefault(name, []).append(value)
        self.model.history = self

    def __repr__(self) -> str:
        return f"History(epochs={len(self.epoch)}, keys={sorted(self.history)})"

    def state_dict(self) -> dict[str, Any]:
        """The epochs recorded so far, so that a resumed run's History is the whole run's.

        Returns:
            ``{'epoch': int64 array, 'history': {name: array}}``: float64 for numbers,
            an ``(epochs, ...)`` array of the values' dtype for a metric with several
            values (``F1Score(average=None)``).

        Raises:
            TypeError: if a logged value is not a number or an array of numbers (or the
                arrays of one log differ in shape).
        """
        history = {}
        for name, values in self.history.items():
            scalars = all(np.ndim(v) == 0 for v in values)
            try:
                array = np.asarray(values, dtype=np.float64 if scalars else None)
            except (TypeError, ValueError):
                array = None
            if array is None or array.dtype.kind not in "fiub":
                raise TypeError(
                    f"History: log '{name}' holds values that are not numbers "
                    "and cannot be checkpointed"
                ) from None
            history[name] = array
        return {"epoch": np.asarray(self.epoch, dtype=np.int64), "history": history}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (the epochs before an interruption)."""
        self.epoch = [int(e) for e in np.asarray(state_dict["epoch"]).ravel()]
        self.history = {
            str(name): (
                [float(v) for v in array] if array.ndim == 1 else [np.array(row) for row in array]
            )
            for name, array in ((n, np.asarray(v)) for n, v in state_dict["history"].items())
        }
        if self.model is not None:
            self.model.history = self
