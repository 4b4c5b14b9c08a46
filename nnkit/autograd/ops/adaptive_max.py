"""Adaptive max pooling (``adaptive_max_pool1d/2d/3d``): the maximum of each window
``[floor(i n / out), ceil((i + 1) n / out))`` per spatial dimension, to a fixed output
size whatever the input size (windows may overlap).

The position of each window's maximum (the first one in row-major order, or the last NaN,
as torch) is found without gradient; the values are then gathered at those positions, so
the gradient goes to exactly those elements (summed where windows share one).
"""

from __future__ import annotations

import itertools
import math

from nnkit.autograd.function import ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.indexing import gather
from nnkit.autograd.ops.joining import stack
from nnkit.autograd.ops.selection import where

__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"]


def _windows(n_in, n_out):
    return [(i * n_in // n_out, math.ceil((i + 1) * n_in / n_out)) for i in range(n_out)]


def _argmax_window(x, bounds, spatial):
    """Flat spatial index (into the input) of the maximum of one window of ``x``."""
    part = x[(Ellipsis, *(slice(a, b) for a, b in bounds))]
    flat = part.reshape(*part.shape[: x.ndim - len(bounds)], -1)
    # torch's scan: a NaN wins (the last one), else the first maximum
    nan = flat.isnan()
    last_nan = (flat.shape[-1] - 1) - nan.flip((-1,)).long().argmax(-1)
    local = where(nan.any(-1), last_nan, flat.argmax(-1))
    sizes = [b - a for a, b in bounds]
    index, rem = local * 0, local
    for k, (a, _b) in enumerate(bounds):
        inner = math.prod(sizes[k + 1 :])
        coord = rem // inner + a
        rem = rem % inner
        index = index + coord * math.prod(spatial[k + 1 :])
    return index


def _adaptive_max(input, output_size, return_indices, nd, op):
    check_tensor(input, op)
    if input.ndim not in (nd + 1, nd + 2):
        raise ShapeError(
            f"{op}: expected an input with {nd + 1} or {nd + 2} dimensions, "
            f"got shape {tuple(input.shape)}"
        )
    spatial = tuple(input.shape[-nd:])
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    sizes = tuple(n if s is None else s for s, n in zip(sizes, spatial))
    if len(sizes) != nd or any(s < 1 for s in sizes):
        raise ValueError(f"{op}: output_size must be {nd} positive ints, got {output_size}")
    if 0 in spatial:
        raise ShapeError(f"{op}: cannot pool an empty input of shape {tuple(input.shape)}")
    lead = input.shape[:-nd]
    with no_grad():
        x = input.detach()
        wins = [_windows(n, s) for n, s in zip(spatial, sizes)]
        idx = stack([_argmax_window(x, b, spatial) for b in itertools.product(*wins)], -1)
    out = gather(input.reshape(*lead, -1), input.ndim - nd, idx)
    out = out.reshape(*lead, *sizes)
    if return_indices:
        return out, idx.reshape(*lead, *sizes)
    return out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive max pooling of ``(N, C, L)`` (or ``(C, L)``) inputs to length
    ``output_size``; with ``return_indices`` also the int64 position of each maximum.

    Example:
        >>> F.adaptive_max_pool1d(nnkit.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[3.0, 2.0]])
    """
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive max pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) inputs to
    ``output_size`` (an int or ``(H_out, W_out)``, None keeping that size); indices
    are flat positions ``h * W + w``.

    Example:
        >>> F.adaptive_max_pool2d(nnkit.arange(16.0).reshape(1, 4, 4), 2, True)[1][0]
        tensor([[ 5,  7],
                [13, 15]])
    """
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive max pooling of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) inputs.

    Example:
        >>> F.adaptive_max_pool3d(nnkit.arange(8.0).reshape(1, 2, 2, 2), 1).flatten()
        tensor([7.0])
    """
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")
