"""Fully connected layers: ``Linear`` (PyTorch), ``Dense`` (Keras, lazily built),
``Identity`` and ``Flatten``."""

from __future__ import annotations

from nnkit.autograd.factories import empty
from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers import initializers as init
from nnkit.layers.activation import get_activation
from nnkit.layers.module import Module, Parameter

__all__ = ["Linear", "Dense", "Identity", "Flatten"]


def _check_positive(value, name: str, layer: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{layer}: {name} must be a positive integer. Received: {name}={value!r}")
    return value


class Linear(Module):
    """y = x Wᵀ + b over the last dimension.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias.

    Attributes:
        weight: shape ``(out_features, in_features)``, initialised from
            U(−1/√in_features, 1/√in_features) (``kaiming_uniform_`` with a=√5).
        bias: shape ``(out_features,)``, from the same distribution.

    Example:
        >>> Linear(20, 30)(nnkit.randn(128, 20)).shape
        (128, 30)
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, *, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.in_features = _check_positive(in_features, "in_features", "Linear")
        self.out_features = _check_positive(out_features, "out_features", "Linear")
        self.weight = Parameter(empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh weights with PyTorch's default initialisation."""
        init.torch_default_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Dense(Module):
    """Keras's densely connected layer: ``activation(x Wᵀ + b)``, input size inferred.

    The weight is created by :meth:`build` at the first call, from the size of the
    input's last dimension (or at construction when ``in_features``/``input_shape`` is
    given). It is stored PyTorch-style, shape ``(units, in_features)``, so a ``Dense``
    and a ``Linear`` of the same sizes have interchangeable state dicts; Keras's kernel
    is its transpose.

    Args:
        units: size of each output sample.
        activation: ``None``, a name (``'relu'``, ``'tanh'``, ``'sigmoid'``,
            ``'softmax'``, ``'gelu'``, ``'silu'``, ...) or a callable.
        use_bias: whether to learn an additive bias.
        kernel_initializer: a Keras name (``'glorot_uniform'``, ``'he_normal'``, ...) or
            an in-place callable taking the weight.
        bias_initializer: likewise for the bias (default ``'zeros'``).
        input_shape: the input shape without the batch dimension (Keras); builds now.
        in_features: the input size; builds now.

    Raises:
        ValueError: for a non-positive ``units`` or an unknown activation/initializer.

    Example:
        >>> layer = Dense(10, activation="relu")
        >>> layer(nnkit.randn(4, 64)).shape      # builds a (10, 64) weight
        (4, 10)
    """

    def __init__(
        self,
        units: int,
        activation=None,
        use_bias: bool = True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        *,
        input_shape: tuple | None = None,
        in_features: int | None = None,
    ) -> None:
        super().__init__()
        self.units = _check_positive(units, "units", "Dense")
        self.activation = get_activation(activation)
        self._activation_name = activation if isinstance(activation, str) else None
        self.use_bias = use_bias
        self.kernel_initializer = init.get_initializer(kernel_initializer)
        self.bias_initializer = init.get_initializer(bias_initializer)
        self.in_features = None
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)
        self.built = False
        if input_shape is not None or in_features is not None:
            size = in_features if in_features is not None else tuple(input_shape)[-1]
            self.build((None, size))
            self.built = True

    def build(self, input_shape: tuple) -> None:
        self.in_features = _check_positive(input_shape[-1], "the input's last dimension", "Dense")
        self.weight = Parameter(empty(self.units, self.in_features))
        self.kernel_initializer(self.weight)
        if self.use_bias:
            self.bias = Parameter(empty(self.units))
            self.bias_initializer(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.shape[-1] != self.in_features:
            raise ValueError(
                f"Dense(units={self.units}) was built for inputs with last "
                f"dimension {self.in_features}, got input of shape "
                f"{tuple(input.shape)}"
            )
        out = F.linear(input, self.weight, self.bias)
        return out if self.activation is None else self.activation(out)

    def extra_repr(self) -> str:
        parts = [f"in_features={self.in_features}"] if self.built else []
        parts.append(f"units={self.units}")
        if self.activation is not None:
            name = self._activation_name or getattr(
                self.activation, "__name__", type(self.activation).__name__
            )
            parts.append(f"activation={name}")
        if not self.use_bias:
            parts.append("use_bias=False")
        return ", ".join(parts)


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored).

    Args:
        *args: ignored (PyTorch accepts and ignores them too).
        **kwargs: ignored.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Flatten(Module):
    """Flattens dimensions ``start_dim`` … ``end_dim`` into one (default: all but batch).

    Args:
        start_dim: the first dimension to flatten (negative counts from the end).
        end_dim: the last dimension to flatten, included.

    Example:
        >>> Flatten()(nnkit.zeros(32, 1, 5, 5)).shape
        (32, 25)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
