"""Activation layers (``ReLU``, ``GELU``, ``Softmax``, ...) and activations by name.

Each layer is a thin Module over its functional op; :func:`get_activation` turns a
Keras-style name (``'relu'``) into the function a layer such as ``Dense`` applies.
"""

from __future__ import annotations

from collections.abc import Callable

from nnkit.autograd.factories import full
from nnkit.autograd.ops import relu, sigmoid, tanh
from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers.module import Module, Parameter

__all__ = [
    "ReLU",
    "LeakyReLU",
    "GELU",
    "SiLU",
    "ELU",
    "Sigmoid",
    "Tanh",
    "Softmax",
    "LogSoftmax",
    "Softplus",
    "Hardswish",
    "Hardsigmoid",
    "Mish",
    "GLU",
    "PReLU",
    "CELU",
    "Softsign",
    "Threshold",
    "Hardshrink",
    "Softshrink",
    "Tanhshrink",
    "get_activation",
]


class ReLU(Module):
    """max(0, x), elementwise.

    Args:
        inplace: accepted for PyTorch compatibility; the result is always a new tensor.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return relu(input)


class LeakyReLU(Module):
    """x for x ≥ 0, ``negative_slope`` · x otherwise."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class GELU(Module):
    """x · Φ(x) (``approximate='tanh'`` uses the tanh approximation)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(
                f"GELU: approximate must be 'none' or 'tanh'. Received: approximate={approximate!r}"
            )
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x · σ(x) (also called swish)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input)


class ELU(Module):
    """x for x > 0, α (eˣ − 1) otherwise."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Sigmoid(Module):
    """1 / (1 + e⁻ˣ), elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        return sigmoid(input)


class Tanh(Module):
    """tanh(x), elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        return tanh(input)


class Softmax(Module):
    """exp(xᵢ) / Σⱼ exp(xⱼ) along ``dim``.

    Args:
        dim: the dimension to normalise. Deviation from PyTorch: ``None`` means the last
            dimension (Keras's ``axis=-1``), not PyTorch's deprecated implicit choice.
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, dim=-1 if self.dim is None else self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim`` (``None`` means the last dimension, as in Softmax)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, dim=-1 if self.dim is None else self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softplus(Module):
    """(1/β) log(1 + e^(βx)), linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


def _softmax_last(x: Tensor) -> Tensor:
    return F.softmax(x, dim=-1)


def _log_softmax_last(x: Tensor) -> Tensor:
    return F.log_softmax(x, dim=-1)


_BY_NAME: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": relu,
    "tanh": tanh,
    "sigmoid": sigmoid,
    "softmax": _softmax_last,
    "log_softmax": _log_softmax_last,
    "gelu": lambda x: F.gelu(x),
    "silu": lambda x: F.silu(x),
    "swish": lambda x: F.silu(x),
    "elu": lambda x: F.elu(x),
    "leaky_relu": lambda x: F.leaky_relu(x),
    "softplus": lambda x: F.softplus(x),
}


def get_activation(identifier) -> Callable[[Tensor], Tensor] | None:
    """The activation function for a name, a callable, or None (no activation).

    Args:
        identifier: ``None``/``'linear'``, one of ``'relu' 'tanh' 'sigmoid' 'softmax'
            'log_softmax' 'gelu' 'silu' 'swish' 'elu' 'leaky_relu' 'softplus'``, or a
            callable (a function or a Module) taking and returning a Tensor.

    Raises:
        ValueError: for an unknown name.
    """
    if identifier is None or identifier == "linear":
        return None
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]
    raise ValueError(
        f"Unknown activation: {identifier!r}; expected a callable, None or one of "
        f"{sorted(_BY_NAME)}"
    )


# ------------------------------------------------------------------------------------------
# Activations of issue 13: thin Modules over nnkit.nn.functional.
class Hardswish(Module):
    """x · relu6(x + 3) / 6 (``inplace`` is accepted; the result is always new)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6 (``inplace`` is accepted; the result is always new)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input)


class Mish(Module):
    """x · tanh(softplus(x))."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input)


class GLU(Module):
    """a · σ(b) for the two halves of the input along ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x for x > 0, a · x otherwise, with a learnable slope ``a`` (``weight``): one for all
    channels or one per channel (``num_parameters``, dimension 1 of the input)."""

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None
    ) -> None:
        super().__init__()
        if num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be positive, got {num_parameters}")
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype, device=device))

    def reset_parameters(self) -> None:
        self.weight.data.fill_(self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class CELU(Module):
    """max(0, x) + min(0, α (exp(x / α) − 1))."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Threshold(Module):
    """``value`` where x ≤ ``threshold``, else x."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class Hardshrink(Module):
    """0 on [−λ, λ], x elsewhere."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Module):
    """0 on [−λ, λ], else x moved λ towards 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Tanhshrink(Module):
    """x − tanh(x)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)
