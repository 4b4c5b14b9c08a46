"""The ONNX graph being built while a model is traced: value names, nodes, initializers.

Every traced Tensor is known by the identity of its Mat (the tensors are kept alive for
the whole trace, so an identity is never reused). A Tensor the trace has not produced
(a parameter, a buffer, a constant made inside ``forward``) becomes an initializer the
first time an op uses it; ops whose inputs are all such constants are not recorded at
all (their result is a constant too), which folds ``weight.T``, ``b_ih + b_hh``, ...
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.tensor import Tensor

__all__ = ["Graph", "UnsupportedOpError", "to_numpy"]


class UnsupportedOpError(RuntimeError):
    """An op (or layer) the traced model ran has no ONNX mapping."""


def to_numpy(obj) -> np.ndarray:
    """A host NumPy array from a Tensor, a Mat or an array-like."""
    if isinstance(obj, Tensor):
        obj = obj._impl.data
    arr = getattr(obj, "array", obj)
    if hasattr(arr, "get"):  # CuPy
        arr = arr.get()
    return np.asarray(arr)


class Graph:
    """Nodes, initializers and the names of traced values (with their batch axis)."""

    def __init__(self, helper, numpy_helper, opset: int) -> None:
        self.helper = helper
        self.opset = opset
        self.numpy_helper = numpy_helper
        self.nodes: list = []
        self.initializers: list = []
        self._names: dict = {}  # id(Mat) -> value name
        self._keep: list = []  # traced/constant tensors, kept alive for their ids
        self.axis: dict = {}  # value name -> batch axis (or None)
        self.dtype: dict = {}  # value name -> numpy dtype
        self._count = 0

    # ---- names
    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def known(self, obj) -> bool:
        return isinstance(obj, Tensor) and id(obj._impl.data) in self._names

    def name(self, obj, dtype=None) -> str:
        """The value name of a Tensor (an initializer when untraced) or of a scalar."""
        if isinstance(obj, Tensor):
            key = id(obj._impl.data)
            found = self._names.get(key)
            if found is not None:
                return found
            name = self.const(to_numpy(obj), "const")
            self._names[key] = name
            self._keep.append(obj)
            return name
        return self.const(np.asarray(obj, dtype=dtype), "scalar")

    def axis_of(self, obj):
        return self.axis.get(self.name(obj)) if self.known(obj) else None

    def bind(self, tensor, name: str, axis=None) -> None:
        """Record that ``tensor`` is the value ``name`` (batch axis ``axis``)."""
        self._names[id(tensor._impl.data)] = name
        self._keep.append(tensor)
        self.axis[name] = axis
        self.dtype[name] = to_numpy_dtype(tensor)

    # ---- graph parts
    def const(self, array, hint: str = "const") -> str:
        name = self.fresh(hint)
        array = np.array(array, order="C")
        self.initializers.append(self.numpy_helper.from_array(array, name))
        self.dtype[name] = array.dtype
        return name

    def ints(self, values, hint: str = "shape") -> str:
        return self.const(np.asarray(list(values), dtype=np.int64), hint)

    def node(self, op_type: str, inputs, n_out: int = 1, **attrs):
        """Add a node; returns its output name (a list of names when ``n_out > 1``)."""
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(
            self.helper.make_node(op_type, list(inputs), outs, name=self.fresh(op_type), **attrs)
        )
        return outs[0] if n_out == 1 else outs


def to_numpy_dtype(tensor) -> np.dtype:
    return np.dtype(tensor.dtype.np) if hasattr(tensor.dtype, "np") else to_numpy(tensor).dtype
