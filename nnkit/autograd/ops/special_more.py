"""The normal distribution's CDF and quantile (``ndtr``, ``ndtri``), the entropy term
``entr`` and ``xlog1py``: ``torch.special`` functions, exported by ``nnkit.special``.

Compositions of :func:`erfc`, :func:`erfinv`, ``log``/``log1p`` and :func:`where`, so
their gradients follow (masked branches never leak NaN into the gradient).
"""

from __future__ import annotations

import math

from nnkit.autograd.ops._util import check_tensor, is_scalar, promote_tensors
from nnkit.autograd.ops.selection import where
from nnkit.backends import dtypes as _dt

__all__ = ["ndtr", "ndtri", "entr", "xlog1py"]


def _float(x, op, name="input"):
    check_tensor(x, op, name)
    return x if x.dtype.is_floating_point else x.to(_dt.get_default_dtype())


def ndtr(input):
    """The standard normal CDF ``(1 + erf(x / sqrt(2))) / 2``, computed as
    ``erfc(-x / sqrt(2)) / 2`` (accurate in the lower tail).

    Example:
        >>> nnkit.special.ndtr(nnkit.tensor([0.0, 1.0]))
        tensor([0.5000, 0.8413])
    """
    return (_float(input, "special.ndtr") * (-1.0 / math.sqrt(2.0))).erfc() * 0.5


def ndtri(input):
    """The standard normal quantile (the inverse of :func:`ndtr`):
    ``sqrt(2) * erfinv(2p - 1)``; ``-inf``/``inf`` at 0/1, NaN outside ``[0, 1]``.

    Example:
        >>> nnkit.special.ndtri(nnkit.tensor([0.5, 0.975]))
        tensor([0.0000, 1.9600])
    """
    return (_float(input, "special.ndtri") * 2.0 - 1.0).erfinv() * math.sqrt(2.0)


def entr(input):
    """The entropy term ``-x * log(x)``: 0 at ``x = 0``, ``-inf`` for ``x < 0``.

    Gradient: ``-(1 + log(x))`` for ``x > 0``.

    Example:
        >>> nnkit.special.entr(nnkit.tensor([0.0, 0.5, 1.0]))
        tensor([ 0.0000,  0.3466, -0.0000])
    """
    x = _float(input, "special.entr")
    pos = x > 0
    safe = where(pos, x, 1.0)
    neg = where(x < 0, -math.inf, where(x == 0, 0.0, x))  # NaN stays NaN
    return where(pos, -safe * safe.log(), neg.detach() if x.requires_grad else neg)


def xlog1py(input, other):
    """``input * log1p(other)``, 0 where ``input == 0`` (unless ``other`` is NaN); either
    may be a number. Integer inputs give the default float dtype.

    Gradient: ``log1p(other)`` for ``input`` (0 where ``input == 0``) and
    ``input / (1 + other)`` for ``other``.

    Example:
        >>> nnkit.special.xlog1py(nnkit.tensor([0.0, 2.0]), nnkit.tensor([-1.0, 1.0]))
        tensor([0.0000, 1.3863])
    """
    if is_scalar(input):
        input = _float(other, "special.xlog1py", "other").new_full((), float(input))
    if is_scalar(other):
        other = _float(input, "special.xlog1py").new_full((), float(other))
    check_tensor(input, "special.xlog1py")
    check_tensor(other, "special.xlog1py", "other")
    x, y = promote_tensors(input, other, floating=True)
    zero = (x == 0) & (y == y)
    ys = where(zero, 0.0, y)
    return where(zero, 0.0, x * ys.log1p())
