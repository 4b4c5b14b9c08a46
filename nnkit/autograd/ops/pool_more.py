"""More pooling: power-average pooling (``lp_pool1d``/``lp_pool2d``), max unpooling
(``max_unpool1d``/``2d``/``3d``) and ``upsample`` (the deprecated name of
:func:`interpolate`).

Power-average pooling composes differentiable ops with torch's formula (average pooling
of ``x**p``), so its gradient comes from those ops. Max unpooling writes each value at
its index (:class:`_Unpool`); its backward is a differentiable ``gather`` at the same
indices, whose own backward scatters back, so double backward works.
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.activation import relu
from nnkit.autograd.ops.index_write import scatter_reduce
from nnkit.autograd.ops.indexing import gather
from nnkit.autograd.ops.interpolate import interpolate
from nnkit.autograd.ops.pool import _tuple, avg_pool1d, avg_pool2d
from nnkit.backends import dtypes as _dt

__all__ = ["lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d", "max_unpool3d", "upsample"]


class _Unpool(Op):
    """Values already written at their indices (``value``); the gradient of each input
    is the output gradient gathered at its index, as torch's (every repeat gets it)."""

    @staticmethod
    def forward(ctx, x, value, holder):
        ctx.index = holder[0]
        return value.copy()

    @staticmethod
    def backward(ctx, grad_output):
        return gather(grad_output, -1, ctx.index), None, None


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd, op):
    check_tensor(input, op)
    ks = _tuple(kernel_size, nd, "kernel_size", op)
    pool = avg_pool1d if nd == 1 else avg_pool2d
    st = ks if stride is None else stride
    out = pool(input.pow(norm_type), ks if nd == 2 else ks[0], st, 0, ceil_mode)
    n = 1
    for k in ks:
        n *= k
    return (out.sign() * relu(out.abs())).mul(n).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 1-d windows: ``(sum over window of x**p) ** (1/p)``.

    Args:
        input: ``(N, C, L)`` or ``(C, L)``.
        norm_type: the power ``p`` (``inf`` is not supported, as in torch's formula).
        kernel_size: the window length.
        stride: the window step (default ``kernel_size``).
        ceil_mode: keep a last partial window.

    Returns:
        ``(N, C, L_out)``; as torch, computed as ``avg_pool1d(x**p) * k`` then ``** (1/p)``.

    Gradient: that of the composition (infinite where a window sums to 0 with ``p > 1``).

    Example:
        >>> F.lp_pool1d(nnkit.tensor([[3.0, 4.0, 1.0, 0.0]]), 2, 2)
        tensor([[5.0, 1.0]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 2-d windows: ``(sum over window of x**p) ** (1/p)``.

    Args:
        input: ``(N, C, H, W)`` or ``(C, H, W)``.
        norm_type: the power ``p``.
        kernel_size: the window size, an int or ``(kh, kw)``.
        stride: the window step (default ``kernel_size``).
        ceil_mode: keep last partial windows.

    Returns:
        ``(N, C, H_out, W_out)``; computed as ``avg_pool2d(x**p) * kh * kw`` then
        ``** (1/p)``, as torch.

    Example:
        >>> F.lp_pool2d(nnkit.tensor([[[1.0, 2.0], [2.0, 4.0]]]), 2, 2).flatten()
        tensor([5.0])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, op):
    check_tensor(input, op)
    check_tensor(indices, op, "indices")
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"{op}: expected a {nd + 1}-d or {nd + 2}-d input, got {input.ndim}-d")
    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(
            f"{op}: indices of shape {tuple(indices.shape)} do not match input {tuple(input.shape)}"
        )
    if indices.dtype.is_floating_point or indices.dtype == _dt.bool_:
        raise TypeError(f"{op}: indices must be an integer tensor, got {indices.dtype}")
    ks = _tuple(kernel_size, nd, "kernel_size", op)
    st = ks if stride is None else _tuple(stride, nd, "stride", op)
    pd = _tuple(padding, nd, "padding", op)
    spatial = input.shape[-nd:]
    default = tuple((spatial[i] - 1) * st[i] - 2 * pd[i] + ks[i] for i in range(nd))
    if output_size is None:
        out = default
    else:
        if len(output_size) not in (nd, nd + 2):
            raise ValueError(
                f"{op}: output_size must have {nd} or {nd + 2} elements, got {tuple(output_size)}"
            )
        out = tuple(output_size)[-nd:]
        for i in range(nd):
            lo, hi = default[i] - st[i], default[i] + st[i]
            if not lo < out[i] < hi:
                raise ValueError(
                    f"{op}: invalid output_size {tuple(output_size)} "
                    f"(dim {i} must lie between {lo} and {hi}, exclusive)"
                )
    lead = input.shape[:-nd]
    total = 1
    for s in out:
        total *= s
    if input.numel() and (int(indices.min()) < 0 or int(indices.max()) >= total):
        raise RuntimeError(f"{op}: found an invalid max index (output size {out})")
    flat_x = input.reshape(*lead, -1)
    flat_i = indices.reshape(*lead, -1).long()
    with no_grad():  # repeated indices (overlapping windows) hold equal values
        zeros = input.new_zeros((*lead, total))
        value = scatter_reduce(zeros, -1, flat_i, flat_x.detach(), "amax", include_self=False)
    return _Unpool.apply(flat_x, value, (flat_i,)).reshape(*lead, *out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool1d`: each value written at its index into
    zeros.

    Args:
        input: the pooled values, ``(N, C, L)`` or ``(C, L)``.
        indices: the flat indices from ``max_pool1d(..., return_indices=True)``.
        kernel_size, stride, padding: those of the max pooling (stride default
            ``kernel_size``).
        output_size: the length to restore (default
            ``(L - 1) * stride - 2 * padding + kernel_size``).

    Returns:
        ``(N, C, L_out)``, zero except at ``indices`` (repeats, from overlapping
        windows, hold equal values; each repeat gets the gradient at its index).

    Example:
        >>> F.max_unpool1d(nnkit.tensor([[5.0, 7.0]]), nnkit.tensor([[1, 2]]), 2)
        tensor([[0.0, 5.0, 7.0, 0.0]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool2d`: each value written at its flat
    ``h * W_out + w`` index into zeros.

    Args:
        input: the pooled values, ``(N, C, H, W)`` or ``(C, H, W)``.
        indices: the flat indices from ``max_pool2d(..., return_indices=True)``.
        kernel_size, stride, padding: those of the max pooling (ints or pairs; stride
            default ``kernel_size``).
        output_size: the spatial size to restore (default
            ``(H - 1) * stride - 2 * padding + kernel_size`` per dim).

    Returns:
        ``(N, C, H_out, W_out)``, zero except at ``indices``.

    Example:
        >>> F.max_unpool2d(nnkit.tensor([[[[9.0]]]]), nnkit.tensor([[[[3]]]]), 2)[0, 0]
        tensor([[0.0, 0.0],
                [0.0, 9.0]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool3d`: each value written at its flat
    ``(d * H_out + h) * W_out + w`` index into zeros.

    Args:
        input: the pooled values, ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        indices: the flat indices from ``max_pool3d(..., return_indices=True)``.
        kernel_size, stride, padding: those of the max pooling (ints or triples;
            stride default ``kernel_size``).
        output_size: the spatial size to restore (default
            ``(D - 1) * stride - 2 * padding + kernel_size`` per dim); it may also
            carry the leading ``(N, C)``, and each dim must lie strictly within one
            stride of the default.

    Returns:
        ``(N, C, D_out, H_out, W_out)``, zero except at ``indices`` (each index gets
        the gradient at its position).

    Example:
        >>> x = nnkit.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> out, idx = F.max_pool3d(x, 2, return_indices=True)
        >>> F.max_unpool3d(out, idx, 2).flatten()
        tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated name of :func:`interpolate` (same arguments and result).

    Args:
        input: ``(N, C, *spatial)``.
        size: the output spatial size.
        scale_factor: the multiplier of the spatial size.
        mode: ``'nearest'``, ``'linear'``, ``'bilinear'``, ... as :func:`interpolate`.
        align_corners: as :func:`interpolate`.

    Returns:
        The resized tensor.

    Example:
        >>> F.upsample(nnkit.tensor([[[1.0, 2.0]]]), scale_factor=2).flatten()
        tensor([1.0, 1.0, 2.0, 2.0])
    """
    return interpolate(input, size, scale_factor, mode, align_corners)
