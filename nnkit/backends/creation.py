"""Creation of Mats: from host data, constant fills, ranges and random draws.

A mixin of :class:`~nnkit.backends.mat.ArrayMat`, written against ``cls.xp`` so
that NumPy and CuPy share it. Random draws come from a host ``numpy`` Generator (nnkit's
global one by default) so CPU and GPU runs seeded alike draw the same numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from nnkit.backends.mat import ArrayMat

__all__ = ["MatCreationMixin"]


class MatCreationMixin:
    """Class methods making new Mats (``cls`` is the concrete Mat class)."""

    __slots__ = ()

    @classmethod
    def from_data(cls, data, dtype=None) -> "ArrayMat":
        """Copy host data (nested lists, scalars, arrays) onto this backend's device."""
        return cls(cls.xp.array(data, dtype=dtype))

    @classmethod
    def from_host(cls, array, copy: bool = False) -> "ArrayMat":
        """Wrap (CPU: share, GPU: upload) a host ndarray."""
        return cls(cls.xp.array(array, copy=True) if copy else cls.xp.asarray(array))

    @classmethod
    def zeros(cls, shape, dtype) -> "ArrayMat":
        return cls(cls.xp.zeros(shape, dtype=dtype))

    @classmethod
    def ones(cls, shape, dtype) -> "ArrayMat":
        return cls(cls.xp.ones(shape, dtype=dtype))

    @classmethod
    def full(cls, shape, value, dtype) -> "ArrayMat":
        return cls(cls.xp.full(shape, value, dtype=dtype))

    @classmethod
    def empty(cls, shape, dtype) -> "ArrayMat":
        return cls(cls.xp.empty(shape, dtype=dtype))

    @classmethod
    def arange(cls, start, stop, step, dtype) -> "ArrayMat":
        return cls(cls.xp.arange(start, stop, step, dtype=dtype))

    @classmethod
    def linspace(cls, start, stop, num, dtype) -> "ArrayMat":
        return cls(cls.xp.linspace(start, stop, num, dtype=dtype))

    @classmethod
    def eye(cls, n, m, dtype) -> "ArrayMat":
        return cls(cls.xp.eye(n, m, dtype=dtype))

    @classmethod
    def scalar(cls, value, dtype) -> "ArrayMat":
        """A 0-d Mat holding ``value``."""
        return cls(cls.xp.asarray(value, dtype=dtype))

    @classmethod
    def rand(cls, shape, dtype, rng) -> "ArrayMat":
        return cls.from_host(rng.random(shape, dtype=np.float64).astype(dtype, copy=False))

    @classmethod
    def randn(cls, shape, dtype, rng) -> "ArrayMat":
        return cls.from_host(rng.standard_normal(shape).astype(dtype, copy=False))

    @classmethod
    def randint(cls, low, high, shape, dtype, rng) -> "ArrayMat":
        return cls.from_host(rng.integers(low, high, size=shape).astype(dtype, copy=False))

    @classmethod
    def uniform(cls, low, high, shape, dtype, rng) -> "ArrayMat":
        return cls.from_host(rng.uniform(low, high, size=shape).astype(dtype, copy=False))

    @classmethod
    def bernoulli(cls, p, shape, dtype, rng) -> "ArrayMat":
        """Each element 1 with probability ``p`` else 0."""
        return cls.from_host((rng.random(shape) < p).astype(dtype, copy=False))
