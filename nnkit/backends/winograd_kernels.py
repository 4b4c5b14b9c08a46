"""Winograd F(4×4, 3×3) convolution kernels of a Mat (Lavin & Gray 2015).

A mixin of :class:`~nnkit.backends.mat.ArrayMat`, written against ``self.xp`` so that
NumPy and CuPy share it. A 3×3, stride-1 cross-correlation of a zero-padded input
``d`` with a kernel ``g`` is computed tile by tile: each 6×6 input tile (tiles start
every 4 pixels, so neighbours overlap by 2) gives a 4×4 output tile

.. math::
    Y = A^T \\left[ \\sum_c (G g_c G^T) \\odot (B^T d_c B) \\right] A

with the matrices of :data:`BT`, :data:`G` and :data:`AT` (interpolation points
``0, ±1, ±2, ∞``). The channel sum for each of the 36 Winograd coordinates ``ξ`` is a
GEMM, so the convolution is one batched ``matmul`` ``(36, T, C) @ (36, C, O)`` over the
``T = N * tiles`` tiles: 4 multiplications per output pixel and channel pair instead of
9, plus transforms that cost a few passes over the data.

The kernels here are the transforms and their adjoints; the GEMMs are ``matmul``:

* :meth:`wino_input` ``V = Bᵀ d B`` per tile, ``(N, C, H, W)`` → ``(36, T, C)``;
  :meth:`wino_input_adjoint` its adjoint (``B dV Bᵀ`` summed back over the tile
  overlaps): the input gradient from ``dV = dM Uᵀ``;
* :meth:`wino_weight` ``U = G g Gᵀ`` ``(O, C, 3, 3)`` → ``(36, C, O)``;
  :meth:`wino_weight_adjoint` the weight gradient ``Gᵀ dU G`` from ``dU = Vᵀ dM``;
* :meth:`wino_output` ``Y = Aᵀ M A`` ``(36, T, O)`` → ``(N, O, oh, ow)``;
  :meth:`wino_output_adjoint` ``dM = A dY Aᵀ``, the gradient's transform.

``T`` counts the tiles in the order (tile row, tile column, image): the planes
``(36, T, C)`` are ``(6, 6, th, tw, N, C)``. Every transform is separable, a 1-d
transform along the rows then along the columns, and each stage is a small GEMM over
a tap-major layout: the input is copied once into ``(H, W, N, C)`` order, where the 6
rows of tile row ``t`` are a ``(6, W * N * C)`` matrix (an ``as_strided`` window), so
``Bᵀ`` applies to all of them as one ``(6, 6) @ (6, W * N * C)`` product; the columns
of the result are again rows of a tap-major array, and so on. A GEMM with 6 rows
streams its operands once, several times faster than the equivalent strided
elementwise passes. The GEMMs go in pieces of :data:`GEMM_COLUMNS` columns, and the
transforms' intermediates are per-thread scratch buffers kept between calls
(:data:`SCRATCH_KEEP`). Outputs (``V``, ``dM``, the output and the input gradient)
are fresh arrays; images are channels-last ``(N, *S, C)`` in memory, as in
:mod:`nnkit.backends.nn_kernels`, and returned as ``(N, C, *S)`` views.

Rounding: the transforms multiply by 4, 5, 8 and by ``1/6``, ``1/24`` (in ``G``), so
float32 results differ from a direct convolution by more than its rounding: measured
on the benchmark's convolution and others of 16 to 128 channels (relu'd inputs,
He-initialised kernels), the largest error of the output and of each gradient is
``3e-6`` to ``1.4e-5`` of the result's largest magnitude (the median, ``5e-7`` to
``4e-6`` relative), where im2col + GEMM stays within ``2e-7`` to ``4e-7``; float64
agrees to ``~1e-14``. ``tests/autograd/test_conv_winograd.py`` holds it to ``5e-5``.
"""

from __future__ import annotations

import math
import threading

import numpy as np

__all__ = ["AT", "BT", "G", "TILE", "WinogradKernelsMixin", "tiles"]

#: Output tile size ``m`` of F(m×m, 3×3); input tiles are ``m + 2`` wide.
TILE = 4
#: ``Bᵀ``: the input transform (6×6).
BT = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=np.float64,
)
#: ``G``: the kernel transform (6×3).
G = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ]
)
#: ``Aᵀ``: the output transform (4×6).
AT = np.array(
    [
        [1, 1, 1, 1, 1, 0],
        [0, 1, -1, 2, -2, 0],
        [0, 1, 1, 4, 4, 0],
        [0, 1, -1, 8, -8, 1],
    ],
    dtype=np.float64,
)
_A = TILE + 2  # input tile width (alpha)


def tiles(out):
    """Tiles per spatial dimension for an output of size ``out`` (``ceil(out / 4)``)."""
    return tuple(-(-o // TILE) for o in out)


#: Scratch buffers larger than this (bytes) are not kept between calls (three slots per
#: thread: at most three times this much is held).
SCRATCH_KEEP = 1 << 23
_local = threading.local()


def _scratch(xp, slot, shape, dtype):
    """An uninitialised array for use inside one kernel call, a view of a per-thread
    buffer (one per ``slot``) kept between calls, so that the transforms' large
    temporaries do not take fresh pages from the system on every call (a page fault
    costs about as much as writing the page several times over). NumPy only (CuPy's
    memory pool already reuses its blocks); buffers over :data:`SCRATCH_KEEP` bytes
    are allocated each time."""
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    if xp is not np or size > SCRATCH_KEEP:
        return xp.empty(shape, dtype=dtype)
    bufs = _local.__dict__.setdefault("bufs", {})
    buf = bufs.get(slot)
    if buf is None or buf.size < size:
        buf = bufs[slot] = np.empty(size, dtype=np.uint8)
    return buf[:size].view(dtype).reshape(shape)


def _tiles(in_shape, pads):
    """Tiles per spatial dimension of a convolution of ``in_shape`` padded by ``pads``."""
    return tiles(tuple(s + lo + hi - 2 for s, (lo, hi) in zip(in_shape[2:], pads)))


def _windows(xp, a, axis, count):
    """Overlapping windows along ``axis`` of a contiguous ``a``: ``count`` windows of
    6, one every 4 (axis ``axis`` becomes ``(count, 6)``; a view)."""
    st = a.strides
    shape = a.shape[:axis] + (count, _A) + a.shape[axis + 1 :]
    strides = st[:axis] + (TILE * st[axis], st[axis]) + st[axis + 1 :]
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def _overlap_add(xp, mat, src, dest, axis, count, tmp):
    """``dest`` (``4 count + 4`` positions along ``axis``, of which the last 2 are
    spare) = the windows' ``mat @ src`` summed where they overlap: window ``k``'s rows
    0-3 land at ``4 k + j``, rows 4-5 add to the next window's first two positions."""
    head = dest[(slice(None),) * axis + (slice(0, TILE * count),)]
    head = head.reshape(dest.shape[:axis] + (count, TILE) + dest.shape[axis + 1 :])
    _gemm(xp, mat[:TILE], src, head)
    dest[(slice(None),) * axis + (slice(TILE * count, None),)] = 0
    tail = dest[(slice(None),) * axis + (slice(TILE, None),)]
    tail = tail.reshape(dest.shape[:axis] + (count, TILE) + dest.shape[axis + 1 :])
    _gemm(xp, mat[TILE:], src, tmp)
    tail[(slice(None),) * (axis + 1) + (slice(0, 2),)] += tmp


#: The transforms' GEMMs are split into pieces of at most this many columns: a (6, n)
#: by (6, 6) product streams its operands once, and BLAS does so fastest when a piece's
#: rows fit in the cache (one product with n = 200 000 runs 2.5x slower than 6 pieces).
GEMM_COLUMNS = 1 << 15


def _gemm(xp, mat, src, out):
    """``out = mat @ src`` (batched over the leading axes), the columns in pieces."""
    n = src.shape[-1]
    p = first = max(1, -(-n // GEMM_COLUMNS))
    while n % p and p < 4 * first:
        p += 1
    if p > 1 and n % p == 0:
        src, out = (xp.moveaxis(a.reshape(a.shape[:-1] + (p, n // p)), -2, -3) for a in (src, out))
    xp.matmul(mat, src, out=out)


def _pieces(size):
    """``(offset, count)`` for each position in a tile: how many of the ``size``
    pixels along a dimension sit at that offset ``j`` (pixels ``j, j + 4, ...``)."""
    return [(j, len(range(j, size, TILE))) for j in range(TILE)]


_MATS: dict = {}


def _mats(xp, like):
    """``(BT, B, AT, A, G)`` as arrays of ``like``'s dtype on its device (cached)."""
    key = (type(like), like.dtype.str, str(getattr(like, "device", "")))
    m = _MATS.get(key)
    if m is None:
        m = _MATS[key] = tuple(
            xp.asarray(np.ascontiguousarray(a), dtype=like.dtype) for a in (BT, BT.T, AT, AT.T, G)
        )
    return m


class WinogradKernelsMixin:
    """Winograd F(4×4, 3×3) transforms of a Mat (see the module docstring)."""

    __slots__ = ()

    def wino_input(self, pads):
        """This ``(N, C, H, W)`` input as ``V = Bᵀ d B`` per tile: ``(36, T, C)``.

        ``pads`` are the convolution's ``((top, bottom), (left, right))``; the input is
        zero-padded further at the bottom/right to whole tiles, ``4 * th + 2`` rows.
        """
        xp = self.xp
        x = self.array
        n, c, h, w = x.shape
        th, tw = _tiles(x.shape, pads)
        hp, wp = TILE * th + 2, TILE * tw + 2
        (top, _), (left, _) = pads  # 4 th + 2 >= top + h: the input fits
        bt = _mats(xp, x)[0]
        p = _scratch(xp, 0, (hp, wp, n, c), x.dtype)  # (H, W, N, C): rows are contiguous
        p[:top] = 0
        p[top + h :] = 0
        p[top : top + h, :left] = 0
        p[top : top + h, left + w :] = 0
        p[top : top + h, left : left + w] = x.transpose(2, 3, 0, 1)
        s = _scratch(xp, 1, (th, _A, wp, n * c), x.dtype)
        _gemm(xp, bt, _windows(xp, p.reshape(hp, wp * n * c), 0, th), s.reshape(th, _A, -1))
        res = xp.empty((_A, _A, th, tw, n * c), dtype=x.dtype)
        _gemm(xp, bt, _windows(xp, s, 2, tw), res.transpose(2, 0, 3, 1, 4))
        return self._new(res.reshape(_A * _A, th * tw * n, c))

    def wino_input_adjoint(self, in_shape, pads):
        """Adjoint of :meth:`wino_input`: this ``dV`` ``(36, T, C)`` as the gradient of
        the ``(N, C, H, W)`` input (``B dV Bᵀ`` per tile, summed over the overlaps)."""
        xp = self.xp
        n, c, h, w = in_shape
        th, tw = _tiles(in_shape, pads)
        dv = self.array.reshape(_A, _A, th, tw, n * c)
        b = _mats(xp, dv)[1]
        wq = TILE * tw + 4
        q = _scratch(xp, 0, (th, _A, wq, n * c), dv.dtype)
        tmp = _scratch(xp, 2, (th, _A, tw, 2, n * c), dv.dtype)
        _overlap_add(xp, b, dv.transpose(2, 0, 3, 1, 4), q, 2, tw, tmp)
        d = _scratch(xp, 1, (TILE * th + 4, wq * n * c), dv.dtype)
        tmp = _scratch(xp, 2, (th, 2, wq * n * c), dv.dtype)
        _overlap_add(xp, b, q.reshape(th, _A, -1), d, 0, th, tmp)
        (top, _), (left, _) = pads  # the tiles cover the padded input (4 th + 2 >= top + h)
        d = d.reshape(TILE * th + 4, wq, n, c)[top : top + h, left : left + w]
        res = xp.empty((n, h, w, c), dtype=dv.dtype)
        res[...] = d.transpose(2, 0, 1, 3)
        return self._new(res.transpose(0, 3, 1, 2))

    def wino_weight(self):
        """This ``(O, C, 3, 3)`` kernel as ``U = G g Gᵀ``: ``(36, C, O)``."""
        xp = self.xp
        w = self.array
        g = _mats(xp, w)[4]
        o, c = w.shape[:2]
        u = xp.tensordot(g, w, axes=(1, 2))  # (6 i, O, C, 3 q)
        u = xp.tensordot(u, g, axes=(3, 1))  # (6 i, O, C, 6 k)
        return self._new(xp.ascontiguousarray(u.transpose(0, 3, 2, 1)).reshape(_A * _A, c, o))

    def wino_weight_adjoint(self):
        """Adjoint of :meth:`wino_weight`: this ``dU`` ``(36, C, O)`` as ``(O, C, 3, 3)``."""
        xp = self.xp
        du = self.array
        g = _mats(xp, du)[4]
        du = du.reshape((_A, _A) + du.shape[1:])  # (6 i, 6 k, C, O)
        r = xp.tensordot(g, du, axes=(0, 0))  # (3 p, 6 k, C, O)
        r = xp.tensordot(r, g, axes=(1, 0))  # (3 p, C, O, 3 q)
        return self._new(xp.ascontiguousarray(r.transpose(2, 1, 0, 3)))

    def wino_output(self, n, out, bias=None):
        """``Y = Aᵀ M A`` per tile for this ``M`` ``(36, T, O)``: the ``(N, O, *out)``
        output, plus ``bias`` ``(O,)`` if given."""
        xp = self.xp
        m = self.array
        th, tw = tiles(out)
        o = m.shape[-1]
        at = _mats(xp, m)[2]
        m = m.reshape(_A, _A, th, tw * n * o)
        res = xp.empty((n,) + tuple(out) + (o,), dtype=m.dtype)
        r = _scratch(xp, 1, (TILE, _A, tw * n, o), m.dtype)
        y = _scratch(xp, 2, (TILE, TILE, tw, n, o), m.dtype)
        for t in range(th):  # one tile row at a time: its intermediates stay in cache
            _gemm(xp, at, m[:, :, t].transpose(1, 0, 2), r.reshape(TILE, _A, -1).transpose(1, 0, 2))
            if bias is not None:
                # Aᵀ's column 1 is all ones: a constant added to the first stage's
                # results for tile column 1 reaches every output of the tile once
                r[:, 1] += bias.array
            _gemm(xp, at, r.reshape(TILE, _A, -1), y.reshape(TILE, TILE, -1))
            for a in range(TILE):
                if TILE * t + a < out[0]:
                    for b, rb in _pieces(out[1]):
                        res[:, TILE * t + a, b::TILE] = y[a, b, :rb].transpose(1, 0, 2)
        return self._new(res.transpose(0, 3, 1, 2))

    def wino_output_adjoint(self):
        """Adjoint of :meth:`wino_output`: this output gradient ``(N, O, oh, ow)`` as
        ``dM = A dY Aᵀ`` per tile, ``(36, T, O)`` (zeros beyond the output's edge)."""
        xp = self.xp
        gy = self.array
        n, o, oh, ow = gy.shape
        th, tw = tiles((oh, ow))
        a6 = _mats(xp, gy)[3]
        g = gy.transpose(0, 2, 3, 1)
        res = xp.empty((_A, _A, th, tw * n * o), dtype=gy.dtype)
        tl = _scratch(xp, 0, (TILE, TILE, tw, n, o), gy.dtype)
        r = _scratch(xp, 1, (_A, TILE, tw * n * o), gy.dtype)
        for t in range(th):  # one tile row at a time: its intermediates stay in cache
            for a in range(TILE):
                if TILE * t + a < oh:
                    for b, rb in _pieces(ow):
                        tl[a, b, :rb] = g[:, TILE * t + a, b::TILE].transpose(1, 0, 2)
                        tl[a, b, rb:] = 0
                else:
                    tl[a] = 0
            _gemm(xp, a6, tl.reshape(TILE, TILE, -1).transpose(1, 0, 2), r.transpose(1, 0, 2))
            _gemm(xp, a6, r, res[:, :, t])
        return self._new(res.reshape(_A * _A, th * tw * n, o))
