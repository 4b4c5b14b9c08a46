"""MNIST's IDX file format, read from (and written to) local files.

An IDX file is a 4-byte magic number -- two zero bytes, a data-type code and the
number of dimensions -- followed by one big-endian ``uint32`` per dimension and the
data in C order, big-endian. MNIST distributes its files gzip-compressed; both forms
are read (gzip is recognised by its magic bytes).
"""

from __future__ import annotations

import gzip
import os
import zlib

import numpy as np

__all__ = ["load_idx", "save_idx"]

_CODES = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_GZIP_MAGIC = b"\x1f\x8b"


def load_idx(
    images_path: str | os.PathLike, labels_path: str | os.PathLike | None = None
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Read IDX files (plain or gzip), such as MNIST's, into NumPy arrays.

    Args:
        images_path: the IDX file of inputs (e.g. ``train-images-idx3-ubyte.gz``).
        labels_path: the matching IDX file of labels, if any.

    Returns:
        The array stored in ``images_path`` (shape and dtype from its header, in
        native byte order; MNIST images are ``uint8`` ``(N, 28, 28)``), or
        ``(images, labels)`` when ``labels_path`` is given.

    Raises:
        FileNotFoundError: if a file does not exist.
        ValueError: for a wrong magic number, an unknown type code, a truncated
            header or body, trailing bytes, a damaged gzip stream, a file without
            items, or image and label files of different lengths.

    Example:
        >>> x, y = load_idx("train-images-idx3-ubyte.gz",
        ...                 "train-labels-idx1-ubyte.gz")   # doctest: +SKIP
        >>> x.shape, y.shape                                # doctest: +SKIP
        ((60000, 28, 28), (60000,))
    """
    images = _read_idx(os.fspath(images_path))
    if labels_path is None:
        return images
    labels = _read_idx(os.fspath(labels_path))
    if len(images) != len(labels):
        raise ValueError(
            f"load_idx: {os.fspath(images_path)} holds {len(images)} items but "
            f"{os.fspath(labels_path)} holds {len(labels)} labels"
        )
    return images, labels


def _read_bytes(name: str) -> bytes:
    with open(name, "rb") as f:
        raw = f.read()
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"load_idx: {name}: damaged gzip stream ({exc})") from None


def _read_idx(name: str) -> np.ndarray:
    raw = _read_bytes(name)
    if len(raw) < 4:
        raise ValueError(
            f"load_idx: {name}: truncated header: expected at least 4 bytes, found {len(raw)}"
        )
    if raw[0] != 0 or raw[1] != 0 or raw[2] not in _CODES or raw[3] == 0:
        raise ValueError(
            f"load_idx: {name}: wrong magic number 0x{raw[:4].hex()}; expected "
            f"0x0000 followed by a type code ({_known_codes()}) and the number "
            f"of dimensions"
        )
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(
            f"load_idx: {name}: truncated header: expected {header} bytes, found {len(raw)}"
        )
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, offset=4))
    dtype = _CODES[raw[2]]
    expected, found = int(np.prod(shape)) * dtype.itemsize, len(raw) - header
    if found != expected:
        what = "truncated body" if found < expected else "unexpected trailing bytes"
        raise ValueError(
            f"load_idx: {name}: {what}: expected {expected} bytes of data for "
            f"shape {shape}, found {found}"
        )
    if shape[0] == 0:
        raise ValueError(f"load_idx: {name} holds no items (empty dataset)")
    data = np.frombuffer(raw, dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def _known_codes() -> str:
    return ", ".join(f"0x{code:02x}" for code in _CODES)


def save_idx(path: str | os.PathLike, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file, gzip-compressed when ``path`` ends in ``.gz``.

    Args:
        path: the file to write.
        array: an array of ``uint8``, ``int8``, ``int16``, ``int32``, ``float32`` or
            ``float64`` with at least one dimension.

    Raises:
        TypeError: for a dtype IDX cannot store.
        ValueError: for a 0-d array.

    Example:
        >>> save_idx("labels-idx1-ubyte.gz", np.arange(10, dtype=np.uint8))  # doctest: +SKIP
    """
    array = np.asarray(array)
    codes = {dt.newbyteorder("="): code for code, dt in _CODES.items()}
    code = codes.get(array.dtype.newbyteorder("="))
    if code is None:
        raise TypeError(f"save_idx: IDX cannot store dtype {array.dtype}")
    if array.ndim == 0:
        raise ValueError("save_idx: IDX needs an array with at least one dimension")
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    payload = header + np.ascontiguousarray(array, _CODES[code]).tobytes()
    name = os.fspath(path)
    data = gzip.compress(payload) if name.endswith(".gz") else payload
    with open(name, "wb") as f:
        f.write(data)
