"""Neural-network kernels of the Mat interface (convolution, pooling, ...).

A mixin of :class:`~nnkit.backends.mat.ArrayMat`: methods here are written against
``self.xp`` so that NumPy and CuPy share them.
"""

from __future__ import annotations

__all__ = ["NNKernelsMixin"]


class NNKernelsMixin:
    __slots__ = ()
