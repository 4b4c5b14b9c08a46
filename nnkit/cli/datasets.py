"""Loading the ``data`` section: a train/test split of NumPy arrays.

Built-in datasets come from :mod:`nnkit.data.datasets`; the synthetic ones and file
datasets without a test file are split with a generator seeded by the config's
``seed``. Relative paths are taken from the current directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from nnkit.cli.config import ConfigError
from nnkit.cli.schema import CLASSIFICATION_LOSSES
from nnkit.data.datasets import (
    from_csv,
    from_npz,
    load_digits,
    load_idx,
    make_moons,
    make_spirals,
)

__all__ = ["Data", "load_data", "read_input"]


class Data(NamedTuple):
    """A train/test split (``x_test``/``y_test`` are None without a test split)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray | None
    y_test: np.ndarray | None


def _file(data: dict, key: str) -> str:
    """``data[key]``, which must name an existing file."""
    path = data[key]
    if not Path(path).is_file():
        raise ConfigError(f"data.{key}", f"file not found: {path}")
    return path


def _split(x: np.ndarray, y: np.ndarray, test_size: float, seed: int) -> Data:
    """A seeded random train/test split (no test split for ``test_size`` 0)."""
    if not test_size:
        return Data(x, y, None, None)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = max(1, round(len(x) * test_size))
    test, train = order[:n_test], order[n_test:]
    return Data(x[train], y[train], x[test], y[test])


def _digits(data: dict, seed: int) -> Data:
    if not data["test_size"]:
        raise ConfigError("data.test_size", "the digits dataset needs a test split (> 0)")
    split = load_digits(data["test_size"], seed, scale=data["scale"], flatten=data["flatten"])
    return Data(*split)


def _moons(data: dict, seed: int) -> Data:
    x, y = make_moons(data["n_samples"], noise=data["noise"], seed=seed)
    return _split(x, y, data["test_size"], seed)


def _spirals(data: dict, seed: int) -> Data:
    x, y = make_spirals(data["n_samples"], data["n_classes"], noise=data["noise"], seed=seed)
    return _split(x, y, data["test_size"], seed)


def _read_csv(data: dict, key: str) -> tuple[np.ndarray, np.ndarray]:
    return from_csv(
        _file(data, key), target=data["target"], header=data["header"], delimiter=data["delimiter"]
    )


def _read_npz(data: dict, key: str) -> tuple[np.ndarray, np.ndarray]:
    return from_npz(_file(data, key), x_key=data["x_key"], y_key=data["y_key"])


def _read_idx(data: dict, images: str, labels: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = load_idx(_file(data, images), _file(data, labels))
    x = x.astype(np.float32) / (255.0 if data["scale"] else 1.0)
    return (x.reshape(len(x), -1) if data["flatten"] else x[:, None]), y


def _tabular(read: Any, test_key: str) -> Any:
    """A loader for a file dataset: a test file if given, else a random split."""

    def load(data: dict, seed: int) -> Data:
        x, y = read(data, "path")
        if data[test_key] is None:
            return _split(x, y, data["test_size"], seed)
        return Data(x, y, *read(data, test_key))

    return load


def _idx(data: dict, seed: int) -> Data:
    """IDX images and labels (MNIST), with their test files or a random split."""
    x, y = _read_idx(data, "images", "labels")
    if (data["test_images"] is None) != (data["test_labels"] is None):
        raise ConfigError(
            "data.test_labels" if data["test_labels"] is None else "data.test_images",
            "give both test_images and test_labels",
        )
    if data["test_images"] is None:
        return _split(x, y, data["test_size"], seed)
    return Data(x, y, *_read_idx(data, "test_images", "test_labels"))


_LOADERS = {
    "digits": _digits,
    "moons": _moons,
    "spirals": _spirals,
    "csv": _tabular(_read_csv, "test_path"),
    "npz": _tabular(_read_npz, "test_path"),
    "idx": _idx,
}


def _as_targets(y: np.ndarray | None, loss: str) -> np.ndarray | None:
    """Class-index losses need integer targets; CSV columns come back as floats."""
    if y is None or loss not in CLASSIFICATION_LOSSES or y.dtype.kind in "iu":
        return y
    if y.dtype.kind == "f" and np.all(np.mod(y, 1) == 0):
        return y.astype(np.int64)
    return y


def load_data(config: dict) -> Data:
    """The ``data`` section's train/test split, inputs as float32.

    Args:
        config: the validated config (``data``, ``seed`` and ``loss`` are read).

    Returns:
        A :class:`Data`.

    Raises:
        ConfigError: for a missing file, or a file the dataset reader rejects.
    """
    data = config["data"]
    try:
        split = _LOADERS[data["name"]](data, config["seed"])
    except (OSError, ValueError, KeyError, IndexError) as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        raise ConfigError("data", f"cannot load the {data['name']} dataset: {message}") from None
    xs = [None if x is None else np.asarray(x, dtype=np.float32) for x in split[::2]]
    ys = [_as_targets(y, config["loss"]) for y in split[1::2]]
    return Data(xs[0], ys[0], xs[1], ys[1])


def read_input(path: str) -> np.ndarray:
    """The samples to predict from a ``.npy``, ``.npz`` (array ``x`` or the only one) or
    ``.csv`` (every column is a feature) file, as float32.

    Raises:
        ConfigError: at ``--input`` for a missing or unreadable file.
    """
    file = Path(path)
    if not file.is_file():
        raise ConfigError("--input", f"file not found: {path}")
    reader = _READERS.get(file.suffix.lower())
    if reader is None:
        raise ConfigError("--input", f"{path}: expected a .npy, .npz or .csv file")
    try:
        return np.asarray(reader(file), dtype=np.float32)
    except (OSError, ValueError) as err:
        raise ConfigError("--input", f"cannot read {path}: {err}") from None


def _read_npz_input(file: Path) -> np.ndarray:
    with np.load(file, allow_pickle=False) as archive:
        names = archive.files
        if "x" in names or len(names) == 1:
            return archive["x" if "x" in names else names[0]]
    raise ValueError(f"it holds {sorted(names)}; name the input array 'x'")


def _read_csv_input(file: Path) -> np.ndarray:
    return from_csv(file, target=None)[0]


_READERS = {
    ".npy": lambda f: np.load(f, allow_pickle=False),
    ".npz": _read_npz_input,
    ".csv": _read_csv_input,
}
