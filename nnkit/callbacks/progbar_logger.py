"""``ProgbarLogger``: the tqdm progress bar of ``fit``, ``evaluate`` and ``predict``."""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np
from tqdm.auto import tqdm  # a widget in a notebook, text on a terminal
from tqdm.contrib.logging import logging_redirect_tqdm

from nnkit.callbacks.callback import Callback

__all__ = ["ProgbarLogger"]


def _shown(value: Any) -> Any:
    """A log value as the progress shows it: a number, the mean of a metric with several
    values (as Keras's progress bar), anything else as it is."""
    if isinstance(value, np.ndarray) and value.size and value.dtype.kind in "fiub":
        return float(np.mean(value))
    return value


def _numbers(logs: dict | None) -> list:
    shown = ((k, _shown(v)) for k, v in (logs or {}).items())
    return [(k, v) for k, v in shown if isinstance(v, float)]


def format_logs(logs: dict | None) -> str:
    """``'loss: 0.1234 - accuracy: 0.9500'`` (Keras's one-line form; a metric with
    several values shows their mean, as in Keras)."""
    shown = ((k, _shown(v)) for k, v in (logs or {}).items())
    return " - ".join(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}" for k, v in shown)


class ProgbarLogger(Callback):
    """Shows progress on standard output; added by ``fit``/``evaluate``/``predict``.

    With ``verbose=1`` each epoch gets a tqdm bar (steps done, rate, running logs) that
    stays on screen when the epoch ends; ``verbose=2`` prints one line per epoch
    (``Epoch 3/5 - 32/32 - 1.2s - loss: ...``: no carriage returns, so a redirected log
    stays clean; ``verbose='auto'`` picks it when standard output is not a terminal);
    ``verbose=0`` adds no logger at all. Validation inside ``fit`` shows no bar of its
    own: its ``val_*`` logs appear on the epoch's line.

    Example:
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> _ = model.fit(x, y, epochs=2, batch_size=8, verbose=2)
        Epoch 1/2 - 2/2 - ...s - loss: ...
        Epoch 2/2 - 2/2 - ...s - loss: ...

        With ``verbose=1`` a terminal shows a bar per epoch instead:
        ``Epoch 1/2: 100%|██████████| 2/2 [00:00<00:00, 310.2step/s, loss=0.98]``.
    """

    rank_zero_only = True

    def __init__(self) -> None:
        super().__init__()
        self._bar: Any = None
        self._in_fit = False
        self._start = 0.0
        self._seen = 0
        self._logging: Any = None

    @property
    def _verbose(self) -> int:
        return int(self.params.get("verbose", 1))

    def _open(self, desc: str) -> None:
        self._start, self._seen = time.perf_counter(), 0
        if self._verbose == 1:
            self._bar = tqdm(
                total=self.params.get("steps"),
                desc=desc,
                unit="step",
                file=sys.stdout,
                leave=True,
                dynamic_ncols=True,
            )
            # a logging call while the bar is shown prints on its own line above it
            self._logging = logging_redirect_tqdm(tqdm_class=type(self._bar))
            self._logging.__enter__()

    def _postfix(self, logs: dict | None, refresh: bool) -> None:
        self._bar.set_postfix(
            {k: f"{v:.4g}" for k, v in _numbers(logs)},
            refresh=refresh,
        )

    def _advance(self, logs: dict | None) -> None:
        self._seen += 1
        if self._bar is not None:
            self._postfix(logs, refresh=False)
            self._bar.update(1)

    def _close(self, title: str, logs: dict | None) -> None:
        if self._bar is not None:
            self._postfix(logs, refresh=True)
            self._bar.close()
            self._bar = None
            self._logging.__exit__(None, None, None)
        elif self._verbose == 2:
            seconds = time.perf_counter() - self._start
            steps = self.params.get("steps")
            parts = [
                title,
                f"{self._seen}/{steps if steps is not None else self._seen}",
                f"{seconds:.1f}s",
            ] + ([format_logs(logs)] if logs else [])
            print(" - ".join(parts), file=sys.stdout, flush=True)

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        self._open(f"Epoch {epoch + 1}/{self.params.get('epochs', '?')}")

    def on_train_batch_end(self, batch, logs=None):
        self._advance(logs)

    def on_epoch_end(self, epoch, logs=None):
        self._close(f"Epoch {epoch + 1}/{self.params.get('epochs', '?')}", logs)

    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._open("Evaluate")

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self._advance(logs)

    def on_test_end(self, logs=None):
        if not self._in_fit:
            self._close("Evaluate", logs)

    def on_predict_begin(self, logs=None):
        self._open("Predict")

    def on_predict_batch_end(self, batch, logs=None):
        self._advance(None)

    def on_predict_end(self, logs=None):
        self._close("Predict", None)
