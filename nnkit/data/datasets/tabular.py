"""Tabular data from local files: CSV and NumPy ``.npz`` archives."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence

import numpy as np

__all__ = ["from_csv", "from_npz"]

_MISSING = {"", "nan", "na", "n/a", "null", "none"}


def from_csv(
    path: str | os.PathLike,
    *,
    target: int | str | None = -1,
    header: bool | str = "infer",
    delimiter: str = ",",
    dtype: np.dtype | type = np.float32,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a numeric CSV file into a feature matrix and a target vector.

    Every cell must be a number: a missing value (an empty cell, ``nan``, ``NA``…)
    or any other text is an error naming the file, the line and the column.

    Args:
        path: the CSV file.
        target: the target column, by name (needs a header) or by index (negative
            counts from the end); ``None`` returns no target.
        header: ``True`` if the first row holds column names, ``False`` if it is
            data, ``"infer"`` to treat it as names when any cell is not a number.
        delimiter: the field separator.
        dtype: the dtype of the features (and of a non-integral target).

    Returns:
        ``(x, y)``: the other columns as ``x`` of shape ``(rows, columns - 1)`` and
        the target column ``y``, as ``int64`` when all its values are whole numbers
        (class labels) and ``dtype`` otherwise; ``y`` is ``None`` when ``target`` is.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: for a missing or non-numeric value, a row with the wrong number
            of fields, a file without data rows, or an invalid ``header``.
        KeyError: if the named target column does not exist.
        IndexError: if the target index is out of range.

    Example:
        >>> x, y = from_csv("iris.csv", target="species")   # doctest: +SKIP
    """
    name = os.fspath(path)
    if header not in (True, False, "infer"):
        raise ValueError(f"from_csv: header must be True, False or 'infer', got {header!r}")
    rows, lines = _read_rows(name, delimiter)
    names = None
    if rows and (header is True or (header == "infer" and not _all_numbers(rows[0]))):
        names, rows, lines = [c.strip() for c in rows[0]], rows[1:], lines[1:]
    if not rows:
        raise ValueError(f"from_csv: {name} has no data rows (empty dataset)")
    table = _parse(name, rows, lines, names)
    if target is None:
        return table.astype(dtype), None
    column = _target_index(name, target, names, table.shape[1])
    y = table[:, column]
    x = np.delete(table, column, axis=1).astype(dtype)
    is_whole = np.all(np.isfinite(y)) and np.array_equal(y, np.round(y))
    return x, (y.astype(np.int64) if is_whole else y.astype(dtype))


def _read_rows(name: str, delimiter: str) -> tuple[list[list[str]], list[int]]:
    rows, lines = [], []
    with open(name, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter=delimiter)
        for row in reader:
            if row and any(cell.strip() for cell in row):
                rows.append(row)
                lines.append(reader.line_num)
    return rows, lines


def _all_numbers(row: Sequence[str]) -> bool:
    try:
        [float(cell) for cell in row]
    except ValueError:
        return False
    return True


def _parse(
    name: str, rows: list[list[str]], lines: list[int], names: list[str] | None
) -> np.ndarray:
    width = len(names) if names is not None else len(rows[0])
    table = np.empty((len(rows), width), dtype=np.float64)
    for r, (row, line) in enumerate(zip(rows, lines)):
        if len(row) != width:
            raise ValueError(
                f"from_csv: {name} line {line} has {len(row)} fields, expected {width}"
            )
        try:
            table[r] = [float(cell) for cell in row]
        except ValueError:
            _raise_bad_cell(name, row, line, names)
        if np.isnan(table[r]).any():
            _raise_bad_cell(name, row, line, names)
    return table


def _raise_bad_cell(name: str, row: list[str], line: int, names: list[str] | None) -> None:
    for c, cell in enumerate(row):
        label = f"column {c + 1}" + (f" ({names[c]!r})" if names else "")
        text = cell.strip()
        if text.lower() in _MISSING:
            raise ValueError(f"from_csv: {name} line {line}, {label}: missing value {cell!r}")
        try:
            float(text)
        except ValueError:
            raise ValueError(
                f"from_csv: {name} line {line}, {label}: non-numeric value {cell!r}"
            ) from None


def _target_index(name: str, target: int | str, names: list[str] | None, width: int) -> int:
    if isinstance(target, str):
        if names is None:
            raise KeyError(
                f"from_csv: target column {target!r} given by name, but {name} has no header row"
            )
        if target not in names:
            raise KeyError(f"from_csv: {name} has no column {target!r}; columns are {names}")
        return names.index(target)
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)):
        raise TypeError(f"from_csv: target must be a column name, an index or None, got {target!r}")
    if not -width <= target < width:
        raise IndexError(
            f"from_csv: target column {target} is out of range for {name}, "
            f"which has {width} columns"
        )
    return int(target) % width


def from_npz(
    path: str | os.PathLike, *, x_key: str = "x", y_key: str | None = "y"
) -> tuple[np.ndarray, np.ndarray | None]:
    """Read features and targets from a NumPy ``.npz`` archive (never unpickles).

    Args:
        path: the ``.npz`` file.
        x_key: the name of the feature array.
        y_key: the name of the target array, or ``None`` for none.

    Returns:
        ``(x, y)`` with the dtypes stored in the file; ``y`` is ``None`` when
        ``y_key`` is.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        KeyError: if a key is not in the archive (the message lists those present).
        ValueError: if ``x`` is empty or 0-d, or ``x`` and ``y`` differ in length.

    Example:
        >>> np.savez("d.npz", x=np.ones((3, 2)), y=np.arange(3))   # doctest: +SKIP
        >>> x, y = from_npz("d.npz")                                # doctest: +SKIP
    """
    name = os.fspath(path)
    with np.load(name, allow_pickle=False) as archive:
        for key in (x_key, y_key):
            if key is not None and key not in archive.files:
                raise KeyError(
                    f"from_npz: {name} has no array {key!r}; it holds {sorted(archive.files)}"
                )
        x = archive[x_key]
        y = None if y_key is None else archive[y_key]
    if x.ndim == 0 or len(x) == 0:
        raise ValueError(f"from_npz: {name}: array {x_key!r} is empty (shape {x.shape})")
    if y is not None and (y.ndim == 0 or len(y) != len(x)):
        raise ValueError(
            f"from_npz: {name}: {x_key!r} has {len(x)} rows but {y_key!r} has shape {y.shape}"
        )
    return x, y


def split_count(fn: str, test_size: float, n: int) -> int:
    """The number of test samples ``test_size`` (a fraction or a count) means for ``n``."""
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float, np.number)):
        raise TypeError(f"{fn}: test_size must be a fraction or a count, got {test_size!r}")
    if isinstance(test_size, (float, np.floating)):
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"{fn}: test_size fraction must lie in (0, 1), got {test_size}")
        count = math.ceil(test_size * n)
    else:
        count = int(test_size)
    if not 0 < count < n:
        raise ValueError(
            f"{fn}: test_size={test_size} leaves an empty train or test split of {n} samples"
        )
    return count
