"""``nnkit.cuda``: whether a GPU is usable, and how many."""

from nnkit.backends.device import cuda_is_available as is_available
from nnkit.backends.device import device_count

__all__ = ["is_available", "device_count"]
