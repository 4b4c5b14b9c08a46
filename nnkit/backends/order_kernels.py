"""Ordering kernels of a Mat: cumulative scans, sorting, selection and counting.

These back ``nnkit/autograd/ops/ordering.py``. Index results are int64 Mats; values
are taken from them with ``gather`` by the autograd layer, so that every gradient
routes to the selected index.
"""

from __future__ import annotations

import numpy as np

__all__ = ["OrderKernelsMixin"]


class OrderKernelsMixin:
    """Cumulative sums/products/log-sum-exps, stable sorts, top-k, k-th value and mode:
    the part of ``ArrayMat`` that orders elements."""

    __slots__ = ()

    def cumsum(self, axis):
        return self._new(self.xp.cumsum(self.array, axis=axis))

    def sort(self, axis=-1, descending=False):
        """(values, indices) sorted along ``axis``."""
        idx = self.xp.argsort(-self.array if descending else self.array, axis=axis, kind="stable")
        return self._new(self.xp.take_along_axis(self.array, idx, axis)), self._new(idx)

    def cumulative(self, how, axis, reverse=False, dtype=None):
        """The inclusive scan ``how`` (``'sum'``, ``'prod'`` or ``'logaddexp'``) along
        ``axis``; ``reverse`` scans from the end (the adjoint of the forward scan)."""
        xp, a = self.xp, self.array
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        if reverse:
            a = xp.flip(a, axis)
        if how == "sum":
            out = xp.cumsum(a, axis=axis, dtype=a.dtype)
        elif how == "prod":
            out = xp.cumprod(a, axis=axis, dtype=a.dtype)
        else:
            out = self._logcumsumexp(a, axis)
        if reverse:
            out = xp.flip(out, axis)
        return self._new(xp.ascontiguousarray(out))

    def _logcumsumexp(self, a, axis):
        with np.errstate(invalid="ignore"):  # inf - inf inside logaddexp: handled
            return _accumulate(self.xp, self.xp.logaddexp, a, axis)

    def sort_indices(self, axis, descending=False):
        """Stable argsort along ``axis`` (NaN last ascending, first descending, as torch);
        equal elements keep their order in both directions."""
        xp, a = self.xp, self.array
        if not descending:
            return self._new(xp.argsort(a, axis=axis, kind="stable").astype(np.int64))
        # Sort the reversed slice stably, then reverse: equal elements stay in their
        # original order and NaN comes first, without negating (bools, unsigned, INT_MIN).
        n = a.shape[axis]
        idx = xp.argsort(xp.flip(a, axis), axis=axis, kind="stable")
        idx = (n - 1) - xp.flip(idx, axis)
        return self._new(xp.ascontiguousarray(idx.astype(np.int64)))

    def cumextreme_indices(self, axis, is_max=True):
        """For cummax/cummin: the index of the running extreme at every position (the
        last one among ties, and the last NaN once a NaN is met, as torch's kernel)."""
        xp, a = self.xp, self.array
        f = xp.maximum if is_max else xp.minimum
        n = a.shape[axis]
        shape = [1] * a.ndim
        shape[axis] = n
        pos = xp.arange(n, dtype=np.int64).reshape(shape)
        run = _accumulate(xp, f, a, axis)
        hit = a == run
        if a.dtype.kind in "fc":
            hit = hit | xp.isnan(a)
        cand = xp.where(hit, pos, xp.zeros((), np.int64))
        return self._new(xp.ascontiguousarray(_accumulate(xp, xp.maximum, cand, axis)))

    def topk_indices(self, k, axis, largest=True):
        """Indices of the ``k`` largest (smallest) elements along ``axis``, in sorted
        order; NaN counts as the largest value, ties keep their original order."""
        idx = self.sort_indices(axis, descending=largest).array
        return self._new(self.xp.ascontiguousarray(self.xp.take(idx, self.xp.arange(k), axis=axis)))

    def mode_indices(self, axis):
        """For mode: per slice, the index of the most frequent value (the smallest such
        value among equally frequent ones; its last occurrence, as torch's CPU kernel).
        NaNs count as equal to each other."""
        xp, a = self.xp, self.array
        a = xp.moveaxis(a, axis, -1)
        lead, n = a.shape[:-1], a.shape[-1]
        flat = a.reshape(-1, n)
        order = xp.argsort(flat, axis=-1, kind="stable")
        s = xp.take_along_axis(flat, order, -1)
        new = s[:, 1:] != s[:, :-1]  # a run of equal values starts at k (k >= 1)
        if s.dtype.kind in "fc":
            new = new & ~(xp.isnan(s[:, 1:]) & xp.isnan(s[:, :-1]))
        pos = xp.arange(n, dtype=np.int64)
        head = xp.zeros_like(s[:, :1], dtype=bool)
        starts = xp.where(xp.concatenate([~head, new], axis=1), pos, 0)
        start = _accumulate(xp, xp.maximum, starts, 1)  # the start of each one's run
        ends = xp.where(xp.concatenate([new, ~head], axis=1), pos, n)  # a run ends at k
        end = xp.flip(_accumulate(xp, xp.minimum, xp.flip(ends, 1), 1), 1)
        length = end - start + 1
        best = xp.argmax(length, axis=1)[:, None]  # the first longest run: smallest value
        in_best = start == xp.take_along_axis(start, best, 1)
        out = xp.where(in_best, order, -1).max(axis=1)
        return self._new(out.reshape(lead).astype(np.int64))  # (not ascontiguousarray: 0-d)


def _accumulate(xp, f, a, axis):
    """``f.accumulate`` along ``axis``, or a slice-by-slice scan where the array module
    lacks it for ``f`` (CuPy supports few ufuncs there)."""
    acc = getattr(f, "accumulate", None)
    if acc is not None:
        try:
            return acc(a, axis=axis)
        except (NotImplementedError, TypeError):
            pass
    return _scan(xp, f, a, axis)


def _scan(xp, f, a, axis):
    """The inclusive scan of the binary ufunc ``f`` along ``axis``, one step a slice (for
    array modules without ``ufunc.accumulate``)."""
    out = xp.moveaxis(xp.array(a, copy=True), axis, 0)
    for k in range(1, out.shape[0]):
        out[k] = f(out[k], out[k - 1])
    return xp.moveaxis(out, 0, axis)
