"""Indexing kernels of a Mat: getitem, index_put, gather/scatter, take, tile, pad, joins.

Indices given to these methods are tuples whose items are ints, slices, ``None``,
``Ellipsis`` or integer/boolean Mats (see :mod:`nnkit.backends.mat`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["IndexKernelsMixin"]


class IndexKernelsMixin:
    """Indexing, gathering, scattering and joining: the part of ``ArrayMat`` that moves
    elements rather than computing on them."""

    __slots__ = ()

    def _index(self, idx):
        return tuple(i.array if isinstance(i, IndexKernelsMixin) else i for i in idx)

    @staticmethod
    def is_basic_index(idx) -> bool:
        return not any(isinstance(i, IndexKernelsMixin) for i in idx)

    def getitem(self, idx):
        """``array[idx]``: a view for basic indices, a copy for advanced ones."""
        if self.is_basic_index(idx):
            return self._view(self.array[idx])
        return self._new(self.array[self._index(idx)])

    def index_put(self, idx, values, accumulate=False):
        """A copy of this Mat with ``values`` written (or added) at ``idx``."""
        out = self.xp.array(self.array, copy=True)
        ix = self._index(idx)
        if accumulate and not self.is_basic_index(idx):
            self._add_at(out, ix, values.array)
        elif accumulate:
            out[ix] += values.array
        else:
            out[ix] = values.array
        return self._new(out)

    def index_add_(self, idx, values):
        """``self[idx] += values`` in place (repeated advanced indices add up)."""
        ix = self._index(idx)
        if self.is_basic_index(idx):
            self.array[ix] += values.array
        else:
            self._add_at(self.array, ix, values.array)
        return self._written()

    def _add_at(self, out, ix, values):
        self.xp.add.at(out, ix, values)

    def nonzero(self):
        return tuple(self._new(a) for a in self.xp.nonzero(self.array))

    def take(self, indices, axis):
        return self._new(self.xp.take(self.array, indices.array, axis=axis))

    def take_along_axis(self, indices, axis):
        return self._new(self.xp.take_along_axis(self.array, indices.array, axis))

    def _full_index(self, indices, axis):
        """Index tuple addressing ``indices`` along ``axis`` and position elsewhere.

        Positions are ``arange`` columns shaped to broadcast against ``indices`` (an
        open grid; ``xp.ogrid`` builds the same at several times the cost).
        """
        arange = self.xp.arange
        shape = indices.shape
        ones = (1,) * len(shape)
        return tuple(
            indices.array if k == axis else arange(n).reshape(ones[:k] + (n,) + ones[k + 1 :])
            for k, n in enumerate(shape)
        )

    def gather(self, axis, indices):
        """Values at ``indices`` along ``axis`` (``torch.gather`` semantics)."""
        return self._new(self.array[self._full_index(indices, axis)])

    def gather_grad(self, shape, axis, indices):
        """Zeros of ``shape`` with this Mat added at ``indices`` along ``axis`` (repeats
        add up): the adjoint of :meth:`gather`."""
        out = self.xp.zeros(shape, self.array.dtype)
        self._add_at(out, self._full_index(indices, axis), self.array)
        return self._new(out)

    def scatter_add(self, axis, indices, src):
        """A copy of this Mat with ``src`` added at ``indices`` along ``axis``."""
        out = self.xp.array(self.array, copy=True)
        n = indices.shape
        s = src.array[tuple(slice(0, k) for k in n)]
        self._add_at(out, self._full_index(indices, axis), s)
        return self._new(out)

    def index_add(self, axis, indices, src):
        """A copy with ``src`` slices added at ``indices`` (1-d) along ``axis``."""
        out = self.xp.array(self.array, copy=True)
        ix = (slice(None),) * axis + (indices.array,)
        self._add_at(out, ix, src.array)
        return self._new(out)

    def repeat(self, repeats, axis):
        return self._new(self.xp.repeat(self.array, repeats, axis=axis))

    def tile(self, reps):
        return self._new(self.xp.tile(self.array, reps))

    def tril(self, k=0):
        return self._new(self.xp.tril(self.array, k))

    def triu(self, k=0):
        return self._new(self.xp.triu(self.array, k))

    def pad(self, pad_width, value=0.0, mode="constant"):
        if mode == "constant":
            return self._new(
                self.xp.pad(self.array, pad_width, mode="constant", constant_values=value)
            )
        return self._new(self.xp.pad(self.array, pad_width, mode=mode))

    @classmethod
    def concatenate(cls, mats, axis):
        return cls(cls.xp.concatenate([m.array for m in mats], axis=axis))

    @classmethod
    def stack(cls, mats, axis):
        return cls(cls.xp.stack([m.array for m in mats], axis=axis))

    @classmethod
    def result_type(cls, *dtypes):
        return np.result_type(*dtypes)
