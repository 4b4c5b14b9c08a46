"""Creation of Mats: from host data, constant fills, ranges and random draws.

A mixin of :class:`~nnkit.backends.mat.ArrayMat`, written against ``cls.xp`` so
that NumPy and CuPy share it. Random draws come from a host ``numpy`` Generator (nnkit's
global one by default) so CPU and GPU runs seeded alike draw the same numbers.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

__all__ = ["MatCreationMixin"]

# The concrete Mat class a creation method is called on (NumpyMat.zeros makes a NumpyMat):
# the mixin does not name ArrayMat, which is built on it.
_M = TypeVar("_M", bound="MatCreationMixin")


class MatCreationMixin:
    """Class methods making new Mats (``cls`` is the concrete Mat class)."""

    __slots__ = ()

    @classmethod
    def from_data(cls: type[_M], data, dtype=None) -> _M:
        """Copy host data (nested lists, scalars, arrays) onto this backend's device."""
        return cls(cls.xp.array(data, dtype=dtype))

    @classmethod
    def from_host(cls: type[_M], array, copy: bool = False) -> _M:
        """Wrap (CPU: share, GPU: upload) a host ndarray."""
        return cls(cls.xp.array(array, copy=True) if copy else cls.xp.asarray(array))

    @classmethod
    def zeros(cls: type[_M], shape, dtype) -> _M:
        return cls(cls.xp.zeros(shape, dtype=dtype))

    @classmethod
    def ones(cls: type[_M], shape, dtype) -> _M:
        return cls(cls.xp.ones(shape, dtype=dtype))

    @classmethod
    def full(cls: type[_M], shape, value, dtype) -> _M:
        return cls(cls.xp.full(shape, value, dtype=dtype))

    @classmethod
    def empty(cls: type[_M], shape, dtype) -> _M:
        return cls(cls.xp.empty(shape, dtype=dtype))

    @classmethod
    def arange(cls: type[_M], start, stop, step, dtype) -> _M:
        return cls(cls.xp.arange(start, stop, step, dtype=dtype))

    @classmethod
    def linspace(cls: type[_M], start, stop, num, dtype) -> _M:
        return cls(cls.xp.linspace(start, stop, num, dtype=dtype))

    @classmethod
    def eye(cls: type[_M], n, m, dtype) -> _M:
        return cls(cls.xp.eye(n, m, dtype=dtype))

    @classmethod
    def scalar(cls: type[_M], value, dtype) -> _M:
        """A 0-d Mat holding ``value``."""
        return cls(cls.xp.asarray(value, dtype=dtype))

    @classmethod
    def rand(cls: type[_M], shape, dtype, rng) -> _M:
        return cls.from_host(rng.random(shape, dtype=np.float64).astype(dtype, copy=False))

    @classmethod
    def randn(cls: type[_M], shape, dtype, rng) -> _M:
        return cls.from_host(rng.standard_normal(shape).astype(dtype, copy=False))

    @classmethod
    def randint(cls: type[_M], low, high, shape, dtype, rng) -> _M:
        return cls.from_host(rng.integers(low, high, size=shape).astype(dtype, copy=False))

    @classmethod
    def uniform(cls: type[_M], low, high, shape, dtype, rng) -> _M:
        return cls.from_host(rng.uniform(low, high, size=shape).astype(dtype, copy=False))

    @classmethod
    def bernoulli(cls: type[_M], p, shape, dtype, rng) -> _M:
        """Each element 1 with probability ``p`` else 0."""
        return cls.from_host((rng.random(shape) < p).astype(dtype, copy=False))
