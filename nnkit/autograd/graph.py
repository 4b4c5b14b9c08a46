"""Graph utilities: hooks on saved tensors and graph inspection."""

from __future__ import annotations

import os

from nnkit.autograd.grad_mode import state
from nnkit.autograd.tensor import AccumulateGrad, Tensor

__all__ = ["saved_tensors_hooks", "to_dot", "format_forward_trace"]


class saved_tensors_hooks:
    """Context manager: every tensor an op saves for backward inside it goes through
    ``pack_hook(tensor) -> object``, and ``unpack_hook(object) -> tensor`` restores it
    when backward needs it.

    Args:
        pack_hook: called once per saved tensor at forward time.
        unpack_hook: called with what ``pack_hook`` returned, at backward time; must
            return a tensor with the same shape and values (up to its precision).

    Example:
        >>> x = nnkit.tensor([1.0, 2.0], requires_grad=True)
        >>> w = nnkit.tensor([3.0, 4.0], requires_grad=True)
        >>> hooks = nnkit.autograd.graph.saved_tensors_hooks
        >>> with hooks(lambda t: t.to(nnkit.float16), lambda t: t.to(nnkit.float32)):
        ...     y = (x * w).sum()  # x and w are kept as float16
        >>> y.backward()
        >>> x.grad
        tensor([3.0, 4.0])
    """

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        state.saved_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        state.saved_hooks.pop()
        return False


_NNKIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def format_forward_trace(trace) -> str:
    """The forward call stack recorded in anomaly mode, ending at the user's line.

    The trailing frames inside nnkit itself (op functions, ``Function.apply``, Tensor
    dunders) are dropped so that the last frame shown is the user code that created
    the op. :class:`~nnkit.autograd.detect_anomaly` errors use it.

    Args:
        trace: the ``traceback.format_stack()`` list a Node kept (None or empty when
            the forward ran outside anomaly mode).

    Returns:
        The frames joined into one string, or a one-line note that none was recorded.

    Example:
        >>> print(nnkit.autograd.graph.format_forward_trace(None), end="")
          (forward call site not recorded: run the forward under detect_anomaly())
    """
    if not trace:
        return "  (forward call site not recorded: run the forward under detect_anomaly())\n"
    frames = list(trace)
    while len(frames) > 1 and _is_internal(frames[-1]):
        frames.pop()
    return "".join(frames)


def _is_internal(frame: str) -> bool:
    start = frame.find('File "')
    if start < 0:
        return False
    path = frame[start + 6 : frame.find('"', start + 6)]
    return os.path.abspath(path).startswith(_NNKIT_DIR)


def to_dot(tensors, params=None, name: str = "nnkit_graph") -> str:
    """Graphviz DOT text of the backward graph that produced ``tensors``.

    Each recorded op is a box labelled with its node name (``MulBackward``) and, where
    known, its output shapes; each leaf that receives gradients is an ellipse with its
    shape and ``requires_grad=True``; a root tensor that is itself a leaf is shown as a
    leaf. Edges point from an op's inputs to the op, in the forward direction. The
    traversal is iterative, so deep graphs are fine.

    Args:
        tensors: a Tensor or a sequence of Tensors (the roots).
        params: optional ``{name: tensor}`` (e.g. ``dict(model.named_parameters())``)
            used to label leaves by name.
        name: the graph's name in the DOT text.

    Returns:
        The DOT source as a string (render with ``dot -Tpng``).

    Example:
        >>> x = nnkit.ones(2, 3)
        >>> w = nnkit.ones(3, 4, requires_grad=True)
        >>> y = (x @ w).relu().sum()
        >>> print(nnkit.autograd.graph.to_dot(y, params={"w": w}))
        digraph "nnkit_graph" {
          node [fontname="monospace" fontsize=10];
          out0 [label="output 0\\n()" shape=ellipse style=filled fillcolor="#c8e6c9"];
          n0 -> out0;
          n1 -> n0;
          n0 [label="SumBackward\\n()" shape=box];
          n2 -> n1;
          n1 [label="ReLUBackward\\n(2, 4)" shape=box];
          n3 -> n2;
          n2 [label="MatMulBackward" shape=box];
          n3 [label="w\\n(3, 4)\\nrequires_grad=True" shape=ellipse ...];
        }
    """
    roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    names = {id(t._impl): k for k, t in (params or {}).items()}
    lines = [f"digraph {_quote(name)} {{", '  node [fontname="monospace" fontsize=10];']
    ids: dict = {}
    shapes: dict = {}  # (node, output_nr) -> shape, where known
    stack = []

    def node_id(node) -> str:
        key = id(node)
        if key not in ids:
            ids[key] = f"n{len(ids)}"
            stack.append(node)
        return ids[key]

    for k, t in enumerate(roots):
        impl = t._impl
        out = f"out{k}"
        label = _quote(f"output {k}" + "\n" + _shape(impl.data.shape))
        lines.append(f'  {out} [label={label} shape=ellipse style=filled fillcolor="#c8e6c9"];')
        if impl.grad_fn is not None:
            shapes[(impl.grad_fn, impl.output_nr)] = impl.data.shape
            lines.append(f"  {node_id(impl.grad_fn)} -> {out};")
        elif impl.requires_grad:
            lines.append(f"  {out} [label={_quote(_leaf_label(impl, names, k))}];")
    body = []
    while stack:
        node = stack.pop()
        nid = ids[id(node)]
        in_shapes = getattr(node, "__dict__", {}).get("_input_shapes") or ()
        for k, (nxt, nr) in enumerate(node.next_functions):
            if nxt is None:
                continue
            if k < len(in_shapes) and in_shapes[k] is not None:
                shapes.setdefault((nxt, nr), in_shapes[k])
            body.append(f"  {node_id(nxt)} -> {nid};")
        for sv in getattr(node, "_saved", None) or ():  # a saved output knows its shape
            if sv is not None and sv.kind == "output" and sv.mat is not None:
                shapes.setdefault((node, sv.output_nr), sv.mat.shape)
        if type(node) is AccumulateGrad:
            body.append(
                f"  {nid} [label={_quote(_leaf_label(node.impl, names))} "
                'shape=ellipse style=filled fillcolor="#bbdefb"];'
            )
        else:
            body.append((node, nid))
    for item in body:
        if isinstance(item, tuple):
            node, nid = item
            label = node.name()
            meta = getattr(node, "_out_meta", None)
            n_out = getattr(node, "_n_outputs", 1)
            outs = []
            for k in range(n_out):
                s = shapes.get((node, k))
                if s is None and meta and k < len(meta) and meta[k] is not None:
                    s = meta[k][0]
                outs.append("?" if s is None else _shape(s))
            if any(o != "?" for o in outs):
                label += "\n" + ", ".join(outs)
            item = f"  {nid} [label={_quote(label)} shape=box];"
        lines.append(item)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _leaf_label(impl, names, index=None) -> str:
    name = names.get(id(impl), "leaf" if index is None else f"output {index}")
    return f"{name}\n{_shape(impl.data.shape)}\nrequires_grad={impl.requires_grad}"


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
