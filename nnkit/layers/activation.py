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


def _inplace(layer, head: str = "") -> str:
    """``extra_repr`` with ``inplace=True`` appended when set, as PyTorch prints it."""
    if not layer.inplace:
        return head
    return f"{head}, inplace=True" if head else "inplace=True"


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
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> ReLU()(x)
        tensor([0.0000, 0.5000, 2.0000])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=True) if self.inplace else relu(input)

    def extra_repr(self) -> str:
        return _inplace(self)


class LeakyReLU(Module):
    """x for x ≥ 0, ``negative_slope`` · x otherwise.

    Args:
        negative_slope: the slope for negative inputs.
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> LeakyReLU(0.1)(nnkit.tensor([-2.0, 3.0]))
        tensor([-0.2000,  3.0000])
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self, f"negative_slope={self.negative_slope}")


class GELU(Module):
    """x · Φ(x), Φ the standard normal CDF.

    Args:
        approximate: ``'none'`` (the exact erf form) or ``'tanh'`` (the tanh
            approximation 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))).

    Raises:
        ValueError: for another ``approximate``.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> GELU()(x)
        tensor([-0.1587,  0.3457,  1.9545])
    """

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
    """x · σ(x) (also called swish).

    Args:
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> SiLU()(x)
        tensor([-0.2689,  0.3112,  1.7616])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self)


class ELU(Module):
    """x for x > 0, α (eˣ − 1) otherwise.

    Args:
        alpha: α, the value approached as x → −∞ is −α.
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> ELU()(x)
        tensor([-0.6321,  0.5000,  2.0000])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self, f"alpha={self.alpha}")


class Sigmoid(Module):
    """1 / (1 + e⁻ˣ), elementwise.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Sigmoid()(x)
        tensor([0.2689, 0.6225, 0.8808])
    """

    def forward(self, input: Tensor) -> Tensor:
        return sigmoid(input)


class Tanh(Module):
    """tanh(x), elementwise.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Tanh()(x)
        tensor([-0.7616,  0.4621,  0.9640])
    """

    def forward(self, input: Tensor) -> Tensor:
        return tanh(input)


class Softmax(Module):
    """exp(xᵢ) / Σⱼ exp(xⱼ) along ``dim``.

    Args:
        dim: the dimension to normalise. Deviation from PyTorch: ``None`` means the last
            dimension (Keras's ``axis=-1``), not PyTorch's deprecated implicit choice.

    Example:
        >>> Softmax(dim=-1)(nnkit.tensor([[1.0, 2.0, 3.0]]))
        tensor([[0.0900, 0.2447, 0.6652]])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, dim=-1 if self.dim is None else self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``, computed stably.

    Args:
        dim: the dimension to normalise; ``None`` means the last one (as in
            :class:`Softmax`).

    Example:
        >>> LogSoftmax(dim=-1)(nnkit.tensor([[1.0, 2.0, 3.0]]))
        tensor([[-2.4076, -1.4076, -0.4076]])
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, dim=-1 if self.dim is None else self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softplus(Module):
    """(1/β) log(1 + e^(βx)), a smooth ReLU.

    Args:
        beta: β.
        threshold: where βx exceeds it, the output is x itself (for
            numerical stability, as in PyTorch).

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Softplus()(x)
        tensor([0.3133, 0.9741, 2.1269])
    """

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

    Returns:
        The function (``identifier`` itself for a callable), or None for no activation.

    Raises:
        ValueError: for an unknown name.

    Example:
        >>> get_activation('relu')(nnkit.tensor([-1.0, 0.5]))
        tensor([0.0000, 0.5000])
        >>> get_activation(None) is None
        True
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
    """x · relu6(x + 3) / 6.

    Args:
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Hardswish()(x)
        tensor([-0.3333,  0.2917,  1.6667])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6.

    Args:
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Hardsigmoid()(x)
        tensor([0.3333, 0.5833, 0.8333])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)


class Mish(Module):
    """x · tanh(softplus(x)).

    Args:
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Mish()(x)
        tensor([-0.3034,  0.3752,  1.9440])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self)


class GLU(Module):
    """a · σ(b) for the two halves a, b of the input along ``dim``.

    Args:
        dim: the dimension split in two; its size must be even (the output has half
            of it).

    Example:
        >>> GLU()(nnkit.tensor([[1.0, 2.0, 0.0, 0.0]]))    # [1, 2] * sigmoid([0, 0])
        tensor([[0.5000, 1.0000]])
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x for x > 0, a · x otherwise, with a learnable slope ``a`` (``weight``): one for all
    channels or one per channel (``num_parameters``, dimension 1 of the input).

    Args:
        num_parameters: 1, or the number of channels.
        init: the initial value of every slope.
        device: where the weight is created.
        dtype: the weight's dtype.

    Raises:
        ValueError: if ``num_parameters`` is not positive.

    Example:
        >>> prelu = PReLU()
        >>> prelu(nnkit.tensor([-1.0, 0.5, 2.0])).tolist()    # slope 0.25 (learnable)
        [-0.25, 0.5, 2.0]
    """

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
    """max(0, x) + min(0, α (exp(x / α) − 1)).

    Args:
        alpha: α.
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> CELU(alpha=0.5)(x)
        tensor([-0.4323,  0.5000,  2.0000])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self, f"alpha={self.alpha}")


class Softsign(Module):
    """``x / (1 + |x|)``.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Softsign()(x)
        tensor([-0.5000,  0.3333,  0.6667])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Threshold(Module):
    """``value`` where x ≤ ``threshold``, else x.

    Args:
        threshold: the threshold.
        value: what replaces the inputs at or below it.
        inplace: write the result into the input and return that tensor, as PyTorch does.

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Threshold(0.6, -0.5)(x)
        tensor([-0.5000, -0.5000,  2.0000])
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return _inplace(self, f"threshold={self.threshold}, value={self.value}")


class Hardshrink(Module):
    """0 on [−λ, λ], x elsewhere.

    Args:
        lambd: λ.

    Example:
        >>> Hardshrink(0.5)(nnkit.tensor([-1.0, 0.25, 2.5]))
        tensor([-1.0000,  0.0000,  2.5000])
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Module):
    """0 on [−λ, λ], else x moved λ towards 0.

    Args:
        lambd: λ.

    Example:
        >>> Softshrink(0.5)(nnkit.tensor([-1.0, 0.25, 2.5]))
        tensor([-0.5000,  0.0000,  2.0000])
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Tanhshrink(Module):
    """x − tanh(x).

    Example:
        >>> x = nnkit.tensor([-1.0, 0.5, 2.0])
        >>> Tanhshrink()(x)
        tensor([-0.2384,  0.0379,  1.0360])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)
