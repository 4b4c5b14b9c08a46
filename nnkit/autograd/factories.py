"""Tensor factories (``tensor``, ``zeros``, ``randn``, ...) and conversions (``to``).

Every factory takes ``dtype=``, ``device=`` and ``requires_grad=`` keywords; shapes
may be given as a tuple or as separate ints (``zeros(2, 3)`` or ``zeros((2, 3))``).
Random factories draw from nnkit's global generator (see :func:`nnkit.manual_seed`).
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.function import Op
from nnkit.autograd.tensor import Tensor, TensorImpl
from nnkit.backends import dtypes as _dt
from nnkit.backends.device import device as _device
from nnkit.backends.device import get_mat_class
from nnkit.random import default_generator

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "from_dlpack",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "linspace",
    "eye",
    "rand",
    "randn",
    "randint",
    "randperm",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand_like",
    "randn_like",
    "to",
    "cpu",
    "cuda",
    "new_zeros",
    "new_ones",
    "new_full",
    "new_tensor",
    "type_as",
    "float",
    "double",
    "half",
    "long",
    "int",
    "bool",
]

_float, _int, _bool = float, int, bool


def _make(mat, requires_grad: bool) -> Tensor:
    t = Tensor._from_mat(mat)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data, arr: np.ndarray):
    """NumPy arrays keep their dtype; Python floats become the default float dtype."""
    if arr.dtype.kind == "f" and not isinstance(data, (np.ndarray, np.generic)):
        return _dt.get_default_dtype()
    if arr.dtype.kind in "OUSVc" or arr.dtype == np.uint16 or arr.dtype == np.uint32:
        if arr.dtype.kind in "OUSVc":
            raise TypeError(
                f"tensor: can't convert data of dtype {arr.dtype} (type "
                f"{type(data).__name__}) to a tensor; use numbers or arrays of "
                "numbers"
            )
        return _dt.int64
    return _dt.to_dtype(arr.dtype)


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, arrays, tensors).

    Args:
        data: the values.
        dtype: the dtype (default: inferred; Python floats give float32).
        device: ``'cpu'``, ``'cuda'``, ``'cuda:N'`` (default cpu).
        requires_grad: make it a leaf that records gradients.

    Raises:
        TypeError: for non-numeric data or an unsupported dtype.
        ValueError: for ragged nested lists.

    Example:
        >>> nnkit.tensor([[1, 2], [3, 4]]).dtype
        nnkit.int64
    """
    dev = _device(device) if device is not None else None
    if isinstance(data, Tensor):
        src = data._impl.data
        dt = _dt.to_dtype(dtype) if dtype is not None else data.dtype
        mat = src.to_device(dev or src.device).astype(dt.np)
        mat = mat.copy() if mat.storage is src.storage else mat
        return _make(mat, requires_grad)
    cls = get_mat_class(dev or _dt_cpu())
    if hasattr(data, "__cuda_array_interface__") and dev is None:
        return from_dlpack(data).to(dtype) if dtype is not None else from_dlpack(data).clone()
    try:
        arr = np.asarray(data) if not hasattr(data, "__cuda_array_interface__") else None
    except ValueError as exc:
        raise ValueError(
            f"tensor: can't build a tensor from ragged nested sequences ({exc})"
        ) from None
    dt = _dt.to_dtype(dtype) if dtype is not None else _infer_dtype(data, arr)
    return _make(cls.from_host(arr.astype(dt.np, copy=False), copy=True), requires_grad)


def _dt_cpu():
    from nnkit.backends.device import cpu as _cpu

    return _cpu


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like :func:`tensor`, but shares memory with a tensor or array when it can."""
    if isinstance(data, Tensor):
        out = data
        if device is not None:
            out = to(out, device)
        return to(out, dtype) if dtype is not None else out
    if isinstance(data, np.ndarray) and (device is None or _device(device).type == "cpu"):
        dt = _dt.to_dtype(dtype) if dtype is not None else _infer_dtype(data, data)
        if data.dtype == dt.np:
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``array`` (writes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    _dt.to_dtype(array.dtype)
    return Tensor._from_mat(get_mat_class(_dt_cpu()).from_host(array))


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with any DLPack-capable array (NumPy, CuPy, PyTorch...)."""
    dev_type, dev_id = ext.__dlpack_device__()
    if _int(dev_type) == 1:
        return Tensor._from_mat(get_mat_class(_dt_cpu()).from_host(np.from_dlpack(ext)))
    if _int(dev_type) == 2:
        import cupy

        cls = get_mat_class(_device(f"cuda:{dev_id}"))
        return Tensor._from_mat(cls(cupy.from_dlpack(ext)))
    raise RuntimeError(f"from_dlpack: unsupported DLPack device type {dev_type}")


def _shape(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    for s in size:
        if not isinstance(s, (_int, np.integer)) or isinstance(s, _bool) or s < 0:
            raise ValueError(f"invalid shape {tuple(size)}: sizes must be non-negative ints")
    return tuple(_int(s) for s in size)


def _cls_dt(dtype, device, default=None):
    dt = _dt.to_dtype(dtype) if dtype is not None else (default or _dt.get_default_dtype())
    return get_mat_class(_device(device)), dt


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros of shape ``size``."""
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.zeros(_shape(size), dt.np), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones of shape ``size``."""
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.ones(_shape(size), dt.np), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor of shape ``size``."""
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.empty(_shape(size), dt.np), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype inferred from it)."""
    default = (
        _dt.bool_
        if isinstance(fill_value, _bool)
        else _dt.int64
        if isinstance(fill_value, (_int, np.integer))
        else None
    )
    cls, dt = _cls_dt(dtype, device, default)
    return _make(
        cls.full(_shape((size,) if isinstance(size, _int) else (size,)), fill_value, dt.np),
        requires_grad,
    )


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values ``start, start+step, ...`` below ``end`` (``arange(n)``: 0..n-1).

    Integer arguments give int64, any float argument the default float dtype.
    """
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be non-zero")
    is_int = all(isinstance(v, (_int, np.integer)) for v in (start, end, step))
    cls, dt = _cls_dt(dtype, device, _dt.int64 if is_int else None)
    return _make(cls.arange(start, end, step, dt.np), requires_grad)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    ``start``/``end`` may be numbers or 0-d tensors (their values are used: the result
    is computed in ``dtype``, not in theirs).
    """
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.linspace(start, end, steps, dt.np), requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False):
    """The ``n × m`` identity matrix."""
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.eye(n, n if m is None else m, dt.np), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Uniform draws from [0, 1)."""
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.rand(_shape(size), dt.np, generator or default_generator()), requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Standard normal draws."""
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.randn(_shape(size), dt.np, generator or default_generator()), requires_grad)


def randint(low, high=None, size=(), *, dtype=None, device=None, generator=None) -> Tensor:
    """Integers drawn uniformly from [low, high) (``randint(high, size)`` also works)."""
    if high is None or isinstance(high, (tuple, list)):
        low, high, size = 0, low, size if high is None else high
    cls, dt = _cls_dt(dtype, device, _dt.int64)
    return Tensor._from_mat(
        cls.randint(
            low,
            high,
            _shape((size,) if isinstance(size, _int) else (size,)),
            dt.np,
            generator or default_generator(),
        )
    )


def randperm(n: int, *, dtype=None, device=None, generator=None) -> Tensor:
    """A random permutation of 0..n-1."""
    cls, dt = _cls_dt(dtype, device, _dt.int64)
    perm = (generator or default_generator()).permutation(n)
    return Tensor._from_mat(cls.from_host(perm.astype(dt.np)))


def _like(t, dtype, device):
    return (dtype if dtype is not None else t.dtype), (device if device is not None else t.device)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return zeros(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return ones(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return full(input.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return empty(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return rand(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(input, dtype, device)
    return randn(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


# ------------------------------------------------------------- conversions
class ToDevice(Op):
    @staticmethod
    def forward(ctx, x, device):
        ctx.src = x.device
        return x.to_device(device)

    @staticmethod
    def backward(ctx, grad_output):
        return to(grad_output, ctx.src), None


def to(x, *args, dtype=None, device=None, copy: bool = False, non_blocking: bool = False):
    """``x`` on another device and/or dtype (``to('cuda')``, ``to(nnkit.float64)``,
    ``to(other_tensor)``); returns ``x`` itself when nothing changes."""
    from nnkit.autograd.ops.shape import cast, clone

    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda") or hasattr(a, "type"):
            device = a
        else:
            dtype = a
    out = x
    if device is not None:
        dev = _device(device)
        if dev != x.device:
            out = ToDevice.apply(out, dev)
    if dtype is not None:
        out = cast(out, dtype)
    return clone(out) if copy and out is x else out


def cpu(x) -> Tensor:
    """``x`` on the CPU."""
    return to(x, "cpu")


def cuda(x, device=None) -> Tensor:
    """``x`` on a CUDA device (default ``cuda:0``)."""
    return to(x, device if device is not None else "cuda")


def float(x) -> Tensor:
    return to(x, _dt.float32)


def double(x) -> Tensor:
    return to(x, _dt.float64)


def half(x) -> Tensor:
    return to(x, _dt.float16)


def long(x) -> Tensor:
    return to(x, _dt.int64)


def int(x) -> Tensor:
    return to(x, _dt.int32)


def bool(x) -> Tensor:
    return to(x, _dt.bool_)


def type_as(x, other) -> Tensor:
    """``x`` with ``other``'s dtype, on ``other``'s device (as torch's type names the device)."""
    return to(x, device=other.device, dtype=other.dtype)


def new_zeros(x, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros of ``size`` with ``x``'s dtype and device (unless given)."""
    dt, dev = _like(x, dtype, device)
    return zeros(*size, dtype=dt, device=dev, requires_grad=requires_grad)


def new_ones(x, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(x, dtype, device)
    return ones(*size, dtype=dt, device=dev, requires_grad=requires_grad)


def new_full(x, size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(x, dtype, device)
    return full(size, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def new_tensor(x, data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt, dev = _like(x, dtype, device)
    return tensor(data, dtype=dt, device=dev, requires_grad=requires_grad)


_ = TensorImpl
