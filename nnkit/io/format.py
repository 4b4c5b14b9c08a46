"""The checkpoint file format: its identifying attributes, and opening a file to read.

An nnkit checkpoint is an HDF5 file whose root carries the attributes

- ``nnkit_format = 'nnkit-checkpoint'`` and ``format_version`` (an int, currently 2;
  version 2 added a CRC-32 on every dataset, verified on every read),
- ``nnkit_version``: the ``nnkit.__version__`` that wrote it,
- ``contents``: ``'checkpoint'`` (training state) or ``'weights'`` (model only),
- ``config``: the run's configuration as YAML text, when one was given (and
  ``config_crc32``, its checksum),

and one child per section (``model``, ``optimizer``, ``scheduler``, ``loader``,
``callbacks``, ``rng``, ``epoch``, ``step``, ``extra``) laid out by :mod:`nnkit.io.hdf5`.
:func:`read_file` checks the attributes before reading anything and turns every way a
file can be missing, foreign, damaged or too new into one clear error naming the file.
"""

from __future__ import annotations

import errno
import os
import zlib
from collections.abc import Iterable
from typing import Any

import h5py
import numpy as np

from nnkit._version import __version__
from nnkit.io.errors import CheckpointError
from nnkit.io.hdf5 import read_value

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "write_attrs", "read_file", "verify_file"]

FORMAT_NAME = "nnkit-checkpoint"
FORMAT_VERSION = 2
CHECKSUMS_SINCE = 2  # the first format version whose datasets carry checksums


def write_attrs(file: h5py.File, *, contents: str, config: str | None) -> None:
    """Writes the format attributes on the root of a new checkpoint file.

    Args:
        file: the file being written.
        contents: ``'checkpoint'`` or ``'weights'``.
        config: YAML text to record, or None.
    """
    file.attrs["nnkit_format"] = FORMAT_NAME
    file.attrs["format_version"] = FORMAT_VERSION
    file.attrs["nnkit_version"] = __version__
    file.attrs["contents"] = contents
    if config is not None:
        file.attrs["config"] = config
        file.attrs["config_crc32"] = np.int64(zlib.crc32(config.encode("utf-8")))


def read_file(
    path: str | os.PathLike,
    sections: Iterable[str] | None = None,
    *,
    expect: dict[str, dict[str, tuple[int, ...]]] | None = None,
) -> dict[str, Any]:
    """Reads a checkpoint file into plain Python and NumPy values.

    Args:
        path: the checkpoint file.
        sections: the top-level children to read (those absent are skipped); None
            reads them all.
        expect: ``{section: {dataset name: shape}}``: the shapes the caller's objects
            need (e.g. a model's ``state_dict``). Before any data is read, a dataset
            holding more elements than its expected shape is refused, so loading never
            allocates much more than the state it fills; other mismatches are left to
            the object's own ``load_state_dict``, which lists them all.

    Returns:
        ``{'attrs': {...root attributes...}, section: value, ...}``.

    Raises:
        FileNotFoundError: if ``path`` does not exist (the error names it).
        CheckpointError: if the file is not HDF5, is damaged or truncated (a dataset's
            data no longer matches its checksum), was not written by nnkit, has a newer
            format version, or holds content nnkit does not read (see
            :func:`nnkit.io.hdf5.read_value`).
    """
    name = os.fspath(path)
    file = _open(name)
    try:
        with file:
            attrs = _check_attrs(file, name)
            verify = attrs["format_version"] >= CHECKSUMS_SINCE
            wanted = list(file) if sections is None else [s for s in sections if s in file]
            for section, shapes in (expect or {}).items():
                _check_shapes(file, section, shapes)
            content = {"attrs": attrs}
            for section in wanted:
                content[section] = _read_section(file, section, verify)
            return content
    except CheckpointError:
        raise
    except MemoryError:
        raise CheckpointError(
            f"{name} declares more data than fits in memory; refused (damaged or crafted)"
        ) from None
    except (OSError, RuntimeError, KeyError, ValueError) as err:
        # h5py reports reads past the end of a truncated file, or from a corrupted
        # B-tree, as one of these; undecodable text lands here too. All mean damage.
        raise CheckpointError(f"{name} is damaged or truncated ({err})") from err


def _open(name: str) -> h5py.File:
    if not os.path.exists(name):
        raise FileNotFoundError(errno.ENOENT, "No such checkpoint file", name)
    if os.path.isdir(name):
        raise IsADirectoryError(errno.EISDIR, "Expected a checkpoint file, found a directory", name)
    if not h5py.is_hdf5(name):
        raise CheckpointError(f"{name} is not an HDF5 file (or is damaged)")
    try:
        return h5py.File(name, "r")
    except OSError as err:
        raise CheckpointError(f"{name} is damaged or truncated ({err})") from err


def verify_file(path: str | os.PathLike) -> dict[str, Any]:
    """Read every dataset of a checkpoint and check its checksum.

    Returns:
        ``{'format_version': int, 'datasets': int, 'bytes': int}``: what was verified.

    Args:
        path: a file written by nnkit's checkpoint functions.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        CheckpointError: naming the file and the first damaged dataset, or saying that
            a version-1 file carries no checksums to verify.
    """
    content = read_file(path)
    version = content["attrs"]["format_version"]
    if version < CHECKSUMS_SINCE:
        raise CheckpointError(
            f"{os.fspath(path)} has checkpoint format version {version}, "
            "which carries no checksums: it cannot be verified (load and "
            "save it again to add them)"
        )
    counts = {"datasets": 0, "bytes": 0}

    def count(_: str, node: Any) -> None:
        if isinstance(node, h5py.Dataset) and node.shape is not None:
            counts["datasets"] += 1
            counts["bytes"] += int(node.size) * node.dtype.itemsize

    with h5py.File(os.fspath(path), "r") as file:
        file.visititems(count)
    return {"format_version": version, **counts}


def _check_shapes(file: h5py.File, section: str, shapes: dict[str, tuple[int, ...]]) -> None:
    group = file.get(section)
    if not isinstance(group, h5py.Group):
        return  # a missing section is reported by the caller
    for key, shape in shapes.items():
        node = group.get(key, getlink=True)
        if not isinstance(node, h5py.HardLink):
            continue  # absent (the caller's strictness decides) or a link (refused later)
        dataset = group[key]
        if (
            isinstance(dataset, h5py.Dataset)
            and dataset.shape is not None
            and dataset.size > max(1, int(np.prod(shape)))
        ):
            raise CheckpointError(
                f"{file.filename}: {section}.{key}: shape {dataset.shape} in the file, but "
                f"{tuple(shape)} is expected; refused before reading"
            )


def _read_section(file: h5py.File, section: str, verify: bool) -> Any:
    link = file.get(section, getlink=True)
    if not isinstance(link, h5py.HardLink):
        raise CheckpointError(
            f"{file.filename}: {section}: is a {type(link).__name__}; links are not followed"
        )
    return read_value(file[section], where=section, verify=verify)


def _check_attrs(file: h5py.File, name: str) -> dict[str, Any]:
    attrs = {
        key: _plain_attr(file.attrs[key])
        for key in ("nnkit_format", "format_version", "nnkit_version", "contents", "config")
        if key in file.attrs
    }
    if attrs.get("nnkit_format") != FORMAT_NAME:
        raise CheckpointError(
            f"{name} was not written by nnkit (it has no nnkit_format={FORMAT_NAME!r} attribute)"
        )
    version = attrs.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise CheckpointError(f"{name} has an invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"{name} has checkpoint format version {version} (written by nnkit "
            f"{attrs.get('nnkit_version', '?')}), newer than the version {FORMAT_VERSION} "
            "this nnkit reads; upgrade nnkit to load it"
        )
    if "config" in attrs and version >= CHECKSUMS_SINCE:
        stored = file.attrs.get("config_crc32")
        if stored is None or int(stored) != zlib.crc32(attrs["config"].encode("utf-8")):
            raise CheckpointError(
                f"{name}: the config attribute does not match its "
                "checksum (config_crc32): the file is damaged"
            )
    return attrs


def _plain_attr(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if hasattr(value, "ndim") and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    return value if isinstance(value, str) else str(value)
