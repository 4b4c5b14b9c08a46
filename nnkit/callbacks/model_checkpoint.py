"""``ModelCheckpoint``: save the model (or its weights) during training."""

from __future__ import annotations

import os
from typing import Any

from nnkit.callbacks._monitor import MonitorComparison, resolve_mode
from nnkit.callbacks.callback import Callback

__all__ = ["ModelCheckpoint"]


class ModelCheckpoint(Callback):
    """Save the model every epoch (or every ``save_freq`` batches), or only its best.

    ``filepath`` may hold ``str.format`` fields filled from the epoch number (1-based,
    as in Keras) and the logs, e.g. ``'ckpt/{epoch:02d}-{val_loss:.2f}.h5'``.

    Args:
        filepath: where to save; its directory is created if needed.
        monitor: the log compared with ``save_best_only``.
        verbose: 1 prints a line for each save.
        save_best_only: save only when ``monitor`` improves on the best so far.
        save_weights_only: save the weights (``Model.save_weights``) rather than a full
            checkpoint (``Model.save``: weights, optimizer and compile config). A
            ``filepath`` ending in ``.weights.h5`` (Keras's name for a weights file)
            always saves the weights only.
        mode: ``'min'``, ``'max'`` or ``'auto'`` (``'max'`` for accuracy-like names).
        save_freq: ``'epoch'``, or an integer: save every that many batches.
        initial_value_threshold: a value the first saved ``monitor`` must beat.

    Raises:
        ValueError: for an unknown mode or an invalid ``save_freq``.

    Example:
        >>> import os, tempfile
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> tmp = tempfile.mkdtemp()
        >>> ckpt = ModelCheckpoint(os.path.join(tmp, "ckpt", "{epoch:02d}-{val_loss:.2f}.h5"))
        >>> _ = model.fit(x, y, epochs=2, validation_split=0.25, verbose=0, callbacks=[ckpt])
        >>> sorted(os.listdir(os.path.join(tmp, "ckpt")))
        ['01-...h5', '02-...h5']
    """

    rank_zero_only = True  # one process writes the file in a data-parallel fit

    def __init__(
        self,
        filepath: str | os.PathLike,
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        save_freq: str | int = "epoch",
        initial_value_threshold: float | None = None,
    ) -> None:
        super().__init__()
        if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
            raise ValueError(
                f"ModelCheckpoint: save_freq must be 'epoch' or a positive "
                f"integer; received {save_freq!r}"
            )
        self.filepath, self.monitor, self.verbose = os.fspath(filepath), monitor, verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only or self.filepath.endswith(".weights.h5")
        self.save_freq = save_freq
        self.compare = MonitorComparison(monitor, resolve_mode(mode, monitor, "ModelCheckpoint"))
        self.best = (
            self.compare.worst
            if initial_value_threshold is None
            else float(initial_value_threshold)
        )
        self._batches_seen, self._epoch = 0, 0

    @property
    def state_key(self) -> str:
        """The key of this callback's state in a checkpoint: one per file pattern."""
        return f"ModelCheckpoint:{os.path.basename(self.filepath)}"

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._batches_seen += 1
        if self.save_freq != "epoch" and self._batches_seen % self.save_freq == 0:
            self._save(self._epoch, logs, batch=batch)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, logs)

    def _save(self, epoch: int, logs: dict | None, batch: int | None = None) -> None:
        logs = dict(logs or {})
        if self.save_best_only:
            current = self.compare.value(logs, "ModelCheckpoint")
            if current is None or not self.compare.improved(current, self.best):
                return
            self.best = current
        path = self.format_path(epoch, logs, batch)
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.verbose:
            print(f"Epoch {epoch + 1}: saving model to {path}")
        (self.model.save_weights if self.save_weights_only else self.model.save)(path)

    def format_path(self, epoch: int, logs: dict | None = None, batch: int | None = None) -> str:
        """The file name for ``epoch`` (0-based; formatted 1-based) and ``logs``.

        Args:
            epoch: the epoch, counted from 0.
            logs: the values for the other fields of ``filepath``.
            batch: the batch, counted from 0, for a ``{batch}`` field (None: no such field).

        Returns:
            The path.

        Raises:
            KeyError: if ``filepath`` names a field that is not in the logs.
        """
        fields = {**(logs or {}), "epoch": epoch + 1}
        if batch is not None:
            fields["batch"] = batch + 1
        try:
            return self.filepath.format(**fields)
        except KeyError as exc:
            raise KeyError(
                f"ModelCheckpoint: filepath {self.filepath!r} needs {exc}, which "
                f"is not in the logs ({', '.join(sorted(fields))})"
            ) from None

    def state_dict(self) -> dict[str, Any]:
        """The best value so far and the batch count."""
        return {"best": self.best, "batches_seen": self._batches_seen}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.best = float(state_dict["best"])
        self._batches_seen = int(state_dict["batches_seen"])
