"""Memory questions asked by the ``out=`` keyword (``nnkit/autograd/ops/out_variants.py``):
do two Mats overlap, does a Mat overlap itself, can a Mat be resized in its own memory.

The overlap answers follow PyTorch's ``get_overlap_status``/``has_internal_overlap``
(``aten/src/ATen/MemoryOverlap.cpp``): they are exact only for Mats whose elements tile a
block of memory ("non-overlapping and dense"); anything else is "too hard" and passes.
"""

from __future__ import annotations

__all__ = ["overlap_status", "internal_overlap", "resized_in_place"]


def _ptr(array) -> int:
    """The address of ``array``'s first element (NumPy or CuPy)."""
    iface = getattr(array, "__array_interface__", None)
    if iface is None:
        iface = array.__cuda_array_interface__
    return iface["data"][0]


def _dense(array) -> bool:
    """Whether the elements tile one block of memory, each once (torch's
    ``is_non_overlapping_and_dense``), with no negative stride."""
    expected = array.itemsize
    for stride, size in sorted((s, n) for s, n in zip(array.strides, array.shape) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def overlap_status(a, b) -> str:
    """``'full'`` (the same elements in the same order), ``'partial'``, ``'none'`` or
    ``'too_hard'`` (one of them is strided with gaps or broadcast) for two Mats."""
    if a is b:
        return "full"
    x, y = a.array, b.array
    if x.size == 0 or y.size == 0 or a.device != b.device:
        return "none"
    if not (_dense(x) and _dense(y)):
        return "too_hard"
    xb, yb = _ptr(x), _ptr(y)
    xe, ye = xb + x.nbytes, yb + y.nbytes
    if xb == yb and xe == ye:
        return "full" if x.strides == y.strides else "partial"
    return "partial" if xb < ye and yb < xe else "none"


def internal_overlap(m) -> bool:
    """Whether several elements of the Mat ``m`` share one memory location (an
    expanded, i.e. broadcast, Mat)."""
    a = m.array
    if _dense(a):
        return False
    return any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape))


def resized_in_place(m, shape):
    """A Mat of ``shape`` over the first elements of ``m``'s memory (same Storage) when
    ``m`` is contiguous and holds at least as many elements, else None."""
    a = m.array
    n = 1
    for d in shape:
        n *= d
    if n == 0 or n > a.size or not a.flags.c_contiguous:
        return None
    return m._view(a.reshape(-1)[:n].reshape(shape))
