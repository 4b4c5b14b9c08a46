"""``nnkit.signal.windows``: the window functions of ``torch.signal.windows`` (SciPy's
names and conventions: ``sym=True`` gives the symmetric window, ``sym=False`` the
periodic one for spectral analysis).

Each is computed in float64 with PyTorch's formulas and made a 1-d leaf tensor of the
requested floating dtype (default: the default float dtype) and device. The top-level
factories (``nnkit.hann_window`` ...) live in :mod:`nnkit.autograd.ops.windows`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from nnkit.autograd.ops.windows import check_window, i0_np, make_window

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]

_COMMON = """M: the number of points (0 gives an empty tensor).
        sym: True (default): the symmetric window (filter design); False: the periodic
            one (the first ``M`` points of the symmetric window of ``M + 1``).
        dtype: float32 or float64 (default: the default float dtype).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients."""

_RAISES = """Raises:
        ValueError: for a negative ``M``, a non-floating dtype or an invalid parameter
            (as PyTorch)."""


def _line(name, M, dtype, sym, start, step):
    """``(dt, k)``: the checked dtype and PyTorch's ``linspace`` of the window's ``M``
    points from ``start`` by ``step``, in float64."""
    dt = check_window(name, M, dtype, "M")
    return dt, start + step * np.arange(M, dtype=np.float64)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, device=None, requires_grad=False):
    """The exponential (Poisson) window ``exp(-|n - center| / tau)``.

    Args:
        center: the peak's position (default ``(M - 1) / 2``, or ``M / 2`` for a
            periodic window); must be None when ``sym`` is True.
        tau: the decay length, positive (default 1.0).
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.exponential(5)
        tensor([0.1353, 0.3679, 1.0000, 0.3679, 0.1353])
    """
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    dt, k = _line("exponential", M, dtype, sym, -center / tau, 1.0 / tau)
    return make_window(np.exp(-np.abs(k)), dt, device, requires_grad)


def cosine(M, *, sym=True, dtype=None, device=None, requires_grad=False):
    """The cosine (sine) window ``sin(pi (n + 1/2) / M)``.

    Args:
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.cosine(4)
        tensor([0.3827, 0.9239, 0.9239, 0.3827])
    """
    c = math.pi / (M + 1 if not sym and M > 1 else max(M, 1))
    dt, k = _line("cosine", M, dtype, sym, 0.5 * c, c)
    return make_window(np.sin(k), dt, device, requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, device=None, requires_grad=False):
    """The Gaussian window ``exp(-(n - (M - 1) / 2)**2 / (2 std**2))``.

    Args:
        std: the standard deviation, positive (default 1.0).
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.gaussian(5)
        tensor([0.1353, 0.6065, 1.0000, 0.6065, 0.1353])
    """
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    c = 1.0 / (std * math.sqrt(2.0))
    dt, k = _line("gaussian", M, dtype, sym, start * c, c)
    return make_window(np.exp(-(k**2)), dt, device, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, device=None, requires_grad=False):
    """The Kaiser window ``I0(sqrt(beta**2 - k**2)) / I0(beta)``, ``k`` from ``-beta`` to
    ``beta``.

    Args:
        beta: the shape parameter, non-negative (default 12.0); larger is narrower.
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.kaiser(4, beta=2.0)
        tensor([0.4387, 0.9243, 0.9243, 0.4387])
    """
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    dt = check_window("kaiser", M, dtype, "M")
    if M <= 1:
        return make_window(np.ones(M), dt, device, requires_grad)
    step = 2.0 * beta / (M if not sym else M - 1)
    end = min(beta, -beta + (M - 1) * step)
    k = np.linspace(-beta, end, M)
    with np.errstate(all="ignore"):
        w = i0_np(np.sqrt(beta * beta - k**2)) / i0_np(beta)
    return make_window(w, dt, device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, device=None, requires_grad=False):
    """The generalized cosine window ``sum_i (-1)**i a[i] cos(2 pi i n / (M - 1))``.

    Args:
        a: the coefficients (a non-empty list or tuple of numbers).
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}
        TypeError: if ``a`` is not iterable.

    Example:
        >>> nnkit.signal.windows.general_cosine(5, a=[0.5, 0.5])
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    dt = check_window("general_cosine", M, dtype, "M")
    if M <= 1:
        return make_window(np.ones(M), dt, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = [float(v) for v in a]
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = np.arange(M, dtype=np.float64) * (2.0 * math.pi / (M if not sym else M - 1))
    w = sum((-1) ** i * c * np.cos(i * k) for i, c in enumerate(a))
    return make_window(w, dt, device, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, device=None, requires_grad=False):
    """The generalized Hamming window ``alpha - (1 - alpha) cos(2 pi n / (M - 1))``.

    Args:
        alpha: the constant term (default 0.54).
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.general_hamming(4, alpha=0.6)
        tensor([0.2000, 0.8000, 0.8000, 0.2000])
    """
    return general_cosine(
        M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad
    )


def hamming(M, *, sym=True, dtype=None, device=None, requires_grad=False):
    """The Hamming window ``0.54 - 0.46 cos(2 pi n / (M - 1))``.

    Args:
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.hamming(4)
        tensor([0.0800, 0.7700, 0.7700, 0.0800])
    """
    return general_hamming(M, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, device=None, requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (M - 1))``.

    Args:
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.hann(5)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return general_hamming(
        M, alpha=0.5, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad
    )


def blackman(M, *, sym=True, dtype=None, device=None, requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (M-1)) + 0.08 cos(4 pi n / (M-1))``.

    Args:
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.blackman(3, dtype=nnkit.float64)
        tensor([-1.3878e-17,  1.0000e+00, -1.3878e-17], dtype=nnkit.float64)
    """
    return general_cosine(
        M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad
    )


def bartlett(M, *, sym=True, dtype=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window ``1 - |2n / (M - 1) - 1|``.

    Args:
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.bartlett(5)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    dt = check_window("bartlett", M, dtype, "M")
    if M <= 1:
        return make_window(np.ones(M), dt, device, requires_grad)
    k = -1.0 + np.arange(M, dtype=np.float64) * (2.0 / (M if not sym else M - 1))
    return make_window(1.0 - np.abs(k), dt, device, requires_grad)


def nuttall(M, *, sym=True, dtype=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall (coefficients 0.3635819,
    0.4891775, 0.1365995, 0.0106411).

    Args:
        {common}

    Returns:
        A 1-d tensor of ``M`` values.

    {raises}

    Example:
        >>> nnkit.signal.windows.nuttall(3)
        tensor([0.0004, 1.0000, 0.0004])
    """
    return general_cosine(
        M,
        a=[0.3635819, 0.4891775, 0.1365995, 0.0106411],
        sym=sym,
        dtype=dtype,
        device=device,
        requires_grad=requires_grad,
    )


for _name in __all__:
    _f = globals()[_name]
    _f.__doc__ = _f.__doc__.replace("{common}", _COMMON).replace("{raises}", _RAISES)
del _name, _f
