"""In-place activations: ``relu_``, ``leaky_relu_``, ``elu_``, ``selu_``, ``celu_``,
``hardtanh_``, ``threshold_``, ``rrelu_`` (and the out-of-place ``rrelu``).

They write into the input through :func:`~nnkit.autograd.ops.inplace.apply_inplace`:
the version counter goes up, a leaf that requires grad is refused while recording,
writes through a view reach its base. As in PyTorch, the ReLU/ELU family computes its
backward from the *result*: the node saves the input's own memory after the write (no
copy of the old value is kept), so modifying the result again before backward is
caught there. ``hardtanh_`` and ``threshold_`` save only their masks (PyTorch keeps a
copy of the old value), and ``rrelu_`` in training only its noise. The ``inplace=True``
flag of the functional forms in ``nnkit.nn.functional`` and of the layers routes here.

While ``nnkit.onnx.export`` traces a model (``function.trace_hook`` set), they compute
out of place with traceable ops instead: an ONNX graph has no in-place writes.
"""

from __future__ import annotations

from nnkit.autograd import function as _fn
from nnkit.autograd.function import Op
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.elementwise import expm1
from nnkit.autograd.ops.elementwise import relu as _relu
from nnkit.autograd.ops.inplace import apply_inplace
from nnkit.autograd.ops.nn_misc import DropoutMul
from nnkit.autograd.ops.selection import clamp, where
from nnkit.random import default_generator

__all__ = ["celu_", "selu_", "rrelu_", "threshold_"]
# torch.celu_ & co. are functions, not Tensor methods (Tensor.relu_ is in inplace_math).
NOT_METHODS = set(__all__)

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


class FromResult(Op):
    """``y = value(x)`` whose gradient ``grad(g, y)`` reads the saved output only."""

    @staticmethod
    def forward(ctx, x, value, grad):
        y = value(x)
        ctx.grad = grad
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return ctx.grad(grad_output, y), None, None


def tracing() -> bool:
    """Whether an exporter traces the ops (in-place activations then run out of place)."""
    return _fn.trace_hook is not None


def _s(m, v):
    return type(m).scalar(v, m.dtype)


def _float_only(x, name) -> None:
    check_tensor(x, name)
    if not x.dtype.is_floating_point:  # as torch (its kernels have no integer loop)
        raise NotImplementedError(f'"{name}" not implemented for {x.dtype}')


def _keep_result(node, x) -> None:
    """Point the node's saved output at ``x``'s memory, now holding the same values: the
    separate result buffer is dropped, and a later write into ``x`` is caught at backward
    (PyTorch's ``result`` saved by an in-place op)."""
    saved = node._saved[0] if node is not None and node._saved else None
    if saved is not None and saved.packed is None and saved.kind == "output":
        saved.mat = x._impl.data
        saved.version = saved.mat.version


def _from_result(x, name, value, grad, plain):
    if tracing():
        return plain(x)
    nodes = []

    def graph(old):
        out = FromResult.apply(old, value, grad)
        nodes.append(out._impl.grad_fn)
        return out

    apply_inplace(x, name, graph, lambda m: m.copy_(value(m)))
    if nodes:
        _keep_result(nodes[0], x)
    return x


# -------------------------------------------------------- value and gradient kernels
def _leaky_value(slope):
    if slope == 0:
        return lambda m: m.relu()
    return lambda m: m.gt(_s(m, 0)).where(m, m.mul(_s(m, slope)))


def _leaky_grad(slope, name):
    def grad(g, y):
        if slope < 0:
            raise RuntimeError(
                f"In-place {name} backward calculation is triggered with a negative slope "
                "which is not supported; call the out-of-place version instead"
            )
        if slope == 0:  # torch's threshold_backward: 0 where y <= 0 (NaN passes g)
            return where(y <= 0, 0.0, g)
        return where(y > 0, g, g * slope)

    return grad


def _elu_value(alpha, scale, input_scale):
    def value(m):
        neg = m.minimum(_s(m, 0))
        if input_scale != 1:
            neg = neg.mul(_s(m, input_scale))
        neg = neg.expm1().mul(_s(m, alpha * scale))
        return m.gt(_s(m, 0)).where(m if scale == 1 else m.mul(_s(m, scale)), neg)

    return value


def _elu_grad(alpha, scale, input_scale, name):
    def grad(g, y):  # torch's elu_backward from the result
        if alpha < 0:
            raise RuntimeError(
                f"In-place {name} backward calculation is triggered with a negative slope "
                "which is not supported; call the out-of-place version instead"
            )
        return where(y <= 0, g * (y + alpha * scale) * input_scale, g * scale)

    return grad


def _leaky_plain(slope):
    return _relu if slope == 0 else lambda x: where(x > 0, x, x * slope)


def _elu_plain(alpha, scale, input_scale):
    def plain(x):
        neg = expm1(clamp(x, max=0.0) * input_scale) * (alpha * scale)
        return where(x > 0, x * scale, neg)

    return plain


# ---------------------------------------------------------------------- the ops
def relu_(input):
    """``input = max(input, 0)`` in place (``torch.relu_``, ``F.relu_``).

    Args:
        input: a floating or integer tensor, written into.

    Returns:
        ``input`` itself, its version bumped. While recording, the backward reads the
        result (saved without a copy): gradient 1 where the result is positive, else 0.

    Example:
        >>> x = nnkit.tensor([-1.0, 2.0])
        >>> F.relu_(x) is x, x
        (True, tensor([0.0, 2.0]))
    """
    check_tensor(input, "relu_")
    return _from_result(input, "relu_", _leaky_value(0), _leaky_grad(0, "relu"), _relu)


def leaky_relu_(input, negative_slope: float = 0.01):
    """Leaky ReLU in place (``F.leaky_relu_``): ``x`` where ``x > 0``, else
    ``negative_slope * x``.

    Args:
        input: a floating tensor, written into.
        negative_slope: the slope for negative inputs (default 0.01); the backward
            refuses a negative one, as in PyTorch (it reads the result).

    Returns:
        ``input`` itself, its version bumped; the gradient is 1 where the result is
        positive, else ``negative_slope``.

    Example:
        >>> F.leaky_relu_(nnkit.tensor([-2.0, 3.0]), 0.1)
        tensor([-0.2000,  3.0000])
    """
    _float_only(input, "leaky_relu_")
    return _from_result(
        input,
        "leaky_relu_",
        _leaky_value(negative_slope),
        _leaky_grad(negative_slope, "leakyReLu"),
        _leaky_plain(negative_slope),
    )


def elu_(input, alpha: float = 1.0):
    """ELU in place (``F.elu_``): ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

    Args:
        input: a floating tensor, written into.
        alpha: the saturation value (default 1.0); the backward refuses a negative one,
            as in PyTorch.

    Returns:
        ``input`` itself, its version bumped; the gradient, read from the result ``y``,
        is 1 where ``y > 0``, else ``y + alpha``.

    Example:
        >>> F.elu_(nnkit.tensor([-2.0, 3.0]))
        tensor([-0.8647,  3.0000])
    """
    _float_only(input, "elu_")
    return _from_result(
        input,
        "elu_",
        _elu_value(alpha, 1, 1),
        _elu_grad(alpha, 1, 1, "elu"),
        _elu_plain(alpha, 1, 1),
    )


def selu_(input):
    """SELU in place (``torch.selu_``, ``F.selu_``): ``scale * elu(x, alpha)`` with
    ``alpha = 1.6732632...``, ``scale = 1.0507009...``.

    Args:
        input: a floating tensor, written into.

    Returns:
        ``input`` itself, its version bumped; the gradient, read from the result ``y``,
        is ``scale`` where ``y > 0``, else ``y + scale * alpha``.

    Example:
        >>> F.selu_(nnkit.tensor([-2.0, 3.0]))
        tensor([-1.5202,  3.1521])
    """
    _float_only(input, "selu_")
    a, s = SELU_ALPHA, SELU_SCALE
    return _from_result(
        input, "selu_", _elu_value(a, s, 1), _elu_grad(a, s, 1, "elu"), _elu_plain(a, s, 1)
    )


def celu_(input, alpha: float = 1.0):
    """CELU in place (``torch.celu_``, ``F.celu_``): ``x`` where ``x > 0``, else
    ``alpha * (exp(x / alpha) - 1)``.

    Args:
        input: a floating tensor, written into.
        alpha: the saturation value, not 0 (default 1.0); the backward refuses a
            negative one, as in PyTorch.

    Returns:
        ``input`` itself, its version bumped; the gradient, read from the result ``y``,
        is 1 where ``y > 0``, else ``y / alpha + 1``.

    Raises:
        RuntimeError: for ``alpha == 0``.

    Example:
        >>> F.celu_(nnkit.tensor([-2.0, 3.0]), alpha=2.0)
        tensor([-1.2642,  3.0000])
    """
    _float_only(input, "celu_")
    if alpha == 0:
        raise RuntimeError("celu_: argument 'alpha' must not be 0 (ZeroDivisionError)")
    inv = 1.0 / alpha
    return _from_result(
        input,
        "celu_",
        _elu_value(alpha, 1, inv),
        _elu_grad(alpha, 1, inv, "elu"),
        _elu_plain(alpha, 1, inv),
    )


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """Hard tanh in place (``F.hardtanh_``): ``clamp(x, min_val, max_val)``.

    Args:
        input: the tensor written into; an integer one takes integer bounds.
        min_val: the lower bound (default -1.0).
        max_val: the upper bound (default 1.0).

    Returns:
        ``input`` itself, its version bumped; the gradient is 1 where the old value lay
        strictly between the bounds, else 0 (as in PyTorch; only those masks are saved).

    Raises:
        ValueError: if ``min_val > max_val``.

    Example:
        >>> F.hardtanh_(nnkit.tensor([-2.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    check_tensor(input, "hardtanh_")
    if min_val > max_val:
        raise ValueError(f"hardtanh_: min_val ({min_val}) must not exceed max_val ({max_val})")
    if not input.dtype.is_floating_point:
        min_val, max_val = int(min_val), int(max_val)
    lo, hi = min_val, max_val

    def graph(old):  # two selections: they save their masks, not the old value
        return where(old <= lo, lo, where(old >= hi, hi, old))

    return graph(input) if tracing() else apply_inplace(input, "hardtanh_", graph, _iclip(lo, hi))


def _iclip(lo, hi):
    return lambda m: m.iclip(lo, hi)


def threshold_(input, threshold: float, value: float):
    """Threshold in place (``torch.threshold_``, ``F.threshold_``): ``value`` where
    ``input <= threshold``, else ``input``.

    Args:
        input: the tensor written into (an integer one takes ``value`` truncated).
        threshold: the cut-off value.
        value: the replacement for elements at or below ``threshold``.

    Returns:
        ``input`` itself, its version bumped; the gradient is 1 where the old value
        exceeded ``threshold``, else 0 (only that mask is saved).

    Example:
        >>> F.threshold_(nnkit.tensor([-1.0, 0.5, 2.0]), 0.5, -9.0)
        tensor([-9.0, -9.0,  2.0])
    """
    check_tensor(input, "threshold_")

    def graph(old):
        out = where(old <= threshold, value, old)
        return out if out.dtype == old.dtype else out.to(old.dtype)

    def fast(m):
        m.copy_(m.le(_s(m, threshold)).where(_s(m, value), m))

    return graph(input) if tracing() else apply_inplace(input, "threshold_", graph, fast)


def _rrelu_noise(m, lower, upper):
    r = type(m).uniform(lower, upper, m.shape, m.dtype, default_generator())
    return m.le(_s(m, 0)).where(r, _s(m, 1))


def rrelu(
    input,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
):
    """Randomized leaky ReLU: ``x`` where ``x > 0``, else ``a * x``.

    In training each non-positive element draws its slope ``a`` uniformly from
    ``[lower, upper]`` (nnkit's global generator); in evaluation ``a`` is the fixed
    ``(lower + upper) / 2``.

    Args:
        input: a floating tensor.
        lower: the lower bound of the slope (default 1/8).
        upper: the upper bound of the slope (default 1/3).
        training: draw random slopes (default False, as in PyTorch's functional form).
        inplace: write into ``input`` and return it (as :func:`rrelu_`).

    Returns:
        A tensor of ``input``'s shape (``input`` itself when ``inplace``).

    Gradient: the slope used: 1 where ``x > 0``, else the drawn ``a`` (training) or
    ``(lower + upper) / 2`` (evaluation).

    Example:
        >>> F.rrelu(nnkit.tensor([-2.0, 3.0]), 0.2, 0.4)
        tensor([-0.6000,  3.0000])
    """
    if inplace:
        return rrelu_(input, lower, upper, training)
    _float_only(input, "rrelu")
    if training:
        return DropoutMul.apply(input, _rrelu_noise(input._impl.data, lower, upper))
    return where(input > 0, input, input * ((lower + upper) / 2))


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    """Randomized leaky ReLU in place (``torch.rrelu_``, ``F.rrelu_``); see :func:`rrelu`.

    Args:
        input: a floating tensor, written into.
        lower: the lower bound of the slope (default 1/8).
        upper: the upper bound of the slope (default 1/3).
        training: draw random slopes (default False).

    Returns:
        ``input`` itself, its version bumped; in training only the slopes are saved for
        backward, in evaluation the result (as :func:`leaky_relu_`).

    Example:
        >>> F.rrelu_(nnkit.tensor([-2.0, 3.0]), 0.2, 0.4)
        tensor([-0.6000,  3.0000])
    """
    _float_only(input, "rrelu_")
    if not training:
        slope = (lower + upper) / 2
        return _from_result(
            input,
            "rrelu_",
            _leaky_value(slope),
            _leaky_grad(slope, "rrelu"),
            _leaky_plain(slope),
        )
    noise = _rrelu_noise(input._impl.data, lower, upper)
    if tracing():
        return DropoutMul.apply(input, noise)
    return apply_inplace(
        input, "rrelu_", lambda old: DropoutMul.apply(old, noise), lambda m: m.imul(noise)
    )
