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

Every transform is separable: a 1-d transform along the rows, then along the columns.
The first stage runs on the whole image (tiles overlap, so the rows of all tiles are
strided slices), the second writes the 36 planes of ``(36, T, C)`` directly; the
matrices are applied as short factored sequences of ``add``/``subtract``/``multiply``
with ``out=`` (no 6-tap GEMMs, no temporaries per tile). All arrays are channels-last,
as in :mod:`nnkit.backends.nn_kernels`: ``(N, *S, C)`` views of ``(N, C, *S)`` Mats.

Rounding: the transforms multiply by 4, 5, 8 and by ``1/6``, ``1/24`` (in ``G``), so
float32 results differ from a direct convolution by more than its rounding: about
``1e-6`` relative to the output's magnitude on average, a few ``1e-5`` at most
(measured in ``tests/autograd/test_conv_winograd.py``); float64 agrees to ``~1e-14``.
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


#: Scratch buffers larger than this (bytes) are not kept between calls.
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


def _pad_into(dest, src, top, left):
    """``dest`` (N, H', W', C) = ``src`` (N, H, W, C) at (top, left), zeros around it."""
    h, w = src.shape[1:3]
    dest[:, :top] = 0
    dest[:, top + h :] = 0
    dest[:, top : top + h, :left] = 0
    dest[:, top : top + h, left + w :] = 0
    dest[:, top : top + h, left : left + w] = src
    return dest


def _tiles(in_shape, pads):
    """Tiles per spatial dimension of a convolution of ``in_shape`` padded by ``pads``."""
    return tiles(tuple(s + lo + hi - 2 for s, (lo, hi) in zip(in_shape[2:], pads)))


def _take(a, axis, start, count, step=TILE):
    """``count`` elements of ``a`` along ``axis`` from ``start`` every ``step``."""
    idx = [slice(None)] * a.ndim
    idx[axis] = slice(start, start + step * (count - 1) + 1, step)
    return a[tuple(idx)]


# -------------------------------------------------------- 1-d transforms
# Each applies a 6-point (or 4-point) matrix along one axis: ``d`` is the list of the
# transform's input arrays (strided views), ``o`` the list of output arrays it writes
# (views, written with ``out=``), ``t`` scratch arrays of the outputs' shape.


def _bt(xp, d, o, t):
    """``o[i] = sum_j BT[i, j] d[j]`` (17 passes instead of 28 for the plain sums)."""
    add, sub, mul = xp.add, xp.subtract, xp.multiply
    t1, t2 = t[0], t[1]
    mul(d[2], -4, out=t1)
    t1 += d[4]  # d4 - 4 d2
    mul(d[1], -4, out=t2)
    t2 += d[3]  # d3 - 4 d1
    add(t1, t2, out=o[1])
    sub(t1, t2, out=o[2])
    sub(d[4], d[2], out=t1)
    sub(d[3], d[1], out=t2)
    t2 *= 2  # 2 (d3 - d1)
    add(t1, t2, out=o[3])
    sub(t1, t2, out=o[4])
    sub(d[0], d[2], out=o[0])
    o[0] *= 4
    o[0] += t1  # 4 (d0 - d2) + (d4 - d2)
    sub(d[5], d[3], out=o[5])
    o[5] -= t2
    o[5] -= t2  # (d5 - d3) - 4 (d3 - d1)


def _at(xp, d, o, t):
    """``o[i] = sum_j AT[i, j] d[j]`` (6 inputs, 4 outputs)."""
    add, sub, mul = xp.add, xp.subtract, xp.multiply
    s12, d12, s34, d34 = t[0], t[1], t[2], t[3]
    add(d[1], d[2], out=s12)
    sub(d[1], d[2], out=d12)
    add(d[3], d[4], out=s34)
    sub(d[3], d[4], out=d34)
    add(d[0], s12, out=o[0])
    o[0] += s34
    mul(d34, 2, out=o[1])
    o[1] += d12
    mul(s34, 4, out=o[2])
    o[2] += s12
    mul(d34, 8, out=o[3])
    o[3] += d12
    o[3] += d[5]


def _a(xp, g, o, t):
    """``o[j] = sum_i AT[i, j] g[i]`` (``A`` = ``ATᵀ``: 4 inputs, 6 outputs)."""
    add, sub, mul = xp.add, xp.subtract, xp.multiply
    t1, t2 = t[0], t[1]
    add(g[0], g[2], out=t1)
    add(g[1], g[3], out=t2)
    add(t1, t2, out=o[1])
    sub(t1, t2, out=o[2])
    mul(g[2], 4, out=t1)
    t1 += g[0]  # g0 + 4 g2
    mul(g[3], 4, out=t2)
    t2 += g[1]
    t2 *= 2  # 2 g1 + 8 g3
    add(t1, t2, out=o[3])
    sub(t1, t2, out=o[4])
    xp.copyto(o[0], g[0])
    xp.copyto(o[5], g[3])


def _b_scatter(xp, v, dest, axis, n, t):
    """``dest`` (along ``axis``: ``4 n + 2`` positions) = the tiles' ``B v`` summed
    where they overlap: tile ``k``'s column ``j = sum_i BT[i, j] v[i]`` lands at
    ``4 k + j``, so columns 4 and 5 of tile ``k`` add to columns 0 and 1 of tile ``k+1``."""
    add, sub, mul = xp.add, xp.subtract, xp.multiply
    t1, t2, t3 = t[0], t[1], t[2]

    def at(j, count=n):
        return _take(dest, axis, j, count)

    def rest(a, lo, hi):  # tiles lo:hi of a tile-indexed array
        idx = [slice(None)] * a.ndim
        idx[axis] = slice(lo, hi)
        return a[tuple(idx)]

    sub(v[1], v[2], out=t1)  # q
    sub(v[3], v[4], out=t2)
    t2 *= 2  # 2 r
    mul(v[5], 4, out=t3)
    # column 1: -4 q - 2 r + 4 v5, column 3: q + 2 r - 5 v5
    c1 = at(1)
    sub(t3, t2, out=c1)
    c3 = at(3)
    add(t1, t2, out=c3)
    c3 -= t3
    c3 -= v[5]
    t1 *= 4
    c1 -= t1
    # column 4: v0 + P + S (into the next tile's column 0), column 2: -5 v0 - 4 P - S
    add(v[1], v[2], out=t1)  # P
    add(v[3], v[4], out=t2)  # S
    c2 = at(2)
    mul(t1, -4, out=c2)
    c2 -= t2
    mul(v[0], 5, out=t3)
    c2 -= t3
    t1 += t2
    t1 += v[0]  # column 4
    mul(v[0], 4, out=at(0))  # column 0
    xp.copyto(_take(dest, axis, 4 * n, 1), rest(t1, n - 1, n))
    xp.copyto(_take(dest, axis, 4 * n + 1, 1), rest(v[5], n - 1, n))
    if n > 1:
        c0 = at(4, n - 1)
        c0 += rest(t1, 0, n - 1)
        c5 = at(5, n - 1)
        c5 += rest(v[5], 0, n - 1)


class WinogradKernelsMixin:
    """Winograd F(4×4, 3×3) transforms of a Mat (see the module docstring)."""

    __slots__ = ()

    def wino_input(self, pads):
        """This ``(N, C, H, W)`` input as ``V = Bᵀ d B`` per tile: ``(36, N * th * tw, C)``.

        ``pads`` are the convolution's ``((top, bottom), (left, right))``; the input is
        zero-padded further at the bottom/right to whole tiles, ``4 * th + 2`` rows.
        """
        xp = self.xp
        x = self.array
        n, c, h, w = x.shape
        th, tw = _tiles(x.shape, pads)
        hp, wp = 4 * th + 2, 4 * tw + 2
        (top, _), (left, _) = pads
        v = x.transpose(0, 2, 3, 1)
        if (top, left, hp, wp) != (0, 0, h, w):  # 4 th + 2 >= top + h: the input fits
            v = _pad_into(_scratch(xp, 0, (n, hp, wp, c), x.dtype), v, top, left)
        s = _scratch(xp, 1, (_A, n, th, wp, c), x.dtype)
        t = _scratch(xp, 2, (2, n, th, wp, c), x.dtype)
        _bt(xp, [_take(v, 1, j, th) for j in range(_A)], s, t)
        res = xp.empty((_A, _A, n, th, tw, c), dtype=x.dtype)
        t = t[:, :, :, :tw]
        for i in range(_A):
            _bt(xp, [_take(s[i], 2, j, tw) for j in range(_A)], res[i], t)
        return self._new(res.reshape(_A * _A, n * th * tw, c))

    def wino_input_adjoint(self, in_shape, pads):
        """Adjoint of :meth:`wino_input`: this ``dV`` ``(36, T, C)`` as the gradient of
        the ``(N, C, H, W)`` input (``B dV Bᵀ`` per tile, summed over the overlaps)."""
        xp = self.xp
        n, c, h, w = in_shape
        th, tw = _tiles(in_shape, pads)
        hp, wp = 4 * th + 2, 4 * tw + 2
        dv = self.array.reshape(_A, _A, n, th, tw, c)
        q = _scratch(xp, 1, (_A, n, th, wp, c), dv.dtype)
        t = _scratch(xp, 2, (3, n, th, tw, c), dv.dtype)
        for i in range(_A):
            _b_scatter(xp, dv[i], q[i], 2, tw, t)
        res = xp.empty((n, hp, wp, c), dtype=dv.dtype)
        t = _scratch(xp, 2, (3, n, th, wp, c), dv.dtype)
        _b_scatter(xp, q, res, 1, th, t)
        (top, _), (left, _) = pads  # the tiles cover the padded input (4 th + 2 >= top + h)
        return self._new(res[:, top : top + h, left : left + w].transpose(0, 3, 1, 2))

    def wino_weight(self):
        """This ``(O, C, 3, 3)`` kernel as ``U = G g Gᵀ``: ``(36, C, O)``."""
        xp = self.xp
        w = self.array
        g = xp.asarray(G, dtype=w.dtype)
        o, c = w.shape[:2]
        u = xp.tensordot(g, w, axes=(1, 2))  # (6 i, O, C, 3 q)
        u = xp.tensordot(u, g, axes=(3, 1))  # (6 i, O, C, 6 k)
        return self._new(xp.ascontiguousarray(u.transpose(0, 3, 2, 1)).reshape(_A * _A, c, o))

    def wino_weight_adjoint(self):
        """Adjoint of :meth:`wino_weight`: this ``dU`` ``(36, C, O)`` as ``(O, C, 3, 3)``."""
        xp = self.xp
        du = self.array
        g = xp.asarray(G, dtype=du.dtype)
        du = du.reshape((_A, _A) + du.shape[1:])  # (6 i, 6 k, C, O)
        r = xp.tensordot(g, du, axes=(0, 0))  # (3 p, 6 k, C, O)
        r = xp.tensordot(r, g, axes=(1, 0))  # (3 p, C, O, 3 q)
        return self._new(xp.ascontiguousarray(r.transpose(2, 1, 0, 3)))

    def wino_output(self, n, out, bias=None):
        """``Y = Aᵀ M A`` per tile for this ``M`` ``(36, T, O)``: the ``(N, O, *out)``
        output (a view of the whole tiles, cropped), plus ``bias`` ``(O,)`` if given."""
        xp = self.xp
        m = self.array
        th, tw = tiles(out)
        o = m.shape[-1]
        m = m.reshape(_A, _A, n, th, tw, o)
        r = _scratch(xp, 1, (TILE, _A, n, th, tw, o), m.dtype)
        t = _scratch(xp, 2, (4, n, th, tw, o), m.dtype)
        for k in range(_A):
            _at(xp, [m[i, k] for i in range(_A)], [r[a, k] for a in range(TILE)], t)
        if bias is not None:
            # Aᵀ's column 1 is all ones: a constant added to every R[a, 1] (the stage's
            # results for kernel column 1) reaches every output of the tile once
            r[:, 1] += bias.array
        y = xp.empty((n, TILE * th, TILE * tw, o), dtype=m.dtype)
        for a in range(TILE):
            _at(xp, list(r[a]), [y[:, a::TILE, b::TILE] for b in range(TILE)], t)
        return self._new(y[:, : out[0], : out[1]].transpose(0, 3, 1, 2))

    def wino_output_adjoint(self):
        """Adjoint of :meth:`wino_output`: this output gradient ``(N, O, oh, ow)`` as
        ``dM = A dY Aᵀ`` per tile, ``(36, T, O)`` (zeros beyond the output's edge)."""
        xp = self.xp
        gy = self.array
        n, o, oh, ow = gy.shape
        th, tw = tiles((oh, ow))
        g = gy.transpose(0, 2, 3, 1)
        if (oh, ow) != (TILE * th, TILE * tw):
            g = _pad_into(_scratch(xp, 0, (n, TILE * th, TILE * tw, o), gy.dtype), g, 0, 0)
        r = _scratch(xp, 1, (_A, n, th, TILE * tw, o), gy.dtype)
        t = _scratch(xp, 2, (2, n, th, TILE * tw, o), gy.dtype)
        _a(xp, [g[:, a::TILE] for a in range(TILE)], r, t)
        res = xp.empty((_A, _A, n, th, tw, o), dtype=gy.dtype)
        t = t[:, :, :, :tw]
        for i in range(_A):
            _a(xp, [r[i][:, :, b::TILE] for b in range(TILE)], res[i], t)
        return self._new(res.reshape(_A * _A, n * th * tw, o))
