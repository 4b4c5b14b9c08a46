"""Resuming a run: which checkpoint ``--resume`` means, and whether it may be resumed.

``--resume auto`` picks the newest verified checkpoint of the run folder; a checkpoint
is refused when it was written by another number of processes or with a config whose
model, data, loss or optimizer differ (unless ``--allow-change`` accepts the key).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from nnkit.callbacks import BackupAndRestore
from nnkit.cli.config import Config, parse_yaml
from nnkit.cli.errors import ConfigError
from nnkit.io import CheckpointError, read_checkpoint, verify_checkpoint

__all__ = [
    "resume_point",
    "check_changes",
    "check_world_size",
    "resume_line",
    "progress_of",
    "warnings_as_lines",
]


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Show warnings as their message alone on stderr (``WARNING: ...``)."""

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        text = str(message)
        print(text if text.startswith("WARNING") else f"WARNING: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        yield


def resume_point(resume: str | None, checkpoints: Path) -> Path | None:
    """The checkpoint ``--resume`` names: ``auto`` picks the newest verified one in
    ``checkpoints`` (None, said on stdout, if there is none).

    Raises:
        ConfigError: for a file that does not exist or fails verification.
    """
    if resume is None:
        return None
    if resume == "auto":
        with warnings_as_lines():
            found = BackupAndRestore.latest(checkpoints)
        if found is None:
            print(f"--resume auto: no checkpoint in {checkpoints}; starting fresh")
            return None
        return Path(found)
    path = Path(resume)
    if not path.is_file():
        raise ConfigError("--resume", f"file not found: {path}")
    try:
        verify_checkpoint(path)
    except CheckpointError as err:
        raise ConfigError("--resume", str(err)) from None
    return path


# Keys that may change on resume without --allow-change: they alter neither the model,
# the data nor the loss.
_FREE_KEYS = (
    "train.epochs",
    "train.verbose",
    "train.stop_on_nonfinite",
    "train.jit_compile",
    "callbacks",
    "output",
    "device",
    "distributed.timeout",
)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        items = value.items()
        return {
            k: v
            for key, item in items
            for k, v in _flatten(item, f"{prefix}.{key}" if prefix else str(key)).items()
        }
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return {
            k: v
            for i, item in enumerate(value)
            for k, v in _flatten(item, f"{prefix}[{i}]").items()
        }
    return {prefix: value}


def _covered(key: str, prefixes: Sequence[str]) -> bool:
    return any(key == p or key.startswith((p + ".", p + "[")) for p in prefixes)


def check_changes(
    config: Config, checkpoint: Path, allowed: Sequence[str]
) -> dict[str, tuple[Any, Any]]:
    """Compare the config with the one stored in ``checkpoint``.

    Returns:
        ``{key: (old, new)}`` for each change accepted with ``--allow-change`` (free
        keys such as ``train.epochs`` are not listed).

    Raises:
        ConfigError: listing each other changed key with its old and new value.
    """
    text = read_checkpoint(checkpoint, sections=[])["attrs"].get("config")
    if text is None:
        print(f"note: {checkpoint} records no config; its changes cannot be checked")
        return {}
    old, new = _flatten(parse_yaml(text, "--resume")), _flatten(config.values)
    changed = {
        k: (old.get(k, "<absent>"), new.get(k, "<absent>"))
        for k in sorted(set(old) | set(new))
        if old.get(k, None) != new.get(k, None)
    }
    refused = {
        k: v for k, v in changed.items() if not _covered(k, _FREE_KEYS) and not _covered(k, allowed)
    }
    if refused:
        listed = "; ".join(f"{k}: {o!r} -> {n!r}" for k, (o, n) in refused.items())
        raise ConfigError(
            "--resume",
            f"the config differs from the one {checkpoint} was trained with, in keys that "
            f"change the model, data or loss: {listed} (pass --allow-change KEY to accept a "
            "change, or start a fresh run without --resume)",
        )
    return {k: v for k, v in changed.items() if not _covered(k, _FREE_KEYS)}


def progress_of(path: Path) -> dict | None:
    """The training progress a checkpoint records (None: it records none)."""
    progress = (read_checkpoint(path, sections=["extra"]).get("extra") or {}).get("fit")
    return progress if isinstance(progress, dict) else None


def check_world_size(path: Path, comm: Any) -> None:
    """Refuse to resume a checkpoint of a run with another number of processes.

    Raises:
        ConfigError: naming both numbers.
    """
    progress = progress_of(path)
    saved = 1 if progress is None else int(progress.get("world_size", 1))
    if saved != comm.world_size:
        raise ConfigError(
            "--resume",
            f"{path} was written by a run of {saved} process(es); resume it with "
            f"{'mpiexec -n ' + str(saved) + ' ' if saved > 1 else ''}nnkit train, not with "
            f"{comm.world_size} (each process's batches, and so the weights, would differ)",
        )


def resume_line(path: Path, epochs: int) -> str:
    """Where the checkpoint stands: ``resuming from PATH (...)`` or ``nothing to train``."""
    progress = progress_of(path)
    if progress is None:
        return f"resuming from {path}"
    done, epoch, step = progress["epoch_done"], progress["epoch"], progress["step"]
    if done and epoch + 1 >= epochs:
        return f"nothing to train: the checkpoint has {epoch + 1} epochs, train.epochs={epochs}"
    where = f"after epoch {epoch + 1}" if done else f"at epoch {epoch + 1}, step {step + 1}"
    return f"resuming from {path} ({where})"
