"""A simulated second device: NumPy arrays that behave like another device's memory.

``SimMat`` is an :class:`~nnkit.backends.mat.ArrayMat` whose ``xp`` is NumPy, but which
presents itself as ``cuda:0`` (``multi_device = True``, like ``CupyMat``). Its arrays
are :class:`SimArray` (an ``ndarray`` subclass) and every host transfer copies, as a
device<->host transfer does. A SimArray refuses to meet a plain (host) ndarray in a
ufunc, an array function or an index, so any code above ``nnkit/backends`` that
computes on host memory where it should follow the input's device fails with
"mixed device arrays" instead of silently working on the CPU.

:func:`install` registers it as the backend of device type ``'cuda'`` through a
``pytest.MonkeyPatch``; ``NNKIT_TEST_DEVICE=simulated`` makes ``tests/conftest.py``
install it for the whole session, so the ``device`` fixture's ``cuda`` param runs on it.
"""

from __future__ import annotations

import importlib
import types

import numpy as np

from nnkit.backends.mat import ArrayMat

__all__ = ["SimArray", "SimMat", "MixedDeviceError", "install"]

SIM_DEVICE_TYPE = "cuda"


class MixedDeviceError(TypeError):
    """A simulated-device array met a host array in one computation."""


def _is_host_array(x) -> bool:
    return isinstance(x, np.ndarray) and not isinstance(x, SimArray) and x.ndim > 0


def _check(what: str, args) -> None:
    for a in args:
        if isinstance(a, (list, tuple)):
            _check(what, a)
        elif _is_host_array(a):
            raise MixedDeviceError(
                f"mixed device arrays in {what}: a host (cpu) ndarray of shape {a.shape} "
                f"met a simulated {SIM_DEVICE_TYPE} array"
            )


def _plain(x):
    if isinstance(x, SimArray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


def _tag(x):
    """Results of a computation on the simulated device live on it."""
    if isinstance(x, SimArray):
        return x
    if isinstance(x, np.ndarray):
        return x.view(SimArray)
    if isinstance(x, np.generic):  # like CuPy, reductions give 0-d device arrays
        return np.asarray(x).view(SimArray)
    if isinstance(x, tuple):
        return tuple(_tag(v) for v in x)
    if isinstance(x, list):
        return [_tag(v) for v in x]
    return x


class SimArray(np.ndarray):
    """An ndarray living on the simulated device."""

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        _check(f"{ufunc.__name__}.{method}", inputs + (out or ()))
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        res = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _tag(res)

    def __array_function__(self, func, types_, args, kwargs):
        _check(func.__name__, args)
        _check(func.__name__, tuple(kwargs.values()))
        return _tag(func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()}))

    def __getitem__(self, idx):
        _check("indexing", idx if isinstance(idx, tuple) else (idx,))
        return _tag(np.ndarray.__getitem__(self.view(np.ndarray), _plain(idx)))

    def __setitem__(self, idx, value):
        _check("index assignment", (idx if isinstance(idx, tuple) else (idx,)) + (value,))
        np.ndarray.__setitem__(self.view(np.ndarray), _plain(idx), _plain(value))

    def __reduce__(self):
        raise TypeError("simulated device arrays are not picklable")


class _SimUfunc:
    """A ufunc whose results land on the simulated device."""

    def __init__(self, ufunc):
        self._ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return _tag(self._ufunc(*args, **kwargs))

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        if callable(attr):
            return lambda *a, **k: _tag(attr(*a, **k))
        return attr


class _SimGrid:
    def __init__(self, grid):
        self._grid = grid

    def __getitem__(self, key):
        return _tag(self._grid[key])


class _SimXP:
    """``numpy`` as an array module of the simulated device: what it creates lives there."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        obj = getattr(self._module, name)
        if isinstance(obj, np.ufunc):
            wrapped = _SimUfunc(obj)
        elif isinstance(obj, types.ModuleType):
            wrapped = _SimXP(obj)
        elif name in ("ogrid", "mgrid"):
            wrapped = _SimGrid(obj)
        elif callable(obj) and not isinstance(obj, type):

            def wrapped(*args, _f=obj, **kwargs):
                return _tag(_f(*args, **kwargs))
        else:
            return obj
        setattr(self, name, wrapped)
        return wrapped


def _sim_device():
    from nnkit.backends.device import Device

    return Device(SIM_DEVICE_TYPE, 0)


class SimMat(ArrayMat):
    """Mat on the simulated device: NumPy underneath, ``cuda:0`` on the outside."""

    __slots__ = ()
    xp = _SimXP(np)
    multi_device = True
    device = _sim_device()

    def __init__(self, array, storage=None) -> None:
        if not isinstance(array, SimArray):
            _check("SimMat", (array,))  # only device arrays (or scalars) may be wrapped
            array = np.asarray(array).view(SimArray)
        super().__init__(array, storage)

    # ArrayMat makes kernel results without __init__: here they go through the check
    def _new(self, array) -> "SimMat":
        return self.__class__(array)

    def _view(self, array) -> "SimMat":
        return self.__class__(array, self.storage)

    def is_unaliased(self) -> bool:
        # a kernel's fresh result is a SimArray view of the plain array it made (one
        # level of ``base``); a view of other memory has a longer chain (as on CuPy,
        # whose fresh arrays have no base, the engine may then sum into it in place)
        a = self.array
        b = a.base
        plain = type(b) is np.ndarray and b.base is None
        return self._storage is None and plain and self._writable(a)

    @staticmethod
    def check_available() -> None:
        pass

    @classmethod
    def from_data(cls, data, dtype=None) -> "SimMat":
        return cls(np.array(_host_copy(data), dtype=dtype).view(SimArray))

    @classmethod
    def from_host(cls, array, copy: bool = False) -> "SimMat":
        # an upload always copies
        return cls(np.array(_host_copy(array), copy=True).view(SimArray))

    def to_numpy(self) -> np.ndarray:
        # a download always copies
        return np.array(self.array.view(np.ndarray), copy=True)

    def item(self):
        return self.array.view(np.ndarray).item()

    def tolist(self):
        return self.to_numpy().tolist()

    def __repr__(self) -> str:
        return f"SimMat(shape={self.shape}, dtype={self.dtype})"


def _host_copy(data):
    if isinstance(data, SimArray):
        raise MixedDeviceError("mixed device arrays: a simulated device array given as host data")
    return data


def install(mp) -> None:
    """Make ``SimMat`` the backend of ``'cuda'`` via the ``pytest.MonkeyPatch`` ``mp``."""
    device_mod = importlib.import_module("nnkit.backends.device")
    cuda_mod = importlib.import_module("nnkit.cuda")

    def is_available() -> bool:
        return True

    def device_count() -> int:
        return 1

    mp.setattr(device_mod, "_mat_classes", {**device_mod._mat_classes, SIM_DEVICE_TYPE: SimMat})
    mp.setattr(device_mod, "_cache", {"cpu": device_mod.cpu})
    mp.setattr(device_mod, "cuda_is_available", is_available)
    mp.setattr(device_mod, "device_count", device_count)
    mp.setattr(cuda_mod, "is_available", is_available)
    mp.setattr(cuda_mod, "device_count", device_count)
    backends = importlib.import_module("nnkit.backends")
    mp.setattr(backends, "cuda_is_available", is_available)
    mp.setattr(backends, "device_count", device_count)
