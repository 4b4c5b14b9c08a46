"""The CPU backend: :class:`ArrayMat` over NumPy."""

from __future__ import annotations

import numpy as np

from nnkit.backends.device import cpu
from nnkit.backends.mat import ArrayMat

__all__ = ["NumpyMat"]


class NumpyMat(ArrayMat):
    """Mat on the CPU; ``xp = numpy``."""

    __slots__ = ()
    xp = np
    device = cpu

    def to_numpy(self) -> np.ndarray:
        return self.array
