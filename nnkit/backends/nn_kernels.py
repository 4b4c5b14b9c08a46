"""Neural-network kernels of the Mat interface (convolution, pooling, softmax, erf).

A mixin of :class:`~nnkit.backends.mat.ArrayMat`: methods here are written against
``self.xp`` so that NumPy and CuPy share them. Spatial kernels work for any number
of spatial dimensions (1-d, 2-d, 3-d): an input is ``(N, C, *spatial)``, a geometry
is given as per-dimension tuples ``kernel``, ``stride``, ``dilation`` and ``pads``
(``(lo, hi)`` pairs).

Convolution is im2col + one GEMM in the "Caffe" layout: columns are
``(groups, C/groups * prod(kernel), N * prod(out))``, built from an ``as_strided``
window view with a single copy whose inner loop runs along the output rows. Pooling
and col2im loop over the kernel offsets (a handful), never over output pixels.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["NNKernelsMixin", "erf_array"]


def _window_view(xp, a, kernel, stride, dilation):
    """``(N, C, *out, *kernel)`` view of ``a`` ``(N, C, *S)`` (no copy)."""
    n, c = a.shape[:2]
    spatial, st = a.shape[2:], a.strides[2:]
    out = tuple((s - d * (k - 1) - 1) // t + 1
                for s, k, t, d in zip(spatial, kernel, stride, dilation))
    strides = a.strides[:2] + tuple(t * s for t, s in zip(stride, st)) + tuple(
        d * s for d, s in zip(dilation, st))
    return xp.lib.stride_tricks.as_strided(a, (n, c) + out + tuple(kernel), strides)


def _offset_slices(offset, out, stride, dilation):
    """Slices of a padded input hit by kernel ``offset`` (one per spatial dim)."""
    return tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                 for k, o, s, d in zip(offset, out, stride, dilation))


class NNKernelsMixin:
    __slots__ = ()

    # ---------------------------------------------------------------- helpers
    def _padded(self, pads, value=0.0):
        a = self.array
        if not any(lo or hi for lo, hi in pads):
            return a
        return self.xp.pad(a, ((0, 0), (0, 0)) + tuple(pads), mode="constant",
                           constant_values=value)

    def _zeros_padded(self, in_shape, pads, dtype):
        shape = tuple(in_shape[:2]) + tuple(
            s + lo + hi for s, (lo, hi) in zip(in_shape[2:], pads))
        return self.xp.zeros(shape, dtype=dtype)

    @staticmethod
    def _crop(a, pads):
        idx = (slice(None), slice(None)) + tuple(
            slice(lo, a.shape[2 + k] - hi) for k, (lo, hi) in enumerate(pads))
        return a[idx]

    # ------------------------------------------------------------ convolution
    def conv_im2col(self, kernel, stride, dilation, pads, groups):
        """Columns ``(G, C/G * prod(kernel), N * prod(out))`` of this ``(N, C, *S)`` Mat."""
        xp = self.xp
        win = _window_view(xp, self._padded(pads), kernel, stride, dilation)
        n, c = win.shape[:2]
        nd = len(kernel)
        out = win.shape[2:2 + nd]
        win = win.reshape((n, groups, c // groups) + win.shape[2:])
        # (G, Cg, *kernel, N, *out): the copy's inner loop runs along an output row
        perm = (1, 2) + tuple(range(3 + nd, 3 + 2 * nd)) + (0,) + tuple(range(3, 3 + nd))
        cols = xp.ascontiguousarray(win.transpose(perm))
        return self._new(cols.reshape(groups, -1, n * math.prod(out)))

    def conv_col2im(self, in_shape, out, kernel, stride, dilation, pads, groups):
        """Adjoint of :meth:`conv_im2col`: sum columns back into ``in_shape``."""
        n, c = in_shape[:2]
        nd = len(kernel)
        cols = self.array.reshape((c,) + tuple(kernel) + (n,) + tuple(out))
        # (C, *kernel, N, *out) -> (N, C, *out, *kernel) as a view
        cols = cols.transpose((1 + nd, 0) + tuple(range(2 + nd, 2 + 2 * nd))
                              + tuple(range(1, 1 + nd)))
        return self._new(self._crop(self._scatter_windows(
            cols, in_shape, pads, out, kernel, stride, dilation), pads))

    def _scatter_windows(self, cols, in_shape, pads, out, kernel, stride, dilation):
        """Padded zeros with ``cols[..., *offset]`` added at each kernel offset."""
        res = self._zeros_padded(in_shape, pads, cols.dtype)
        for off in itertools.product(*(range(k) for k in kernel)):
            sl = (slice(None), slice(None)) + _offset_slices(off, out, stride, dilation)
            res[sl] += cols[(Ellipsis,) + off]
        return res

    # ---------------------------------------------------------------- pooling
    def pool_max(self, kernel, stride, dilation, pads):
        """Window maxima ``(N, C, *out)`` and the (first) arg-max offset in each window."""
        xp = self.xp
        win = _window_view(xp, self._padded(pads, -np.inf), kernel, stride, dilation)
        offsets = list(itertools.product(*(range(k) for k in kernel)))
        out = xp.array(win[(Ellipsis,) + offsets[0]])
        idx = xp.zeros(out.shape, dtype=np.int8 if len(offsets) < 128 else np.int32)
        for k, off in enumerate(offsets[1:], 1):
            v = win[(Ellipsis,) + off]
            m = v > out
            xp.copyto(out, v, where=m)
            xp.copyto(idx, k, where=m, casting="unsafe")
        return self._new(out), self._new(idx)

    def pool_sum(self, kernel, stride, dilation, pads):
        """Window sums ``(N, C, *out)`` over the zero-padded input."""
        win = _window_view(self.xp, self._padded(pads), kernel, stride, dilation)
        offsets = itertools.product(*(range(k) for k in kernel))
        out = self.xp.array(win[(Ellipsis,) + next(offsets)])
        for off in offsets:
            out += win[(Ellipsis,) + off]
        return self._new(out)

    def pool_scatter(self, idx, in_shape, kernel, stride, dilation, pads):
        """Adjoint of pooling: this ``(N, C, *out)`` gradient sent back to the inputs.

        With ``idx`` (from :meth:`pool_max`) each window's value goes to its arg-max;
        without, to every element of the window (the adjoint of :meth:`pool_sum`).
        """
        g = self.array
        out = g.shape[2:]
        res = self._zeros_padded(in_shape, pads, g.dtype)
        zero = self.xp.zeros((), g.dtype)
        offsets = itertools.product(*(range(k) for k in kernel))
        for k, off in enumerate(offsets):
            sl = (slice(None), slice(None)) + _offset_slices(off, out, stride, dilation)
            res[sl] += g if idx is None else self.xp.where(idx.array == k, g, zero)
        return self._new(self._crop(res, pads))

    def pool_gather(self, idx, kernel, stride, dilation, pads):
        """The input value at each window's ``idx`` offset (adjoint of the max scatter)."""
        xp = self.xp
        win = _window_view(xp, self._padded(pads), kernel, stride, dilation)
        out = None
        zero = xp.zeros((), self.dtype)
        for k, off in enumerate(itertools.product(*(range(k) for k in kernel))):
            v = xp.where(idx.array == k, win[(Ellipsis,) + off], zero)
            out = v if out is None else out + v
        return self._new(out)

    def pool_flat_indices(self, in_spatial, kernel, stride, dilation, pads):
        """These arg-max offsets as flat indices into the unpadded input (torch style)."""
        xp = self.xp
        i = self.array.astype(np.int64)
        flat = xp.zeros(i.shape, dtype=np.int64)
        out = i.shape[2:]
        nd = len(kernel)
        for d in range(nd):
            inner = math.prod(kernel[d + 1:])
            koff = (i // inner) % kernel[d]
            pos = xp.arange(out[d], dtype=np.int64).reshape(
                (out[d],) + (1,) * (nd - 1 - d)) * stride[d]
            coord = pos + koff * dilation[d] - pads[d][0]
            flat = flat * in_spatial[d] + coord
        return self._new(flat)

    # ---------------------------------------------------------------- softmax
    def _shifted(self, axis):
        xp = self.xp
        x = self.array
        m = xp.max(x, axis=axis, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros((), x.dtype))
        z = x - m
        s = xp.sum(xp.exp(z), axis=axis, keepdims=True)
        # an all -inf slice gives NaN (as torch) without a 0/0 warning
        return z, xp.where(s > 0, s, xp.asarray(np.nan, dtype=s.dtype))

    def softmax(self, axis):
        """``exp(x) / sum(exp(x))`` along ``axis``, shifted by the maximum."""
        z, s = self._shifted(axis)
        e = self.xp.exp(z)
        e /= s
        return self._new(e)

    def log_softmax(self, axis):
        """``x - logsumexp(x)`` along ``axis``, shifted by the maximum."""
        z, s = self._shifted(axis)
        z -= self.xp.log(s)
        return self._new(z)

    # -------------------------------------------------------------------- erf
    def erf(self):
        return self._new(erf_array(self.xp, self.array))


# Cephes ndtr.c rational approximations (S. L. Moshier), relative error ~1e-16.
_ERF_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
          7.00332514112805075473E3, 5.55923013010394962768E4)
_ERF_U = (1.0, 3.35617141647503099647E1, 5.21357949780152679795E2,
          4.59432382970980127987E3, 2.26290000613890934246E4, 4.92673942608635921086E4)
_ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q = (1.0, 1.32281951154744992508E1, 8.67072140885989742329E1,
           3.54937778887819891062E2, 9.75708501743205489753E2, 1.82390916687909736289E3,
           2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2)


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
