"""Array backends: the Mat interface, Storage, devices and dtypes.

Only this package computes on ndarrays; autograd, layers and optimizers speak Mat
and Tensor.
"""

from nnkit.backends.device import Device, cuda_is_available, device, device_count, get_mat_class
from nnkit.backends.dtypes import DType, to_dtype
from nnkit.backends.mat import ArrayMat
from nnkit.backends.numpy_backend import NumpyMat
from nnkit.backends.storage import Storage

__all__ = [
    "ArrayMat",
    "NumpyMat",
    "Storage",
    "Device",
    "device",
    "get_mat_class",
    "cuda_is_available",
    "device_count",
    "DType",
    "to_dtype",
]
