"""Normalisation: ``batch_norm``, ``layer_norm``, ``group_norm``, ``normalize``.

All are composed from reductions and elementwise ops (STYLE §6): the statistics
are part of the graph, so gradients flow through the mean and variance and double
backward works without a hand-written backward. ``layer_norm`` on floating inputs is
the exception, for speed: one :class:`LayerNorm` op (the composite's formula, its sums
as GEMVs: equal to float rounding, see :mod:`nnkit.backends.norm_kernels`) whose
unrecorded backward is one kernel (its ``backward_mat``), or with ``create_graph`` the
same formula in differentiable Tensor ops.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import NO_GRAPH, Op, ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.elementwise import rsqrt
from nnkit.autograd.ops.selection import clamp
from nnkit.autograd.ops.shape import SumTo, sum_to
from nnkit.backends.norm_kernels import layer_norm_backward, layer_norm_forward

__all__ = ["batch_norm", "layer_norm", "group_norm", "normalize"]


class LayerNorm(Op):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last ``k`` dimensions
    (``weight`` and ``bias`` Mats of ``x``'s dtype, or None)."""

    @staticmethod
    def forward(ctx, x, weight, bias, k, eps):
        y, xhat, rstd = layer_norm_forward(x, weight, bias, k, eps)
        ctx.k, ctx.eps = k, eps
        ctx.save_for_backward(x, weight, xhat, rstd)
        return y

    @staticmethod
    def backward(ctx, grad_output):  # recorded: the formula in differentiable Tensor ops
        x, weight, xhat, rstd = ctx.saved_tensors
        need = ctx.needs_input_grad[:3]
        dims = tuple(range(x.ndim - ctx.k, x.ndim))
        xhat, _, var = _standardize(x, dims, ctx.eps)
        g = grad_output
        dxh = g if weight is None else g * weight
        gx = dxh - dxh.mean(dims, keepdim=True) - xhat * (dxh * xhat).mean(dims, keepdim=True)
        gx = sum_to(gx * rsqrt(var + ctx.eps), x.shape) if need[0] else None
        shape = tuple(x.shape[x.ndim - ctx.k :])
        gw = sum_to(g * xhat, shape) if need[1] else None
        gb = sum_to(g, shape) if need[2] else None
        return gx, gw, gb, None, None

    @staticmethod
    def backward_mat(ctx, g):  # not recorded: one kernel, from the saved xhat and rstd
        x, weight, xhat, rstd = ctx.saved_mats
        gx, gw, gb = layer_norm_backward(g, xhat, rstd, weight, ctx.k, ctx.needs_input_grad[:3])
        if gx is not None and gx.shape != x.shape:
            gx = SumTo.forward(NO_GRAPH, gx, x.shape)
        return gx, gw, gb, None, None


def _standardize(x, dims, eps):
    """``(x - mean) / sqrt(var + eps)`` over ``dims`` (biased variance), and the stats."""
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return centered * rsqrt(var + eps), mean, var


def _channel_view(t, ndim):
    """A per-channel ``(C,)`` tensor shaped to broadcast against ``(N, C, *)``."""
    return t.reshape((1, -1) + (1,) * (ndim - 2))


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """Batch normalisation over ``(N, C, *)`` inputs, per channel ``C``.

    .. math::
        y = \\frac{x - \\mathrm{E}[x]}{\\sqrt{\\mathrm{Var}[x] + \\epsilon}} \\gamma + \\beta

    In training the batch statistics (biased variance, over ``N`` and the spatial
    dimensions) normalise, and the running statistics, when given, are updated in place
    without gradient: ``running = (1 - momentum) * running + momentum * batch``
    (unbiased variance, as PyTorch). In evaluation the running statistics normalise.

    Args:
        input: ``(N, C)`` or ``(N, C, *spatial)``.
        running_mean: a ``(C,)`` buffer, or None.
        running_var: a ``(C,)`` buffer, or None.
        weight: optional ``(C,)`` scale ``gamma``.
        bias: optional ``(C,)`` shift ``beta``.
        training: use batch statistics (and update the running ones); default False.
        momentum: weight of the batch statistics in the running update (default 0.1).
        eps: added to the variance for stability (default 1e-5).

    Returns:
        A tensor of ``input``'s shape.

    Gradient: through the batch statistics in training (PyTorch's formula); through
    the affine map only in evaluation.

    Raises:
        ShapeError: for an input with fewer than 2 dimensions or buffers of the wrong size.
        ValueError: in training with one value per channel, or in evaluation without
            running statistics.

    Example:
        >>> x = nnkit.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> mean, var = nnkit.zeros(2), nnkit.ones(2)
        >>> F.batch_norm(x, mean, var, training=True)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]])
        >>> mean
        tensor([0.2000, 2.0000])
    """
    check_tensor(input, "batch_norm")
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected input of shape (N, C, *), got {tuple(input.shape)}")
    c = input.shape[1]
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        if t is not None and tuple(t.shape) != (c,):
            raise ShapeError(
                f"batch_norm: {name} must have shape ({c},) for input "
                f"{tuple(input.shape)}, got {tuple(t.shape)}"
            )
    dims = (0,) + tuple(range(2, input.ndim))
    if training and input.numel() == 0 and c:
        # an empty batch (a data-parallel rank's share of a short last batch): an empty
        # result and unchanged running statistics, as torch
        out = input.clone()
    elif training:
        n = input.numel() // c
        if n <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when "
                f"training, got input of shape {tuple(input.shape)}"
            )
        out, mean, var = _standardize(input, dims, eps)
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.reshape(c) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var.reshape(c) * (momentum * n / (n - 1)))
    else:
        if running_mean is None or running_var is None:
            raise ValueError(
                "batch_norm: running_mean and running_var are required when training=False"
            )
        out = (input - _channel_view(running_mean, input.ndim)) * _channel_view(
            rsqrt(running_var + eps), input.ndim
        )
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dimensions of each sample.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with biased statistics over the
    last ``len(normalized_shape)`` dimensions.

    Args:
        input: ``(*, *normalized_shape)``.
        normalized_shape: an int or a tuple: the trailing shape to normalise over.
        weight: optional scale of shape ``normalized_shape``.
        bias: optional shift of shape ``normalized_shape``.
        eps: added to the variance for stability (default 1e-5).

    Returns:
        A tensor of ``input``'s shape.

    Gradient: through the statistics, as PyTorch's: with ``xhat`` the normalised input
    and ``d = g * weight``, ``rstd * (d - mean(d) - xhat * mean(d * xhat))`` for the
    input, ``g * xhat`` and ``g`` summed over the leading dimensions for weight and bias.

    Raises:
        ShapeError: if the input does not end with ``normalized_shape``.

    Example:
        >>> F.layer_norm(nnkit.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]]), (3,))
        tensor([[-1.2247,  0.0000,  1.2247],
                [ 0.0000,  0.0000,  0.0000]])
    """
    check_tensor(input, "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(input.shape[input.ndim - k :]) != shape or input.ndim < k:
        raise ShapeError(
            f"layer_norm: input of shape {tuple(input.shape)} does not end with "
            f"normalized_shape {shape}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise ShapeError(f"layer_norm: {name} must have shape {shape}, got {tuple(t.shape)}")
    if input.is_floating_point() and all(
        t is None or t.dtype == input.dtype for t in (weight, bias)
    ):
        return LayerNorm.apply(input, weight, bias, k, eps)
    out, _, _ = _standardize(input, tuple(range(input.ndim - k, input.ndim)), eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation: normalise ``(N, C, *)`` inputs over groups of
    ``C / num_groups`` channels.

    Statistics (biased variance) are taken per sample and group, over its channels and
    all spatial positions; then ``y = (x - mean) / sqrt(var + eps) * weight + bias``.

    Args:
        input: ``(N, C, *spatial)``.
        num_groups: the number of groups; it must divide ``C``.
        weight: optional per-channel ``(C,)`` scale.
        bias: optional per-channel ``(C,)`` shift.
        eps: added to the variance for stability (default 1e-5).

    Returns:
        A tensor of ``input``'s shape.

    Raises:
        ValueError: if ``C`` is not divisible by ``num_groups``.

    Example:
        >>> x = nnkit.tensor([[[1.0], [3.0], [5.0], [5.0]]])
        >>> F.group_norm(x, 2).flatten()
        tensor([-1.0000,  1.0000,  0.0000,  0.0000])
    """
    check_tensor(input, "group_norm")
    if input.ndim < 2:
        raise ShapeError(f"group_norm: expected input of shape (N, C, *), got {tuple(input.shape)}")
    n, c = input.shape[:2]
    if num_groups < 1 or c % num_groups:
        raise ValueError(
            f"group_norm: number of channels ({c}) must be divisible by num_groups ({num_groups})"
        )
    grouped = input.reshape(n, num_groups, c // num_groups * math.prod(input.shape[2:]))
    out, _, _ = _standardize(grouped, (2,), eps)
    out = out.reshape(input.shape)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """``L_p`` normalisation along ``dim``: ``x / max(||x||_p, eps)``.

    Args:
        input: the input tensor.
        p: the norm's exponent (default 2).
        dim: the dimension to normalise along (default 1).
        eps: the smallest divisor, which keeps zero vectors finite (default 1e-12).

    Returns:
        A tensor of ``input``'s shape whose slices along ``dim`` have norm 1 (or are 0).

    Gradient: through the norm, and 0 through the divisor where ``eps`` wins.

    Example:
        >>> F.normalize(nnkit.tensor([[3.0, 4.0], [0.0, 0.0]]))
        tensor([[0.6000, 0.8000],
                [0.0000, 0.0000]])
    """
    norm = input.norm(p, dim, keepdim=True)
    return input / clamp(norm, min=eps)
