"""Random tensor factories: ``rand``, ``randn``, ``randint``, ``randperm`` and the
``*_like`` forms.

They draw from nnkit's global NumPy generator (seeded by :func:`nnkit.manual_seed`)
unless given a ``generator``; the streams differ from PyTorch's, so equal seeds give
other values. Keywords and shapes are as in :mod:`nnkit.autograd.factories`.
"""

from __future__ import annotations

from nnkit.autograd.factories import _cls_dt, _like, _make, _shape
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.random import default_generator

__all__ = ["rand", "randn", "randint", "randperm", "rand_like", "randn_like"]

_int = int


def _check_float(op, dt):
    """As torch: random floats are not drawn into an integer or bool dtype."""
    if not dt.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point dtype, got {dt}")


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Draws from the uniform distribution on ``[0, 1)``.

    Args:
        size: the shape, as separate ints or one tuple/list (``zeros(2, 3)`` or
            ``zeros((2, 3))``); sizes must be non-negative ints.
        dtype: the dtype (default: the default float dtype, see :func:`set_default_dtype`).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.
        generator: a :class:`numpy.random.Generator`-like source to draw from instead of
            nnkit's global one (seeded by :func:`manual_seed`).

    Returns:
        A new tensor; nnkit's random stream differs from PyTorch's (same seed, other
        values).

    Example:
        >>> x = nnkit.rand(2, 3)
        >>> x.shape, bool(((x >= 0) & (x < 1)).all())
        ((2, 3), True)
    """
    cls, dt = _cls_dt(dtype, device)
    _check_float("rand", dt)
    return _make(cls.rand(_shape(size), dt.np, generator or default_generator()), requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Draws from the standard normal distribution (mean 0, variance 1).

    Args:
        size: the shape, as separate ints or one tuple/list (``zeros(2, 3)`` or
            ``zeros((2, 3))``); sizes must be non-negative ints.
        dtype: the dtype (default: the default float dtype, see :func:`set_default_dtype`).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        requires_grad: make the result a leaf that records gradients.
        generator: a :class:`numpy.random.Generator`-like source to draw from instead of
            nnkit's global one (seeded by :func:`manual_seed`).

    Returns:
        A new tensor; nnkit's random stream differs from PyTorch's.

    Example:
        >>> nnkit.randn(3, 4, dtype=nnkit.float64).dtype
        nnkit.float64
    """
    cls, dt = _cls_dt(dtype, device)
    _check_float("randn", dt)
    return _make(cls.randn(_shape(size), dt.np, generator or default_generator()), requires_grad)


def randint(low, high=None, size=(), *, dtype=None, device=None, generator=None) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``.

    Args:
        low: the lowest value (default 0 when written ``randint(high, size)``).
        high: one above the highest value.
        size: the shape, an int or a tuple (default ``()``, a 0-d tensor).
        dtype: the dtype (default int64).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        generator: a :class:`numpy.random.Generator`-like source to draw from instead of
            nnkit's global one (seeded by :func:`manual_seed`).

    Returns:
        A new integer tensor (no ``requires_grad``).

    Example:
        >>> x = nnkit.randint(0, 10, (2, 5))
        >>> x.dtype, bool(((x >= 0) & (x < 10)).all())
        (nnkit.int64, True)
    """
    if high is None or isinstance(high, (tuple, list)):
        low, high, size = 0, low, size if high is None else high
    cls, dt = _cls_dt(dtype, device, _dt.int64)
    return Tensor._from_mat(
        cls.randint(
            low,
            high,
            _shape((size,) if isinstance(size, _int) else (size,)),
            dt.np,
            generator or default_generator(),
        )
    )


def randperm(n: int, *, dtype=None, device=None, generator=None) -> Tensor:
    """A random permutation of ``0 .. n-1``.

    Args:
        n: the number of values.
        dtype: the dtype (default int64).
        device: ``'cpu'`` (default), ``'cuda'`` or ``'cuda:N'``, or a :class:`Device`.
        generator: a :class:`numpy.random.Generator`-like source to draw from instead of
            nnkit's global one (seeded by :func:`manual_seed`).

    Returns:
        A 1-d tensor of ``n`` distinct values.

    Example:
        >>> nnkit.randperm(5).sort().values
        tensor([0, 1, 2, 3, 4])
    """
    cls, dt = _cls_dt(dtype, device, _dt.int64)
    perm = (generator or default_generator()).permutation(n)
    return Tensor._from_mat(cls.from_host(perm.astype(dt.np)))


def rand_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform ``[0, 1)`` draws of ``input``'s shape (and its dtype and device unless given).

    Args:
        input: the tensor whose shape (and defaults) to take; it must be floating point
            unless ``dtype`` is.
        dtype: the dtype (default: ``input``'s).
        device: the device (default: ``input``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor drawn from nnkit's global generator.

    Example:
        >>> nnkit.rand_like(nnkit.zeros(2, 3)).shape
        (2, 3)
    """
    dt, dev = _like(input, dtype, device)
    return rand(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal draws of ``input``'s shape (and its dtype and device unless given).

    Args:
        input: the tensor whose shape (and defaults) to take; it must be floating point
            unless ``dtype`` is.
        dtype: the dtype (default: ``input``'s).
        device: the device (default: ``input``'s).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor drawn from nnkit's global generator.

    Example:
        >>> nnkit.randn_like(nnkit.zeros(4, dtype=nnkit.float64)).dtype
        nnkit.float64
    """
    dt, dev = _like(input, dtype, device)
    return randn(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)
