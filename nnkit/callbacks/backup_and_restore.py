"""``BackupAndRestore``: resume an interrupted ``fit`` exactly where it stopped."""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from typing import Any

from nnkit.autograd.ops import isfinite
from nnkit.callbacks.callback import Callback
from nnkit.io import (
    CheckpointError,
    load_checkpoint,
    read_checkpoint,
    save_checkpoint,
    verify_checkpoint,
)

__all__ = ["BackupAndRestore"]

_NAME = re.compile(r"^backup-(\d+)(-end)?\.h5$")


def _backup_name(global_step: int, epoch_done: bool) -> str:
    return f"backup-{global_step:010d}{'-end' if epoch_done else ''}.h5"


class BackupAndRestore(Callback):
    """Back up the whole training state during ``fit``; restore it when ``fit`` restarts.

    A backup (an HDF5 file written atomically through :mod:`nnkit.io`, with checksums)
    holds the weights, the optimizer state, every other callback's state (matched by
    a stable key: see :meth:`CallbackList.keyed`), the training DataLoader's position
    and seed, nnkit's global random state (dropout draws), the epoch's running log
    sums and the :class:`History` so far. It is taken after every other callback has
    finished with the epoch (or step), wherever this callback stands in the list. When
    ``fit`` starts and a backup exists, it is restored and training continues from
    that point, even in the middle of an epoch, so an interrupted run (an exception, a
    signal, a killed process) ends with the same weights, History and CSV rows, bit for
    bit on NumPy, as one that was never interrupted. A callback added since has no saved
    state and starts fresh; a saved state whose callback is gone is ignored. The backups
    are deleted when ``fit`` finishes normally (including an early stop) unless
    ``delete_checkpoint=False``. No backup is written while a weight is NaN or
    infinite. In a data-parallel ``fit``, rank 0 writes the backup and every rank
    restores from it (the directory must be visible to all processes); resuming with
    another number of processes is refused.

    Args:
        backup_dir: the directory of the backups (created if needed); use one per run.
        save_freq: ``'epoch'`` (after each epoch) or an integer N (after every N
            training steps, counted across epochs; a resumed run continues mid-epoch).
        delete_checkpoint: delete the backups when training finishes.
        double_checkpoint: keep the previous backup too; if the newest one turns out
            damaged (its checksums fail), the previous one is restored, with a warning
            naming the damaged file (Keras's option).
        restore_from: restore this checkpoint file (written by a ``BackupAndRestore``)
            instead of the newest backup in ``backup_dir``; a damaged file is an error.

    Attributes:
        config: YAML text recorded in every backup (``nnkit train`` stores the run's
            resolved config there).
        restored_from: the file restored by the last ``fit``, or None.

    Raises:
        ValueError: for an empty ``backup_dir`` or a ``save_freq`` that is neither
            ``'epoch'`` nor a positive integer.

    Example:
        >>> import os, tempfile
        >>> model = nnkit.Sequential(nn.Linear(4, 2))
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
        >>> backup_dir = os.path.join(tempfile.mkdtemp(), "backup")
        >>> backup = BackupAndRestore(backup_dir, save_freq=1, delete_checkpoint=False)
        >>> _ = model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[backup])
        >>> os.listdir(backup_dir)
        ['backup-0000000004.h5']
        >>> _ = model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=[backup])
        >>> os.path.basename(backup.restored_from)   # rerunning the script resumes
        'backup-0000000004.h5'
    """

    # Runs after every other callback in every hook (see CallbackList): the backup is
    # taken once they have all finished with the epoch, and their reset on train begin
    # does not undo the state restored here.
    _runs_last = True
    _search_backup_dir = True  # False: restore only an explicit restore_from

    def __init__(
        self,
        backup_dir: str | os.PathLike,
        save_freq: str | int = "epoch",
        delete_checkpoint: bool = True,
        *,
        double_checkpoint: bool = False,
        restore_from: str | os.PathLike | None = None,
    ) -> None:
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: backup_dir is required")
        valid_int = isinstance(save_freq, int) and not isinstance(save_freq, bool) and save_freq > 0
        if save_freq != "epoch" and not valid_int:
            raise ValueError(
                f"BackupAndRestore: save_freq must be 'epoch' or a positive "
                f"integer (steps); received {save_freq!r}"
            )
        self.backup_dir, self.save_freq = os.fspath(backup_dir), save_freq
        self.delete_checkpoint = delete_checkpoint
        self.keep = 2 if double_checkpoint else 1
        self.restore_from = None if restore_from is None else os.fspath(restore_from)
        self.config: str | None = None
        self.restored_from: str | None = None
        self.restored_epoch: int | None = None

    # ------------------------------------------------------------------ files
    @staticmethod
    def backups(backup_dir: str | os.PathLike) -> list[str]:
        """The backup files in ``backup_dir``, newest first (none: an empty list).

        Args:
            backup_dir: the directory.

        Returns:
            The paths, newest first.
        """
        directory = os.fspath(backup_dir)
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for name in names:
            match = _NAME.match(name)
            if match:
                found.append(((int(match.group(1)), bool(match.group(2))), name))
        return [os.path.join(directory, name) for _, name in sorted(found, reverse=True)]

    @classmethod
    def latest(cls, backup_dir: str | os.PathLike) -> str | None:
        """The newest backup in ``backup_dir`` whose checksums verify, or None.

        A damaged newer backup is renamed ``<name>.damaged`` (kept for inspection, out
        of the rotation), with a ``RuntimeWarning`` naming it.

        Args:
            backup_dir: the directory.

        Returns:
            The path, or None.
        """
        for path in cls.backups(backup_dir):
            try:
                verify_checkpoint(path)
                return path
            except (CheckpointError, OSError) as err:
                with contextlib.suppress(OSError):
                    os.replace(path, path + ".damaged")
                warnings.warn(
                    f"WARNING: the checkpoint {path} is damaged ({err}); it was "
                    f"renamed {os.path.basename(path)}.damaged and the previous "
                    "one is used",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return None

    # --------------------------------------------------------------- restore
    def on_train_begin(self, logs: dict | None = None) -> None:
        self.restored_from = self.restored_epoch = None
        path = self.restore_from
        if path is None and self._search_backup_dir:
            path = self.latest(self.backup_dir)
        if path is None:
            return
        meta = read_checkpoint(path, sections=["extra"])
        progress = (meta.get("extra") or {}).get("fit")
        if not isinstance(progress, dict):
            raise CheckpointError(
                f"{path} holds no training progress (extra/fit): it was "
                "not written by BackupAndRestore or nnkit train"
            )
        state = self.model._fit_state
        world = 1 if state.distributed is None else state.distributed.size
        if int(progress.get("world_size", 1)) != world:
            raise ValueError(
                f"BackupAndRestore: {path} was written by a run of "
                f"{progress.get('world_size')} processes; it cannot be resumed "
                f"exactly with {world} (the batches each process sees differ)"
            )
        epoch = int(progress["epoch"])
        self.restored_from, self.restored_epoch = path, epoch
        if progress["epoch_done"]:
            self._restore(path)
            self.model._initial_epoch = epoch + 1
        else:  # re-open the epoch (on_epoch_begin), then restore its state over it
            self.model._initial_epoch = epoch
            state.after_epoch_begin = lambda: self._restore(path)

    def _restore(self, path: str) -> None:
        state = self.model._fit_state
        info = load_checkpoint(
            path,
            model=self.model,
            optimizer=self.model.optimizer,
            loader=self._loader(),
            callbacks=state.callbacks.keyed(),
        )
        state.load_progress(info["extra"]["fit"])
        self.on_restore(info)

    def on_restore(self, info: dict[str, Any]) -> None:
        """Called after a backup was restored, with what ``load_checkpoint`` returned.

        Override it to adjust the restored state (``nnkit train`` applies the changes a
        user allowed with ``--allow-change``).
        """

    # ------------------------------------------------------------------ save
    def _loader(self) -> Any:
        loader = self.model._fit_state.loader
        return loader if callable(getattr(loader, "state_dict", None)) else None

    def _is_chief(self) -> bool:
        state = getattr(self.model, "_fit_state", None)
        return state is None or state.is_chief

    def _finite(self) -> bool:
        return all(
            bool(isfinite(t).all())
            for t in self.model.state_dict().values()
            if t.is_floating_point()
        )

    def save_now(self, path: str | os.PathLike | None = None) -> str | None:
        """Write a backup of the current point of ``fit`` (rank 0 only) and return its path.

        Called by ``fit`` when a signal interrupts it; ``nnkit train`` also writes its
        final checkpoint through it. Nothing is written (a ``RuntimeWarning`` says so)
        while a weight is NaN or infinite: the previous backup stays the newest.

        Args:
            path: the file to write; by default a new backup in ``backup_dir`` (older
                ones beyond the generations kept are then deleted).

        Returns:
            The file written, or None (not rank 0, or non-finite weights).
        """
        state = self.model._fit_state
        progress = state.progress()  # in a data-parallel run, a collective on every rank
        if not self._is_chief():
            return None
        if not self._finite():
            warnings.warn(
                f"WARNING: no checkpoint written at epoch {state.epoch + 1}, step "
                f"{state.step + 1}: the weights hold NaN or infinite values",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
        in_rotation = path is None
        if in_rotation:
            path = os.path.join(self.backup_dir, _backup_name(state.global_step, state.epoch_done))
        path = os.fspath(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        save_checkpoint(
            path,
            model=self.model,
            optimizer=self.model.optimizer,
            epoch=state.epoch,
            step=state.global_step,
            loader=self._loader(),
            callbacks=state.callbacks.keyed(),
            extra={"fit": progress},
            config=self.config,
        )
        if in_rotation:
            for old in self.backups(self.backup_dir)[self.keep :]:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(old)
        return path

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.save_freq != "epoch" and self.model._fit_state.global_step % self.save_freq == 0:
            self.save_now()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self.save_now()

    def on_train_end(self, logs: dict | None = None) -> None:
        if not self.delete_checkpoint or not self._is_chief():
            return
        for path in self.backups(self.backup_dir):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        with contextlib.suppress(OSError):  # keep a directory that holds other files
            os.rmdir(self.backup_dir)
