"""``Model.summary()`` in Keras 3's layout (``keras/src/utils/summary_utils.py``).

``Model: "name"``, then a table of the model's layers: ``Layer (type)`` as
``dense (Dense)``, ``Output Shape``, ``Param #`` (all of the layer's weights, its
non-trainable ones included, ``0 (unbuilt)`` for a layer without weights yet) and, for
a functional model that is not a plain chain, ``Connected to`` (``dense[0][0]``: the
layer, the index of its call, the index of the output). Then::

     Total params: 1,994 (7.79 KB)
     Trainable params: 1,994 (7.79 KB)
     Non-trainable params: 0 (0.00 B)
     Optimizer params: 3,990 (15.59 KB)      (once the optimizer has state, as Keras)

Non-trainable weights are parameters that do not require grad and floating-point
buffers (BatchNorm's running mean and variance, Keras's moving statistics; not the
integer ``num_batches_tracked``). Sizes are in bytes with base-1024 units and two
decimals, as Keras's ``readable_memory_size``. Optimizer params count the optimizer's
state tensors plus Keras's two scalar variables (``iterations``, int64, and
``learning_rate``, float32), so the numbers are those Keras prints for the same model
and optimizer; Total params includes them, as in Keras. The table uses plain rules
instead of Keras's box drawing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from nnkit.autograd.factories import zeros
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.layers.container import ModuleDict, ModuleList
from nnkit.layers.symbolic import KerasTensor, flatten, inbound_nodes, map_structure

__all__ = ["print_summary", "readable_memory_size", "listed_layers", "weight_counts"]


def readable_memory_size(size: float) -> str:
    """Keras's ``readable_memory_size``: ``'7.79 KB'`` for 7,976 bytes (base 1024).

    Args:
        size: a number of bytes.

    Returns:
        The size with two decimals and a unit (``B``, ``KB``, ... ``PB``).
    """
    units = ["B", "KB", "MB", "GB", "TB", "PB"]
    for unit in units:
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} {units[-1]}"


# ------------------------------------------------------------------ weights
def _weights(module: Any) -> tuple[list[Tensor], list[Tensor]]:
    """The built weights under ``module``, each once: (trainable, non-trainable)."""
    trainable, frozen, seen = [], [], set()
    for _, param in module._named_members("_parameters", "", True):
        if id(param) not in seen:
            seen.add(id(param))
            (trainable if param.requires_grad else frozen).append(param)
    for m in module.modules():
        for name, buf in m._buffers.items():
            if (
                buf is not None
                and id(buf) not in seen
                and buf.is_floating_point()
                and name not in m._non_persistent_buffers
            ):
                seen.add(id(buf))
                frozen.append(buf)
    return trainable, frozen


def _count(tensors: Iterable[Tensor]) -> tuple[int, int]:
    tensors = list(tensors)
    return (sum(t.numel() for t in tensors), sum(t.numel() * t.dtype.itemsize for t in tensors))


def weight_counts(module: Any) -> dict[str, tuple[int, int]]:
    """``{'trainable': (count, bytes), 'non_trainable': (count, bytes)}``.

    Args:
        module: a Module.

    Returns:
        The dict.
    """
    trainable, frozen = _weights(module)
    return {"trainable": _count(trainable), "non_trainable": _count(frozen)}


def optimizer_counts(optimizer: Any) -> tuple[int, int] | None:
    """(count, bytes) of a built optimizer's variables as Keras counts them, or None
    when it has no state yet."""
    if optimizer is None or getattr(optimizer, "built", None) is False:
        return None
    variables = getattr(optimizer, "variables", None)
    if isinstance(variables, (list, tuple)):  # a Keras-style optimizer (nnkit.optimizers)
        return _count(v for v in variables if isinstance(v, Tensor))
    state = getattr(optimizer, "state", None)
    if not state:
        return None
    tensors = [
        v
        for entry in state.values()
        for k, v in entry.items()
        if isinstance(v, Tensor) and k != "step"
    ]
    count, size = _count(tensors)
    return count + 2, size + 8 + 4  # Keras's iterations (int64) and learning_rate (float32)


# ------------------------------------------------------------------- layers
def listed_layers(model: Any) -> list:
    """The layers a summary (and ``get_layer``) lists: a functional model's or a
    Sequential's ``layers``; for a subclassed model its direct children, with
    ``ModuleList``/``ModuleDict`` containers opened (Keras tracks the layers they hold).

    Args:
        model: a model.

    Returns:
        The list of layers.
    """
    if isinstance(getattr(type(model), "layers", None), property):
        return list(model.layers)
    out, stack = [], list(reversed(list(model.children())))
    while stack:
        child = stack.pop()
        if isinstance(child, (ModuleList, ModuleDict)):
            stack.extend(reversed(list(child.children())))
        else:
            out.append(child)
    return out


def _format_shape(shape: tuple) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _format_outputs(struct: Any) -> str:
    shapes = map_structure(lambda t: _format_shape(t.shape) if hasattr(t, "shape") else "?", struct)
    flat = flatten(shapes)
    return flat[0] if len(flat) == 1 else str(shapes).replace("'", "")


def _traced_shapes(model: Any, input_shape: tuple) -> dict:
    """Each module's output shapes on one zero sample (batch dimension shown as None)."""
    shapes: dict = {}

    def record(module, args, out):
        shapes[module] = map_structure(
            lambda t: (
                KerasTensor((None,) + tuple(t.shape[1:])) if isinstance(t, Tensor) and t.ndim else t
            ),
            out,
        )

    handles = [m.register_forward_hook(record) for m in model.modules()]
    was_training = model.training
    try:
        model.eval()
        with no_grad():  # the probe batch goes where the (built) weights live
            dev = next(
                (
                    t.device
                    for store in ("_parameters", "_buffers")
                    for _, t in model._named_members(store, "", True)
                ),
                None,
            )
            model(zeros((1,) + tuple(input_shape), device=dev))
    finally:
        model.train(was_training)
        for h in handles:
            h.remove()
    return {m: _format_outputs(out) for m, out in shapes.items()}


def _model_nodes(model: Any) -> dict:
    """For a functional model: each layer's nodes in this model, by node index."""
    nodes: dict = {}
    for depth_nodes in model._nodes_by_depth.values():
        for node in depth_nodes:
            nodes.setdefault(node.operation, []).append(node)
    return {layer: sorted(found, key=lambda n: n.index) for layer, found in nodes.items()}


def _is_sequential_like(model: Any, nodes: dict) -> bool:
    """Keras's test: a chain (one node per depth, one input each, no shared layer)."""
    for depth_nodes in model._nodes_by_depth.values():
        if len(depth_nodes) > 1 or (depth_nodes and len(depth_nodes[0].input_tensors) > 1):
            return False
    return all(len(found) <= 1 for found in nodes.values())


def _connections(layer: Any, nodes: dict) -> str:
    parts = []
    for node in nodes.get(layer, []):
        for t in node.input_tensors:
            op, node_index, tensor_index = t._keras_history
            parts.append(f"{op.name}[{node_index}][{tensor_index}]")
    return ", ".join(parts) or "-"


def _param_cell(layer: Any) -> str:
    if not all(m.built for m in layer.modules()):
        return "0 (unbuilt)"
    counts = weight_counts(layer)
    return f"{counts['trainable'][0] + counts['non_trainable'][0]:,}"


def _trainable_cell(layer: Any) -> str:
    params = list(layer._named_members("_parameters", "", True))
    if not params:
        return "-"
    return "Y" if any(p.requires_grad for _, p in params) else "N"


def _layer_range(layers: list, layer_range: Any) -> tuple[int, int]:
    if layer_range is None:
        return 0, len(layers)
    if len(layer_range) != 2 or not all(isinstance(s, str) for s in layer_range):
        raise ValueError(
            "layer_range must be a list or tuple of 2 strings (the first and "
            f"last layer names, or regexes); received {layer_range!r}"
        )
    lower = [i for i, layer in enumerate(layers) if re.match(layer_range[0], layer.name)]
    upper = [i for i, layer in enumerate(layers) if re.match(layer_range[1], layer.name)]
    if not lower or not upper:
        raise ValueError(
            f"Passed layer_names do not match the layer names in the model. Received: {layer_range}"
        )
    if min(lower) > max(upper):
        return min(upper), max(lower) + 1
    return min(lower), max(upper) + 1


# ------------------------------------------------------------------- table
def print_summary(
    model: Any,
    input_shape: tuple | None = None,
    print_fn: Callable[[str], Any] = print,
    *,
    line_length: int | None = None,
    positions: list[float] | None = None,
    expand_nested: bool = False,
    show_trainable: bool = False,
    layer_range: Any = None,
) -> None:
    """Print ``model``'s summary (see the module docstring and ``Model.summary``).

    Args:
        model: the model (built, or given ``input_shape``).
        input_shape: the input shape to trace output shapes with (None: the built one).
        print_fn: called with each line.
        line_length: the width of the table (None: Keras's default).
        positions: the columns' right edges as fractions of ``line_length``.
        expand_nested: also list the layers of nested models, indented.
        show_trainable: add a column saying whether each layer is trainable.
        layer_range: ``(first, last)`` layer names (or regexes) to list only those.
    """
    functional = hasattr(model, "_nodes_by_depth")
    layers = listed_layers(model)
    nodes = _model_nodes(model) if functional else {}
    sequential_like = not functional or _is_sequential_like(model, nodes)
    if sequential_like:
        header = ["Layer (type)", "Output Shape", "Param #"]
        default_length, positions = 88, positions or [0.45, 0.80, 1.0]
    else:
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
        default_length, positions = 108, positions or [0.3, 0.56, 0.74, 1.0]
    if show_trainable:
        default_length += 12
        positions = [p * 0.90 for p in positions] + [1.0]
        header.append("Trainable")
    line_length = line_length or default_length

    traced: dict = {}
    if input_shape is not None and not functional:
        traced = _traced_shapes(model, input_shape)

    def shape_of(layer: Any) -> str:
        if layer in traced:
            return traced[layer]
        found = nodes.get(layer) or inbound_nodes(layer)
        return _format_outputs(found[-1].outputs) if found else "?"

    def rows_of(layer: Any, level: int) -> list[list[str]]:
        prefix = "   " * level + "└ " if level else ""
        row = [
            f"{prefix}{layer.name} ({type(layer).__name__})",
            shape_of(layer),
            _param_cell(layer),
        ]
        if not sequential_like:
            row.append(_connections(layer, nodes) if level == 0 else "")
        if show_trainable:
            row.append(_trainable_cell(layer))
        rows = [row]
        if expand_nested and any(True for _ in layer.children()):
            for inner in listed_layers(layer):
                rows.extend(rows_of(inner, level + 1))
        return rows

    first, last = _layer_range(layers, layer_range)
    rows = [row for layer in layers[first:last] for row in rows_of(layer, 0)]

    widths, current = [], 0
    for pos in positions:
        widths.append(int(pos * line_length) - current)
        current += widths[-1]
    right = {2}  # Param # is right-aligned

    def render(cells: list[str]) -> str:
        out = ""
        for i, (cell, width) in enumerate(zip(cells, widths)):
            room = max(width - 2, len(cell))
            out += (cell.rjust(room) if i in right else cell.ljust(room)) + "  "
        return out.rstrip()

    rule_length = max([line_length] + [len(render(r)) for r in rows])
    lines = [f'Model: "{model.name}"', "=" * rule_length, render(header), "=" * rule_length]
    for i, row in enumerate(rows):
        if i:
            lines.append("-" * rule_length)
        lines.append(render(row))
    lines.append("=" * rule_length)

    counts = weight_counts(model)
    trainable, frozen = counts["trainable"], counts["non_trainable"]
    optimizer = optimizer_counts(getattr(model, "optimizer", None))
    total = (
        trainable[0] + frozen[0] + (optimizer[0] if optimizer else 0),
        trainable[1] + frozen[1] + (optimizer[1] if optimizer else 0),
    )
    lines.append(f" Total params: {total[0]:,} ({readable_memory_size(total[1])})")
    lines.append(f" Trainable params: {trainable[0]:,} ({readable_memory_size(trainable[1])})")
    lines.append(f" Non-trainable params: {frozen[0]:,} ({readable_memory_size(frozen[1])})")
    if optimizer:
        lines.append(f" Optimizer params: {optimizer[0]:,} ({readable_memory_size(optimizer[1])})")
    for line in lines:
        print_fn(line)
