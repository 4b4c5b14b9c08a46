"""Weight initialisation: the ``nnkit.nn.init`` functions and Keras initializer names.

Every function fills its tensor in place under ``no_grad`` from nnkit's global random
generator (seed it with :func:`nnkit.manual_seed`) and returns it. Fans follow PyTorch:
for a weight of shape ``(out, in, *kernel)``, ``fan_in = in * prod(kernel)`` and
``fan_out = out * prod(kernel)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops import where
from nnkit.autograd.tensor import Tensor

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "zeros_",
    "ones_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "trunc_normal_",
    "torch_default_",
    "get_initializer",
]


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for an activation (PyTorch's table).

    ``linear``, ``conv*`` and ``sigmoid``: 1; ``tanh``: 5/3; ``relu``: √2;
    ``leaky_relu``: √(2 / (1 + slope²)) with slope ``param`` (default 0.01); ``selu``: 3/4.

    Args:
        nonlinearity: the activation's name (``'relu'``, ``'tanh'``, ``'conv2d'``, ...).
        param: the negative slope of ``'leaky_relu'`` (ignored otherwise).

    Returns:
        The gain, a float.

    Raises:
        ValueError: for an unknown nonlinearity or a non-numeric ``param``.

    Example:
        >>> calculate_gain("tanh"), calculate_gain("leaky_relu", 0.2)
        (1.6666666666666667, 1.3867504905630728)
    """
    linear = {
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    }
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "selu":
        return 3.0 / 4
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of shape ``(out, in, *kernel)``.

    Raises:
        ValueError: for a tensor with fewer than 2 dimensions.
    """
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 "
            f"dimensions (got shape {tuple(tensor.shape)})"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill ``tensor`` with draws from U(a, b).

    Args:
        tensor: the tensor to fill in place (its values, not its autograd history).
        a: the lower bound.
        b: the upper bound.

    Returns:
        ``tensor``.
    """
    with no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill ``tensor`` with draws from N(mean, std²).

    Args:
        tensor: the tensor to fill in place (its values, not its autograd history).
        mean: the mean.
        std: the standard deviation.

    Returns:
        ``tensor``.
    """
    with no_grad():
        return tensor.normal_(mean, std)


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0
) -> Tensor:
    """Fill ``tensor`` with N(mean, std²) draws redrawn until they lie in [a, b].

    Args:
        tensor: the tensor to fill in place (its values, not its autograd history).
        mean: the mean of the normal distribution.
        std: its standard deviation.
        a: the lower cut-off (an absolute value, as in PyTorch, not in units of std).
        b: the upper cut-off.

    Returns:
        ``tensor``.
    """
    with no_grad():
        tensor.normal_(mean, std)
        for _ in range(100):
            outside = (tensor < a) | (tensor > b)
            if not outside.any().item():
                break
            fresh = tensor.clone().normal_(mean, std)
            tensor.copy_(where(outside, fresh, tensor))
        return tensor.clamp_(a, b)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``.

    Args:
        tensor: the tensor to fill in place (its values, not its autograd history).
        val: the value.

    Returns:
        ``tensor``.

    Example:
        >>> constant_(nnkit.empty(2, 3), 0.5)
        tensor([[0.5000, 0.5000, 0.5000],
                [0.5000, 0.5000, 0.5000]])
    """
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with zeros.

    Args:
        tensor: the tensor to fill in place (its values, not its autograd history).

    Returns:
        ``tensor``.
    """
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with ones.

    Args:
        tensor: the tensor to fill in place (its values, not its autograd history).

    Returns:
        ``tensor``.
    """
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain · √(6 / (fan_in + fan_out)).

    Args:
        tensor: the weight to fill in place, of at least 2 dimensions.
        gain: the scale factor (see :func:`calculate_gain`).

    Returns:
        ``tensor``.

    Raises:
        ValueError: for a tensor of fewer than 2 dimensions.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot normal: N(0, std²) with std = gain · √(2 / (fan_in + fan_out)).

    Args:
        tensor: the weight to fill in place, of at least 2 dimensions.
        gain: the scale factor (see :func:`calculate_gain`).

    Returns:
        ``tensor``.

    Raises:
        ValueError: for a tensor of fewer than 2 dimensions.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He uniform: U(-b, b) with b = gain · √(3 / fan), gain = ``calculate_gain(nonlinearity, a)``.

    ``Linear`` and ``Conv*`` use ``a=√5``, which gives U(±1/√fan_in).

    Args:
        tensor: the weight to fill in place, of at least 2 dimensions.
        a: the negative slope of ``'leaky_relu'`` (ignored for other nonlinearities).
        mode: ``'fan_in'`` (preserves the forward variance) or ``'fan_out'`` (the
            backward's).
        nonlinearity: the activation that follows (see :func:`calculate_gain`).

    Returns:
        ``tensor``.

    Raises:
        ValueError: for an unknown ``mode`` or nonlinearity, or fewer than 2 dimensions.

    Example:
        >>> w = kaiming_uniform_(nnkit.empty(256, 100), nonlinearity="relu")
        >>> bound = 6 ** 0.5 / 10           # gain √2 times √(3 / fan_in)
        >>> bool(w.abs().max() <= bound)
        True
    """
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _fan(tensor, mode))
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He normal: N(0, std²) with std = gain / √fan.

    Args:
        tensor: the weight to fill in place, of at least 2 dimensions.
        a: the negative slope of ``'leaky_relu'`` (ignored for other nonlinearities).
        mode: ``'fan_in'`` or ``'fan_out'``.
        nonlinearity: the activation that follows (see :func:`calculate_gain`).

    Returns:
        ``tensor``.

    Raises:
        ValueError: for an unknown ``mode`` or nonlinearity, or fewer than 2 dimensions.
    """
    gain = calculate_gain(nonlinearity, a)
    return normal_(tensor, 0.0, gain / math.sqrt(_fan(tensor, mode)))


def torch_default_(weight: Tensor, bias: Tensor | None = None) -> None:
    """PyTorch's default for Linear and Conv: ``kaiming_uniform_(a=√5)`` weights and
    bias drawn from U(±1/√fan_in).

    Args:
        weight: the weight, filled in place.
        bias: the bias, filled in place (None: no bias).
    """
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


def _lecun_uniform(t):
    return kaiming_uniform_(t, nonlinearity="linear")


def _lecun_normal(t):
    return kaiming_normal_(t, nonlinearity="linear")


_KERAS_NAMES: dict[str, Callable[[Tensor], Tensor]] = {
    "glorot_uniform": xavier_uniform_,
    "glorot_normal": xavier_normal_,
    "xavier_uniform": xavier_uniform_,
    "xavier_normal": xavier_normal_,
    "he_uniform": lambda t: kaiming_uniform_(t, nonlinearity="relu"),
    "he_normal": lambda t: kaiming_normal_(t, nonlinearity="relu"),
    "lecun_uniform": _lecun_uniform,
    "lecun_normal": _lecun_normal,
    "zeros": zeros_,
    "ones": ones_,
    "random_uniform": lambda t: uniform_(t, -0.05, 0.05),
    "random_normal": lambda t: normal_(t, 0.0, 0.05),
}


def get_initializer(identifier) -> Callable[[Tensor], Tensor]:
    """The in-place initializer for a Keras name (``'glorot_uniform'``) or a callable.

    Args:
        identifier: a Keras initializer name (``'glorot_uniform'``, ``'he_normal'``,
            ``'zeros'``, ...) or a callable ``fn(tensor) -> tensor`` (returned as is).

    Returns:
        A function that fills a tensor in place and returns it.

    Raises:
        ValueError: for an unknown name.

    Example:
        >>> get_initializer("ones")(nnkit.empty(3)).tolist()
        [1.0, 1.0, 1.0]
    """
    if callable(identifier):
        return identifier
    if identifier in _KERAS_NAMES:
        return _KERAS_NAMES[identifier]
    raise ValueError(
        f"Unknown initializer: {identifier!r}; expected a callable or one of {sorted(_KERAS_NAMES)}"
    )
