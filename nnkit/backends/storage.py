"""Storage: the owner of one device buffer shared by every Mat viewing it."""

from __future__ import annotations

__all__ = ["Storage"]


class Storage:
    """One allocated buffer, its device and its version counter.

    Every view (Mat) of the buffer holds the same Storage, so an in-place write
    through any of them bumps the one ``version`` that autograd checks saved
    tensors against.

    Attributes:
        buffer: the root array that owns the memory.
        device: the :class:`~nnkit.backends.device.Device` holding it.
        version: incremented by every in-place write.
    """

    __slots__ = ("buffer", "device", "version", "__weakref__")

    def __init__(self, buffer, device) -> None:
        self.buffer = buffer
        self.device = device
        self.version = 0

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes

    def bump(self) -> None:
        """Record one in-place modification."""
        self.version += 1
