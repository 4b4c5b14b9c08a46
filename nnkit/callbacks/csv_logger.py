"""``CSVLogger``: stream each epoch's logs to a CSV file."""

from __future__ import annotations

import csv
import os
from typing import IO, Any

from nnkit.callbacks.callback import Callback

__all__ = ["CSVLogger"]


class CSVLogger(Callback):
    """Write one CSV row per epoch: ``epoch`` then the logs, in sorted key order.

    The header is written when the file is new (or empty); each row is written whole
    and flushed, so an interrupted run leaves every finished epoch on disk.

    Args:
        filename: the CSV file.
        separator: the field separator.
        append: add to an existing file (for resumed runs) instead of overwriting it.

    Example:
        >>> model.fit(x, y, epochs=5, callbacks=[CSVLogger("training.csv")])
        >>> open("training.csv").readline()
        'epoch,loss,val_loss\\n'
    """

    rank_zero_only = True  # one process writes the file in a data-parallel fit

    def __init__(self, filename: str | os.PathLike, separator: str = ",",
                 append: bool = False) -> None:
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self.keys: list[str] | None = None
        self._file: IO[str] | None = None
        self._writer: Any = None
        self._needs_header = True

    def on_train_begin(self, logs: dict | None = None) -> None:
        resuming = self.append and os.path.exists(self.filename)
        self._needs_header = not (resuming and os.path.getsize(self.filename) > 0)
        if resuming and not self._needs_header:
            with open(self.filename, newline="") as existing:
                header = next(csv.reader(existing, delimiter=self.sep), None)
            self.keys = header[1:] if header else None
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._writer = None

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
        if self._writer is None:
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch", *self.keys],
                                          delimiter=self.sep, extrasaction="ignore")
            if self._needs_header:
                self._writer.writeheader()
        row = {"epoch": epoch, **{k: logs.get(k, "NA") for k in self.keys}}
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._writer = None, None

    def __del__(self) -> None:
        if getattr(self, "_file", None) is not None:
            self._file.close()
