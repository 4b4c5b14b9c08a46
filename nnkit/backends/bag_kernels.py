"""Kernels of ``embedding_bag``, written against a Mat's array module ``xp`` (NumPy or
CuPy): the bag layout (which bag each index falls in), the per-bag counts, the
reduction of the looked-up rows (sum, mean or max) and the index frequencies used by
``scale_grad_by_freq``.

Each takes and returns Mats. Bags are contiguous runs of the flat index list (its
``offsets`` are non-decreasing), so the bag ids of the kept entries are non-decreasing.
"""

from __future__ import annotations

__all__ = ["bag_layout", "bag_mean_scale", "bag_reduce", "index_freq"]


def bag_layout(indices, offsets, num_bags, padding_idx):
    """``(pos, bag)``: the positions of the entries of ``indices`` (1-d) that count (in
    one of the ``num_bags`` bags that start at ``offsets``, and not ``padding_idx``),
    and the bag of each (int64 Mats)."""
    xp = indices.xp
    idx = indices.array
    off = offsets.array.astype(xp.int64, copy=False)
    n = idx.shape[0]
    bag = xp.searchsorted(off, xp.arange(n, dtype=xp.int64), side="right") - 1
    keep = bag < num_bags  # past the last offset with include_last_offset
    if padding_idx is not None:
        keep &= idx != padding_idx
    pos = xp.nonzero(keep)[0].astype(xp.int64, copy=False)
    return indices._new(pos), indices._new(bag[pos].astype(xp.int64, copy=False))


def bag_mean_scale(bag, num_bags, dtype):
    """``1 / size`` of its bag for each kept entry (``bag``: the entries' bags), as
    ``dtype``: the scale of ``mode='mean'``."""
    xp = bag.xp
    counts = xp.bincount(bag.array, minlength=num_bags).astype(dtype)
    return bag._new(1.0 / counts[bag.array])


def index_freq(indices, num_embeddings, kept, dtype):
    """``1 / count`` of each kept index among all of ``indices`` (``kept`` are the kept
    entries' indices): the gradient scale of ``scale_grad_by_freq``."""
    xp = indices.xp
    counts = xp.bincount(indices.array.astype(xp.int64), minlength=num_embeddings)
    return kept._new((1.0 / counts[kept.array]).astype(dtype))


def bag_reduce(weight, kept, bag, scale, num_bags, mode):
    """The bags' reductions of ``weight[kept]``: ``(out, where)``.

    ``out`` is ``(num_bags, D)``: per bag the sum of ``scale[p] * weight[kept[p]]``
    (``scale`` None: 1) for ``'sum'``/``'mean'``, else the column-wise maximum; empty
    bags give zeros. For ``'max'``, ``where`` is the flat position in a ``(N, D)``
    weight of each bag's maximum, column by column (the first maximum of the bag, as
    torch; NaN only where the bag's first row is NaN), -1 for an empty bag; else None.
    """
    xp = weight.xp
    w = weight.array
    d = w.shape[1]
    rows = w[kept.array]
    b = bag.array
    if mode != "max":
        if scale is not None:
            rows = rows * scale.array[:, None]
        out = xp.zeros((num_bags, d), dtype=w.dtype)
        xp.add.at(out, b, rows)
        return weight._new(out), None
    m = rows.shape[0]
    finite = xp.where(xp.isnan(rows), -xp.inf, rows)
    out = xp.full((num_bags, d), -xp.inf, dtype=w.dtype)
    xp.maximum.at(out, b, finite)
    big = xp.iinfo(xp.int64).max
    cand = xp.where(finite == out[b], xp.arange(m, dtype=xp.int64)[:, None], big)
    first = xp.full((num_bags, d), big, dtype=xp.int64)
    xp.minimum.at(first, b, cand)
    start = xp.full((num_bags,), big, dtype=xp.int64)
    xp.minimum.at(start, b, xp.arange(m, dtype=xp.int64))
    empty = start == big
    safe_start = xp.where(empty, 0, start)
    head_nan = xp.isnan(rows[safe_start]) if m else xp.zeros((num_bags, d), dtype=bool)
    head_nan &= ~empty[:, None]
    pick = xp.where(head_nan, safe_start[:, None], first)  # a NaN head stays the max
    cols = xp.arange(d, dtype=xp.int64)
    safe_pick = xp.where(empty[:, None], 0, pick)
    if m:
        out = xp.where(head_nan, rows[safe_pick, cols], out)
        where = kept.array.astype(xp.int64)[safe_pick] * d + cols
    else:
        where = xp.zeros((num_bags, d), dtype=xp.int64)
    out = xp.where(empty[:, None], 0, out).astype(w.dtype, copy=False)
    where = xp.where(empty[:, None], -1, where)
    return weight._new(out), weight._new(where)
