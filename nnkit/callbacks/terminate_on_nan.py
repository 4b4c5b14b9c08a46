"""``TerminateOnNaN``: stop training as soon as the loss is NaN or infinite."""

from __future__ import annotations

import math

from nnkit.callbacks.callback import Callback

__all__ = ["TerminateOnNaN", "NonFiniteLossError"]


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite (raised by ``TerminateOnNaN(raise_error=True)``).

    Attributes:
        value: the loss (``nan``, ``inf`` or ``-inf``).
        epoch: the epoch, counted from 0.
        step: the step within the epoch, counted from 0.

    Args:
        value: the non-finite loss.
        epoch: the epoch, counted from 0.
        step: the step within the epoch, counted from 0.
    """

    def __init__(self, value: float, epoch: int, step: int) -> None:
        self.value, self.epoch, self.step = value, epoch, step
        super().__init__(f"non-finite loss ({value}) at epoch {epoch + 1}, step {step + 1}")


class TerminateOnNaN(Callback):
    """Stop ``fit`` after the first batch whose running loss is NaN or infinite.

    Args:
        raise_error: raise :class:`NonFiniteLossError` (a ``RuntimeError``) instead of
            ending training normally, so that nothing after it (a final checkpoint, the
            callbacks' ``on_train_end``) runs on the damaged weights (Keras's option).

    Example:
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.full((16, 2), float("nan"))
        >>> history = model.fit(x, y, epochs=10, verbose=0, callbacks=[TerminateOnNaN()])
        Batch 0: Invalid loss, terminating training
        >>> history.epoch
        [0]
        >>> try:
        ...     model.fit(x, y, epochs=10, verbose=0, callbacks=[TerminateOnNaN(raise_error=True)])
        ... except NonFiniteLossError as err:
        ...     print(err)
        non-finite loss (nan) at epoch 1, step 1
    """

    def __init__(self, raise_error: bool = False) -> None:
        super().__init__()
        self.raise_error = bool(raise_error)
        self._epoch = 0

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is None or math.isfinite(float(loss)):
            return
        if self.raise_error:
            raise NonFiniteLossError(float(loss), self._epoch, batch)
        print(f"Batch {batch}: Invalid loss, terminating training")
        self.model.stop_training = True
