"""``BackupAndRestore``: resume an interrupted ``fit`` exactly where it stopped."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from nnkit.callbacks.callback import Callback

__all__ = ["BackupAndRestore"]


class BackupAndRestore(Callback):
    """Back up the whole training state at each epoch end; restore it when ``fit`` restarts.

    The backup (one HDF5 file written atomically through :mod:`nnkit.io`) holds the
    weights, the optimizer state, the epoch, nnkit's global random state, the training
    DataLoader's position and seed, and the state of every other callback. When
    ``fit`` starts and a backup exists, it is restored and training continues at the
    next epoch, so an interrupted run (a crash, a pre-empted job) ends with the same
    weights, bit for bit, as one that was never interrupted. The backup is deleted when
    ``fit`` finishes normally (including an early stop). Give a :class:`CSVLogger`
    ``append=True`` so that the resumed run adds to its file. In a data-parallel
    ``fit``, rank 0 writes the backup and every rank restores from it (the directory
    must be visible to all processes).

    Args:
        backup_dir: the directory of the backup (created if needed); use one per run.
        save_freq: only ``'epoch'`` is supported.
        delete_checkpoint: delete the backup when training finishes.

    Raises:
        ValueError: for an empty ``backup_dir`` or another ``save_freq``.

    Example:
        >>> backup = BackupAndRestore("runs/mlp/backup")
        >>> model.fit(x, y, epochs=20, callbacks=[backup])   # rerun the script to resume
    """

    # on_train_begin runs after every other callback's, so that their reset on train
    # begin does not undo the state restored here.
    _runs_last = True

    def __init__(self, backup_dir: str | os.PathLike, save_freq: str = "epoch",
                 delete_checkpoint: bool = True) -> None:
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: backup_dir is required")
        if save_freq != "epoch":
            raise ValueError(f"BackupAndRestore: only save_freq='epoch' is supported; "
                             f"received {save_freq!r}")
        self.backup_dir, self.delete_checkpoint = os.fspath(backup_dir), delete_checkpoint
        self.path = os.path.join(self.backup_dir, "backup.h5")
        self.restored_epoch: int | None = None

    def _fit_parts(self) -> tuple[Any, dict[str, Callback]]:
        """The training loader (if it has a state) and the other callbacks, by name."""
        state = getattr(self.model, "_fit_state", None)
        if state is None:
            return None, {}
        loader = state.loader if callable(getattr(state.loader, "state_dict", None)) else None
        others = [cb for cb in state.callbacks.stateful() if cb is not self]
        return loader, {f"{i}_{type(cb).__name__}": cb for i, cb in enumerate(others)}

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.restored_epoch = None
        if not os.path.exists(self.path):
            return
        from nnkit import io

        loader, callbacks = self._fit_parts()
        info = io.load_checkpoint(self.path, model=self.model, optimizer=self.model.optimizer,
                                  loader=loader, callbacks=callbacks)
        self.restored_epoch = int(info["epoch"])
        self.model._initial_epoch = self.restored_epoch + 1

    def _is_chief(self) -> bool:
        state = getattr(self.model, "_fit_state", None)
        return state is None or state.is_chief

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if not self._is_chief():
            return
        from nnkit import io

        os.makedirs(self.backup_dir, exist_ok=True)
        loader, callbacks = self._fit_parts()
        io.save_checkpoint(self.path, model=self.model, optimizer=self.model.optimizer,
                           epoch=epoch, loader=loader, callbacks=callbacks)

    def on_train_end(self, logs: dict | None = None) -> None:
        if not self.delete_checkpoint or not self._is_chief() or not os.path.exists(self.path):
            return
        os.remove(self.path)
        with contextlib.suppress(OSError):  # keep a directory that holds other files
            os.rmdir(self.backup_dir)
