"""Neural-network kernels of the Mat interface (convolution, pooling, softmax, erf, BCE).

A mixin of :class:`~nnkit.backends.mat.ArrayMat`: methods here are written against
``self.xp`` so that NumPy and CuPy share them. Spatial kernels work for any number
of spatial dimensions (1-d, 2-d, 3-d): an input is ``(N, C, *spatial)``, a geometry
is given as per-dimension tuples ``kernel``, ``stride``, ``dilation`` and ``pads``
(``(lo, hi)`` pairs).

Convolution is im2col + one GEMM: columns are rows of channels-last windows,
``(groups, N * prod(out), prod(kernel) * C/groups)``, built from an ``as_strided``
window view with a single copy (by kernel offset for few channels). Pooling and
col2im loop over the kernel offsets (a handful), never over output pixels. (3x3
stride-1 convolutions with enough channels use the Winograd kernels of
:mod:`nnkit.backends.winograd_kernels` instead.)
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from nnkit.backends.fp_errors import quiet

__all__ = ["NNKernelsMixin", "erf_array"]


def _lowest(dtype):
    """The most negative finite value of the floating ``dtype``, as its scalar."""
    return np.finfo(dtype).min


def _last(a):
    """``(N, C, *S)`` -> the channels-last view ``(N, *S, C)``."""
    return a.transpose((0,) + tuple(range(2, a.ndim)) + (1,))


def _first(a):
    """``(N, *S, C)`` -> the ``(N, C, *S)`` view."""
    return a.transpose((0, a.ndim - 1) + tuple(range(1, a.ndim - 1)))


def _cl_padded(xp, a, pads, value=0.0):
    """Channels-last view of ``a`` ``(N, C, *S)``, padded (a channels-last copy) if asked."""
    v = _last(a)
    if not any(lo or hi for lo, hi in pads):
        return v
    return xp.pad(v, ((0, 0),) + tuple(pads) + ((0, 0),), mode="constant", constant_values=value)


def _cl_windows(xp, v, kernel, stride, dilation):
    """``(N, *out, *kernel, C)`` view of a channels-last ``v`` ``(N, *S, C)``."""
    spatial, st = v.shape[1:-1], v.strides[1:-1]
    out = tuple(
        (s - d * (k - 1) - 1) // t + 1 for s, k, t, d in zip(spatial, kernel, stride, dilation)
    )
    strides = (
        (v.strides[0],)
        + tuple(t * s for t, s in zip(stride, st))
        + tuple(d * s for d, s in zip(dilation, st))
        + (v.strides[-1],)
    )
    shape = (v.shape[0],) + out + tuple(kernel) + (v.shape[-1],)
    return xp.lib.stride_tricks.as_strided(v, shape, strides)


def _offsets(kernel, out, stride, dilation):
    """``(k, slices)``: each kernel offset and the channels-last slices it reads."""
    for k, off in enumerate(itertools.product(*(range(n) for n in kernel))):
        yield (
            k,
            (slice(None),)
            + tuple(
                slice(o * d, o * d + (m - 1) * s + 1, s)
                for o, m, s, d in zip(off, out, stride, dilation)
            ),
        )


# Channel counts below this build im2col columns by kernel offset (see conv_im2col).
_SHORT_RUN = 8


def _disjoint(kernel, stride, dilation):
    return all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))


class NNKernelsMixin:
    """Convolution, pooling, softmax and erf kernels of a Mat.

    Spatial kernels compute in channels-last order: an ``(N, C, *S)`` Mat is read
    through its ``(N, *S, C)`` view and results are allocated channels-last, then
    returned as ``(N, C, *out)`` views. Channel runs are then contiguous, which makes
    the im2col copy and the per-offset pooling passes streaming, and a network of
    conv / relu / pool keeps that layout from op to op without transposing copies.
    """

    __slots__ = ()

    def _cl_zeros(self, in_shape, pads, dtype):
        n, c = in_shape[:2]
        return self.xp.zeros(
            (n,) + tuple(s + lo + hi for s, (lo, hi) in zip(in_shape[2:], pads)) + (c,), dtype=dtype
        )

    @staticmethod
    def _cl_crop(res, pads):
        idx = (slice(None),) + tuple(
            slice(lo, res.shape[1 + k] - hi) for k, (lo, hi) in enumerate(pads)
        )
        return _first(res[idx])

    # ------------------------------------------------------------ convolution
    def conv_im2col(self, kernel, stride, dilation, pads, groups):
        """Columns ``(G, N * prod(out), prod(kernel) * C/G)`` (one copy) of this input."""
        xp = self.xp
        v = _cl_padded(xp, self.array, pads)
        win = _cl_windows(xp, v, kernel, stride, dilation)
        n, c = win.shape[0], win.shape[-1]
        out = win.shape[1 : 1 + len(kernel)]
        rows = n * math.prod(out)
        width = math.prod(kernel) * (c // groups)  # explicit: an empty batch has no -1
        if groups == 1 and c == 1:
            # one channel: the columns are made kernel-offset-major, each offset's
            # column one contiguous copy, and returned as the transposed view (BLAS
            # reads either layout; the weight gradient's GEMM reads this one faster)
            cols = xp.empty((math.prod(kernel), n) + out, dtype=v.dtype)
            for k, sl in _offsets(kernel, out, stride, dilation):
                cols[k] = v[sl][..., 0]
            return self._new(cols.reshape(width, rows).T.reshape(1, rows, width))
        if groups == 1 and c < _SHORT_RUN:
            # few channels: the window copy's inner loop would run over a handful of
            # elements; one strided slice copy per kernel offset streams whole rows
            cols = xp.empty((rows, math.prod(kernel), c), dtype=v.dtype)
            dest = cols.reshape((n,) + out + (math.prod(kernel), c))
            for k, sl in _offsets(kernel, out, stride, dilation):
                dest[..., k, :] = v[sl]
            return self._new(cols.reshape(1, rows, width))
        if groups == 1:
            return self._new(xp.ascontiguousarray(win).reshape(1, rows, width))
        win = win.reshape(win.shape[:-1] + (groups, c // groups))
        win = xp.moveaxis(win, -2, 0)
        return self._new(xp.ascontiguousarray(win).reshape(groups, rows, width))

    def conv_col2im(self, in_shape, out, kernel, stride, dilation, pads, groups):
        """Adjoint of :meth:`conv_im2col`: sum the columns back into ``in_shape``."""
        n, c = in_shape[:2]
        cols = self.array
        g = groups
        # (G, N*P, K*Cg) -> (N, *out, K, C) with C = (G, Cg)
        cols = cols.reshape((g, n) + tuple(out) + (math.prod(kernel), c // g))
        cols = (
            self.xp.moveaxis(cols, 0, -2).reshape((n,) + tuple(out) + (math.prod(kernel), c))
            if g > 1
            else cols[0]
        )
        res = self._cl_zeros(in_shape, pads, cols.dtype)
        for k, sl in _offsets(kernel, out, stride, dilation):
            res[sl] += cols[(Ellipsis, k, slice(None))]
        return self._new(self._cl_crop(res, pads))

    def channel_sum(self):
        """The sum over every axis but axis 1 of this ``(N, C, *S)``: ``(C,)`` (a
        convolution's bias gradient).

        Where the channels-last view is contiguous (a convolution's output gradient
        usually is) it is a product with a vector of ones: BLAS streams the rows once,
        ten times faster than NumPy's reduction over the other axes, with a different
        (and, accumulating in blocks, smaller) rounding error.
        """
        xp, a = self.xp, self.array
        v = _last(a)
        if a.dtype.kind == "f" and a.dtype.itemsize >= 4 and v.flags.c_contiguous and a.size:
            rows = v.reshape(-1, a.shape[1])
            return self._new(xp.matmul(xp.ones(rows.shape[0], dtype=a.dtype), rows))
        return self._new(xp.sum(a, axis=(0,) + tuple(range(2, a.ndim))))

    # ---------------------------------------------------------------- pooling
    def _pool_views(self, kernel, stride, dilation, pads, value=0.0):
        v = _cl_padded(self.xp, self.array, pads, value)
        out = tuple(
            (s - d * (k - 1) - 1) // t + 1
            for s, k, t, d in zip(v.shape[1:-1], kernel, stride, dilation)
        )
        return v, out

    def pool_max(self, kernel, stride, dilation, pads):
        """Window maxima ``(N, C, *out)`` and the (first) arg-max offset in each window.

        Maxima come from a chain of ``maximum`` passes; the offset is then the number of
        leading window elements that differ from the maximum (boolean passes, ~10x
        cheaper than masked copies); a NaN window (no element equals its maximum)
        keeps offset 0.
        """
        xp = self.xp
        v, out = self._pool_views(kernel, stride, dilation, pads, -np.inf)
        views = [v[sl] for _, sl in _offsets(kernel, out, stride, dilation)]
        if len(views) == 1:
            res = xp.array(views[0])
        else:
            res = xp.maximum(views[0], views[1])
            for w in views[2:]:
                xp.maximum(res, w, out=res)
        itype = np.dtype(np.int8 if len(views) < 128 else np.int32).type
        idx = xp.zeros(res.shape, dtype=itype)
        if len(views) > 1:
            before = views[0] != res  # no maximum yet at offsets 0..k
            before &= res == res
            idx += before
            for w in views[1:-1]:
                before &= w != res
                idx += before
        return self._new(_first(res)), self._new(_first(idx))

    def pool_sum(self, kernel, stride, dilation, pads):
        """Window sums ``(N, C, *out)`` over the zero-padded input."""
        v, out = self._pool_views(kernel, stride, dilation, pads)
        res = None
        for _, sl in _offsets(kernel, out, stride, dilation):
            if res is None:
                res = self.xp.array(v[sl])
            else:
                res += v[sl]
        return self._new(_first(res))

    def pool_scatter(self, idx, in_shape, kernel, stride, dilation, pads):
        """Adjoint of pooling: this ``(N, C, *out)`` gradient sent back to the inputs.

        With ``idx`` (from :meth:`pool_max`) each window's value goes to its arg-max;
        without, to every element of the window (the adjoint of :meth:`pool_sum`).
        """
        xp = self.xp
        g = _last(self.array)
        out = g.shape[1:-1]
        ix = None if idx is None else _last(idx.array)
        disjoint = _disjoint(kernel, stride, dilation)
        if ix is not None and all(d == 1 and s == k for k, s, d in zip(kernel, stride, dilation)):
            # the windows tile the input: every covered element is written once below,
            # so only the rows/columns past the last window need zeros
            n, c = in_shape[:2]
            padded = tuple(s + lo + hi for s, (lo, hi) in zip(in_shape[2:], pads))
            res = xp.empty((n,) + padded + (c,), dtype=g.dtype)
            for d, (o, s) in enumerate(zip(out, stride)):
                res[(slice(None),) * (d + 1) + (slice(o * s, None),)] = 0
        else:
            res = self._cl_zeros(in_shape, pads, g.dtype)
        for k, sl in _offsets(kernel, out, stride, dilation):
            if ix is None:
                res[sl] += g
            elif disjoint:  # each input element is in one window at most: write
                xp.multiply(g, ix == k, out=res[sl])
            else:
                res[sl] += g * (ix == k)
        return self._new(self._cl_crop(res, pads))

    def pool_gather(self, idx, kernel, stride, dilation, pads):
        """The input value at each window's ``idx`` offset (adjoint of the max scatter)."""
        v, out = self._pool_views(kernel, stride, dilation, pads)
        ix = _last(idx.array)
        res = None
        for k, sl in _offsets(kernel, out, stride, dilation):
            term = v[sl] * (ix == k)
            res = term if res is None else res + term
        return self._new(_first(res))

    def pool_flat_indices(self, in_spatial, kernel, stride, dilation, pads):
        """These arg-max offsets as flat indices into the unpadded input (torch style)."""
        xp = self.xp
        i = self.array.astype(np.int64)
        flat = xp.zeros(i.shape, dtype=np.int64)
        out = i.shape[2:]
        nd = len(kernel)
        for d in range(nd):
            inner = math.prod(kernel[d + 1 :])
            koff = (i // inner) % kernel[d]
            pos = (
                xp.arange(out[d], dtype=np.int64).reshape((out[d],) + (1,) * (nd - 1 - d))
                * stride[d]
            )
            coord = pos + koff * dilation[d] - pads[d][0]
            flat = flat * in_spatial[d] + coord
        return self._new(flat)

    # ---------------------------------------------------------------- softmax
    def _shifted(self, axis):
        """``(z, s)``: ``z = x - max(x)`` and ``s = sum(exp(z))`` along ``axis``, run with
        floating-point errors quiet (as every kernel under ``Op.apply``)."""
        x = self.array
        m = x.max(axis=axis, keepdims=True)
        # an all -inf slice shifts by the lowest float, not by -inf (z stays -inf, s is
        # 0, so softmax is 0/0 and log_softmax -inf - log(0): NaN, as torch); a +inf or
        # NaN maximum makes the slice NaN, as in torch (inf - inf)
        self.xp.maximum(m, _lowest(x.dtype), out=m)
        with quiet():
            z = x - m
            return z, self.xp.exp(z).sum(axis=axis, keepdims=True)

    def softmax(self, axis):
        """``exp(x) / sum(exp(x))`` along ``axis``, shifted by the maximum."""
        if not self.array.size:  # nothing to normalise (the maximum has no identity)
            return self.copy()
        if not self.array.ndim:  # as one element (NumPy makes 0-d results scalars)
            return self._new(self.reshape((1,)).softmax(0).array.reshape(()))
        z, s = self._shifted(axis)
        e = self.xp.exp(z, out=z)
        with quiet():
            e /= s
        return self._new(e)

    def log_softmax(self, axis):
        """``x - logsumexp(x)`` along ``axis``, shifted by the maximum."""
        if not self.array.size:
            return self.copy()
        if not self.array.ndim:
            return self._new(self.reshape((1,)).log_softmax(0).array.reshape(()))
        z, s = self._shifted(axis)
        with quiet():
            z -= self.xp.log(s, out=s)
        return self._new(z)

    # ------------------------------------------------------------------- losses
    def binary_cross_entropy(self, target):
        """``(t - 1) max(log1p(-x), -100) - t max(log(x), -100)``, torch's formula: the
        ``-100`` floor keeps ``x = 0`` or ``1`` finite (``log(0)`` does not warn)."""
        xp, x, t = self.xp, self.array, target.array
        with np.errstate(divide="ignore"):
            log_x = xp.maximum(xp.log(x), -100)
            log_1mx = xp.maximum(xp.log1p(-x), -100)
        return self._new((t - 1) * log_1mx - t * log_x)


# Cephes ndtr.c rational approximations (S. L. Moshier), relative error ~1e-16.
_ERF_T = (
    9.60497373987051638749e0,
    9.00260197203842689217e1,
    2.23200534594684319226e3,
    7.00332514112805075473e3,
    5.55923013010394962768e4,
)
_ERF_U = (
    1.0,
    3.35617141647503099647e1,
    5.21357949780152679795e2,
    4.59432382970980127987e3,
    2.26290000613890934246e4,
    4.92673942608635921086e4,
)
_ERFC_P = (
    2.46196981473530512524e-10,
    5.64189564831068821977e-1,
    7.46321056442269912687e0,
    4.86371970985681366614e1,
    1.96520832956077098242e2,
    5.26445194995477358631e2,
    9.34528527171957607540e2,
    1.02755188689515710272e3,
    5.57535335369399327526e2,
)
_ERFC_Q = (
    1.0,
    1.32281951154744992508e1,
    8.67072140885989742329e1,
    3.54937778887819891062e2,
    9.75708501743205489753e2,
    1.82390916687909736289e3,
    2.24633760818710981792e3,
    1.65666309194161350182e3,
    5.57535340817727675546e2,
)


def _polyval(coeffs, x):
    acc = coeffs[0]
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def erf_array(xp, x):
    """The error function of an array, vectorised (Cephes ``erf``/``erfc``).

    ``|x| < 1``: ``x T(x²) / U(x²)``; ``1 <= |x| < 6``: ``1 - exp(-x²) P(|x|) / Q(|x|)``
    with the sign of ``x``; beyond, ``±1`` (erfc(6) < 3e-17). Computed in float64.
    """
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    a = x.astype(np.float64)
    ax = xp.minimum(xp.abs(a), 6.0)
    small = xp.minimum(ax, 1.0)
    z = small * small
    inner = small * _polyval(_ERF_T, z) / _polyval(_ERF_U, z)
    outer = 1.0 - xp.exp(-ax * ax) * _polyval(_ERFC_P, ax) / _polyval(_ERFC_Q, ax)
    res = xp.where(ax < 1.0, inner, outer)
    res = xp.where(xp.isnan(a), a, xp.copysign(res, a))
    return res.astype(dtype, copy=False)
