"""nnkit dtypes: thin named wrappers over NumPy dtypes.

``nnkit.float32`` and friends are :class:`DType` objects. They compare equal to the
matching NumPy dtype and to its name, so ``t.dtype == nnkit.float32``,
``t.dtype == numpy.float32`` and ``t.dtype == 'float32'`` all hold.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "DType",
    "float16",
    "float32",
    "float64",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "bool_",
    "to_dtype",
    "get_default_dtype",
    "set_default_dtype",
]


class DType:
    """A tensor element type.

    Attributes:
        name: the canonical name (``'float32'``).
        np: the matching ``numpy.dtype``.
        is_floating_point: True for float16/32/64.
        itemsize: bytes per element.
    """

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize")

    def __init__(self, np_dtype: np.dtype) -> None:
        self.np = np.dtype(np_dtype)
        self.name = "bool" if self.np == np.bool_ else self.np.name
        self.is_floating_point = self.np.kind == "f"
        self.is_signed = self.np.kind in "fi"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"nnkit.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self.np == other.np
        try:
            return self.np == to_dtype(other).np
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.np)

    def __reduce__(self):
        return (to_dtype, (self.name,))


float16 = DType(np.float16)
float32 = DType(np.float32)
float64 = DType(np.float64)
int8 = DType(np.int8)
uint8 = DType(np.uint8)
int16 = DType(np.int16)
int32 = DType(np.int32)
int64 = DType(np.int64)
bool_ = DType(np.bool_)

_BY_NP = {d.np: d for d in (float16, float32, float64, int8, uint8, int16, int32, int64, bool_)}
_ALIASES = {
    "float": float32,
    "half": float16,
    "double": float64,
    "int": int64,
    "long": int64,
    "bool": bool_,
}
_default_float = float32


def to_dtype(dtype) -> DType:
    """Turn a DType, NumPy dtype, Python type or name into a supported :class:`DType`.

    Raises:
        TypeError: for a dtype nnkit does not support (complex, strings, objects).
    """
    if isinstance(dtype, DType):
        return dtype
    if dtype is float:
        return _default_float
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    if isinstance(dtype, str) and dtype in _ALIASES:
        return _ALIASES[dtype]
    try:
        npd = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"nnkit: unsupported dtype {dtype!r}") from exc
    found = _BY_NP.get(npd)
    if found is None:
        raise TypeError(
            f"nnkit: unsupported dtype {npd} (supported: "
            f"{', '.join(sorted(d.name for d in _BY_NP.values()))})"
        )
    return found


def from_np(npd: np.dtype) -> DType:
    """The DType for a NumPy dtype the backends produced (fast path, no validation)."""
    d = _BY_NP.get(npd)
    return d if d is not None else to_dtype(npd)


def get_default_dtype() -> DType:
    """The floating dtype used for Python floats and by the float factories (float32)."""
    return _default_float


def set_default_dtype(dtype) -> None:
    """Set the default floating dtype (float16, float32 or float64)."""
    global _default_float
    d = to_dtype(dtype)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {d}")
    _default_float = d
