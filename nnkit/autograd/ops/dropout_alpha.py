"""Self-normalising dropout (``F.alpha_dropout``, ``F.feature_alpha_dropout``) and
``F.dropout3d``.

Alpha dropout keeps the mean and variance of SELU activations: dropped elements are set
to ``-alpha'`` (SELU's negative saturation, ``alpha' = 1.7580993408473766``) and the
result is rescaled affinely, as torch's ``_dropout_impl``: with ``keep ~ Bernoulli(1 -
p)`` and ``a = 1 / sqrt((alpha'^2 p + 1)(1 - p))``, ``out = x * keep * a + alpha' a
((keep - 1) + p)``. Draws come from nnkit's global generator.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import ShapeError
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.nn_misc import _channel_dropout
from nnkit.autograd.ops.random_ops import bernoulli

__all__ = ["alpha_dropout", "feature_alpha_dropout", "dropout3d"]

_ALPHA = 1.7580993408473766


def _alpha(input, p, training, inplace, feature, op):
    check_tensor(input, op)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if feature and input.ndim < 2:
        raise ShapeError(
            f"{op}: Feature dropout requires at least 2 dimensions in the input, "
            f"got shape {tuple(input.shape)}"
        )
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating point input, got {input.dtype}")
    if p == 1.0:  # x * 0: NaN stays NaN, as torch
        return input.mul_(0.0) if inplace else input * 0.0
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    keep = bernoulli(input.new_zeros(shape), 1.0 - p)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    shift = (keep - 1.0) * (_ALPHA * a) + _ALPHA * a * p
    scale = keep * a
    if inplace:
        return input.mul_(scale).add_(shift)
    return input * scale + shift


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Alpha dropout (for SELU networks): each element is dropped with probability
    ``p`` to SELU's saturation value, then the result is rescaled so that a
    zero-mean, unit-variance input keeps its mean and variance.

    Args:
        input: the input tensor (floating).
        p: the probability of dropping, in ``[0, 1]`` (default 0.5).
        training: apply it (the default here is False, as torch's); otherwise return
            ``input`` itself.
        inplace: write the result into ``input`` and return it.

    Returns:
        A tensor of ``input``'s shape: ``x * keep * a + alpha' * a * (keep - 1 + p)``.

    Gradient: ``keep * a`` times the incoming gradient.

    Example:
        >>> F.alpha_dropout(nnkit.ones(4), 0.5, training=False)
        tensor([1.0, 1.0, 1.0, 1.0])
        >>> y = F.alpha_dropout(nnkit.zeros(1000), 0.5, training=True)
        >>> sorted(set(round(v, 4) for v in y.tolist()))
        [-0.7792, 0.7792]
    """
    return _alpha(input, p, training, inplace, False, "alpha_dropout")


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Alpha dropout of whole channels: as :func:`alpha_dropout` with one draw per
    ``(n, c)`` feature map of an ``(N, C, *)`` input.

    Args:
        input: a floating tensor with at least 2 dimensions.
        p: the probability of dropping a channel, in ``[0, 1]`` (default 0.5).
        training: apply it (default False, as torch's); otherwise return ``input``.
        inplace: write the result into ``input`` and return it.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: the channel's ``keep * a`` times the incoming gradient.

    Example:
        >>> y = F.feature_alpha_dropout(nnkit.zeros(2, 3, 4), 0.5, training=True)
        >>> bool((y == y[:, :, :1]).all())
        True
    """
    return _alpha(input, p, training, inplace, True, "feature_alpha_dropout")


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout of volumes: zero whole channels of ``(N, C, D, H, W)`` (or
    ``(C, D, H, W)``) inputs with probability ``p``, scaling the others by
    ``1 / (1 - p)``.

    Args:
        input: a 4-d or 5-d tensor.
        p: the probability of zeroing, in ``[0, 1]`` (default 0.5).
        training: when False, return ``input`` itself (evaluation mode).
        inplace: write the result into ``input`` and return ``input`` itself.

    Returns:
        A tensor of ``input``'s shape; each ``(n, c)`` volume is all zero or all scaled.

    Gradient: the same mask and scale applied to the incoming gradient.

    Raises:
        ShapeError: for another number of dimensions.

    Example:
        >>> y = F.dropout3d(nnkit.ones(2, 4, 2, 2, 2), p=0.5)
        >>> bool(((y == 0).all((2, 3, 4)) | (y == 2).all((2, 3, 4))).all())
        True
    """
    return _channel_dropout(input, p, training, 3, "dropout3d", inplace)
