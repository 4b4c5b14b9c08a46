"""Devices: ``'cpu'``, ``'cuda'``, ``'cuda:N'`` and the Mat class serving each.

Backends are looked up by device type in an explicit registry and imported lazily,
so ``import nnkit`` never imports CuPy.
"""

from __future__ import annotations

import importlib

__all__ = ["Device", "device", "cpu", "get_mat_class", "cuda_is_available", "device_count"]


class Device:
    """A compute device: ``Device('cpu')``, ``Device('cuda', 0)``.

    Compares equal to its string form (``Device('cuda', 0) == 'cuda:0'``).
    """

    __slots__ = ("type", "index")

    def __init__(self, type: str, index: int | None = None) -> None:
        self.type = type
        self.index = index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (
            ")" if self.index is None else f", index={self.index})"
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (ValueError, RuntimeError):
                return False
        if not isinstance(other, Device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))


cpu = Device("cpu")
_cache: dict[str, Device] = {"cpu": cpu}

# device type -> (module, class name); imported on first use.
_BACKENDS = {
    "cpu": ("nnkit.backends.numpy_backend", "NumpyMat"),
    "cuda": ("nnkit.backends.cupy_backend", "CupyMat"),
}
_mat_classes: dict[str, type] = {}


def device(spec=None) -> Device:
    """Parse ``'cpu'``, ``'cuda'``, ``'cuda:N'`` or a :class:`Device` (None means CPU).

    Raises:
        ValueError: for an unknown device string.
        RuntimeError: for ``'cuda'`` when CuPy or a GPU is missing.
    """
    if spec is None:
        return cpu
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"nnkit: expected a device like 'cpu' or 'cuda:0', got {spec!r}")
    hit = _cache.get(spec)
    if hit is not None:
        return hit
    kind, _, idx = spec.partition(":")
    if kind not in _BACKENDS or (idx and not idx.isdigit()) or (kind == "cpu" and idx):
        raise ValueError(f"nnkit: unknown device {spec!r} (expected 'cpu', 'cuda' or 'cuda:N')")
    dev = Device(kind, int(idx) if idx else 0)
    if kind == "cuda":
        get_mat_class(dev)  # raises a clear error without CuPy or a GPU
        n = device_count()
        if dev.index >= n:
            raise RuntimeError(
                f"nnkit: device {spec!r} does not exist ({n} CUDA device(s) visible)"
            )
    _cache[spec] = dev
    return dev


def _backend_module(kind: str):
    """The module of the backend of device type ``kind``, imported on first use: the
    backends import this module (a Mat knows its Device), never the other way round."""
    return importlib.import_module(_BACKENDS[kind][0])


def get_mat_class(dev: Device) -> type:
    """The Mat subclass implementing arrays on ``dev``'s device type."""
    cls = _mat_classes.get(dev.type)
    if cls is None:
        cls = getattr(_backend_module(dev.type), _BACKENDS[dev.type][1])
        if dev.type == "cuda":
            cls.check_available()
        _mat_classes[dev.type] = cls
    return cls


def cuda_is_available() -> bool:
    """True when CuPy imports and sees at least one GPU."""
    return _backend_module("cuda").available()  # importing it never fails without CuPy


def device_count() -> int:
    """Number of visible CUDA devices (0 without CuPy)."""
    if not cuda_is_available():
        return 0
    import cupy  # optional: cupy (present: cuda_is_available said so)

    return cupy.cuda.runtime.getDeviceCount()
