"""Saving and restoring training state: model, optimizer, scheduler, data, RNG.

Every object follows the one checkpoint protocol (``state_dict``/``load_state_dict``);
:mod:`nnkit.io.hdf5` maps the states onto one HDF5 file, written atomically.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

import yaml

from nnkit.io.atomic import atomic_h5_file
from nnkit.io.errors import CheckpointError
from nnkit.io.format import read_file, verify_file, write_attrs
from nnkit.io.hdf5 import write_value
from nnkit.random import get_rng_state, set_rng_state

__all__ = [
    "save_checkpoint",
    "load_checkpoint",
    "save_weights",
    "load_weights",
    "read_checkpoint",
    "verify_checkpoint",
]

PathLike = str | os.PathLike


def save_checkpoint(
    path: PathLike,
    *,
    model: Any = None,
    optimizer: Any = None,
    scheduler: Any = None,
    epoch: int | None = None,
    step: int | None = None,
    extra: Mapping[str, Any] | None = None,
    loader: Any = None,
    callbacks: Mapping[str, Any] | None = None,
    config: str | Mapping[str, Any] | None = None,
) -> None:
    """Writes a training checkpoint: every given state plus nnkit's global RNG state.

    All states are gathered before the file is created, so an unbuilt lazy model raises
    its ``NotBuiltError`` and leaves no file behind. Tensors are written from host
    copies; the model stays on its device. The write is atomic: a crash leaves either
    the previous file or the complete new one.

    Args:
        path: the file to write (replaced if it exists).
        model: a Module; its ``state_dict()`` goes under ``model/``.
        optimizer: an Optimizer (or any object with ``state_dict()``, or a state dict).
        scheduler: a learning-rate scheduler (same).
        epoch: the epoch to record.
        step: the global step to record.
        extra: a nested dict of plain values and arrays to store alongside.
        loader: a DataLoader; its position and seed let iteration resume mid-epoch.
        callbacks: a dict from a name to a callback (or its state dict).
        config: the run's configuration as YAML text (a mapping is dumped to YAML).

    Raises:
        NotBuiltError: if ``model`` has a lazy layer that was never called.
        TypeError: if a state holds a value nnkit does not store (e.g. an object
            array), or ``config`` is neither text nor a mapping.
        ValueError: if a state has a key that is not a valid HDF5 name.
        OSError: if the file cannot be written.

    Example:
        >>> import os, tempfile
        >>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        >>> from nnkit.data import DataLoader, TensorDataset
        >>> opt = nnkit.optim.SGD(model.parameters(), lr=0.1)
        >>> loader = DataLoader(TensorDataset(nnkit.randn(8, 4)), batch_size=2, shuffle=True)
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.h5")
        >>> save_checkpoint(path, model=model, optimizer=opt, epoch=3, step=1200,
        ...                 loader=loader, extra={"best_loss": 0.5})
        >>> sorted(read_checkpoint(path))
        ['attrs', 'epoch', 'extra', 'loader', 'model', 'optimizer', 'rng', 'step']
    """
    text = _config_text(config)
    sections = {
        "model": _state_of(model, "model"),
        "optimizer": _state_of(optimizer, "optimizer"),
        "scheduler": _state_of(scheduler, "scheduler"),
        "loader": _state_of(loader, "loader"),
        "callbacks": _callback_states(callbacks),
        "rng": get_rng_state(),
        "epoch": epoch,
        "step": step,
        "extra": extra,
    }
    _write(path, sections, contents="checkpoint", config=text)


def save_weights(path: PathLike, module: Any) -> None:
    """Writes only a module's weights (its ``state_dict``) under ``model/``.

    Args:
        path: the file to write (replaced atomically if it exists).
        module: the Module whose parameters and persistent buffers are saved.

    Raises:
        NotBuiltError: if ``module`` has a lazy layer that was never called (no file is
            created).
        OSError: if the file cannot be written.

    Example:
        >>> import os, tempfile
        >>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        >>> path = os.path.join(tempfile.mkdtemp(), "mlp.weights.h5")
        >>> save_weights(path, model)
        >>> sorted(read_checkpoint(path)["model"])
        ['0.bias', '0.weight', '2.bias', '2.weight']
    """
    _write(path, {"model": module.state_dict()}, contents="weights", config=None)


def load_checkpoint(
    path: PathLike,
    *,
    model: Any = None,
    optimizer: Any = None,
    scheduler: Any = None,
    loader: Any = None,
    callbacks: Mapping[str, Any] | None = None,
    strict: bool = True,
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Restores a checkpoint into the given objects and returns everything else.

    The file is read and checked completely, and every requested section must be in
    it, before any object is touched.

    Args:
        path: a file written by :func:`save_checkpoint`.
        model: a Module; restored by ``load_state_dict(strict=strict)``.
        optimizer: an Optimizer (built over the model's parameters) to restore.
        scheduler: a learning-rate scheduler to restore.
        loader: a DataLoader; its next ``iter()`` resumes where the saved one stopped.
        callbacks: a dict from a name to a callback with ``load_state_dict``. A name
            the file holds no state for is skipped (that callback starts fresh), and a
            saved state without a callback of its name is ignored, so callbacks may be
            added or removed between runs.
        strict: require the model's keys to match exactly.
        restore_rng: restore nnkit's global random state (dropout draws and the like).

    Returns:
        A dict with ``epoch``, ``step``, ``extra``, ``config`` (YAML text),
        ``nnkit_version`` (None where absent) and ``callbacks_restored`` (the names
        restored), plus the raw saved state (NumPy arrays and plain values) under
        ``model``, ``optimizer``, ``scheduler``, ``loader``, ``callbacks`` and ``rng``
        for each of those in the file that was not restored.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        CheckpointError: if the file is not an nnkit checkpoint, is damaged, is too new,
            or lacks a section for a given object (e.g. no ``model/`` group).
        RuntimeError: from ``model.load_state_dict`` when the keys or shapes differ.
        ValueError: from an optimizer or scheduler whose state does not match.

    Example:
        >>> import os, tempfile
        >>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        >>> opt = nnkit.optim.SGD(model.parameters(), lr=0.1)
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.h5")
        >>> save_checkpoint(path, model=model, optimizer=opt, epoch=3, step=1200)
        >>> info = load_checkpoint(path, model=model, optimizer=opt)
        >>> start_epoch = info["epoch"] + 1
        >>> start_epoch, info["step"]
        (4, 1200)
    """
    targets = {
        "model": model,
        "optimizer": optimizer,
        "scheduler": scheduler,
        "loader": loader,
        "callbacks": callbacks,
    }
    content = read_file(path, expect=_expected(model))
    _require(
        content,
        path,
        [name for name, obj in targets.items() if obj is not None and name != "callbacks"],
    )
    if model is not None:
        model.load_state_dict(content["model"], strict=strict)
    for name in ("optimizer", "scheduler", "loader"):
        if targets[name] is not None:
            targets[name].load_state_dict(content[name])
    restored = []
    if callbacks is not None:
        saved = content.get("callbacks") or {}
        restored = [name for name in callbacks if name in saved]
        for name in restored:
            callbacks[name].load_state_dict(saved[name])
    if restore_rng and "rng" in content:
        set_rng_state(content["rng"])
    return {**_summary(content, targets, restore_rng), "callbacks_restored": restored}


def load_weights(
    path: PathLike, module: Any, *, strict: bool = True, skip_mismatch: bool = False
) -> Any:
    """Loads weights saved by :func:`save_weights` or :func:`save_checkpoint`.

    Args:
        path: a weights file or a full checkpoint.
        module: the Module to load into (its parameters are updated in place).
        strict: require the keys to match exactly.
        skip_mismatch: leave the module's entries whose saved shape differs as they are,
            with a warning naming them (Keras's ``skip_mismatch``), instead of raising;
            they count as neither missing nor unexpected.

    Returns:
        The ``IncompatibleKeys(missing_keys, unexpected_keys)`` of ``load_state_dict``.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        CheckpointError: if the file is not an nnkit checkpoint or has no ``model/``.
        RuntimeError: from ``module.load_state_dict`` when the keys or shapes differ.

    Example:
        >>> import os, tempfile
        >>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        >>> path = os.path.join(tempfile.mkdtemp(), "mlp.weights.h5")
        >>> save_weights(path, model)
        >>> other = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        >>> load_weights(path, other)
        IncompatibleKeys(missing_keys=[], unexpected_keys=[])
        >>> nnkit.equal(other[0].weight, model[0].weight)
        True
    """
    content = read_file(path, sections=["model"], expect=_expected(module))
    _require(content, path, ["model"])
    state = content["model"]
    if skip_mismatch:
        own = module.state_dict()
        skipped = [
            k for k, v in state.items() if k in own and tuple(v.shape) != tuple(own[k].shape)
        ]
        if skipped:
            warnings.warn(
                f"{os.fspath(path)}: weights not loaded (their saved shapes differ from the "
                "model's): "
                + ", ".join(
                    f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in skipped
                ),
                stacklevel=3,
            )
            # the model's own values for those: neither missing nor unexpected
            state = {k: own[k] if k in skipped else v for k, v in state.items()}
    return module.load_state_dict(state, strict=strict)


def read_checkpoint(path: PathLike, sections: list[str] | None = None) -> dict[str, Any]:
    """Reads a checkpoint (or some of its sections) as nested plain Python and NumPy values.

    Args:
        path: a file written by :func:`save_checkpoint` or :func:`save_weights`.
        sections: the sections to read (e.g. ``['epoch', 'extra']``; those absent are
            skipped; ``[]`` reads only the root attributes); None reads them all.

    Returns:
        ``{'attrs': {root attributes}, 'model': {dotted name: ndarray}, ...}``, one
        entry per section in the file.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        CheckpointError: if the file is not an nnkit checkpoint, is damaged or too new.

    Example:
        >>> import os, tempfile
        >>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.h5")
        >>> save_checkpoint(path, model=model, epoch=3)
        >>> ckpt = read_checkpoint(path)
        >>> ckpt["epoch"], sorted(ckpt["model"])[:2]
        (3, ['0.bias', '0.weight'])
    """
    return read_file(path, sections)


def verify_checkpoint(path: PathLike) -> dict[str, Any]:
    """Reads every dataset of a checkpoint and checks it against its checksum.

    Args:
        path: a file written by :func:`save_checkpoint` or :func:`save_weights`.

    Returns:
        ``{'format_version': int, 'datasets': int, 'bytes': int}``: what was verified.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        CheckpointError: naming the file and the first damaged dataset; also for a file
            of format version 1, which carries no checksums.

    Example:
        >>> import os, tempfile
        >>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        >>> path = os.path.join(tempfile.mkdtemp(), "mlp.weights.h5")
        >>> save_weights(path, model)
        >>> verify_checkpoint(path)
        {'format_version': 2, 'datasets': ..., 'bytes': ...}
    """
    return verify_file(path)


def _write(path: PathLike, sections: dict[str, Any], *, contents: str, config: str | None) -> None:
    with atomic_h5_file(path) as file:
        write_attrs(file, contents=contents, config=config)
        for name, value in sections.items():
            if value is not None:
                write_value(file, name, value)


def _state_of(obj: Any, what: str) -> Any:
    if obj is None or isinstance(obj, Mapping):
        return obj
    if not callable(getattr(obj, "state_dict", None)):
        raise TypeError(
            f"{what}: expected an object with state_dict() or a state dict, "
            f"got {type(obj).__name__}"
        )
    return obj.state_dict()


def _callback_states(callbacks: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if callbacks is None:
        return None
    return {name: _state_of(cb, f"callbacks[{name!r}]") for name, cb in callbacks.items()}


def _config_text(config: str | Mapping[str, Any] | None) -> str | None:
    if config is None or isinstance(config, str):
        return config
    if isinstance(config, Mapping):
        return yaml.safe_dump(dict(config), sort_keys=False)
    raise TypeError(f"config must be YAML text or a mapping, got {type(config).__name__}")


def _require(content: dict[str, Any], path: PathLike, sections: list[str]) -> None:
    missing = [name for name in sections if name not in content]
    if missing:
        what = ", ".join(f"'{name}/'" for name in missing)
        raise CheckpointError(
            f"{os.fspath(path)} has no {what} group (it holds: "
            f"{', '.join(k for k in content if k != 'attrs') or 'nothing'})"
        )


def _expected(module: Any) -> dict[str, dict[str, tuple[int, ...]]] | None:
    """The shapes a module's state needs, by dataset name under ``model/``."""
    if module is None or not callable(getattr(module, "state_dict", None)):
        return None
    return {"model": {key: tuple(value.shape) for key, value in module.state_dict().items()}}


def _summary(content: dict[str, Any], targets: dict[str, Any], restore_rng: bool) -> dict:
    attrs = content["attrs"]
    result = {
        "epoch": content.get("epoch"),
        "step": content.get("step"),
        "extra": content.get("extra"),
        "config": attrs.get("config"),
        "nnkit_version": attrs.get("nnkit_version"),
    }
    for name, obj in targets.items():
        if obj is None and name in content:
            result[name] = content[name]
    if not restore_rng and "rng" in content:
        result["rng"] = content["rng"]
    return result
