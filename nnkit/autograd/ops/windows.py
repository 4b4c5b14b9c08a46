"""Window functions for spectral analysis: ``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window`` and ``kaiser_window`` (PyTorch's top-level
factories), and the helpers :mod:`nnkit.signal.windows` builds on.

The windows are computed in float64 with NumPy (PyTorch's formulas, term by term) and
made tensors of the requested floating dtype and device; the result is a leaf (with
``requires_grad`` where asked).
"""

from __future__ import annotations

import math

import numpy as np

from nnkit.autograd.factories import tensor
from nnkit.backends import dtypes as _dt
from nnkit.backends import special_kernels2 as _k

__all__ = [
    "hann_window",
    "hamming_window",
    "blackman_window",
    "bartlett_window",
    "kaiser_window",
]

# None of these is a Tensor method (their first argument is a length).
NOT_METHODS = set(__all__)


def check_window(name: str, length, dtype, arg: str = "window_length"):
    """The dtype of a window (default: the default float dtype), after PyTorch's checks
    on the length and dtype."""
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        raise TypeError(f"{name}: argument '{arg}' must be an int, got {type(length).__name__}")
    if length < 0:
        raise ValueError(f"{name} requires non-negative {arg}, got {arg}={length}")
    dt = _dt.get_default_dtype() if dtype is None else _dt.to_dtype(dtype)
    if not dt.is_floating_point:
        raise ValueError(f"{name} expects floating point dtypes, got: {dt}")
    return dt


def make_window(values, dtype, device, requires_grad):
    """A 1-d leaf tensor of ``values`` (float64 NumPy) in ``dtype`` on ``device``."""
    return tensor(
        np.asarray(values, dtype=np.float64),
        dtype=dtype,
        device=device,
        requires_grad=requires_grad,
    )


def i0_np(x):
    """``I0`` of a float64 NumPy array (the kernel of :func:`nnkit.i0`)."""
    with np.errstate(all="ignore"):
        return _k.i0_array(np, np.asarray(x, dtype=np.float64))


def _periodic(name, window_length, periodic, dtype, device, requires_grad, body):
    """PyTorch's frame of the top-level windows: empty for length 0, ``[1]`` for 1,
    else ``body(n)`` of a length one longer when ``periodic``, its last value dropped."""
    dt = check_window(name, window_length, dtype)
    if window_length <= 1:
        return make_window(np.ones(window_length), dt, device, requires_grad)
    n = window_length + 1 if periodic else window_length
    w = body(np.arange(n, dtype=np.float64), n)
    return make_window(w[:window_length], dt, device, requires_grad)


_FACTORY_ARGS = """dtype: a floating dtype (default: the default float dtype).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients."""


def hamming_window(
    window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, device=None,
    requires_grad=False,
):  # fmt: skip
    """The generalized Hamming window ``alpha - beta cos(2 pi n / (N - 1))``.

    Args:
        window_length: the number of points (0 gives an empty tensor, 1 gives ``[1]``).
        periodic: True (default): the window for spectral analysis, computed with
            ``N = window_length + 1`` and its last point dropped; False: symmetric.
        alpha: the constant term (default 0.54).
        beta: the cosine's coefficient (default 0.46).
        {args}

    Returns:
        A 1-d tensor of ``window_length`` values.

    Raises:
        ValueError: for a negative length or a non-floating dtype (as PyTorch).

    Example:
        >>> nnkit.hamming_window(4, periodic=False)
        tensor([0.0800, 0.7700, 0.7700, 0.0800])
    """

    def body(n, length):
        return alpha - beta * np.cos(n * (2.0 * math.pi / (length - 1)))

    return _periodic("hamming_window", window_length, periodic, dtype, device, requires_grad, body)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1)) = sin(pi n / (N - 1))**2``.

    Args:
        window_length: the number of points (0 gives an empty tensor, 1 gives ``[1]``).
        periodic: True (default): computed with ``N = window_length + 1`` and its last
            point dropped (for spectral analysis); False: symmetric.
        {args}

    Returns:
        A 1-d tensor of ``window_length`` values.

    Raises:
        ValueError: for a negative length or a non-floating dtype (as PyTorch).

    Example:
        >>> nnkit.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return hamming_window(
        window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad
    )


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N-1)) + 0.08 cos(4 pi n / (N-1))``.

    Args:
        window_length: the number of points (0 gives an empty tensor, 1 gives ``[1]``).
        periodic: True (default): computed with ``N = window_length + 1`` and its last
            point dropped; False: symmetric.
        {args}

    Returns:
        A 1-d tensor of ``window_length`` values.

    Raises:
        ValueError: for a negative length or a non-floating dtype (as PyTorch).

    Example:
        >>> nnkit.blackman_window(5, periodic=False, dtype=nnkit.float64)
        tensor([0.0000, 0.3400, 1.0000, 0.3400, 0.0000], dtype=nnkit.float64)
    """

    def body(n, length):
        w = n * (math.pi / (length - 1))
        return 0.08 * np.cos(4.0 * w) - 0.5 * np.cos(2.0 * w) + 0.42

    return _periodic("blackman_window", window_length, periodic, dtype, device, requires_grad, body)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window ``1 - |2n / (N - 1) - 1|``.

    Args:
        window_length: the number of points (0 gives an empty tensor, 1 gives ``[1]``).
        periodic: True (default): computed with ``N = window_length + 1`` and its last
            point dropped; False: symmetric.
        {args}

    Returns:
        A 1-d tensor of ``window_length`` values.

    Raises:
        ValueError: for a negative length or a non-floating dtype (as PyTorch).

    Example:
        >>> nnkit.bartlett_window(5, periodic=False)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """

    def body(n, length):
        w = n * (2.0 / (length - 1))
        half = ((length - 1) >> 1) + 1
        w[half:] = 2.0 - w[half:]
        return w

    return _periodic("bartlett_window", window_length, periodic, dtype, device, requires_grad, body)


def kaiser_window(
    window_length, periodic=True, beta=12.0, *, dtype=None, device=None, requires_grad=False
):
    """The Kaiser window ``I0(beta sqrt(1 - ((n - a) / a)**2)) / I0(beta)``, ``a = (N-1)/2``.

    Args:
        window_length: the number of points (0 gives an empty tensor, 1 gives ``[1]``).
        periodic: True (default): computed with ``N = window_length + 1`` and its last
            point dropped; False: symmetric.
        beta: the shape parameter (default 12.0); larger is narrower.
        {args}

    Returns:
        A 1-d tensor of ``window_length`` values.

    Raises:
        ValueError: for a negative length or a non-floating dtype (as PyTorch).

    Example:
        >>> nnkit.kaiser_window(4, periodic=False, beta=2.0)
        tensor([0.4387, 0.9243, 0.9243, 0.4387])
    """

    def body(n, length):
        a = (length - 1) / 2.0
        with np.errstate(all="ignore"):
            r = np.sqrt(1.0 - ((n - a) / a) ** 2)
        return i0_np(beta * r) / i0_np(beta)

    return _periodic("kaiser_window", window_length, periodic, dtype, device, requires_grad, body)


for _fn in (hamming_window, hann_window, blackman_window, bartlett_window, kaiser_window):
    _fn.__doc__ = _fn.__doc__.replace("{args}", _FACTORY_ARGS)
del _fn
