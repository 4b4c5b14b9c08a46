"""Functional models: ``nnkit.Model(inputs, outputs)`` over a graph of layer calls.

``nnkit.Model(inputs, outputs, name=None)`` returns a :class:`Functional` (as Keras 3's
``keras.Model(inputs, outputs)`` does): the graph recorded by calling layers on the
symbolic tensors of :func:`nnkit.Input` (see :mod:`nnkit.layers.symbolic`), walked back
from ``outputs`` to ``inputs``. The walk and the layer order are Keras's
(``keras/src/ops/function.py``'s ``map_graph``): nodes are sorted by depth, layers by
depth and then by the order a depth-first walk from the outputs first meets them, so
``model.layers`` lists the Input layers first and then the layers in topological order.

Every layer is a child module under its (unique) name, so ``state_dict`` keys read
``dense.weight``, ``dense_1.bias``, ``inner_model.dense_2.weight``; a layer called
several times (shared) is one child, its weights counted and trained once.
"""

from __future__ import annotations

import collections
from typing import Any

from nnkit.autograd.factories import as_tensor
from nnkit.autograd.tensor import Tensor
from nnkit.layers.input_layer import InputLayer
from nnkit.layers.symbolic import (
    KerasTensor,
    Node,
    flatten,
    inbound_nodes,
    map_structure,
    pack_as,
)
from nnkit.models.model import Model

__all__ = ["Functional", "map_graph"]


def _node_of(tensor: KerasTensor) -> Node:
    history = tensor._keras_history
    return inbound_nodes(history.operation)[history.node_index]


def _build_map(inputs: list, outputs: list) -> tuple[list[Node], dict]:
    """Nodes from the inputs to the outputs (depth-first post-order, as Keras's
    ``_build_map``) and each layer's first-visit index; iterative, so a deep graph does
    not hit the recursion limit."""
    finished: set = set()
    in_progress: set = set()
    ordered: list[Node] = []
    layer_index: dict = {}
    input_ids = {id(t) for t in inputs}
    for output in outputs:
        stack: list[tuple[Any, bool]] = [(output, False)]
        while stack:
            item, expanded = stack.pop()
            if expanded:  # every parent is done: the node comes after them
                node = item
                in_progress.discard(node)
                finished.add(node)
                ordered.append(node)
                continue
            tensor = item
            if tensor._keras_history is None:
                raise ValueError(f"{tensor!r} does not come from nnkit.Input or a layer call")
            node = _node_of(tensor)
            if node in finished:
                continue
            if not node.is_input and id(tensor) in input_ids:
                finished.add(node)  # an intermediate tensor given as an input: stop here
                continue
            if node in in_progress:
                raise ValueError(
                    f"Tensor {tensor!r} from layer '{node.operation.name}' is part of a cycle."
                )
            layer_index.setdefault(node.operation, len(layer_index))
            in_progress.add(node)
            stack.append((node, True))
            stack.extend((t, False) for t in reversed(node.input_tensors))
    return ordered, layer_index


def map_graph(inputs: list, outputs: list) -> tuple[dict, list]:
    """Keras's ``map_graph``: ``(nodes_by_depth, layers)``.

    Args:
        inputs: the model's input KerasTensors.
        outputs: its output KerasTensors.

    Returns:
        ``(nodes_by_depth, layers)``: the nodes grouped by their depth from the outputs
            (0: the output nodes), and the layers in topological order.

    Raises:
        ValueError: for a graph that does not connect ``outputs`` to ``inputs``, or two
            layers of one name.
    """
    ordered, layer_index = _build_map(inputs, outputs)
    in_graph = set(ordered)
    node_depth: dict = {}
    layer_depth: dict = {}
    for node in reversed(ordered):
        depth = node_depth.setdefault(node, 0)
        depth = max(depth, layer_depth.get(node.operation, 0))
        layer_depth[node.operation] = depth
        node_depth[node] = depth
        for parent in node.parent_nodes:
            if parent in in_graph:
                node_depth[parent] = max(depth + 1, node_depth.get(parent, 0))
    for tensor in inputs:  # Inputs not connected to the outputs still belong to the model
        node = _node_of(tensor)
        if node.operation not in layer_depth and node.is_input:
            layer_depth[node.operation] = 0
            layer_index[node.operation] = -1
            node_depth[node] = 0
    nodes_by_depth: dict = collections.defaultdict(list)
    for node, depth in node_depth.items():
        nodes_by_depth[depth].append(node)
    layers_by_depth: dict = collections.defaultdict(list)
    for layer, depth in layer_depth.items():
        layers_by_depth[depth].append(layer)
    layers = []
    for depth in sorted(layers_by_depth, reverse=True):
        layers.extend(sorted(layers_by_depth[depth], key=lambda op: layer_index[op]))
    computable = {id(t) for t in inputs}
    seen = []
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            if node.is_input and not any(id(t) in computable for t in node.output_tensors):
                raise ValueError(
                    f"Graph disconnected: the outputs need the input "
                    f"'{node.operation.name}', which is not among the model's "
                    f"inputs ({[t.name for t in inputs]})"
                )
            for t in node.input_tensors:
                if id(t) not in computable:
                    raise ValueError(
                        f"Graph disconnected: cannot find parent for tensor {t!r} "
                        f"at layer '{node.operation.name}'. The following "
                        f"previous layers were accessed without issue: {seen}"
                    )
            seen.append(node.operation.name)
            computable.update(id(t) for t in node.output_tensors)
    names = [layer.name for layer in layers]
    for name in names:
        if names.count(name) != 1:
            raise ValueError(
                f'The name "{name}" is used {names.count(name)} times in the '
                "model. All layer names should be unique."
            )
    return dict(nodes_by_depth), layers


class Functional(Model, graph_model=True):
    """A model defined by the graph from ``inputs`` to ``outputs`` (Keras's functional API).

    Created by ``nnkit.Model(inputs, outputs, name=None)``. Calling it on Tensors runs
    the layers in topological order; calling it on symbolic tensors nests it in another
    functional model. ``compile``/``fit``/``evaluate``/``predict``/``summary`` work as
    for every Model; several inputs arrive as ``model([x1, x2])`` or ``model(x1, x2)``
    (or a dict by input name), several outputs are returned in the structure given.

    Args:
        inputs: a KerasTensor from :func:`nnkit.Input`, or a list/tuple/dict of them.
        outputs: a KerasTensor computed from ``inputs``, or a list/tuple/dict of them.
        name: the model's name (default ``functional``, ``functional_1``, ...).

    Raises:
        ValueError: for inputs/outputs that are not KerasTensors, outputs not computed
            from the inputs, two layers of one name, or a layer name with a ``.``.

    Example:
        >>> a, b = nnkit.Input((4,), name="a"), nnkit.Input((4,), name="b")
        >>> shared = nnkit.nn.Dense(8, activation="relu", name="shared")
        >>> merged = nnkit.nn.concatenate([shared(a), shared(b)], name="merged")
        >>> model = nnkit.Model([a, b], nnkit.nn.Dense(1, name="out")(merged))
        >>> [layer.name for layer in model.layers]
        ['a', 'b', 'shared', 'merged', 'out']
        >>> list(model.state_dict())
        ['shared.weight', 'shared.bias', 'out.weight', 'out.bias']
        >>> model([nnkit.randn(3, 4), nnkit.randn(3, 4)]).shape
        (3, 1)
    """

    def __init__(self, inputs: Any, outputs: Any, name: str | None = None) -> None:
        super().__init__(name=name)
        for what, struct in (("inputs", inputs), ("outputs", outputs)):
            flat = flatten(struct)
            if not flat:
                raise ValueError(f"`{what}` argument cannot be empty. Received: {what}={struct}")
            for x in flat:
                if not isinstance(x, KerasTensor):
                    raise ValueError(
                        f"All `{what}` values must be KerasTensors. Received: "
                        f"{what}={struct!r} including invalid value {x!r} of "
                        f"type {type(x)}"
                    )
        if isinstance(outputs, list) and len(outputs) == 1:
            outputs = outputs[0]  # Keras returns a single output unwrapped
        d = self.__dict__
        d["_inputs_struct"], d["_outputs_struct"] = inputs, outputs
        d["_inputs"], d["_outputs"] = flatten(inputs), flatten(outputs)
        nodes_by_depth, layers = map_graph(d["_inputs"], d["_outputs"])
        d["_nodes_by_depth"], d["_layers"] = nodes_by_depth, layers
        d["_schedule"] = self._make_schedule()
        for layer in layers:
            if "." in layer.name or not layer.name:
                raise ValueError(
                    f"Layer name {layer.name!r} cannot be a key of the model's "
                    "state_dict: a layer name in a functional model must be "
                    "non-empty and contain no '.'"
                )
            if layer is self:
                raise ValueError("A functional model cannot contain itself")
            self._modules[layer.name] = layer

    def _make_schedule(self) -> list[tuple[Node, list[int]]]:
        """The nodes to run in order, each with the ids of the tensors last needed by it
        (freed after it runs, so ``predict`` does not keep every activation)."""
        order = [
            node
            for depth in sorted(self._nodes_by_depth, reverse=True)
            for node in self._nodes_by_depth[depth]
            if not node.is_input
        ]
        last_use: dict[int, int] = {}
        for step, node in enumerate(order):
            for t in node.input_tensors:
                last_use[id(t)] = step
        keep = {id(t) for t in self._outputs}
        release: list[list[int]] = [[] for _ in order]
        for tid, step in last_use.items():
            if tid not in keep:
                release[step].append(tid)
        return list(zip(order, release))

    def __deepcopy__(self, memo: dict) -> Functional:
        """A copy with its own layers and graph (the copied layers' ``_inbound_nodes``
        hold this model's nodes, so ``layer.output`` works on them too)."""
        new = super().__deepcopy__(memo)
        for node in (n for depth in new._nodes_by_depth.values() for n in depth):
            nodes = inbound_nodes(node.operation)
            nodes.extend([None] * (node.index + 1 - len(nodes)))
            nodes[node.index] = node
        return new

    # ------------------------------------------------------------ properties
    @property
    def layers(self) -> list:
        """The layers: the Input layers first, then in topological order (Keras's)."""
        return list(self._layers)

    @property
    def inputs(self) -> list[KerasTensor]:
        """The symbolic inputs, as a flat list."""
        return list(self._inputs)

    @property
    def outputs(self) -> list[KerasTensor]:
        """The symbolic outputs, as a flat list."""
        return list(self._outputs)

    @property
    def input(self) -> Any:
        """The inputs in the structure given to the constructor."""
        return self._inputs_struct

    @property
    def output(self) -> Any:
        """The outputs in the structure given to the constructor."""
        return self._outputs_struct

    @property
    def input_shape(self) -> Any:
        """The input's shape (``(None, 20)``); a list of shapes for several inputs."""
        shapes = [t.shape for t in self._inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self) -> Any:
        """The output's shape; a list of shapes for several outputs."""
        shapes = [t.shape for t in self._outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_names(self) -> list[str]:
        """The names of the layers that produce the outputs (Keras's ``output_names``)."""
        return [t._keras_history.operation.name for t in self._outputs]

    def build(self, input_shape: Any = None) -> None:
        """A functional model is built when it is created: nothing to do."""
        self.built = True

    # ---------------------------------------------------------------- config
    def get_config(self) -> dict:
        """Keras's functional config: each layer with the calls (``inbound_nodes``) that
        belong to this model, its tensors referred to as ``[layer name, node index,
        tensor index]``, and the input and output references in their structure."""
        kept = {node for depth in self._nodes_by_depth.values() for node in depth}
        renumber: dict = {}  # (layer, node index) -> its index among this model's nodes
        for layer in self._layers:
            mine = [n for n in inbound_nodes(layer) if n in kept]
            renumber.update({(layer, n.index): i for i, n in enumerate(mine)})

        def ref(tensor: KerasTensor) -> dict:
            history = tensor._keras_history
            node = renumber[(history.operation, history.node_index)]
            return {"__keras_tensor__": [history.operation.name, node, history.tensor_index]}

        def encode(struct: Any) -> Any:
            return map_structure(lambda x: ref(x) if isinstance(x, KerasTensor) else x, struct)

        layers = []
        for layer in self._layers:
            calls = [n for n in inbound_nodes(layer) if n in kept and not n.is_input]
            layers.append(
                {
                    "layer": layer,
                    "inbound_nodes": [
                        {"args": encode(list(n.args)), "kwargs": encode(n.kwargs)} for n in calls
                    ],
                }
            )
        return {
            "name": self.name,
            "layers": layers,
            "input_layers": encode(self._inputs_struct),
            "output_layers": encode(self._outputs_struct),
        }

    @classmethod
    def from_config(cls, config: dict) -> Functional:
        """Call the (rebuilt) layers again in the saved order: the same graph.

        Raises:
            ValueError: if a call refers to a tensor that no other call produces.
        """
        tensors: dict[tuple, Any] = {}  # (layer name, node index) -> the call's outputs
        pending = []
        for entry in config["layers"]:
            layer = entry["layer"]
            if isinstance(layer, InputLayer):
                tensors[(layer.name, 0)] = layer.output
            pending.extend((layer, i, call) for i, call in enumerate(entry["inbound_nodes"]))

        def resolve(x: Any) -> Any:
            if isinstance(x, dict) and "__keras_tensor__" in x:
                name, node, index = x["__keras_tensor__"]
                return flatten(tensors[(name, node)])[index]
            if isinstance(x, dict):
                return {k: resolve(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return type(x)(resolve(v) for v in x)
            return x

        while pending:
            waiting = []
            for layer, index, call in pending:
                try:
                    args, kwargs = resolve(call["args"]), resolve(call["kwargs"])
                except KeyError:  # a tensor of a call not made yet (a shared layer)
                    waiting.append((layer, index, call))
                    continue
                tensors[(layer.name, index)] = layer(*args, **kwargs)
            if len(waiting) == len(pending):
                raise ValueError(
                    f"cannot rebuild functional model {config['name']!r}: the "
                    f"call {waiting[0][1]} of layer {waiting[0][0].name!r} needs "
                    "a tensor that no call produces"
                )
            pending = waiting
        return cls(
            resolve(config["input_layers"]), resolve(config["output_layers"]), name=config["name"]
        )

    # --------------------------------------------------------------- calling
    def forward(self, *args: Any, training: bool | None = None) -> Any:
        """Run the graph on real inputs: ``model(x)``, ``model([x1, x2])``,
        ``model(x1, x2)`` or ``model({'name': x, ...})``.

        Args:
            training: run in training (True) or inference (False) mode for this call
                only; None keeps the model's mode.
        """
        inputs = args[0] if len(args) == 1 else list(args)
        flat = self._standardize_inputs(inputs)
        if training is None or training == self.training:
            return self._run(flat)
        with self._mode(bool(training)):
            return self._run(flat)

    def _standardize_inputs(self, inputs: Any) -> list[Tensor]:
        struct, refs = self._inputs_struct, self._inputs
        if isinstance(inputs, dict) and not isinstance(struct, dict):
            names = [t.name for t in refs]
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError(
                    f"{self._describe_inputs()} was called with a dict lacking "
                    f"the input(s) {missing}; its keys are {sorted(inputs)}"
                )
            inputs = [inputs[n] for n in names]
        elif isinstance(struct, dict) and isinstance(inputs, dict):
            if set(inputs) != set(struct):
                raise ValueError(
                    f"{self._describe_inputs()} expects the keys "
                    f"{sorted(struct)}; received {sorted(inputs)}"
                )
        flat = flatten(inputs)
        if len(flat) != len(refs):
            raise ValueError(
                f"{self._describe_inputs()} expects {len(refs)} input(s) "
                f"({[t.name for t in refs]}); received {len(flat)}"
            )
        return [self._adjust(x, ref) for x, ref in zip(flat, refs)]

    def _describe_inputs(self) -> str:
        return f"Model '{self.name}'"

    def _adjust(self, x: Any, ref: KerasTensor) -> Tensor:
        """Keras's input conversion: arrays become Tensors of the input's dtype; a
        trailing dimension of 1 is squeezed or added to match the input's rank."""
        if not isinstance(x, Tensor):
            x = as_tensor(x, dtype=ref.dtype)
        if x.ndim == len(ref.shape) + 1 and x.shape[-1] == 1:
            x = x.squeeze(-1)
        elif x.ndim == len(ref.shape) - 1 and ref.shape[-1] == 1:
            x = x.unsqueeze(-1)
        if x.ndim != len(ref.shape) or any(
            r is not None and d != r for d, r in zip(x.shape, ref.shape)
        ):
            raise ValueError(
                f"Input '{ref.name}' of model '{self.name}' is incompatible with "
                f"the layer: expected shape={ref.shape}, found "
                f"shape={tuple(x.shape)}"
            )
        return x

    def _run(self, flat_inputs: list[Tensor]) -> Any:
        values = {id(ref): x for ref, x in zip(self._inputs, flat_inputs)}
        for node, release in self._schedule:
            if node.kwargs or not all(type(a) is KerasTensor for a in node.args):
                args, kwargs = node.fill_in(values)
                out = node.operation(*args, **kwargs)
            else:  # the usual layer(x) / layer(x, y): no structure to fill in
                out = node.operation(*[values[id(a)] for a in node.args])
            if type(node.outputs) is KerasTensor:
                values[id(node.outputs)] = out
            else:
                for ref, value in zip(flatten(node.outputs), flatten(out)):
                    if isinstance(ref, KerasTensor):
                        values[id(ref)] = value
            for tid in release:
                values.pop(tid, None)
        return pack_as(self._outputs_struct, [values[id(t)] for t in self._outputs])

    def extra_repr(self) -> str:
        return f"name={self.name!r}, inputs={[t.name for t in self._inputs]}"
