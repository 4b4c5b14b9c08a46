"""The run folder of ``nnkit train`` (``output.dir``) and what writes it.

::

    config.yaml     the resolved config (after --set), rewritten at every (re)start
    history.csv     one row per finished epoch (CSVLogger), each epoch exactly once
    history.json    {"epoch": [...], "history": {"loss": [...], ...}}, the same epochs
    train.log       the lines the run printed, across restarts
    checkpoints/    resumable checkpoints (the newest ``output.keep`` generations)
    last.h5         the final (resumable) checkpoint; ``output.best``: the best epoch's
    curves.png      loss and metrics per epoch, train vs validation (needs matplotlib)
    changes.log     config changes accepted on resume with --allow-change

Every file is replaced atomically (temp file + rename) or appended line by line, so an
interrupted run never leaves a half-written one.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from nnkit.callbacks import BackupAndRestore, Callback
from nnkit.io.atomic import atomic_write_bytes

__all__ = ["write_atomic", "RunFiles", "RunCheckpoints", "tee_output", "plot_curves"]


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` atomically (a temp file in its folder, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)


class RunFiles(Callback):
    """Rewrites ``history.json`` from the run's :class:`History` after every epoch.

    Placed after the History in the callback list, so the epoch just ended is in it;
    the History itself is checkpointed, so the file holds each epoch exactly once
    across interruptions.
    """

    rank_zero_only = True

    def __init__(self, history: Any, path: Path) -> None:
        super().__init__()
        self.history, self.path = history, path

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        history = {k: [_plain(v) for v in values] for k, values in self.history.history.items()}
        payload = {"epoch": list(self.history.epoch), "history": history}
        write_atomic(self.path, json.dumps(payload, indent=1) + "\n")


def _plain(value: Any) -> Any:
    """A log value for JSON: a metric with several values as a list of numbers."""
    return value.tolist() if hasattr(value, "tolist") else value


class RunCheckpoints(BackupAndRestore):
    """``nnkit train``'s :class:`BackupAndRestore`: restores only what ``--resume``
    names, saves after every epoch (and every ``output.save_every`` steps), keeps
    ``output.keep`` generations, writes the final checkpoint at the end and applies
    config changes accepted with ``--allow-change``.

    Args:
        directory: the ``checkpoints/`` folder of the run.
        save_freq: ``'epoch'`` or every N steps (``output.save_every``).
        keep: the generations kept.
        restore_from: the checkpoint to resume, or None for a fresh run.
        final: the final checkpoint's path (``output.checkpoint``).
        config: the resolved config's YAML text, stored in every checkpoint.
        optimizer_changes: ``{hyper-parameter: new value}`` to set on every parameter
            group after a restore.
    """

    _search_backup_dir = False

    def __init__(
        self,
        directory: Path,
        save_freq: str | int,
        keep: int,
        restore_from: Path | None,
        final: Path,
        config: str,
        optimizer_changes: dict[str, Any],
    ) -> None:
        super().__init__(
            directory, save_freq=save_freq, delete_checkpoint=False, restore_from=restore_from
        )
        self.keep, self.final, self.config = keep, final, config
        self.optimizer_changes = optimizer_changes

    def on_restore(self, info: dict[str, Any]) -> None:
        for group in self.model.optimizer.param_groups:
            for key, value in self.optimizer_changes.items():
                group[key] = value
                if key == "lr" and "initial_lr" in group:  # what schedulers scale from
                    group["initial_lr"] = value

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.save_now()  # every epoch, whatever save_every adds between

    def on_train_end(self, logs: dict | None = None) -> None:
        self.save_now(self.final)


class _Tee:
    """A text stream that writes to ``stream`` and appends finished lines to ``log``.

    Carriage-return redraws (progress bars) leave only their final form in the log.
    """

    def __init__(self, stream: IO[str], log: IO[str]) -> None:
        self.stream, self.log, self._line = stream, log, ""

    def write(self, text: str) -> int:
        self.stream.write(text)
        self._line += text
        if "\n" in self._line:
            *done, self._line = self._line.split("\n")
            for line in done:
                line = line.rsplit("\r", 1)[-1]
                if line.strip():
                    self.log.write(line.rstrip() + "\n")
            self.log.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def tee_output(path: Path) -> Iterator[IO[str]]:
    """Copy what is printed to stdout and stderr into ``path`` (appended); yields the
    log file, for lines that belong in it but are printed later."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as log:
        out, err = _Tee(sys.stdout, log), _Tee(sys.stderr, log)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield log


def plot_curves(history: dict[str, list[float]], path: Path) -> str:
    """Draw each logged quantity per epoch (train and ``val_`` on one panel) to ``path``.

    Returns:
        A line for the run's report: the file written, or why nothing was drawn.
    """
    try:  # optional: matplotlib
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return "plot: not drawn (matplotlib is not installed: pip install 'nnkit[plot]')"
    names = [k for k in history if not k.startswith("val_")]
    names += [k[4:] for k in history if k.startswith("val_") and k[4:] not in history]
    if not names or not any(history.values()):
        return "plot: not drawn (no finished epoch)"
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.5), squeeze=False)
    for ax, name in zip(axes[0], names):
        pair = f"val_{name}" in history
        for key, label in ((name, "train"), (f"val_{name}", "validation")):
            if key in history:
                values = history[key]
                lines = ax.plot(
                    range(1, len(values) + 1), values, marker="o", markersize=3, label=label
                )
                if len(lines) > 1:  # a metric with several values: one line each
                    for j, line in enumerate(lines):
                        line.set_label(f"{label} [{j}]")
                    pair = True
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        if pair:
            ax.legend()
    fig.tight_layout()
    buffer = _png(fig)
    plt.close(fig)
    write_atomic(path, buffer)
    return f"plot: {path}"


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
