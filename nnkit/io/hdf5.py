"""The mapping between nested Python state and HDF5 groups, datasets and attributes.

Every ``state_dict`` in nnkit (Module, Optimizer, scheduler, DataLoader, callbacks) is a
nested structure of dicts, lists, tuples, Tensors, NumPy arrays and Python scalars.
:func:`write_value` lays it out in HDF5 the way Chainer's ``HDF5Serializer`` does, and
:func:`read_value` reads it back exactly:

- a ``dict`` (str or int keys) is a group (``nnkit_type='dict'``); its int keys are
  listed in the ``nnkit_int_keys`` attribute so that ``{0: ...}`` comes back as ``0``;
- a ``list`` or ``tuple`` is a group with children ``0``, ``1``, … and
  ``nnkit_type='list'`` or ``'tuple'``, so the two round-trip as themselves;
- a Tensor or NumPy array is a dataset of its dtype and shape (``'tensor'``,
  ``'ndarray'``); a NumPy scalar is a 0-d dataset (``'scalar'``);
- a Python ``bool``, ``int`` or ``float`` is a 0-d ``bool``, ``int64`` or ``float64``
  dataset (``'bool'``, ``'int'``, ``'float'``); an int beyond 64 bits (such as a PCG64
  state) is a UTF-8 string of its digits (``'bigint'``);
- a ``str`` is a UTF-8 string dataset (``'str'``; a ``uint8`` dataset of its UTF-8
  bytes if it holds a NUL character, which HDF5 strings cannot); ``None`` is an empty dataset
  (``h5py.Empty``, ``'none'``).

Every dataset but ``None``'s carries ``nnkit_crc32``, the CRC-32 of its data bytes
(C order; strings: their UTF-8 bytes), computed on the array being written and checked
on the array read back, so a flipped bit anywhere in the data is an error naming the
dataset rather than a silently wrong weight.

Tensors and arrays come back as NumPy arrays; everything else comes back as the type
that was written. Only numeric, boolean and UTF-8 string data is ever written or read:
object, variable-length (other than strings), compound and reference datasets, and soft
or external links, are refused, so reading a file can never run code.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Mapping
from typing import Any

import h5py
import numpy as np

from nnkit.autograd.tensor import Tensor
from nnkit.io.errors import CheckpointError

__all__ = [
    "write_value",
    "read_value",
    "checksum",
    "check_storage",
    "TYPE_ATTR",
    "INT_KEYS_ATTR",
    "CRC_ATTR",
]

TYPE_ATTR = "nnkit_type"
INT_KEYS_ATTR = "nnkit_int_keys"
CRC_ATTR = "nnkit_crc32"  # zlib.crc32 of a dataset's data bytes as written (format >= 2)
_NUMERIC_KINDS = "biufc"
_INT64 = np.iinfo(np.int64)
_STR = h5py.string_dtype("utf-8")


def write_value(group: h5py.Group, name: str, value: Any, *, where: str = "") -> None:
    """Writes ``value`` as ``group[name]``: a sub-group for containers, else a dataset.

    Args:
        group: the HDF5 group (or file) to write into.
        name: the child's name (a valid HDF5 name: no ``/``, not empty or ``.``).
        value: a nested dict/list/tuple of Tensors, arrays, scalars, strings and None.
        where: the dotted location of ``value`` in the whole structure, for messages.

    Raises:
        TypeError: for a value or dict key of an unsupported type (e.g. an object array).
        ValueError: for a key that is not a valid HDF5 name, or two keys that collide.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "s.h5")
        >>> with h5py.File(path, "w") as f:
        ...     write_value(f, "opt", {"state": {0: {"step": 3}}, "betas": (0.9, 0.99)})
        ...     print(read_value(f["opt"]))
        {'state': {0: {'step': 3}}, 'betas': (0.9, 0.99)}
    """
    where = where or name
    if isinstance(value, Mapping):
        _write_mapping(group.create_group(name, track_order=True), value, where)
    elif isinstance(value, (list, tuple)):
        _write_sequence(group.create_group(name, track_order=True), value, where)
    else:
        kind, data = _encode_leaf(value, where)
        dataset = group.create_dataset(name, data=data)
        dataset.attrs[TYPE_ATTR] = kind
        if not isinstance(data, h5py.Empty):
            dataset.attrs[CRC_ATTR] = np.int64(checksum(data))


def checksum(data: Any) -> int:
    """CRC-32 of an array's (or scalar's, or string array's UTF-8) data bytes.

    Args:
        data: an array, a NumPy scalar or a string.

    Returns:
        The CRC-32, an int in [0, 2**32).
    """
    array = np.asarray(data)
    if array.dtype.kind == "O" or h5py.check_string_dtype(array.dtype) is not None:
        text = array.item()
        return zlib.crc32(text.encode("utf-8") if isinstance(text, str) else bytes(text))
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return zlib.crc32(memoryview(array.reshape(-1).view(np.uint8)))


def _write_mapping(group: h5py.Group, mapping: Mapping, where: str) -> None:
    group.attrs[TYPE_ATTR] = "dict"
    int_keys: list[int] = []
    for key, value in mapping.items():
        name = _key_name(key, where)
        if name in group:
            raise ValueError(f"{where}: keys {key!r} and {name!r} both map to HDF5 name {name!r}")
        if not isinstance(key, str):
            int_keys.append(int(key))
        write_value(group, name, value, where=f"{where}.{name}")
    if int_keys:
        group.attrs[INT_KEYS_ATTR] = np.asarray(int_keys, dtype=np.int64)


def _write_sequence(group: h5py.Group, items: list | tuple, where: str) -> None:
    group.attrs[TYPE_ATTR] = "tuple" if isinstance(items, tuple) else "list"
    for i, value in enumerate(items):
        write_value(group, str(i), value, where=f"{where}.{i}")


def _key_name(key: Any, where: str) -> str:
    if isinstance(key, (bool, np.bool_)):
        raise TypeError(f"{where}: dict key {key!r} is a bool; keys must be str or int")
    if isinstance(key, (int, np.integer)):
        if not _INT64.min <= int(key) <= _INT64.max:
            raise ValueError(f"{where}: int dict key {key} does not fit in 64 bits")
        return str(int(key))
    if not isinstance(key, str):
        raise TypeError(
            f"{where}: dict key {key!r} has type {type(key).__name__}; keys must be str or int"
        )
    if key in ("", ".") or "/" in key:
        raise ValueError(
            f"{where}: dict key {key!r} is not a valid HDF5 name "
            "(it must be non-empty, not '.', and contain no '/')"
        )
    return key


def _encode_leaf(value: Any, where: str) -> tuple[str, Any]:
    """The ``nnkit_type`` tag and the data h5py should store for one leaf value."""
    if value is None:
        return "none", h5py.Empty("f")
    if isinstance(value, bool):
        return "bool", np.bool_(value)
    if isinstance(value, int):
        if _INT64.min <= value <= _INT64.max:
            return "int", np.int64(value)
        return "bigint", np.array(str(value), dtype=_STR)
    if isinstance(value, float):
        return "float", np.float64(value)
    if isinstance(value, str):
        # HDF5 strings end at a NUL; text holding one is kept as its UTF-8 bytes.
        if "\x00" in value:
            return "str", np.frombuffer(value.encode("utf-8"), dtype=np.uint8)
        return "str", np.array(value, dtype=_STR)
    if isinstance(value, Tensor):
        # A host copy: saving never moves or touches the tensor's own storage.
        return "tensor", _numeric(np.asarray(value.detach().cpu().numpy(), order="C"), where)
    if isinstance(value, np.ndarray):
        return "ndarray", _numeric(np.asarray(value, order="C"), where)
    if isinstance(value, np.generic):
        return "scalar", _numeric(value, where)
    raise TypeError(
        f"{where}: cannot store a value of type {type(value).__name__} in a "
        "checkpoint (use dicts, lists, tuples, Tensors, NumPy arrays, numbers, "
        "strings or None)"
    )


def _numeric(array: np.ndarray | np.generic, where: str) -> np.ndarray | np.generic:
    if array.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(
            f"{where}: arrays of dtype {array.dtype} are not stored in "
            "checkpoints (only bool, integer, float and complex data)"
        )
    return array


def read_value(node: h5py.Group | h5py.Dataset, *, where: str = "", verify: bool = False) -> Any:
    """Reads back a value written by :func:`write_value`.

    A group or dataset without an ``nnkit_type`` attribute reads as a dict or a NumPy
    array, so plain numeric HDF5 content can be inspected too.

    Args:
        node: the group or dataset to read.
        where: the dotted location of ``node``, for messages.
        verify: check every dataset's ``nnkit_crc32`` (required then) against its data.

    Returns:
        The nested dict/list/tuple of NumPy arrays, scalars, strings and None.

    Raises:
        CheckpointError: naming the file, for content nnkit does not write: unknown
            ``nnkit_type`` tags, non-numeric or variable-length datasets, links, or a
            list group whose children are not ``0..n-1``; with ``verify``, a dataset
            whose data does not match its checksum, or that has none.
    """
    where = where or node.name.lstrip("/")
    if isinstance(node, h5py.Group):
        return _read_group(node, where, verify)
    return _read_dataset(node, where, verify)


def _read_group(group: h5py.Group, where: str, verify: bool) -> Any:
    kind = _tag(group, "dict")
    if kind == "dict":
        int_keys = {str(int(k)) for k in np.asarray(group.attrs.get(INT_KEYS_ATTR, [])).ravel()}
        return {
            (int(name) if name in int_keys else name): _read_child(group, name, where, verify)
            for name in group
        }
    if kind in ("list", "tuple"):
        names = sorted(group, key=lambda n: (len(n), n))
        if names != [str(i) for i in range(len(names))]:
            _refuse(group, where, f"a {kind} group must hold children 0..n-1, found {names}")
        items = [_read_child(group, name, where, verify) for name in names]
        return items if kind == "list" else tuple(items)
    return _refuse(group, where, f"unknown group type {kind!r}")


def _read_child(group: h5py.Group, name: str, where: str, verify: bool) -> Any:
    link = group.get(name, getlink=True)
    if not isinstance(link, h5py.HardLink):
        _refuse(group, f"{where}.{name}", f"is a {type(link).__name__}; links are not followed")
    return read_value(group[name], where=f"{where}.{name}" if where else name, verify=verify)


def _read_dataset(dataset: h5py.Dataset, where: str, verify: bool) -> Any:
    kind = _tag(dataset, None)
    if dataset.shape is None:
        if kind not in ("none", None):
            _refuse(dataset, where, f"an empty dataset cannot hold a {kind!r}")
        return None
    if h5py.check_string_dtype(dataset.dtype) is not None and kind in ("str", "bigint"):
        text = dataset.asstr()[()]
        if verify:
            _check_crc(dataset, zlib.crc32(text.encode("utf-8")), where)
        return text if kind == "str" else int(text)
    if dataset.dtype.kind not in _NUMERIC_KINDS:
        _refuse(
            dataset,
            where,
            f"dtype {dataset.dtype} is not read (only numeric data and "
            "nnkit's own strings; nothing is ever unpickled)",
        )
    check_storage(dataset, where)
    data = dataset[()]
    if verify:
        _check_crc(dataset, checksum(data), where)
    return _decode_numeric(dataset, data, kind, where)


def check_storage(dataset: h5py.Dataset, where: str) -> None:
    """Refuse, before any data is read, storage nnkit never writes.

    nnkit writes plain contiguous or compact datasets with no filter, so a dataset that
    is virtual (its values come from other files), keeps its data in external files, is
    filtered (compressed: a small file could expand without bound), or declares more
    data than the whole file holds is damaged or crafted.

    Args:
        dataset: the HDF5 dataset.
        where: its dotted location, for the message.

    Raises:
        CheckpointError: naming the file and the dataset.
    """
    if dataset.is_virtual:
        _refuse(
            dataset,
            where,
            "is a virtual dataset (its values would be read from other files); refused",
        )
    if dataset.external:
        _refuse(dataset, where, "keeps its data in external files; refused")
    plist = dataset.id.get_create_plist()
    if plist.get_nfilters():
        names = [
            plist.get_filter(i)[3].decode(errors="replace") or "?"
            for i in range(plist.get_nfilters())
        ]
        _refuse(
            dataset,
            where,
            f"is stored through filter(s) {names} (e.g. compression), "
            "which nnkit never writes; refused",
        )
    declared = int(dataset.size) * dataset.dtype.itemsize
    available = os.path.getsize(dataset.file.filename)
    if declared > available:
        _refuse(
            dataset,
            where,
            f"declares {declared} bytes of data {dataset.shape}, more "
            f"than the whole file holds ({available} bytes); refused "
            "before reading",
        )


def _check_crc(dataset: h5py.Dataset, computed: int, where: str) -> None:
    stored = dataset.attrs.get(CRC_ATTR)
    if stored is None:
        _refuse(
            dataset,
            where,
            "has no checksum (nnkit_crc32): it was not written by nnkit, or was altered",
        )
    if int(stored) != computed:
        _refuse(
            dataset,
            where,
            f"checksum mismatch (stored {int(stored):08x}, data gives "
            f"{computed:08x}): the data is damaged",
        )


def _decode_numeric(dataset: h5py.Dataset, data: Any, kind: str | None, where: str) -> Any:
    if kind in (None, "ndarray", "tensor"):
        return np.asarray(data)
    if kind == "str" and dataset.dtype == np.uint8 and dataset.ndim == 1:
        return data.tobytes().decode("utf-8")
    if dataset.shape != ():
        _refuse(dataset, where, f"a {kind!r} must be a 0-d dataset, found shape {dataset.shape}")
    converters = {"scalar": lambda v: v, "bool": bool, "int": int, "float": float}
    if kind not in converters:
        _refuse(dataset, where, f"unknown dataset type {kind!r}")
    return converters[kind](data)


def _tag(node: h5py.HLObject, default: str | None) -> str | None:
    value = node.attrs.get(TYPE_ATTR, default)
    return value.decode() if isinstance(value, bytes) else (None if value is None else str(value))


def _refuse(node: h5py.HLObject, where: str, problem: str) -> Any:
    raise CheckpointError(f"{node.file.filename}: {where or '/'}: {problem}")
