"""Symbolic tensors for the functional API: ``KerasTensor`` and the graph ``Node``.

``nnkit.Input(shape)`` returns a :class:`KerasTensor`: a shape (``None`` for the batch
and any other unknown dimension), a dtype and a name, but no data. Calling any
:class:`~nnkit.layers.Module` on KerasTensors (``Module.__call__`` sends such calls to
:func:`symbolic_call`) records a :class:`Node` (the layer, its arguments, its output
KerasTensors) in the layer's ``_inbound_nodes`` and returns new KerasTensors whose
shapes are inferred by running the layer on a small batch of zeros: in eval mode,
under ``no_grad``, with every module's training flag and buffers (BatchNorm's running
statistics) restored afterwards, and nnkit's random state restored too unless the call
built the layer's weights (their initialisation draws, as Keras's build does).
Unknown dimensions are probed with two sizes; a dimension that differs between the two
runs is ``None``.

Each output KerasTensor remembers where it came from (``_keras_history``: the layer, the
index of the node in the layer's ``_inbound_nodes``, and its index among the node's
outputs), which is what ``nnkit.Model(inputs, outputs)`` walks to build its graph and
what ``summary()`` prints as ``dense[0][0]``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from nnkit.autograd.factories import zeros
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import get_default_dtype, to_dtype
from nnkit.layers import naming, tensor_ops
from nnkit.layers.nest import flatten, map_structure, pack_as
from nnkit.random import get_rng_state, set_rng_state

__all__ = [
    "KerasTensor",
    "KerasHistory",
    "Node",
    "symbolic_call",
    "is_symbolic_call",
    "flatten",
    "map_structure",
    "pack_as",
]

# Sizes that stand in for unknown dimensions in the two shape-inference runs: the batch
# dimension, then every other ``None``.
_PROBE_BATCH = (1, 2)
_PROBE_FREE = (16, 24)


class KerasHistory(NamedTuple):
    """Where a KerasTensor comes from: ``operation._inbound_nodes[node_index]``'s output
    number ``tensor_index``."""

    operation: Any
    node_index: int
    tensor_index: int


# ------------------------------------------------------------- KerasTensor
class KerasTensor:
    """A symbolic tensor: a shape, a dtype and a name, and the layer call it came from.

    Returned by :func:`nnkit.Input` and by calling a layer on KerasTensors. Supports
    ``+ - * / ** @``, unary ``-``, indexing and ``.reshape`` (each recorded as a small
    layer, as Keras records its ops).

    Attributes:
        shape: a tuple; ``None`` for unknown dimensions (the batch dimension first).
        dtype: an nnkit dtype.
        name: a name (an Input's is its layer's).

    Args:
        shape: the shape; None for unknown dimensions.
        dtype: the dtype (None: the default float dtype).
        name: the tensor's name (None: a new ``keras_tensor``, ``keras_tensor_1``, ...).
        history: the ``(layer, node index, tensor index)`` that produced it; None for a
            tensor not yet produced by a layer call.
    """

    def __init__(
        self,
        shape: tuple,
        dtype: Any = None,
        name: str | None = None,
        history: KerasHistory | None = None,
    ) -> None:
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = get_default_dtype() if dtype is None else to_dtype(dtype)
        self.name = naming.auto_name("keras_tensor") if name is None else name
        self._keras_history = history

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def __bool__(self) -> bool:
        raise TypeError(
            "A symbolic KerasTensor has no value: it cannot be used as a Python "
            "bool (use it as a layer input and run the model on real data)"
        )

    def __array__(self, *args, **kwargs):
        raise TypeError(
            f"A symbolic KerasTensor ({self.name}) has no value and cannot be "
            "converted to a NumPy array: nnkit ops on KerasTensors are limited "
            "to layers and the operators + - * / ** @, indexing and reshape"
        )

    def __len__(self) -> int:
        if not self.shape or self.shape[0] is None:
            raise TypeError(f"len() of a KerasTensor of shape {self.shape} is unknown")
        return self.shape[0]

    @staticmethod
    def _record_call(layer: Any, args: tuple, kwargs: dict) -> Any:
        """:func:`symbolic_call`: how ``Module.__call__`` records a call on KerasTensors
        (it recognises them by this method, so the Module base class need not import this
        module, whose operator layers are Modules)."""
        return symbolic_call(layer, args, kwargs)

    # operators: each becomes a small layer (nnkit.layers.tensor_ops)
    def _binary(self, op: str, other: Any, reverse: bool = False) -> Any:
        """Apply the operator layer ``op`` to this and ``other`` (a KerasTensor or a
        constant); ``reverse``: ``other`` is the left operand."""
        cls = tensor_ops.BINARY[op]
        if isinstance(other, KerasTensor):
            return cls()(other, self) if reverse else cls()(self, other)
        if isinstance(other, Tensor):
            raise TypeError(
                f"{op}: combine a KerasTensor with a constant number, or with another "
                "KerasTensor (an nnkit Tensor constant cannot be recorded in a "
                "functional model's graph)"
            )
        return cls(constant=other, reverse=reverse)(self)

    def __add__(self, other):
        return self._binary("add", other)

    def __radd__(self, other):
        return self._binary("add", other, True)

    def __sub__(self, other):
        return self._binary("subtract", other)

    def __rsub__(self, other):
        return self._binary("subtract", other, True)

    def __mul__(self, other):
        return self._binary("multiply", other)

    def __rmul__(self, other):
        return self._binary("multiply", other, True)

    def __truediv__(self, other):
        return self._binary("true_divide", other)

    def __rtruediv__(self, other):
        return self._binary("true_divide", other, True)

    def __pow__(self, other):
        return self._binary("power", other)

    def __rpow__(self, other):
        return self._binary("power", other, True)

    def __matmul__(self, other):
        return self._binary("matmul", other)

    def __rmatmul__(self, other):
        return self._binary("matmul", other, True)

    def __neg__(self):
        return tensor_ops.Negative()(self)

    def __getitem__(self, key):
        return tensor_ops.GetItem(key)(self)

    def reshape(self, *shape):
        """``x.reshape(shape)`` with PyTorch's semantics (the whole shape, batch
        included; ``-1`` is inferred), recorded as a layer.

        Args:
            *shape: the new shape, as ints or one tuple.

        Returns:
            The reshaped KerasTensor.
        """
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return tensor_ops.Reshape(shape)(self)


# -------------------------------------------------------------------- Node
class _NodeList(list):
    """A layer's ``_inbound_nodes``: not copied by ``copy.deepcopy`` (a functional model
    keeps its own nodes; copying the graph through every layer would recurse deeply)."""

    def __deepcopy__(self, memo: dict) -> _NodeList:
        return _NodeList()


def inbound_nodes(layer: Any) -> list:
    """The layer's list of nodes (one per call on KerasTensors), created on first use."""
    nodes = layer.__dict__.get("_inbound_nodes")
    if nodes is None:
        nodes = layer.__dict__["_inbound_nodes"] = _NodeList()
    return nodes


class Node:
    """One call of a layer on KerasTensors.

    Attributes:
        operation: the layer called.
        index: the node's position in the layer's ``_inbound_nodes``.
        args, kwargs: the call's arguments, KerasTensors in place of tensors.
        input_tensors: the KerasTensors among them, in order.
        outputs: the returned structure of KerasTensors.
        output_tensors: its KerasTensors, flat.

    Args:
        operation: the layer called.
        args: the call's positional arguments, KerasTensors in place of tensors.
        kwargs: its keyword arguments.
        outputs: the structure of KerasTensors it returned.
    """

    def __init__(self, operation: Any, args: tuple, kwargs: dict, outputs: Any) -> None:
        self.operation = operation
        self.args, self.kwargs = args, kwargs
        self.input_tensors = [t for t in flatten((args, kwargs)) if isinstance(t, KerasTensor)]
        self.outputs = outputs
        self.output_tensors = [t for t in flatten(outputs) if isinstance(t, KerasTensor)]
        nodes = inbound_nodes(operation)
        self.index = len(nodes)
        nodes.append(self)

    @property
    def is_input(self) -> bool:
        """Whether this is an Input's node (no inputs of its own)."""
        return not self.input_tensors

    @property
    def parent_nodes(self) -> list[Node]:
        """The nodes that produced this node's inputs."""
        parents = []
        for t in self.input_tensors:
            history = t._keras_history
            if history is not None:
                parents.append(inbound_nodes(history.operation)[history.node_index])
        return parents

    def fill_in(self, values: dict) -> tuple[tuple, dict]:
        """The call's arguments with each KerasTensor replaced by ``values[id(tensor)]``.

        Args:
            values: ``{id(keras_tensor): value}`` for every input KerasTensor.

        Returns:
            ``(args, kwargs)`` ready for the layer call.
        """

        def fill(leaf):
            return values[id(leaf)] if isinstance(leaf, KerasTensor) else leaf

        return map_structure(fill, self.args), map_structure(fill, self.kwargs)

    def __repr__(self) -> str:
        name = getattr(self.operation, "name", type(self.operation).__name__)
        return f"<Node {name}[{self.index}]>"


# ------------------------------------------------------------ symbolic calls
def is_symbolic_call(args: tuple, kwargs: dict) -> bool:
    """Whether a layer call has a KerasTensor among its arguments (nested in lists,
    tuples or dicts).

    Args:
        args: a call's positional arguments.
        kwargs: its keyword arguments.

    Returns:
        True if a KerasTensor is among them.
    """
    return any(isinstance(leaf, KerasTensor) for leaf in flatten((args, kwargs)))


def symbolic_call(layer: Any, args: tuple, kwargs: dict) -> Any:
    """Record ``layer(*args, **kwargs)`` on KerasTensors; return the output KerasTensors.

    Args:
        layer: the layer called.
        args: the call's positional arguments.
        kwargs: its keyword arguments.

    Returns:
        The output structure of KerasTensors (shapes found by probing the layer).

    Raises:
        ValueError: naming the layer and the input shapes, if running the layer on a
            batch of zeros of those shapes fails.
    """
    inputs = [t for t in flatten((args, kwargs)) if isinstance(t, KerasTensor)]
    first = _probe(layer, args, kwargs, 0)
    specs = map_structure(_spec, first)
    if any(d is None for t in inputs for d in t.shape):
        second = map_structure(_spec, _probe(layer, args, kwargs, 1))
        specs = _merge_specs(specs, second, layer)
    outputs = map_structure(
        lambda spec: KerasTensor(spec.shape, spec.dtype) if isinstance(spec, _Spec) else spec, specs
    )
    node = Node(layer, args, kwargs, outputs)
    # tensor_index counts KerasTensors in flatten order (a constant leaf takes none)
    for i, t in enumerate(node.output_tensors):
        t._keras_history = KerasHistory(layer, node.index, i)
    return outputs


class _Spec:
    """A leaf (not a structure, unlike a named tuple): an output's shape and dtype."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype


def _spec(value: Any) -> Any:
    return _Spec(tuple(value.shape), value.dtype) if isinstance(value, Tensor) else value


def _merge_specs(a: Any, b: Any, layer: Any) -> Any:
    flat_a, flat_b = flatten(a), flatten(b)
    if len(flat_a) != len(flat_b):
        raise ValueError(
            f"{_describe(layer)} returns outputs of a different structure for "
            "different input sizes; its output shapes cannot be inferred"
        )
    merged = []
    for x, y in zip(flat_a, flat_b):
        if isinstance(x, _Spec) and isinstance(y, _Spec) and len(x.shape) == len(y.shape):
            x = _Spec(tuple(d if d == e else None for d, e in zip(x.shape, y.shape)), x.dtype)
        elif isinstance(x, _Spec) or isinstance(y, _Spec):
            raise ValueError(
                f"{_describe(layer)} returns outputs of different ranks for "
                "different input sizes; its output shapes cannot be inferred"
            )
        merged.append(x)
    return pack_as(a, merged)


def _describe(layer: Any) -> str:
    return f"Layer '{getattr(layer, 'name', '?')}' ({type(layer).__name__})"


def _placement(layer: Any) -> Any:
    """The device of the layer's weights (or where ``Module.to`` asked for them)."""
    for store in ("_parameters", "_buffers"):
        for _, tensor in layer._named_members(store, "", True):
            return tensor.device
    return layer.__dict__.get("_placement", (None, None))[0]


def _probe(layer: Any, args: tuple, kwargs: dict, run: int) -> Any:
    """The layer's output on zeros shaped like the KerasTensors in ``args``/``kwargs``."""
    device = _placement(layer)

    def zeros_like_spec(leaf):
        if not isinstance(leaf, KerasTensor):
            return leaf
        shape = tuple(
            (_PROBE_BATCH if i == 0 else _PROBE_FREE)[run] if d is None else d
            for i, d in enumerate(leaf.shape)
        )
        return zeros(shape, dtype=leaf.dtype, device=device)

    real_args = map_structure(zeros_like_spec, args)
    real_kwargs = map_structure(zeros_like_spec, kwargs)
    modules = list(layer.modules())
    building = not all(m.built for m in modules)
    rng = get_rng_state()
    modes = [(m, m.training) for m in modules]
    saved = [
        (m, name, buf, buf.detach().clone())
        for m in modules
        for name, buf in m._buffers.items()
        if buf is not None
    ]
    try:
        for m in modules:
            m.__dict__["training"] = False
        with no_grad():
            return layer(*real_args, **real_kwargs)
    except Exception as exc:
        shapes = [t.shape for t in flatten((args, kwargs)) if isinstance(t, KerasTensor)]
        raise ValueError(
            f"{_describe(layer)} cannot be called on inputs of shapes "
            f"{', '.join(map(str, shapes))}: running it on a batch of zeros "
            f"of those shapes raised {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        for m, mode in modes:
            m.__dict__["training"] = mode
        with no_grad():
            for m, name, buf, copy in saved:
                m._buffers[name] = buf
                buf.copy_(copy)
        if not building:  # a build's initialisation draws stay drawn, as in Keras
            set_rng_state(rng)
