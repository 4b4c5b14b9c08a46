"""``TerminateOnNaN``: stop training as soon as the loss is NaN or infinite."""

from __future__ import annotations

import math

from nnkit.callbacks.callback import Callback

__all__ = ["TerminateOnNaN"]


class TerminateOnNaN(Callback):
    """Stop ``fit`` after the first batch whose running loss is NaN or infinite.

    Example:
        >>> model.fit(x, y, epochs=10, callbacks=[TerminateOnNaN()])
    """

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True
