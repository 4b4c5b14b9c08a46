"""Atomic HDF5 writes: a temp file in the target's directory, fsync, then rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

import h5py

__all__ = ["atomic_h5_file"]


@contextlib.contextmanager
def atomic_h5_file(path: str | os.PathLike) -> Iterator[h5py.File]:
    """Opens a new HDF5 file that replaces ``path`` only once it is completely written.

    The file is written as a temp file in the same directory (so the final
    ``os.replace`` is an atomic rename on the same file system), flushed and fsynced,
    then renamed onto ``path``. If anything fails, including an exception in the
    ``with`` body, the temp file is removed and an existing ``path`` is left untouched.
    A reader thus sees either the old file or the whole new one, never a partial file.

    Args:
        path: the file to create or replace.

    Yields:
        An ``h5py.File`` open for writing, with insertion order tracked.

    Raises:
        FileNotFoundError: if the directory of ``path`` does not exist.
        OSError: if the file cannot be written or renamed.

    Example:
        >>> with atomic_h5_file("run/ckpt.h5") as f:
        ...     f.attrs["epoch"] = 3
    """
    target = os.path.abspath(os.fspath(path))
    directory, base = os.path.split(target)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.", suffix=".tmp")
    os.close(fd)
    try:
        with h5py.File(tmp, "w", track_order=True) as file:
            yield file
        _fsync(tmp)
        os.chmod(tmp, _final_mode(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    _fsync_directory(directory)


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _final_mode(target: str) -> int:
    # mkstemp creates files 0600; give the checkpoint the mode an ordinary open() would,
    # or keep the mode of the file it replaces.
    try:
        return os.stat(target).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_directory(directory: str) -> None:
    # Makes the rename itself durable; not every platform can open a directory.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
