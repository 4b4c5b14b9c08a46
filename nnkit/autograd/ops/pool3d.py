"""3-d pooling over ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) inputs:
``max_pool3d``, ``avg_pool3d`` and ``adaptive_avg_pool3d``.

The same N-d window kernels and gradients as the 1-d/2-d pools in
:mod:`nnkit.autograd.ops.pool` (the max's gradient goes to the first maximum of each
window, the average's is spread over its window).
"""

from __future__ import annotations

from nnkit.autograd.ops.pool import _adaptive_avg, _avg_pool, _max_pool

__all__ = ["max_pool3d", "avg_pool3d", "adaptive_avg_pool3d"]


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """3-d max pooling: the maximum of each window of the ``-inf``-padded input (the
    arguments as :func:`max_pool2d`'s, one int or three per spatial dimension).

    Example:
        >>> F.max_pool3d(nnkit.arange(8.0).reshape(1, 1, 2, 2, 2), 2).flatten()
        tensor([7.0])
    """
    return _max_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d"
    )


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """3-d average pooling (the arguments as :func:`avg_pool2d`'s).

    Example:
        >>> F.avg_pool3d(nnkit.arange(8.0).reshape(1, 1, 2, 2, 2), 2).flatten()
        tensor([3.5000])
    """
    return _avg_pool(
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        3,
        "avg_pool3d",
    )


def adaptive_avg_pool3d(input, output_size):
    """Average pooling to a fixed ``(D_out, H_out, W_out)`` whatever the input size
    (windows as :func:`adaptive_avg_pool2d`'s).

    Example:
        >>> F.adaptive_avg_pool3d(nnkit.arange(8.0).reshape(1, 2, 2, 2), 1).flatten()
        tensor([3.5000])
    """
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")
