"""``Placement``: moving and casting a module's parameters and buffers (``to``,
``cpu``, ``cuda``, ``float``, ``double``, ``half``), PyTorch's semantics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.backends.device import Device
from nnkit.backends.dtypes import DType, float16, float32, float64, to_dtype

__all__ = ["Placement"]


class Placement:
    """Mixin of :class:`~nnkit.layers.Module`: device and dtype changes, in place."""

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Any:
        """Replace every parameter's and buffer's data by ``fn(data)``, keeping identity."""
        modules = self.modules() if recurse else [self]
        for module in modules:
            for p in module._parameters.values():
                if p is None:
                    continue
                p.data = fn(p.detach())
                if p.grad is not None:
                    grad = p.grad
                    grad.data = fn(grad.detach())
            for name, b in module._buffers.items():
                if b is not None:
                    module._buffers[name] = fn(b)
        return self

    def to(self, *args, device=None, dtype=None) -> Any:
        """Move and/or cast the parameters and buffers in place; returns self.

        Accepts ``to('cuda')``, ``to(nnkit.float64)``, ``to(device, dtype)``,
        ``to(tensor)`` or keywords. Only floating tensors change dtype. Parameters keep
        their identity (their ``.data`` is swapped), so an optimizer made before the move
        keeps working.

        Args:
            *args: a device (``'cuda'``, a :class:`~nnkit.Device`), a floating dtype, both, or a
                Tensor whose device and dtype are taken.
            device: the target device (keyword form).
            dtype: the target floating dtype (keyword form).

        Returns:
            ``self``.
        """
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, DType):
                dtype = a
            elif isinstance(a, (str, Device)):
                device = a
            else:
                raise TypeError(
                    f"to() received an invalid argument {a!r}: expected a device, "
                    "a dtype or a Tensor"
                )
        dtype = to_dtype(dtype) if dtype is not None else None
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, got {dtype}")

        def convert(t: Tensor) -> Tensor:
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)

        # Remembered for lazy layers not built yet: fit() sends batches here, and the
        # layers build on their first input's device and dtype.
        old_device, old_dtype = self.__dict__.get("_placement", (None, None))
        self.__dict__["_placement"] = (device or old_device, dtype or old_dtype)
        return self._apply(convert)

    def cpu(self) -> Any:
        """Move every parameter and buffer to the CPU.

        Returns:
            ``self``.
        """
        return self.to("cpu")

    def cuda(self, device=None) -> Any:
        """Move every parameter and buffer to a CUDA device (default ``cuda:0``).

        Args:
            device: the CUDA device (None: ``'cuda'``, device 0).

        Returns:
            ``self``.
        """
        return self.to(device if device is not None else "cuda")

    def float(self) -> Any:
        """Cast floating parameters and buffers to float32.

        Returns:
            ``self``.
        """
        return self.to(float32)

    def double(self) -> Any:
        """Cast floating parameters and buffers to float64.

        Returns:
            ``self``.
        """
        return self.to(float64)

    def half(self) -> Any:
        """Cast floating parameters and buffers to float16.

        Returns:
            ``self``.
        """
        return self.to(float16)
