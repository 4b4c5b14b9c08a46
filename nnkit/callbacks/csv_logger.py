"""``CSVLogger``: stream each epoch's logs to a CSV file."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from typing import IO, Any

import numpy as np

from nnkit.callbacks.callback import Callback

__all__ = ["CSVLogger"]


def _cell(value: Any) -> Any:
    """A log value as Keras's CSVLogger writes it: a number as it is, a metric with
    several values as ``"[v1, v2, ...]"`` (quotes included; the CSV writer doubles
    them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable) and not (isinstance(value, np.ndarray) and value.ndim == 0):
        return f'"[{", ".join(map(str, value))}]"'
    return value


class CSVLogger(Callback):
    """Write one CSV row per epoch: ``epoch`` then the logs, in sorted key order.

    A metric with several values (``F1Score(average=None)``) is written as Keras writes
    it, ``"[0.5, 0.25]"``. The header is written when the file is new (or empty); each
    row is written whole and flushed, so an interrupted run leaves every finished epoch
    on disk. The file is opened at the first row. Its state (the keys, and the file's
    length after the last row) is checkpointed: a run resumed by
    :class:`BackupAndRestore` cuts the file back to that length, dropping rows of epochs
    that are trained again, and appends, so that each epoch appears exactly once, as in
    an uninterrupted run.

    Args:
        filename: the CSV file.
        separator: the field separator.
        append: add to an existing file (for runs resumed without a checkpoint of this
            callback) instead of overwriting it.

    Example:
        >>> import os, tempfile
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> path = os.path.join(tempfile.mkdtemp(), "training.csv")
        >>> _ = model.fit(x, y, epochs=2, validation_split=0.25, verbose=0,
        ...               callbacks=[CSVLogger(path)])
        >>> with open(path) as f:
        ...     print(f.read().strip())
        epoch,loss,val_loss
        0,1.0190...,1.9789...
        1,1.0107...,1.9691...
    """

    rank_zero_only = True  # one process writes the file in a data-parallel fit

    def __init__(
        self, filename: str | os.PathLike, separator: str = ",", append: bool = False
    ) -> None:
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self.keys: list[str] | None = None
        self._file: IO[str] | None = None
        self._writer: Any = None
        self._needs_header = True
        self._resume_at: int | None = None  # the length to cut the file back to
        self._length = 0

    @property
    def state_key(self) -> str:
        """The key of this callback's state in a checkpoint: one per file name."""
        return f"CSVLogger:{os.path.basename(self.filename)}"

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._close()
        self.keys, self._resume_at, self._length = None, None, 0
        resuming = self.append and os.path.exists(self.filename)
        self._needs_header = not (resuming and os.path.getsize(self.filename) > 0)
        if resuming and not self._needs_header:
            with open(self.filename, newline="") as existing:
                header = next(csv.reader(existing, delimiter=self.sep), None)
            self.keys = header[1:] if header else None

    def _open(self) -> None:
        if self._resume_at is not None:
            file = open(self.filename, "r+" if os.path.exists(self.filename) else "w", newline="")
            file.truncate(self._resume_at)
            file.seek(self._resume_at)
            self._needs_header = self._resume_at == 0
        else:
            file = open(self.filename, "a" if self.append else "w", newline="")
        self._file = file

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
        if self._file is None:
            self._open()
        if self._writer is None:
            self._writer = csv.DictWriter(
                self._file,
                fieldnames=["epoch", *self.keys],
                delimiter=self.sep,
                extrasaction="ignore",
            )
            if self._needs_header:
                self._writer.writeheader()
        row = {"epoch": epoch, **{k: _cell(logs.get(k, "NA")) for k in self.keys}}
        self._writer.writerow(row)
        self._file.flush()
        self._length = self._file.tell()

    def on_train_end(self, logs: dict | None = None) -> None:
        self._close()

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._writer = None, None

    def state_dict(self) -> dict[str, Any]:
        """The columns and the file's length after the last row written."""
        return {"keys": list(self.keys or []), "length": int(self._length)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Continue the file as it was at the checkpoint (later rows are cut off)."""
        self._close()
        self.keys = [str(k) for k in state_dict["keys"]] or None
        self._length = self._resume_at = int(state_dict["length"])

    def __del__(self) -> None:
        if getattr(self, "_file", None) is not None:
            self._file.close()
