"""Argument checks on data that run as kernels: a recorded step (``nnkit.compile``)
repeats them at every replay instead of reading the data into Python once."""

from __future__ import annotations

__all__ = ["check_class_ids", "check_index_range"]


def check_index_range(mat, size: int, message: str) -> None:
    """Raise ``IndexError(message.format(bad=i))`` when an index ``i`` held by the
    integer Mat ``mat`` lies outside ``[0, size)`` (the lowest one when some are
    negative, else the highest)."""
    a = mat.array
    if not a.size:
        return
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi >= size:
        raise IndexError(message.format(bad=lo if lo < 0 else hi))


def check_class_ids(mat, num_classes: int, message: str) -> None:
    """Raise ``ValueError(message.format(lo=lo, hi=hi))`` when a class id held by the
    integer Mat ``mat`` lies outside ``[0, num_classes)`` (``lo``, ``hi``: the smallest
    and largest ids)."""
    a = mat.array
    if not a.size:
        return
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi >= num_classes:
        raise ValueError(message.format(lo=lo, hi=hi))
