"""Kernels of the tensor-level ops of ``ops/strided.py`` and ``ops/tensor_extra.py``,
written against a Mat's array module ``xp`` (NumPy or CuPy): storage geometry (a Mat's
offset into its Storage, a view of the Storage with explicit sizes and strides), the
histograms, and the in-place random samplers' draws.

Storage geometry: a Storage's element 0 is the lowest address of its buffer and its
size the buffer's span in elements, so for the usual (C-contiguous) buffer offsets and
strides are PyTorch's ``storage_offset()`` and ``stride()``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "storage_offset",
    "storage_size",
    "storage_view",
    "window_view",
    "histogram",
    "histogramdd",
    "draw",
]


def _ptr(a) -> int:
    data = a.data
    return data.ptr if hasattr(data, "ptr") else a.__array_interface__["data"][0]


def _lowest(a):
    """``(view of a at its lowest address, span in bytes)`` of the array ``a``."""
    if a.size == 0:
        return a, 0
    if a.ndim == 0:  # indexing a 0-d array gives a scalar, not a view
        a = a.reshape(1)
    idx = tuple(slice(n - 1, n) if s < 0 else slice(0, 1) for n, s in zip(a.shape, a.strides))
    low = a[idx]
    span = sum((n - 1) * abs(s) for n, s in zip(a.shape, a.strides)) + a.itemsize
    return low, span


def storage_offset(m) -> int:
    """The offset of Mat ``m``'s first element in its Storage, in ``m``'s elements."""
    low, _ = _lowest(m.storage.buffer)
    if m.size == 0 or low.size == 0:
        return 0
    return (_ptr(m.array) - _ptr(low)) // m.itemsize


def storage_size(m) -> int:
    """The size of Mat ``m``'s Storage, in ``m``'s elements."""
    return _lowest(m.storage.buffer)[1] // m.itemsize


def _needed(shape, strides, offset) -> int:
    """The storage size a geometry reaches (0 when it has no element)."""
    if any(n == 0 for n in shape):
        return 0
    return offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def storage_view(m, shape, strides, offset, op):
    """A view of ``m``'s Storage with ``shape``, ``strides`` and ``offset`` (elements of
    ``m``'s dtype): PyTorch's ``as_strided``. Out of bounds raises RuntimeError."""
    xp = m.xp
    shape, strides = tuple(shape), tuple(strides)
    if any(s < 0 for s in strides):
        raise RuntimeError(f"{op}: negative strides are not supported, got {list(strides)}")
    if offset < 0:
        raise RuntimeError(f"{op}: negative storage offset {offset}")
    size = storage_size(m)
    need = _needed(shape, strides, offset)
    if need > size:
        raise RuntimeError(
            f"{op}: sizes {list(shape)}, strides {list(strides)} and storage offset "
            f"{offset} require a storage of {need} elements, out of bounds for a storage "
            f"of {size} elements"
        )
    item = m.itemsize
    if need == 0:
        return m._view(xp.lib.stride_tricks.as_strided(m.array, shape, (0,) * len(shape)))
    low, _ = _lowest(m.storage.buffer)
    low = low.reshape(-1)[:1].view(m.dtype) if low.dtype != m.dtype else low.reshape(-1)[:1]
    flat = xp.lib.stride_tricks.as_strided(low, (size,), (item,))
    arr = xp.lib.stride_tricks.as_strided(flat[offset:], shape, tuple(s * item for s in strides))
    return m._view(arr)


def window_view(m, dim, size, step):
    """Mat ``m``'s windows of ``size`` every ``step`` along ``dim`` (a view; the window
    last), as ``Tensor.unfold``."""
    shape, st = list(m.shape), list(m.strides)
    if m.ndim == 0:
        return m.as_strided((1,), (1,))
    n = (shape[dim] - size) // step + 1
    new_shape = shape[:dim] + [n] + shape[dim + 1 :] + [size]
    new_st = st[:dim] + [st[dim] * step] + st[dim + 1 :] + [st[dim]]
    return m.as_strided(tuple(new_shape), tuple(new_st))


def histogram(x, bins, lo, hi, weight, density):
    """``(hist, bin_edges)`` of the values of ``x`` (``bins``: a count or an edges Mat;
    ``lo``/``hi``: the range for a count), as ``torch.histogram``."""
    hist, edges = histogramdd(x.reshape((-1, 1)), [bins], [(lo, hi)], weight, density)
    return hist, edges[0]


def _upper_bound(xp, e, v):
    """``std::upper_bound`` of each of ``v`` in ``e``: ``searchsorted(side="right")``,
    element by element where ``e`` is not sorted (the probes torch's binary search makes)."""
    if e.shape[0] < 2 or bool((e[1:] >= e[:-1]).all()):
        return xp.searchsorted(e, v, side="right")
    he = np.asarray(e.get() if hasattr(e, "get") else e)
    hv = np.asarray(v.get() if hasattr(v, "get") else v)
    out = np.array([np.searchsorted(he, t, side="right") for t in hv], dtype=np.int64)
    return xp.asarray(out)


def histogramdd(x, bins, ranges, weight, density):
    """``(hist, [edges per dim])`` of the rows of the 2-D ``x``: ``bins`` a list of
    counts (with ``ranges`` a list of ``(lo, hi)``) or of edges Mats. As torch: a value
    falls in bin ``upper_bound(edges, v) - 1``, the last bin includes its right edge,
    values outside ``[edges[0], edges[-1]]`` are dropped."""
    xp = x.xp
    a = x.array
    n, d = a.shape
    edges = [
        xp.linspace(ranges[k][0], ranges[k][1], bins[k] + 1).astype(a.dtype)
        if isinstance(bins[k], int)
        else bins[k].array.reshape(-1)
        for k in range(d)
    ]
    sizes = [int(e.shape[0]) - 1 for e in edges]
    keep = xp.ones(n, dtype=bool)
    flat = xp.zeros(n, dtype=np.int64)
    for k in range(d):
        e, v = edges[k], a[:, k]
        i = _upper_bound(xp, e, v) - 1
        i = xp.where(v == e[-1], sizes[k] - 1, i)
        keep &= (v >= e[0]) & (v <= e[-1])
        flat = flat * max(sizes[k], 1) + xp.clip(i, 0, max(sizes[k] - 1, 0))
    total = int(np.prod(sizes))
    w = None if weight is None else weight.array.reshape(-1)[keep].astype(np.float64)
    hist = xp.bincount(flat[keep], weights=w, minlength=total).astype(np.float64)
    hist = hist.reshape(sizes)
    if density:
        widths = [xp.diff(e.astype(np.float64)) for e in edges]
        vol = widths[0]
        for k in range(1, d):
            vol = vol[..., None] * widths[k]  # the outer product (CuPy too)
        with np.errstate(divide="ignore", invalid="ignore"):  # no data: NaN, as torch
            hist = hist / (hist.sum() * vol)
    out_edges = [x._new(xp.ascontiguousarray(e.astype(a.dtype))) for e in edges]
    return x._new(hist.astype(a.dtype)), out_edges


def draw(cls, kind, shape, dtype, rng, a, b):
    """A Mat of ``cls`` with draws of distribution ``kind`` (``cauchy``, ``exponential``,
    ``geometric``, ``log_normal``) of parameters ``a``/``b`` from the NumPy generator."""
    if kind == "cauchy":  # median a, scale b
        v = a + b * rng.standard_cauchy(shape)
    elif kind == "exponential":  # rate a
        v = rng.exponential(1.0 / a, shape) if a != float("inf") else np.zeros(shape)
    elif kind == "geometric":  # success probability a: trials until the first success
        v = rng.geometric(a, shape)
    else:  # log_normal: exp(N(a, b**2))
        v = rng.lognormal(a, b, shape)
    return cls.from_host(np.asarray(v).astype(dtype, copy=False))
