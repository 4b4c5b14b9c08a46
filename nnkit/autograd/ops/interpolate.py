"""``interpolate`` (and ``upsample_nearest`` / ``upsample_bilinear``): resampling of the
spatial dimensions of ``(N, C, *)`` inputs with torch's modes and index conventions.

Each mode is separable: along every spatial dimension the output is a weighted sum of
gathered input slices (``index_select``), with the taps computed by
:mod:`nnkit.backends.resample_kernels` exactly as torch's CPU kernels compute them. So
the gradient is the adjoint: each output's gradient added back to its source positions
with the same weights. ``area`` is adaptive average pooling.
"""

from __future__ import annotations

import math

from nnkit.autograd.factories import tensor
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.dim_index import index_select
from nnkit.autograd.ops.pool import adaptive_avg_pool1d, adaptive_avg_pool2d
from nnkit.autograd.ops.pool3d import adaptive_avg_pool3d
from nnkit.backends import resample_kernels as _k

__all__ = ["interpolate", "upsample_nearest", "upsample_bilinear"]

_MODES = {
    "nearest": None,
    "nearest-exact": None,
    "linear": 1,
    "bilinear": 2,
    "trilinear": 3,
    "bicubic": 2,
    "area": None,
}


def _sizes(input, size, scale_factor, nd, recompute):
    """Output sizes and the scales torch's kernels receive (None: computed from sizes)."""
    spatial = input.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        out = (size,) * nd if isinstance(size, int) else tuple(int(s) for s in size)
        if len(out) != nd:
            raise ValueError(f"interpolate: size {size} needs {nd} entries for input {input.shape}")
        return out, (None,) * nd
    sf = (scale_factor,) * nd if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
    if len(sf) != nd:
        raise ValueError(f"interpolate: scale_factor {scale_factor} needs {nd} entries")
    out = tuple(int(math.floor(float(n) * float(s))) for n, s in zip(spatial, sf))
    return out, ((None,) * nd if recompute else tuple(float(s) for s in sf))


def _resample(x, d, taps):
    out = None
    for idx, w in taps:
        picked = index_select(x, d, tensor(idx, device=x.device))
        if w is not None:
            shape = [1] * x.ndim
            shape[d] = len(w)
            picked = picked * tensor(w, dtype=x.dtype, device=x.device).reshape(*shape)
        out = picked if out is None else out + picked
    return out


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resample the spatial dimensions of an ``(N, C, *)`` input to ``size`` (or by
    ``scale_factor``, the output size being ``floor(in * scale_factor)``).

    Args:
        mode: ``"nearest"`` (source ``floor(i * in / out)``), ``"nearest-exact"``
            (``floor((i + 0.5) * in / out)``), ``"linear"`` / ``"bilinear"`` /
            ``"trilinear"`` (for 1/2/3 spatial dimensions), ``"bicubic"`` (2, cubic
            convolution with ``a = -0.75``, edges replicated) or ``"area"`` (adaptive
            average pooling).
        align_corners: for the linear and cubic modes: map the corner pixels' centres
            onto each other (default False: pixel areas are aligned).
        recompute_scale_factor: compute the scale from the sizes rather than using
            ``scale_factor`` (which then only sets the output size).
        antialias: must be False (not supported).

    Example:
        >>> x = nnkit.tensor([[[1.0, 2.0]]])
        >>> F.interpolate(x, size=4, mode="linear").flatten()
        tensor([1.0000, 1.2500, 1.7500, 2.0000])
    """
    check_tensor(input, "interpolate")
    if mode not in _MODES:
        raise ValueError(f"interpolate: unknown mode {mode!r} (one of {sorted(_MODES)})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    nd = input.ndim - 2
    if nd < 1 or nd > 3 or (_MODES[mode] is not None and _MODES[mode] != nd):
        raise ValueError(
            f"interpolate: mode {mode!r} does not apply to an input of shape {input.shape}"
        )
    linear = mode in ("linear", "bilinear", "trilinear", "bicubic")
    if align_corners is not None and not linear:
        raise ValueError("interpolate: align_corners applies to the linear and cubic modes only")
    out_sizes, scales = _sizes(input, size, scale_factor, nd, recompute_scale_factor)
    if mode == "area":
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1]
        return pool(input, out_sizes)
    if linear and not input.dtype.is_floating_point:
        raise TypeError(f"interpolate: mode {mode!r} needs a floating input, got {input.dtype}")
    out = input
    for k, (n_in, n_out, s) in enumerate(zip(input.shape[2:], out_sizes, scales)):
        if mode in ("nearest", "nearest-exact"):
            taps = _k.nearest_taps(n_in, n_out, s, mode == "nearest-exact")
        elif mode == "bicubic":
            taps = _k.cubic_taps(n_in, n_out, bool(align_corners), s, input.dtype.np)
        else:
            taps = _k.linear_taps(n_in, n_out, bool(align_corners), s, input.dtype.np)
        out = _resample(out, 2 + k, taps)
    return out


def upsample_nearest(input, size=None, scale_factor=None):
    """``interpolate(input, size, scale_factor, mode="nearest")`` (torch's older name).

    Example:
        >>> F.upsample_nearest(nnkit.tensor([[[1.0, 2.0]]]), scale_factor=2).flatten()
        tensor([1.0, 1.0, 2.0, 2.0])
    """
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """``interpolate(..., mode="bilinear", align_corners=True)`` (torch's older name).

    Example:
        >>> F.upsample_bilinear(nnkit.ones(1, 1, 2, 2), size=3).shape
        (1, 1, 3, 3)
    """
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
