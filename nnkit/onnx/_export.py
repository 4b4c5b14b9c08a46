"""``export``: trace a model in eval mode and write it as an ONNX file."""

from __future__ import annotations

import os

from nnkit._version import __version__
from nnkit.autograd import function as _function
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.io.atomic import atomic_write_bytes
from nnkit.onnx import _recurrent
from nnkit.onnx._graph import Graph, UnsupportedOpError, to_numpy_dtype
from nnkit.onnx._ops import lookup

__all__ = ["export", "DEFAULT_OPSET"]

DEFAULT_OPSET = 17


def _require():
    try:
        import onnx  # optional: onnx
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "nnkit.onnx.export needs the 'onnx' package: pip install "
            "'nnkit[onnx]' (or pip install onnx)"
        ) from exc
    return onnx


class _Tracer:
    """Records every op the model runs (through ``function.trace_hook``) into a Graph."""

    def __init__(self, graph: Graph, names: dict) -> None:
        self.graph = graph
        self.names = names  # Module -> its dotted name in the model
        self.stack: list = []  # the modules being called, outermost first
        self.whole: set = set()  # ids of the layers being mapped whole

    def layer(self) -> str:
        if not self.stack:
            return "the model's forward"
        m = self.stack[-1]
        return f"layer '{self.names.get(id(m)) or '(model)'}' ({type(m).__name__})"

    def hook(self, cls, args, kwargs):
        g = self.graph
        traced = any(g.known(a) for a in args) or any(g.known(a) for a in kwargs.values())
        fn = lookup(cls) if cls._mat_forward else None
        if traced and fn is None:
            kind = "a user Function" if not cls._mat_forward else "an op"
            raise UnsupportedOpError(
                f"nnkit.onnx.export: {cls.__name__} ({kind}) has no ONNX mapping; it was "
                f"called in {self.layer()}"
            )
        _function.trace_hook = None
        try:
            out = cls.apply(*args, **kwargs)
        finally:
            _function.trace_hook = self.hook
        if traced:
            try:
                fn(g, args, kwargs, out)
            except UnsupportedOpError as exc:
                raise UnsupportedOpError(
                    f"nnkit.onnx.export: {exc}; it was called in {self.layer()}"
                ) from None
        return out

    # ---- module hooks: the layer stack, and layers mapped whole (recurrent ones)
    def pre(self, module, args):
        self.stack.append(module)
        if _function.trace_hook is not None and _recurrent.maps(module):
            _function.trace_hook = None  # the layer becomes its own nodes, in post()
            self.whole.add(id(module))

    def post(self, module, args, out):
        if self.stack and self.stack[-1] is module:
            self.stack.pop()
        if id(module) in self.whole:
            self.whole.discard(id(module))
            _function.trace_hook = self.hook
            _recurrent.emit(self.graph, module, args, out)


def _flatten(out) -> list:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _flatten(o)]
    raise TypeError(
        f"nnkit.onnx.export: the model returned a {type(out).__name__}; "
        f"expected Tensors (or tuples, lists or dicts of them)"
    )


def export(
    model,
    example_input,
    path,
    *,
    opset: int | None = None,
    input_names=None,
    output_names=None,
    dynamic_batch: bool = True,
) -> None:
    """Export ``model`` to the ONNX file ``path``, traced on ``example_input``.

    The model runs once in eval mode (Dropout off, BatchNorm on its running statistics)
    without gradients; every op it runs is mapped to ONNX operators, parameters and
    buffers become initializers. The file is written atomically (a temp file renamed
    onto ``path``), and the training flag of every submodule is restored, also when the
    export fails. While it traces, ops run by other threads would be traced too: run no
    other nnkit work concurrently. Tensors made in ``forward`` from the input's sizes
    (``zeros(x.shape[0], ...)``) become constants of the example's batch size.

    Args:
        model: any Module (``Sequential``, ``Model``, a user Module, ...).
        example_input: a Tensor, or a tuple of Tensors (one per ``forward`` argument).
        path: the ``.onnx`` file to write.
        opset: the ONNX opset (default 17; 17 or newer).
        input_names / output_names: names of the graph's inputs and outputs (default
            ``input``/``input_1``…, ``output``/``output_1``…).
        dynamic_batch: make dimension 0 of every input (and the matching dimension of
            every output) a symbolic ``batch`` dimension.

    Raises:
        UnsupportedOpError: if the model runs an op without an ONNX mapping (e.g. a user
            ``Function``); the message names the op and the layer that called it, and
            nothing is written at ``path``.
        ImportError: if the ``onnx`` package is missing (``pip install 'nnkit[onnx]'``).

    Example:
        >>> import os, tempfile
        >>> import onnx
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        >>> path = os.path.join(tempfile.mkdtemp(), "model.onnx")
        >>> nnkit.onnx.export(model, nnkit.randn(1, 4), path)
        >>> graph = onnx.load(path).graph
        >>> [node.op_type for node in graph.node]
        ['Transpose', 'MatMul', 'Add', 'Relu', 'Transpose', 'MatMul', 'Add', 'Identity']
        >>> graph.input[0].name, graph.output[0].name
        ('input', 'output')
    """
    onnx = _require()
    from onnx import helper, numpy_helper  # optional: onnx (present: _require passed)

    opset = DEFAULT_OPSET if opset is None else int(opset)
    if opset < DEFAULT_OPSET:
        raise ValueError(f"nnkit.onnx.export: opset must be {DEFAULT_OPSET} or newer, got {opset}")
    inputs = (example_input,) if isinstance(example_input, Tensor) else tuple(example_input)
    if not inputs or not all(isinstance(t, Tensor) for t in inputs):
        raise TypeError("nnkit.onnx.export: example_input must be a Tensor or a tuple of Tensors")
    in_names = _names(input_names, len(inputs), "input")
    flags = [(m, m.training) for m in model.modules()]
    handles = []
    graph = Graph(helper, numpy_helper, opset)
    tracer = _Tracer(graph, {id(m): n for n, m in model.named_modules()})
    try:
        model.eval()
        for m in model.modules():
            handles.append(m.register_forward_pre_hook(tracer.pre))
            handles.append(m.register_forward_hook(tracer.post))
        for t, name in zip(inputs, in_names):
            graph.bind(t, name, 0 if dynamic_batch and t.ndim else None)
        with no_grad():
            _function.trace_hook = tracer.hook
            try:
                out = model(*inputs)
            finally:
                _function.trace_hook = None
        proto = _model_proto(
            onnx, graph, inputs, in_names, _flatten(out), output_names, opset, dynamic_batch
        )
        onnx.checker.check_model(proto)
        atomic_write_bytes(os.fspath(path), proto.SerializeToString())
    finally:
        for h in handles:
            h.remove()
        for m, flag in flags:
            m.__dict__["training"] = flag


def _names(given, n, stem):
    if given is None:
        return [stem if n == 1 else f"{stem}_{k}" for k in range(n)]
    given = [given] if isinstance(given, str) else list(given)
    if len(given) != n:
        raise ValueError(f"nnkit.onnx.export: {n} {stem} names needed, got {len(given)}")
    return given


def _value_info(helper, graph, name, tensor, axis):
    dims = [("batch" if k == axis else int(d)) for k, d in enumerate(tensor.shape)]
    return helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(to_numpy_dtype(tensor)), dims
    )


def _model_proto(onnx, graph, inputs, in_names, outs, output_names, opset, dynamic_batch):
    helper = graph.helper
    out_names = _names(output_names, len(outs), "output")
    g_inputs = [
        _value_info(helper, graph, n, t, 0 if dynamic_batch and t.ndim else None)
        for t, n in zip(inputs, in_names)
    ]
    g_outputs = []
    for t, n in zip(outs, out_names):
        src = graph.name(t)
        axis = graph.axis.get(src) if dynamic_batch else None
        graph.nodes.append(helper.make_node("Identity", [src], [n], name=graph.fresh("out")))
        g_outputs.append(_value_info(helper, graph, n, t, axis))
    body = helper.make_graph(graph.nodes, "nnkit", g_inputs, g_outputs, graph.initializers)
    return helper.make_model(
        body,
        producer_name="nnkit",
        producer_version=__version__,
        opset_imports=[helper.make_opsetid("", opset)],
    )
