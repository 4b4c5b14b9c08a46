"""Tensor factories (``tensor``, ``zeros``, ``randn``, ...); the conversions (``to``,
``float``, ``new_zeros``, ...) are in :mod:`nnkit.autograd.conversion`.

Every factory takes ``dtype=``, ``device=`` and ``requires_grad=`` keywords; shapes
may be given as a tuple or as separate ints (``zeros(2, 3)`` or ``zeros((2, 3))``).
The random factories (``rand``, ``randn``, ...) are in
:mod:`nnkit.autograd.random_factories`.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.tensor import Tensor, TensorImpl, tensor_method
from nnkit.backends import dtypes as _dt
from nnkit.backends.device import cpu as _cpu
from nnkit.backends.device import device as _device
from nnkit.backends.device import get_mat_class

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
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
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
        data: the values; ragged nested lists are refused.
        dtype: the dtype (default: inferred: Python floats give the default float dtype,
            ints int64, bools bool; NumPy arrays keep theirs).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor that never shares memory with ``data`` (see :func:`as_tensor`).

    Raises:
        TypeError: for non-numeric data or an unsupported dtype.
        ValueError: for ragged nested lists.

    Example:
        >>> nnkit.tensor([[1, 2], [3, 4]])
        tensor([[1, 2],
                [3, 4]])
        >>> nnkit.tensor([1.5, 2.0], dtype=nnkit.float64, requires_grad=True)
        tensor([1.5000, 2.0000], dtype=nnkit.float64, requires_grad=True)
        >>> nnkit.tensor(np.arange(3, dtype=np.int32)).dtype
        nnkit.int32
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


@tensor_method("__init__")
def _tensor_init(self, data=None, *, dtype=None, device=None, requires_grad=False) -> None:
    """``Tensor(data)`` is ``nnkit.tensor(data)`` (no data: an empty float tensor)."""
    self._impl = tensor(
        [] if data is None else data, dtype=dtype, device=device, requires_grad=requires_grad
    )._impl


def _dt_cpu():
    return _cpu


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like :func:`tensor`, but shares memory with ``data`` when it can.

    A tensor is returned as is (converted only if ``dtype``/``device`` differ); a CPU
    NumPy array of a supported dtype is wrapped without a copy (as :func:`from_numpy`);
    anything else is copied.

    Args:
        data: a tensor, an array, or anything :func:`tensor` accepts.
        dtype: the dtype (default: ``data``'s, inferred as in :func:`tensor`).
        device: the device (default: ``data``'s, or the CPU).

    Returns:
        A tensor, possibly ``data`` itself or a view of its memory. Unlike :func:`tensor`
        it keeps ``data``'s autograd history.

    Example:
        >>> a = np.array([1.0, 2.0])
        >>> t = nnkit.as_tensor(a)
        >>> a[0] = 9.0
        >>> t
        tensor([9.0, 2.0], dtype=nnkit.float64)
    """
    if isinstance(data, Tensor):
        out = data
        if device is not None:
            out = out.to(device)
        return out.to(dtype) if dtype is not None else out
    if isinstance(data, np.ndarray) and (device is None or _device(device).type == "cpu"):
        dt = _dt.to_dtype(dtype) if dtype is not None else _infer_dtype(data, data)
        if data.dtype == dt.np:
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with the NumPy array ``array``.

    Writes show through both ways; the tensor keeps the array's dtype and shape.

    Args:
        array: a :class:`numpy.ndarray` of a supported dtype (bool, int8/16/32/64,
            uint8, float16/32/64).

    Returns:
        A CPU tensor viewing ``array``'s memory.

    Raises:
        TypeError: for something other than an ndarray, or an unsupported dtype.

    Example:
        >>> a = np.zeros(3, dtype=np.float32)
        >>> t = nnkit.from_numpy(a)
        >>> t += 1
        >>> a
        array([1., 1., 1.], dtype=float32)
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    _dt.to_dtype(array.dtype)
    return Tensor._from_mat(get_mat_class(_dt_cpu()).from_host(array))


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with any DLPack-capable array (NumPy, CuPy, PyTorch, ...).

    Args:
        ext: an object with ``__dlpack__`` and ``__dlpack_device__`` on the CPU or on
            a CUDA device (CUDA needs CuPy).

    Returns:
        A tensor on ``ext``'s device viewing its memory (no copy).

    Raises:
        RuntimeError: for another DLPack device type.

    Example:
        >>> a = np.array([1, 2, 3])
        >>> t = nnkit.from_dlpack(a)
        >>> a[0] = 7
        >>> t
        tensor([7, 2, 3])
    """
    dev_type, dev_id = ext.__dlpack_device__()
    if _int(dev_type) == 1:
        return Tensor._from_mat(get_mat_class(_dt_cpu()).from_host(np.from_dlpack(ext)))
    if _int(dev_type) == 2:
        import cupy  # optional: cupy (a CUDA tensor is only handed over where it is installed)

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
    """A tensor of shape ``size`` filled with 0.

    Args:
        size: the shape, as separate ints or one tuple/list (``zeros(2, 3)`` or
            ``zeros((2, 3))``); sizes must be non-negative ints.
        dtype: the dtype (default: the default float dtype, see :func:`set_default_dtype`).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor.

    Example:
        >>> nnkit.zeros(2, 3)
        tensor([[0.0, 0.0, 0.0],
                [0.0, 0.0, 0.0]])
        >>> nnkit.zeros((2,), dtype=nnkit.int64)
        tensor([0, 0])
    """
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.zeros(_shape(size), dt.np), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of shape ``size`` filled with 1.

    Args:
        size: the shape, as separate ints or one tuple/list (``zeros(2, 3)`` or
            ``zeros((2, 3))``); sizes must be non-negative ints.
        dtype: the dtype (default: the default float dtype, see :func:`set_default_dtype`).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor.

    Example:
        >>> nnkit.ones(2, 2, dtype=nnkit.bool)
        tensor([[True, True],
                [True, True]])
    """
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.ones(_shape(size), dt.np), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor of shape ``size``: its values are whatever the memory held.

    Args:
        size: the shape, as separate ints or one tuple/list (``zeros(2, 3)`` or
            ``zeros((2, 3))``); sizes must be non-negative ints.
        dtype: the dtype (default: the default float dtype, see :func:`set_default_dtype`).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor; write to it before reading.

    Example:
        >>> nnkit.empty(2, 3).shape
        (2, 3)
    """
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.empty(_shape(size), dt.np), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``.

    Args:
        size: the shape, an int or a tuple/list of ints.
        fill_value: the value to fill with.
        dtype: the dtype (default: from ``fill_value``: bool for a bool, int64 for an int, the
            default float dtype otherwise, as in PyTorch).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor.

    Example:
        >>> nnkit.full((2, 2), 7)
        tensor([[7, 7],
                [7, 7]])
        >>> nnkit.full(3, 0.5)
        tensor([0.5000, 0.5000, 0.5000])
    """
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
    """The values ``start, start + step, ...`` below ``end`` (``arange(n)``: ``0 .. n-1``).

    Args:
        start: the first value; with ``end`` omitted, the end (and ``start`` is 0).
        end: the bound, not included.
        step: the increment (non-zero; may be negative).
        dtype: the dtype (default: int64 when all of ``start``, ``end``, ``step`` are ints,
            the default float dtype otherwise).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A 1-d tensor of ``ceil((end - start) / step)`` values.

    Raises:
        ValueError: for ``step == 0``.

    Example:
        >>> nnkit.arange(4)
        tensor([0, 1, 2, 3])
        >>> nnkit.arange(1, 2, 0.25)
        tensor([1.0000, 1.2500, 1.5000, 1.7500])
    """
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be non-zero")
    is_int = all(isinstance(v, (_int, np.integer)) for v in (start, end, step))
    cls, dt = _cls_dt(dtype, device, _dt.int64 if is_int else None)
    return _make(cls.arange(start, end, step, dt.np), requires_grad)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included.

    Args:
        start: the first value (a number or a 0-d tensor, whose value is used).
        end: the last value (a number or a 0-d tensor).
        steps: the number of values (0 gives an empty tensor, 1 just ``start``).
        dtype: the dtype (default: the default float dtype, see :func:`set_default_dtype`).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A 1-d tensor computed in ``dtype``.

    Example:
        >>> nnkit.linspace(0, 1, 5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.linspace(start, end, steps, dt.np), requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad=False):
    """The ``n x m`` identity matrix: ones on the main diagonal, zeros elsewhere.

    Args:
        n: the number of rows.
        m: the number of columns (default ``n``).
        dtype: the dtype (default: the default float dtype, see :func:`set_default_dtype`).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new 2-d tensor.

    Example:
        >>> nnkit.eye(2, 3)
        tensor([[1.0, 0.0, 0.0],
                [0.0, 1.0, 0.0]])
    """
    cls, dt = _cls_dt(dtype, device)
    return _make(cls.eye(n, n if m is None else m, dt.np), requires_grad)


def _like(t, dtype, device):
    return (dtype if dtype is not None else t.dtype), (device if device is not None else t.device)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros of ``input``'s shape (and its dtype and device unless given).

    Args:
        input: the tensor whose shape (and defaults) to take.
        dtype: the dtype (default: ``input``'s).
        device: the device (default: ``input``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor.

    Example:
        >>> nnkit.zeros_like(nnkit.tensor([[1, 2, 3]]))
        tensor([[0, 0, 0]])
    """
    dt, dev = _like(input, dtype, device)
    return zeros(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones of ``input``'s shape (and its dtype and device unless given).

    Args:
        input: the tensor whose shape (and defaults) to take.
        dtype: the dtype (default: ``input``'s).
        device: the device (default: ``input``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor.

    Example:
        >>> nnkit.ones_like(nnkit.tensor([1, 2]), dtype=nnkit.float32)
        tensor([1.0, 1.0])
    """
    dt, dev = _like(input, dtype, device)
    return ones(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``input``'s shape filled with ``fill_value`` (and ``input``'s dtype and
    device unless given: ``full_like(int_tensor, 2.7)`` truncates to 2, as in PyTorch).

    Args:
        input: the tensor whose shape (and defaults) to take.
        fill_value: the value to fill with.
        dtype: the dtype (default: ``input``'s).
        device: the device (default: ``input``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor.

    Example:
        >>> nnkit.full_like(nnkit.zeros(2, 2), 3.5)
        tensor([[3.5000, 3.5000],
                [3.5000, 3.5000]])
    """
    dt, dev = _like(input, dtype, device)
    return full(input.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor of ``input``'s shape (and its dtype and device unless given).

    Args:
        input: the tensor whose shape (and defaults) to take.
        dtype: the dtype (default: ``input``'s).
        device: the device (default: ``input``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor; write to it before reading.

    Example:
        >>> nnkit.empty_like(nnkit.zeros(2, 3, dtype=nnkit.int32)).dtype
        nnkit.int32
    """
    dt, dev = _like(input, dtype, device)
    return empty(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


_ = TensorImpl
