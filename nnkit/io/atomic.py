"""Atomic HDF5 writes: a temp file in the target's directory, fsync, then rename.

A temp file is named ``.<name>.<pid>.<random>.tmp`` after the process writing it. A
write killed before its rename (``kill -9``, power loss) leaves one behind; the next
successful write in that directory removes every such file whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator

import h5py

__all__ = ["atomic_h5_file", "atomic_write_bytes", "remove_stale_temp_files"]


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
        >>> import os, tempfile
        >>> import h5py
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.h5")
        >>> with atomic_h5_file(path) as f:
        ...     f.attrs["epoch"] = 3
        >>> os.listdir(os.path.dirname(path))      # no temp file left behind
        ['ckpt.h5']
        >>> with h5py.File(path) as f:
        ...     int(f.attrs["epoch"])
        3
    """
    with _atomic(path) as tmp:
        with h5py.File(tmp, "w", track_order=True) as file:
            yield file


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (the same temp-file protocol).

    Args:
        path: the file to create or replace.
        data: its new contents.
    """
    with _atomic(path) as tmp, open(tmp, "wb") as file:
        file.write(data)


@contextlib.contextmanager
def _atomic(path: str | os.PathLike) -> Iterator[str]:
    """Yields a temp file name beside ``path``; renames it onto ``path`` once the block
    has written it, fsynced; removes it if the block fails."""
    target = os.path.abspath(os.fspath(path))
    directory, base = os.path.split(target)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.{os.getpid()}.", suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        _fsync(tmp)
        os.chmod(tmp, _final_mode(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    _fsync_directory(directory)
    remove_stale_temp_files(directory)


_TEMP = re.compile(r"^\..+\.(\d+)\.[^.]+\.tmp$")


def remove_stale_temp_files(directory: str | os.PathLike) -> list[str]:
    """Remove the temp files of atomic writes in ``directory`` whose writer is gone.

    A temp file belongs to a live write while the process named in it runs (another
    process's, or one of this process's threads): those are kept.

    Returns:
        The paths removed.

    Args:
        directory: the directory to clean (errors listing it are ignored).
    """
    removed = []
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            match = _TEMP.match(name)
            if match and not _alive(int(match.group(1))):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, name))
                    removed.append(os.path.join(directory, name))
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


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
