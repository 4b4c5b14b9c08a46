"""Source indices and weights of ``interpolate``'s resampling modes along one dimension,
computed on the host the way torch's CPU kernels do (nearest modes in float32, the
linear and cubic modes in the input's floating dtype).

Each returns a list of ``(indices, weights)`` taps: the output along that dimension is
``sum_k x[indices_k] * weights_k`` (weights None for nearest).
"""

from __future__ import annotations

import numpy as np

__all__ = ["nearest_taps", "linear_taps", "cubic_taps"]


def _scale(n_in, n_out, align_corners, scale, dtype):
    """torch's ``area_pixel_compute_scale``."""
    if align_corners:
        return dtype.type((n_in - 1) / (n_out - 1)) if n_out > 1 else dtype.type(0)
    if scale is not None and scale > 0:
        return dtype.type(1.0 / scale)
    return dtype.type(n_in / n_out)


def nearest_taps(n_in, n_out, scale, exact):
    f32 = np.dtype(np.float32)
    s = f32.type(1.0 / scale) if scale is not None and scale > 0 else f32.type(n_in / n_out)
    dst = np.arange(n_out, dtype=np.float32)
    src = np.floor((dst + f32.type(0.5)) * s) if exact else np.floor(dst * s)
    return [(np.minimum(src.astype(np.int64), n_in - 1), None)]


def _source(n_in, n_out, align_corners, scale, dtype, cubic):
    s = _scale(n_in, n_out, align_corners, scale, dtype)
    dst = np.arange(n_out, dtype=dtype)
    if align_corners:
        return dst * s
    src = s * (dst + dtype.type(0.5)) - dtype.type(0.5)
    return src if cubic else np.maximum(src, dtype.type(0))


def linear_taps(n_in, n_out, align_corners, scale, dtype):
    dtype = np.dtype(dtype)
    src = _source(n_in, n_out, align_corners, scale, dtype, cubic=False)
    i0 = src.astype(np.int64)
    lam = (src - i0).astype(dtype)
    i1 = i0 + (i0 < n_in - 1)
    return [(i0, dtype.type(1) - lam), (i1, lam)]


def cubic_taps(n_in, n_out, align_corners, scale, dtype, a=-0.75):
    dtype = np.dtype(dtype)
    src = _source(n_in, n_out, align_corners, scale, dtype, cubic=True)
    fl = np.floor(src)
    t = (src - fl).astype(dtype)
    a = dtype.type(a)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    base = fl.astype(np.int64)
    return [(np.clip(base + k - 1, 0, n_in - 1), w.astype(dtype)) for k, w in enumerate(weights)]
