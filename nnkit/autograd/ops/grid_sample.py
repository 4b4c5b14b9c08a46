"""Spatial transformers: ``F.affine_grid`` and ``F.grid_sample`` (2-d and 3-d), with
torch's ``grid_sampler_2d`` / ``grid_sampler_3d`` (integer modes).

Both are composites of differentiable Tensor ops, so their gradients (for the input
and the grid) follow torch's kernels: the sampling positions are unnormalised from
``[-1, 1]``, moved by the padding mode (``border`` clips, ``reflection`` mirrors; the
gradient is zeroed or negated the same way), and the taps are gathered from the
flattened input; the tap weights carry the gradient of the grid (none for
``nearest``, where torch's is all zeros).
"""

from __future__ import annotations

import itertools

from nnkit.autograd.factories import linspace, ones
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.arrange import broadcast_tensors
from nnkit.autograd.ops.indexing import gather
from nnkit.autograd.ops.joining import stack
from nnkit.autograd.ops.selection import where

__all__ = ["grid_sampler_2d", "grid_sampler_3d"]
NOT_METHODS = {"grid_sampler_2d", "grid_sampler_3d"}

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


def _unnormalize(c, size, align_corners):
    if align_corners:
        return (c + 1) / 2 * (size - 1)
    return ((c + 1) * size - 1) / 2


def _clip(c, size):
    return c.clamp(0, size - 1)


def _reflect(c, twice_low, twice_high):
    if twice_low == twice_high:
        return c * 0
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    d = c - lo
    d = where(d < 0, -d, d)  # |c - lo| with gradient +1 at 0, as torch
    extra = d.fmod(span)
    flips = (d.detach() / span).floor()
    even = flips.fmod(2) == 0
    return where(even, extra + lo, span - extra + lo)


def _pad(c, size, padding, align_corners):
    if padding == "border":
        return _clip(c, size)
    if padding == "reflection":
        if align_corners:
            c = _reflect(c, 0, 2 * (size - 1))
        else:
            c = _reflect(c, -1, 2 * size - 1)
        return _clip(c, size)
    return c


class _Taps:
    """Gathers values of ``input`` (``(N, C, *S)``) at integer positions."""

    def __init__(self, input):
        self.sizes = tuple(input.shape[2:])
        n, c = input.shape[:2]
        self.flat = input.reshape(n, c, -1)
        self.c = c

    def __call__(self, idx):
        """``idx``: per spatial dim an int64 tensor ``(N, P)``; out-of-range taps give 0."""
        valid = None
        lin = None
        for i, s in zip(idx, self.sizes):
            ok = (i >= 0) & (i < s)
            valid = ok if valid is None else valid & ok
            i = i.clamp(0, s - 1)
            lin = i if lin is None else lin * s + i
        n, p = lin.shape
        vals = gather(self.flat, 2, lin.unsqueeze(1).expand(n, self.c, p))
        return vals * valid.unsqueeze(1).to(vals.dtype)


def _cubic_coeffs(t):
    a = -0.75

    def conv1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def conv2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [conv2(t + 1), conv1(t), conv1(1 - t), conv2(2 - t)]


def _sample(input, grid, mode, padding, align_corners):
    n, nd = input.shape[0], input.ndim - 2
    out_sp = tuple(grid.shape[1:-1])
    g = grid.reshape(n, -1, nd)
    taps = _Taps(input)
    sizes = taps.sizes
    # grid[..., 0] indexes the last spatial dim (x = W), grid[..., 1] the one before...
    raw = [_unnormalize(g[..., nd - 1 - d], sizes[d], align_corners) for d in range(nd)]
    if mode == "bicubic":
        out = 0
        base = [r.detach().floor() for r in raw]
        coef = [_cubic_coeffs(r - b) for r, b in zip(raw, base)]
        for offs in itertools.product(range(4), repeat=nd):
            idx = []
            for d, o in enumerate(offs):
                pos = _pad(base[d] + (o - 1), sizes[d], padding, align_corners)
                idx.append(pos.trunc().long())
            w = coef[0][offs[0]]
            for d in range(1, nd):
                w = w * coef[d][offs[d]]
            out = out + taps(idx) * w.unsqueeze(1)
    else:
        pos = [_pad(r, sizes[d], padding, align_corners) for d, r in enumerate(raw)]
        if mode == "nearest":
            out = taps([p.detach().round().long() for p in pos])
        else:
            lo = [p.detach().floor() for p in pos]
            out = 0
            for offs in itertools.product((0, 1), repeat=nd):
                w = None
                for d, o in enumerate(offs):
                    wd = pos[d] - lo[d] if o else lo[d] + 1 - pos[d]
                    w = wd if w is None else w * wd
                idx = [(lo[d] + o).long() for d, o in enumerate(offs)]
                out = out + taps(idx) * w.unsqueeze(1)
    return out.reshape(input.shape[:2] + out_sp)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` at the positions of ``grid`` (normalised to ``[-1, 1]``), as
    torch's ``F.grid_sample`` (spatial transformer networks).

    Args:
        input: ``(N, C, H, W)`` or ``(N, C, D, H, W)`` floating tensor.
        grid: ``(N, Ho, Wo, 2)`` (or ``(N, Do, Ho, Wo, 3)``) positions ``(x, y[, z])``;
            ``-1`` and ``1`` are the centres (``align_corners=True``) or the outer edges
            (False) of the border pixels.
        mode: ``"bilinear"`` (trilinear for 5-d), ``"nearest"`` (ties to even) or
            ``"bicubic"`` (4-d only; cubic convolution with ``a = -0.75``).
        padding_mode: outside positions read ``"zeros"``, the ``"border"`` pixel, or the
            ``"reflection"`` of the position at the border.
        align_corners: see ``grid``; default False.

    Returns:
        ``(N, C, Ho, Wo)`` (or ``(N, C, Do, Ho, Wo)``), ``input``'s dtype.

    Gradient: for ``input`` (the tap weights) and ``grid`` (the weights' slopes, clipped
    or mirrored by the padding mode); with ``"nearest"`` no gradient reaches ``grid``
    (torch's is all zeros).

    Example:
        >>> x = nnkit.arange(4.0).reshape(1, 1, 2, 2)
        >>> grid = nnkit.tensor([[[[0.0, 0.0], [1.0, -1.0]]]])
        >>> F.grid_sample(x, grid, align_corners=True).tolist()
        [[[[1.5, 1.0]]]]
    """
    op = "grid_sample"
    check_tensor(input, op)
    check_tensor(grid, op, "grid")
    if mode not in _MODES:
        raise ValueError(
            f"{op}: expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in _PADDINGS:
        raise ValueError(
            f"{op}: expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )
    if input.ndim not in (4, 5):
        raise ValueError(f"{op}: expected 4D or 5D input, got shape {tuple(input.shape)}")
    nd = input.ndim - 2
    if grid.ndim != input.ndim or grid.shape[-1] != nd or grid.shape[0] != input.shape[0]:
        raise ValueError(
            f"{op}: expected grid of shape (N, *, {nd}) with input's N and {input.ndim} "
            f"dims, got grid {tuple(grid.shape)} for input {tuple(input.shape)}"
        )
    if mode == "bicubic" and nd != 2:
        raise ValueError(f"{op}: bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point or grid.dtype != input.dtype:
        raise TypeError(
            f"{op}: expected floating input and grid of one dtype, got {input.dtype} "
            f"and {grid.dtype}"
        )
    if 0 in input.shape[2:]:
        raise ValueError(f"{op}: expected non-empty spatial dims, got {tuple(input.shape)}")
    return _sample(input, grid, mode, padding_mode, bool(align_corners))


def _sampler(input, grid, interpolation_mode, padding_mode, align_corners, nd):
    op = f"grid_sampler_{nd}d"
    if not (0 <= interpolation_mode < 3 and 0 <= padding_mode < 3):
        raise ValueError(
            f"{op}: interpolation_mode and padding_mode must be 0, 1 or 2, got "
            f"{interpolation_mode} and {padding_mode}"
        )
    check_tensor(input, op)
    if input.ndim != nd + 2:
        raise ValueError(f"{op}: expected a {nd + 2}-d input, got shape {tuple(input.shape)}")
    mode, pad = _MODES[interpolation_mode], _PADDINGS[padding_mode]
    return grid_sample(input, grid, mode, pad, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch's ``grid_sampler_2d``: :func:`grid_sample` on 4-d inputs with integer
    ``interpolation_mode`` (0 bilinear, 1 nearest, 2 bicubic) and ``padding_mode``
    (0 zeros, 1 border, 2 reflection).

    Example:
        >>> x = nnkit.arange(4.0).reshape(1, 1, 2, 2)
        >>> nnkit.grid_sampler_2d(x, nnkit.zeros(1, 1, 1, 2), 0, 0, False).tolist()
        [[[[1.5]]]]
    """
    return _sampler(input, grid, interpolation_mode, padding_mode, align_corners, 2)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch's ``grid_sampler_3d``: :func:`grid_sample` on 5-d inputs with integer
    ``interpolation_mode`` (0 bilinear, 1 nearest) and ``padding_mode`` (0 zeros,
    1 border, 2 reflection).

    Example:
        >>> x = nnkit.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> nnkit.grid_sampler_3d(x, nnkit.zeros(1, 1, 1, 1, 3), 0, 0, True).tolist()
        [[[[[3.5]]]]]
    """
    return _sampler(input, grid, interpolation_mode, padding_mode, align_corners, 3)


def _base_coords(n, align_corners, like):
    if n <= 1:
        return like.new_zeros((n,))
    c = linspace(-1.0, 1.0, n, dtype=like.dtype, device=like.device)
    return c if align_corners else c * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of affine transforms ``theta`` for :func:`grid_sample`.

    Args:
        theta: floating ``(N, 2, 3)`` (2-d) or ``(N, 3, 4)`` (3-d) affine matrices.
        size: the target output size ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        align_corners: as in :func:`grid_sample` (default False): the base grid spans
            the pixel centres (True) or is shrunk by ``(n - 1) / n`` (False).

    Returns:
        ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``): ``theta @ [x, y(, z), 1]`` for each
        base position.

    Gradient: ``grad^T @ base`` for ``theta`` (a matrix product).

    Example:
        >>> theta = nnkit.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> F.affine_grid(theta, (1, 1, 1, 2), align_corners=True).tolist()
        [[[[-1.0, 0.0], [1.0, 0.0]]]]
    """
    op = "affine_grid"
    check_tensor(theta, op, "theta")
    size = tuple(int(s) for s in size)
    if not theta.dtype.is_floating_point:
        raise TypeError(f"{op}: expected theta to have floating point type, got {theta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(
            f"{op}: only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    nd = len(size) - 2
    if theta.shape != (size[0], nd, nd + 1):
        raise ValueError(
            f"{op}: expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for "
            f"size {size}. Got {tuple(theta.shape)}."
        )
    if min(size[2:]) <= 0:
        raise ValueError(f"{op}: expected non-zero, positive output size. Got {size}")
    spatial = size[2:]
    axes = [_base_coords(s, bool(align_corners), theta) for s in spatial]
    # the last spatial dim is x: reverse so that the coordinates read (x, y[, z])
    mesh = broadcast_tensors(
        *[a.reshape([-1 if i == d else 1 for i in range(nd)]) for d, a in enumerate(axes)]
    )
    base = stack([*mesh[::-1], ones(spatial, dtype=theta.dtype, device=theta.device)], -1)
    grid = base.reshape(1, -1, nd + 1) @ theta.mT
    return grid.reshape((size[0], *spatial, nd))
