"""nnkit's define-by-run autograd: Tensor, Function, the backward engine, grad modes."""

# ops and printing (with the factories and the engine, imported by the modules below)
# attach the methods of Tensor that need them: op methods and operators, __repr__/__str__.
from nnkit.autograd import graph, ops, printing  # noqa: F401
from nnkit.autograd.checkpoint import checkpoint, checkpoint_sequential
from nnkit.autograd.engine import run_backward
from nnkit.autograd.function import Function, Node, ShapeError
from nnkit.autograd.grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from nnkit.autograd.gradcheck import gradcheck, gradgradcheck
from nnkit.autograd.tensor import Tensor

__all__ = [
    "Tensor",
    "Function",
    "Node",
    "ShapeError",
    "backward",
    "grad",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "checkpoint",
    "checkpoint_sequential",
]


def _as_list(x):
    if x is None:
        return None
    return [x] if isinstance(x, Tensor) else list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` (weighted by ``grad_tensors``) into leaves.

    Args:
        tensors: a tensor or a sequence of tensors to differentiate.
        grad_tensors: one gradient per tensor (None for single-element ones).
        retain_graph: keep the graph for another backward (default: ``create_graph``).
        create_graph: record the backward pass for higher-order derivatives.
        inputs: if given, accumulate only into these tensors.
    """
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) if grad_tensors is not None else [None] * len(tensors)
    if len(grads) != len(tensors):
        raise ValueError(f"backward: got {len(grads)} grad_tensors for {len(tensors)} tensors")
    run_backward(tensors, grads, retain_graph, create_graph, _as_list(inputs))


def grad(
    outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False
):
    """The gradients of ``outputs`` with respect to ``inputs``, without touching ``.grad``.

    Args:
        outputs: a tensor or sequence of tensors.
        inputs: a tensor or sequence of tensors to differentiate with respect to.
        grad_outputs: one gradient per output (None for single-element outputs).
        retain_graph: keep the graph (default: ``create_graph``).
        create_graph: make the returned gradients differentiable (higher order).
        allow_unused: return None for inputs the outputs do not depend on, instead of
            raising.

    Returns:
        A tuple with one gradient per input.

    Example:
        >>> x = nnkit.tensor(2.0, requires_grad=True)
        >>> (g,) = nnkit.autograd.grad(x ** 3, x, create_graph=True)   # 12
        >>> (gg,) = nnkit.autograd.grad(g, x)                          # 12
    """
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    gos = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    if len(gos) != len(outs):
        raise ValueError(f"grad: got {len(gos)} grad_outputs for {len(outs)} outputs")
    return run_backward(
        outs, gos, retain_graph, create_graph, ins, capture=True, allow_unused=allow_unused
    )
