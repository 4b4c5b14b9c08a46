"""Conversions between devices and dtypes (``to``, ``cpu``, ``float``, ``type_as``, ...)
and the ``new_*`` factories that take their dtype and device from a tensor.

All of these are Tensor methods as well (``x.to('cuda')``, ``x.new_zeros(3)``); the
conversions are differentiable and return the input itself when nothing changes.
"""

from __future__ import annotations

from nnkit.autograd.factories import _like, full, ones, tensor, zeros
from nnkit.autograd.function import Op
from nnkit.autograd.ops.shape import cast, clone
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.backends.device import device as _device

__all__ = [
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


class ToDevice(Op):
    @staticmethod
    def forward(ctx, x, device):
        ctx.src = x.device
        return x.to_device(device)

    @staticmethod
    def backward(ctx, grad_output):
        return to(grad_output, ctx.src), None


def _memory_format(fmt, op):
    if fmt not in (None, "preserve_format", "contiguous_format"):
        raise NotImplementedError(
            f"{op}: memory_format={fmt!r} is not supported (nnkit tensors are contiguous; "
            "use 'contiguous_format' or 'preserve_format')"
        )


def to(
    x,
    *args,
    dtype=None,
    device=None,
    copy: bool = False,
    non_blocking: bool = False,
    memory_format=None,
):
    """``x`` on another device and/or dtype; ``x`` itself when nothing changes.

    The positional arguments are read as in PyTorch: a device (``'cpu'``, ``'cuda'``,
    ``'cuda:1'`` or a :class:`Device`), a dtype, or a tensor (take its device and dtype),
    so ``x.to('cuda')``, ``x.to(nnkit.float64)`` and ``x.to(other)`` all work.

    Args:
        x: the input tensor.
        *args: a device, a dtype and/or a tensor, as above, then optionally
            ``non_blocking`` and ``copy`` as positional booleans (PyTorch's order).
        dtype: the target dtype (keyword form).
        device: the target device (keyword form).
        copy: return a new tensor even when nothing changes.
        non_blocking: accepted for PyTorch's signature; copies are synchronous.
        memory_format: None, ``"preserve_format"`` or ``"contiguous_format"`` (the same
            for nnkit, whose results are contiguous); other layouts are refused.

    Returns:
        The converted tensor (differentiable).

    Gradient: the incoming gradient moved back to ``x``'s device and cast to its dtype.

    Example:
        >>> x = nnkit.tensor([1.5, -2.0])
        >>> x.to(nnkit.int64)
        tensor([ 1, -2])
        >>> x.to("cpu") is x, x.to("cpu", copy=True) is x
        (True, False)
    """
    _memory_format(memory_format, "to")
    flags = [a for a in args if a is True or a is False]  # torch: (non_blocking, copy)
    if len(flags) > 1:
        copy = flags[1]
    args = [a for a in args if not (a is True or a is False)]
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
    """``x`` on the CPU (``x.to('cpu')``); ``x`` itself if it is there already.

    Args:
        x: the input tensor.

    Returns:
        A CPU tensor (differentiable: the gradient goes back to ``x``'s device).

    Example:
        >>> x = nnkit.tensor([1.0])
        >>> x.cpu() is x
        True
    """
    return to(x, "cpu")


def cuda(x, device=None) -> Tensor:
    """``x`` on a CUDA device (``x.to('cuda')``); ``x`` itself if it is there already.

    Args:
        x: the input tensor.
        device: the target CUDA device (default ``'cuda'``, i.e. ``cuda:0``), as a string,
            an int-indexed name like ``'cuda:1'`` or a :class:`Device`.

    Returns:
        A CUDA tensor (differentiable: the gradient goes back to ``x``'s device).

    Raises:
        RuntimeError: when CuPy or a CUDA device is not available.

    Example:
        >>> y = nnkit.tensor([1.0]).cuda()  # doctest: +SKIP
    """
    return to(x, device if device is not None else "cuda")


def float(x, memory_format=None) -> Tensor:
    """``x`` converted to float32 (``x.to(nnkit.float32)``); ``x`` itself if it already is.

    As in PyTorch, ``float`` means 32-bit.

    Args:
        x: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        A float32 tensor on ``x``'s device.

    Gradient: cast back to ``x``'s dtype (none flows to integer or bool inputs).

    Example:
        >>> nnkit.tensor([1, 2]).float()
        tensor([1.0, 2.0])
    """
    return to(x, _dt.float32, memory_format=memory_format)


def double(x, memory_format=None) -> Tensor:
    """``x`` converted to float64 (``x.to(nnkit.float64)``); ``x`` itself if it already is.

    As in PyTorch, ``double`` means 64-bit float.

    Args:
        x: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        A float64 tensor on ``x``'s device.

    Gradient: cast back to ``x``'s dtype (none flows to integer or bool inputs).

    Example:
        >>> nnkit.tensor([1.5]).double()
        tensor([1.5000], dtype=nnkit.float64)
    """
    return to(x, _dt.float64, memory_format=memory_format)


def half(x, memory_format=None) -> Tensor:
    """``x`` converted to float16 (``x.to(nnkit.float16)``); ``x`` itself if it already is.

    Values outside float16's range (about 65504) become ``inf``.

    Args:
        x: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        A float16 tensor on ``x``'s device.

    Gradient: cast back to ``x``'s dtype (none flows to integer or bool inputs).

    Example:
        >>> nnkit.tensor([1.7, -0.1]).half()
        tensor([ 1.7002, -0.1000], dtype=nnkit.float16)
    """
    return to(x, _dt.float16, memory_format=memory_format)


def long(x, memory_format=None) -> Tensor:
    """``x`` converted to int64 (``x.to(nnkit.int64)``); ``x`` itself if it already is.

    Floats are truncated toward zero, as in PyTorch.

    Args:
        x: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        A int64 tensor on ``x``'s device.

    Gradient: cast back to ``x``'s dtype (none flows to integer or bool inputs).

    Example:
        >>> nnkit.tensor([1.7, -2.5]).long()
        tensor([ 1, -2])
    """
    return to(x, _dt.int64, memory_format=memory_format)


def byte(input, memory_format=None):
    """``input`` converted to uint8 (``input.to(nnkit.uint8)``); ``input`` itself if it
    already is. Floats are truncated toward zero; out-of-range values wrap, as torch.

    Args:
        input: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        A uint8 tensor on ``input``'s device (no gradient flows to integer results).

    Example:
        >>> nnkit.tensor([1.7, 200.0]).byte()
        tensor([  1, 200], dtype=nnkit.uint8)
    """
    return to(input, _dt.uint8, memory_format=memory_format)


def char(input, memory_format=None):
    """``input`` converted to int8 (``input.to(nnkit.int8)``); ``input`` itself if it
    already is. Floats are truncated toward zero, as torch.

    Args:
        input: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        An int8 tensor on ``input``'s device.

    Example:
        >>> nnkit.tensor([1.7, -2.5]).char()
        tensor([ 1, -2], dtype=nnkit.int8)
    """
    return to(input, _dt.int8, memory_format=memory_format)


def short(input, memory_format=None):
    """``input`` converted to int16 (``input.to(nnkit.int16)``); ``input`` itself if it
    already is. Floats are truncated toward zero, as torch.

    Args:
        input: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        An int16 tensor on ``input``'s device.

    Example:
        >>> nnkit.tensor([1.7, -2.5]).short()
        tensor([ 1, -2], dtype=nnkit.int16)
    """
    return to(input, _dt.int16, memory_format=memory_format)


def int(x, memory_format=None) -> Tensor:
    """``x`` converted to int32 (``x.to(nnkit.int32)``); ``x`` itself if it already is.

    Floats are truncated toward zero, as in PyTorch.

    Args:
        x: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        A int32 tensor on ``x``'s device.

    Gradient: cast back to ``x``'s dtype (none flows to integer or bool inputs).

    Example:
        >>> nnkit.tensor([1.7, -2.5]).int()
        tensor([ 1, -2], dtype=nnkit.int32)
    """
    return to(x, _dt.int32, memory_format=memory_format)


def bool(x, memory_format=None) -> Tensor:
    """``x`` converted to bool (``x.to(nnkit.bool)``); ``x`` itself if it already is.

    Non-zero values (NaN included) become True.

    Args:
        x: the input tensor.
        memory_format: as in :func:`to`.

    Returns:
        A bool tensor on ``x``'s device.

    Gradient: cast back to ``x``'s dtype (none flows to integer or bool inputs).

    Example:
        >>> nnkit.tensor([0.0, -0.5, 2.0]).bool()
        tensor([False,  True,  True])
    """
    return to(x, _dt.bool_, memory_format=memory_format)


def type_as(x, other) -> Tensor:
    """``x`` with ``other``'s dtype and on ``other``'s device (``x.to(other)``).

    PyTorch's ``type_as`` names a type that includes the device (``torch.cuda.FloatTensor``),
    so it moves ``x`` too; nnkit does the same.

    Args:
        x: the input tensor.
        other: the tensor whose dtype and device to take.

    Returns:
        The converted tensor, or ``x`` itself if nothing changes.

    Example:
        >>> nnkit.tensor([1, 2]).type_as(nnkit.tensor([0.5]))
        tensor([1.0, 2.0])
    """
    return to(x, device=other.device, dtype=other.dtype)


def new_zeros(x, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros of shape ``size`` with ``x``'s dtype and device (unless given).

    Args:
        x: the tensor whose dtype and device to take.
        size: the shape, as separate ints or one tuple/list.
        dtype: the dtype (default: ``x``'s).
        device: the device (default: ``x``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor (``x``'s values are not used).

    Example:
        >>> nnkit.tensor([1, 2]).new_zeros(2, 3)
        tensor([[0, 0, 0],
                [0, 0, 0]])
    """
    dt, dev = _like(x, dtype, device)
    return zeros(*size, dtype=dt, device=dev, requires_grad=requires_grad)


def new_ones(x, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones of shape ``size`` with ``x``'s dtype and device (unless given).

    Args:
        x: the tensor whose dtype and device to take.
        size: the shape, as separate ints or one tuple/list.
        dtype: the dtype (default: ``x``'s).
        device: the device (default: ``x``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor (``x``'s values are not used).

    Example:
        >>> nnkit.tensor([0.5]).new_ones((2,), dtype=nnkit.int64)
        tensor([1, 1])
    """
    dt, dev = _like(x, dtype, device)
    return ones(*size, dtype=dt, device=dev, requires_grad=requires_grad)


def new_full(x, size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value``, with ``x``'s dtype and device
    (unless given): a float ``fill_value`` is truncated for an integer ``x``, as in PyTorch.

    Args:
        x: the tensor whose dtype and device to take.
        size: the shape, an int or a tuple/list of ints.
        fill_value: the value to fill with.
        dtype: the dtype (default: ``x``'s).
        device: the device (default: ``x``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor.

    Example:
        >>> nnkit.tensor([1.0]).new_full((2, 2), 3)
        tensor([[3.0, 3.0],
                [3.0, 3.0]])
    """
    dt, dev = _like(x, dtype, device)
    return full(size, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def new_tensor(x, data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data``, with ``x``'s dtype and device (unless given).

    Unlike :func:`tensor` the dtype is not inferred from ``data``: ``x``'s wins, as in
    PyTorch.

    Args:
        x: the tensor whose dtype and device to take.
        data: numbers, nested lists, arrays or tensors.
        dtype: the dtype (default: ``x``'s).
        device: the device (default: ``x``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor (never sharing memory with ``data``).

    Example:
        >>> nnkit.tensor([1, 2]).new_tensor([1.5, 2.5])
        tensor([1, 2])
    """
    dt, dev = _like(x, dtype, device)
    return tensor(data, dtype=dt, device=dev, requires_grad=requires_grad)
