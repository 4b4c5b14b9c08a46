"""The error raised for damaged, foreign or incompatible checkpoint files."""

from __future__ import annotations

__all__ = ["CheckpointError"]


class CheckpointError(ValueError):
    """A file cannot be read as an nnkit checkpoint; the message names the file.

    Raised for a file that is not HDF5 (or is damaged or truncated), an HDF5 file not
    written by nnkit, a newer format version than this nnkit reads, content nnkit would
    not write (object or variable-length datasets, links to other files), and a
    checkpoint that lacks a section the caller asked to restore.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
        >>> with open(path, "w") as f:
        ...     _ = f.write("not a checkpoint")
        >>> try:
        ...     nnkit.io.load_checkpoint(path)
        ... except nnkit.io.CheckpointError as err:
        ...     print(err)
        /.../notes.txt is not an HDF5 file (or is damaged)
    """
