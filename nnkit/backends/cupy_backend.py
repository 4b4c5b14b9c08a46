"""The GPU backend: :class:`ArrayMat` over CuPy.

Importing this module never fails for want of CuPy; :func:`available` says whether
CuPy imported and sees a GPU, and :meth:`CupyMat.check_available` raises an error
that says which is missing and how to install it.
"""

from __future__ import annotations

import numpy as np

from nnkit.backends.device import Device, device
from nnkit.backends.mat import ArrayMat

try:  # guarded import, as Chainer's backends/cuda.py does
    import cupy

    _import_error = None
except Exception as exc:  # ImportError, or a CUDA library failing to load
    cupy = None
    _import_error = exc

__all__ = ["CupyMat", "available"]


def available() -> bool:
    """True when CuPy imported and at least one GPU is visible."""
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


class CupyMat(ArrayMat):
    """Mat on an NVIDIA GPU; ``xp = cupy``. Device placement follows the array."""

    __slots__ = ()
    xp = cupy
    multi_device = True

    @staticmethod
    def check_available() -> None:
        if cupy is None:
            raise RuntimeError(
                "nnkit: device 'cuda' needs CuPy, which is not installed "
                f"({_import_error}); install it with: pip install 'nnkit[cuda]'"
            )
        if not available():
            raise RuntimeError(
                "nnkit: device 'cuda' requested but CuPy sees no GPU "
                "(check the driver and CUDA_VISIBLE_DEVICES)"
            )

    @property
    def device(self) -> Device:
        return device(f"cuda:{self.array.device.id}")

    def to_numpy(self) -> np.ndarray:
        return cupy.asnumpy(self.array)

    @staticmethod
    def _writable(a) -> bool:
        return True  # CuPy arrays have no read-only flag

    def item(self):
        return self.array.item()

    def tolist(self):
        return cupy.asnumpy(self.array).tolist()

    @classmethod
    def from_data(cls, data, dtype=None):
        return cls(cupy.asarray(np.asarray(data, dtype=dtype)))

    @classmethod
    def from_foreign(cls, mat, device):
        with cupy.cuda.Device(device.index or 0):
            return cls(
                cupy.array(mat.to_numpy() if not isinstance(mat, CupyMat) else mat.array, copy=True)
            )

    def to_device(self, device):
        if device.type == "cuda" and device.index != self.array.device.id:
            with cupy.cuda.Device(device.index):
                return CupyMat(cupy.array(self.array, copy=True))
        return super().to_device(device)

    @classmethod
    def result_type(cls, *dtypes):
        return np.result_type(*dtypes)

    def _add_at(self, out, ix, values):
        cupy.add.at(out, ix, values)

    def erf(self):
        import cupyx.scipy.special  # optional: cupy (cupyx comes with it), loaded on first use

        return self._new(cupyx.scipy.special.erf(self.array))
