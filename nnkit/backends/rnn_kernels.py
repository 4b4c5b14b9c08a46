"""Fused recurrent kernels (RNN tanh/relu, LSTM, GRU), written against ``xp`` so that
NumPy and CuPy share them.

:func:`rnn_forward` runs one layer and direction over a whole sequence: every step's
input is projected by GEMM (GRU, RNN: one GEMM for the whole sequence), each step does
one GEMM (``h @ W_hhᵀ``) and a few in-place elementwise passes for the gates. It keeps
the gate activations (and the cell states for LSTM) in an :class:`RNNCache`;
:func:`rnn_backward` runs backpropagation through time from them: one GEMM per step
for the recurrence, then GEMMs for the input gradient and the two weight gradients
over all steps at once.

Formulas and gate order are PyTorch's: LSTM ``(i, f, g, o)``, ``c' = f*c + i*g``,
``h' = o*tanh(c')``; GRU ``(r, z, n)``, ``n = tanh(W_in x + b_in + r*(W_hn h + b_hn))``,
``h' = n + z*(h - n)``; RNN ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``. Arrays are
time-major, ``x`` ``(T, B, I)``, states ``(B, H)``. A sigmoid gate is computed as
``(1 + tanh(z / 2)) / 2``, the halving folded into copies of its weight rows (exact: a
power of two), so that one ``tanh`` pass covers all of a step's gates; the results
differ from ``1 / (1 + exp(-z))`` by float rounding only.

The LSTM runs gate-major (see :func:`_lstm_forward`): a step's gates are four
contiguous ``(B, H)`` blocks, so that no elementwise pass reads a column slice; each
gate's GEMMs are separate and small (the input projection one step at a time, just
before the step reads it; the per-step ones in row blocks of the batch small enough
for OpenBLAS's unpacked small-matrix kernel), the biases enter the input projection as
a column of ones, and the backward computes the factors of its gradients that do not
depend on them a span of steps at a time. Its results differ from a row-major,
whole-width computation (the per-step layers', the kernel before) by float rounding
only.

Work buffers (the backward's and, once their graph is freed, the forward's) are reused
from a bounded pool of free NumPy arrays (see :func:`_empty`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["MODES", "RNNCache", "rnn_forward", "rnn_backward"]

# gates per mode
MODES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}

# Free NumPy work buffers by (shape, dtype): the backward's (used and given back within
# one call) and the forward's that an RNNCache owns (given back when it dies or hands
# them on, see RNNCache); no result ever views them. Memory the C allocator hands back
# to the system costs page faults when it is taken again, a noticeable part of a small
# LSTM step. Bounded: arrays up to _POOL_ARRAY_BYTES, _POOL_BYTES in all. CuPy keeps
# its own memory pool.
_POOL: dict = {}
_POOL_ARRAY_BYTES = 16 << 20
_POOL_BYTES = 64 << 20
_pooled_bytes = [0]


def _empty(xp, shape, dt):
    """An uninitialised array, from the free buffers where one fits."""
    if xp is np:
        free = _POOL.get((shape, dt.str))
        if free:
            try:
                a = free.pop()
            except IndexError:  # another thread took it
                pass
            else:
                _pooled_bytes[0] -= a.nbytes
                return a
    return xp.empty(shape, dt)


def _give_back(*arrays) -> None:
    """Keep ``arrays`` (no longer referenced elsewhere) for a later :func:`_empty`."""
    for a in arrays:
        if a is None or not isinstance(a, np.ndarray):
            continue
        n = a.nbytes
        if n <= _POOL_ARRAY_BYTES and _pooled_bytes[0] + n <= _POOL_BYTES:
            _POOL.setdefault((a.shape, a.dtype.str), []).append(a)
            _pooled_bytes[0] += n


class _Buffers:
    """Work arrays taken from the free buffers that one :class:`RNNCache` owns."""

    __slots__ = ("arrays", "owner")

    def __init__(self, *arrays) -> None:
        self.arrays, self.owner = arrays, None


class RNNCache:
    """What the backward needs besides the inputs and the output sequence.

    ``gates``: the gate activations (LSTM ``(T, 4, B, H)``, see :func:`_lstm_forward`;
    GRU ``(T, B, 3H)``); ``cells`` and ``tanh_c``: LSTM's cell states ``(T + 1, B, H)``
    and their tanh ``(T, B, H)``; ``states``: LSTM's hidden states ``(T + 1, B, H)``
    (the output sequence views them); ``x_in``: LSTM's inputs with a column of ones
    ``(T·B, I + 1)``; ``rec``: GRU's ``h @ W_hhᵀ + b_hh`` ``(T, B, G)``.

    The arrays listed in ``buffers`` came from the free buffers and go back there when
    the cache dies (after the backward, which reads them, once the graph is freed) or
    when another cache's replace them (a replay of ``nnkit.compile`` refills the
    recorded cache with the new call's arrays, ``buffers`` last): the cache that holds
    a ``_Buffers`` last owns it. No result of the kernels views them.
    """

    __slots__ = (
        "mode", "reverse", "gates", "cells", "tanh_c", "rec", "states", "x_in", "buffers",
    )  # fmt: skip

    def __init__(self, mode, reverse, gates, cells=None, tanh_c=None, rec=None, states=None,
                 x_in=None, buffers=None) -> None:  # fmt: skip
        self.mode, self.reverse, self.gates, self.cells = mode, reverse, gates, cells
        self.tanh_c, self.rec, self.states, self.x_in = tanh_c, rec, states, x_in
        self.buffers = buffers

    def __setattr__(self, name, value) -> None:
        if name != "buffers":
            object.__setattr__(self, name, value)
            return
        old = getattr(self, "buffers", None)
        if value is not None:
            value.owner = id(self)
        object.__setattr__(self, name, value)
        if old is not None and old is not value:
            self._release(old)

    def _release(self, buffers, give_back=None) -> None:
        if buffers.owner == id(self):
            arrays, buffers.arrays, buffers.owner = buffers.arrays, (), None
            (give_back or _give_back)(*arrays)

    def __del__(self, _give_back=_give_back) -> None:
        buffers = getattr(self, "buffers", None)
        if buffers is not None:
            try:
                self._release(buffers, _give_back)
            except Exception:  # interpreter shutdown: the pool may be gone already
                pass


# Multiply-adds up to which OpenBLAS runs a GEMM with its small-matrix kernel, which
# reads the operands in place: a larger per-step GEMM packs the weights at every call,
# so it is cut into row blocks of the batch that stay under this (for batch 64, hidden
# 128: about 20 % faster for LSTM's and GRU's, 15 % for RNN's; blocks of fewer than 8
# rows would be slower).
_SMALL_GEMM = 1_000_000


def _row_blocks(xp, batch, k, n):
    """How a per-step GEMM ``(batch, k) @ (k, n)`` splits the batch: 1 for one GEMM,
    else a block count dividing ``batch`` (NumPy only)."""
    if xp is not np or batch * k * n <= _SMALL_GEMM:
        return 1
    for blocks in range(2, batch // 8 + 1):
        if batch % blocks == 0 and (batch // blocks) * k * n <= _SMALL_GEMM:
            return blocks
    return 1


def _split_rows(a, blocks, axis):
    """``a`` with its batch axis ``axis`` split into ``blocks`` row blocks (a view of
    ``a``, or of a copy where its strides do not allow one), for GEMMs that broadcast
    over the blocks (see :func:`_row_blocks`)."""
    s = a.shape
    return a.reshape(s[:axis] + (blocks, s[axis] // blocks) + s[axis + 1 :])


def _step_matmul(xp, a, w, out, blocks):
    """``out = a @ w`` (``(B, K) @ (K, N)``, ``out`` contiguous) in ``blocks`` row blocks."""
    if blocks == 1:
        xp.matmul(a, w, out=out)
    else:
        xp.matmul(_split_rows(a, blocks, 0), w, out=_split_rows(out, blocks, 0))


def _half_rows(xp, w, rows, dt):
    """``w`` with its first ``rows`` rows (or entries) halved: a sigmoid gate's
    pre-activation is computed as ``z / 2`` (exactly: a power of two), since
    ``sigmoid(z) = (1 + tanh(z / 2)) / 2`` takes one cheap pass over the gates."""
    w = xp.array(w, dtype=dt, copy=True)
    w[:rows] *= 0.5
    return w


def _arrays(*mats):
    return [None if m is None else m.array for m in mats]


def rnn_forward(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=False):
    """One layer and direction over the sequence ``x`` ``(T, B, I)`` (Mats in, arrays out).

    Args:
        mode: ``'lstm'``, ``'gru'``, ``'rnn_tanh'`` or ``'rnn_relu'``.
        x, h0, c0: the inputs and initial states (``c0`` only for LSTM, else None).
        w_ih, w_hh: ``(G·H, I)`` and ``(G·H, H)``, gates stacked in PyTorch's order.
        b_ih, b_hh: ``(G·H,)`` biases, or both None.
        reverse: run from the last step to the first.

    Returns:
        ``(output (T, B, H), h_n, c_n or None, RNNCache)``.
    """
    xp = x.xp
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = _arrays(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    steps, batch, _ = x.shape
    hidden = w_hh.shape[1]
    gsize = w_ih.shape[0]
    dt = x.dtype
    h2 = 2 * hidden
    bias = None if b_ih is None else (b_ih if mode == "gru" else b_ih + b_hh)
    if mode == "lstm":
        return _lstm_forward(xp, x, h0, c0, w_ih, w_hh, bias, reverse)
    if mode == "gru":  # (r, z) are sigmoids; n reads h @ W_hnᵀ + b_hn unscaled
        w_ih, w_hh = _half_rows(xp, w_ih, h2, dt), _half_rows(xp, w_hh, h2, dt)
        bias = None if bias is None else _half_rows(xp, bias, h2, dt)
        b_hh = None if b_hh is None else _half_rows(xp, b_hh, h2, dt)
    # the gates' pre-activations of every step (RNN: its output, computed in place)
    gru = mode == "gru"
    shape = (steps, batch, gsize)
    proj = _empty(xp, shape, dt) if gru else xp.empty(shape, dt)
    xp.matmul(x.reshape(steps * batch, x.shape[2]), w_ih.T, out=proj.reshape(-1, gsize))
    if bias is not None:
        proj += bias
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    w_hh_t = xp.ascontiguousarray(w_hh.T)  # a transposed operand makes the GEMM slower
    blocks = _row_blocks(xp, batch, hidden, gsize)
    h = h0
    if gru:
        out = xp.empty((steps, batch, hidden), dt)
        rec_all = _empty(xp, shape, dt)
        cache = RNNCache(mode, reverse, proj, rec=rec_all, buffers=_Buffers(proj, rec_all))
        tmp = xp.empty((batch, hidden), dt)
        for t in order:
            z = proj[t]
            rec = rec_all[t]
            _step_matmul(xp, h, w_hh_t, rec, blocks)
            if b_hh is not None:
                rec += b_hh
            rz = z[:, :h2]
            rz += rec[:, :h2]
            xp.tanh(rz, out=rz)
            rz *= 0.5
            rz += 0.5
            n = z[:, h2:]
            xp.multiply(z[:, :hidden], rec[:, h2:], out=tmp)
            n += tmp
            xp.tanh(n, out=n)
            ho = out[t]
            xp.subtract(h, n, out=ho)
            ho *= z[:, hidden:h2]
            ho += n
            h = ho
        return out, h.copy(), None, cache
    cache = RNNCache(mode, reverse, proj)
    rec = xp.empty((batch, gsize), dt)
    for t in order:
        z = proj[t]
        _step_matmul(xp, h, w_hh_t, rec, blocks)
        z += rec
        if mode == "rnn_tanh":
            xp.tanh(z, out=z)
        else:
            xp.maximum(z, 0, out=z)
        h = z
    return proj, h.copy(), None, cache


def rnn_backward(cache, x, h0, c0, w_ih, w_hh, out, g_out, g_h, g_c, needs, has_bias):
    """Backpropagation through time for one :func:`rnn_forward` call (Mats in, arrays
    out).

    Args:
        cache: the forward's :class:`RNNCache`.
        x, h0, c0, w_ih, w_hh: the forward's inputs; ``out`` its output sequence.
        g_out, g_h, g_c: the gradients of the output sequence, ``h_n`` and ``c_n``
            (``g_c`` None except for LSTM).
        needs: which of ``(x, h0, c0, w_ih, w_hh, b_ih, b_hh)`` want a gradient.
        has_bias: whether the forward had biases.

    Returns:
        ``(dx, dh0, dc0, dw_ih, dw_hh, db_ih, db_hh)``, None where not needed.
    """
    xp = x.xp
    x, h0, c0, w_ih, w_hh, out, g_out, g_h, g_c = _arrays(
        x, h0, c0, w_ih, w_hh, out, g_out, g_h, g_c
    )
    if cache.mode == "lstm":
        return _lstm_backward(xp, cache, x, w_ih, w_hh, g_out, g_h, g_c, needs, has_bias)
    mode, reverse, gates = cache.mode, cache.reverse, cache.gates
    steps, batch, n_in = x.shape
    hidden = w_hh.shape[1]
    gsize = w_ih.shape[0]
    dt = gates.dtype
    h2 = 2 * hidden
    order = range(steps) if reverse else range(steps - 1, -1, -1)
    step = 1 if reverse else -1  # the previous step's offset in time

    def prev(t):
        p = t + step
        return (0 <= p < steps), p

    dz_all = _empty(xp, (steps, batch, gsize), dt)
    blocks = _row_blocks(xp, batch, gsize, hidden)  # dh = dz @ W_hh
    dh = xp.array(g_h, dtype=dt, copy=True)
    a = xp.empty((batch, hidden), dt)
    b = xp.empty((batch, hidden), dt)
    dc = None
    dhid_all = dz_all
    if mode == "gru":
        dhid_all = _empty(xp, (steps, batch, gsize), dt)
        rec_all = cache.rec
        for t in order:
            dh += g_out[t]
            z = gates[t]
            r, u, n = z[:, :hidden], z[:, hidden:h2], z[:, h2:]
            has_prev, p = prev(t)
            h_prev = out[p] if has_prev else h0
            dx_t, dhid = dz_all[t], dhid_all[t]
            dn = dx_t[:, h2:]
            xp.subtract(1, u, out=a)
            a *= dh
            xp.multiply(n, n, out=b)
            xp.subtract(1, b, out=b)
            xp.multiply(a, b, out=dn)  # through n's tanh
            xp.multiply(dn, r, out=dhid[:, h2:])
            xp.subtract(1, r, out=a)
            a *= r
            a *= rec_all[t][:, h2:]
            xp.multiply(dn, a, out=dhid[:, :hidden])
            xp.subtract(1, u, out=a)
            a *= u
            xp.subtract(h_prev, n, out=b)
            b *= a
            xp.multiply(dh, b, out=dhid[:, hidden:h2])
            dh *= u
            _step_matmul(xp, dhid, w_hh, a, blocks)
            dh += a
        dz_all[:, :, :h2] = dhid_all[:, :, :h2]
    else:
        relu = mode == "rnn_relu"
        for t in order:
            dh += g_out[t]
            y = out[t]
            dz = dz_all[t]
            if relu:
                xp.multiply(dh, y > 0, out=dz)
            else:
                xp.multiply(y, y, out=dz)
                xp.subtract(1, dz, out=dz)
                dz *= dh
            _step_matmul(xp, dz, w_hh, dh, blocks)
    n_x, n_h0, n_c0, n_wih, n_whh, n_bih, n_bhh = needs
    flat = dz_all.reshape(steps * batch, gsize)
    dx = xp.matmul(flat, w_ih).reshape(steps, batch, n_in) if n_x else None
    dw_ih = xp.matmul(flat.T, x.reshape(steps * batch, n_in)) if n_wih else None
    dw_hh = None
    if n_whh:
        # the state each step read: out[t - 1] (out[t + 1] reversed), h0 at the first
        first = steps - 1 if reverse else 0
        dw_hh = xp.matmul(dhid_all[first].T, h0)
        if steps > 1:
            d_rest = dhid_all[:-1] if reverse else dhid_all[1:]
            h_rest = out[1:] if reverse else out[:-1]
            dw_hh += xp.matmul(
                d_rest.reshape(-1, gsize).T, h_rest.reshape((steps - 1) * batch, hidden)
            )
    db_ih = db_hh = None
    if has_bias and (n_bih or n_bhh):
        db_ih = flat.sum(axis=0) if n_bih else None
        if n_bhh:
            db_hh = (
                dhid_all.reshape(steps * batch, gsize).sum(axis=0)
                if mode == "gru"
                else (flat.sum(axis=0) if db_ih is None else db_ih.copy())
            )
    _give_back(dz_all, None if dhid_all is dz_all else dhid_all)
    return dx, dh if n_h0 else None, dc if n_c0 else None, dw_ih, dw_hh, db_ih, db_hh


# LSTM, gate-major: each step's gates are four contiguous (B, H) blocks (every
# elementwise pass runs over whole blocks; a column slice of a (B, 4H) row would cost
# NumPy one inner loop per row), in the order (o, i, f, g): the sigmoids o, i, f
# together (one pass turns their tanh into sigmoids), and i, f, g, whose gradients all
# scale the cell's gradient, together (one broadcast pass in the backward).
_PERM = [3, 0, 1, 2]  # PyTorch's (i, f, g, o) row block of each internal gate
_SPAN = 8  # time steps per run of the backward's gradient-independent passes


def _gate_major(xp, w, hidden, out, halve=False, transpose=False):
    """``(4H, K)`` weight rows (or ``(4H,)`` biases) in PyTorch's gate order written
    into ``out`` ``(4, H, K)`` (``(4, K, H)`` with ``transpose``; ``(4, H)``) in the
    internal order; ``halve`` halves the sigmoid gates (exact: a power of two)."""
    w4 = w.reshape((4, hidden) + w.shape[1:])
    for k, j in enumerate(_PERM):
        src = w4[j].T if transpose else w4[j]
        if halve and k < 3:
            xp.multiply(src, 0.5, out=out[k])
        else:
            out[k][...] = src
    return out


def _to_torch_order(xp, g4, dt):
    """A ``(4, H, ...)`` gradient in the internal gate order as a fresh ``(4H, ...)``
    array in PyTorch's order (made whole, so the engine can keep it as the ``.grad``)."""
    res = xp.empty((g4.shape[0] * g4.shape[1],) + g4.shape[2:], dt)
    res4 = res.reshape(g4.shape)
    for k, j in enumerate(_PERM):
        res4[j] = g4[k]
    return res


def _lstm_forward(xp, x, h0, c0, w_ih, w_hh, bias, reverse):
    """:func:`rnn_forward` for ``'lstm'`` (arrays in; ``bias`` is ``b_ih + b_hh``).

    ``gates`` ``(T, 4, B, H)`` holds each step's ``(o, i, f, g)`` activations (each
    step first writes its input projection there, small GEMMs whose results are still
    in cache for the gate passes, then adds ``h @ W_k``); ``states`` and ``cells``
    ``(T + 1, B, H)`` the hidden and cell states, the initial ones at the end where the
    sequence starts (``out`` views ``states``); ``x_in`` the inputs with a column of
    ones, ``(T·B, I + 1)``.
    """
    steps, batch, n_in = x.shape
    hidden = w_hh.shape[1]
    dt = x.dtype
    n = steps * batch
    # the input projection of every step, the bias through a column of ones
    k_in = n_in + (bias is not None)
    w_in = _empty(xp, (4, k_in, hidden), dt)
    _gate_major(xp, w_ih, hidden, w_in[:, :n_in], halve=True, transpose=True)
    if bias is not None:
        _gate_major(xp, bias, hidden, w_in[:, n_in], halve=True)
        x_in = _empty(xp, (n, k_in), dt)
        x_in.reshape(steps, batch, k_in)[:, :, :n_in] = x
        x_in[:, n_in] = 1
    else:
        x_in = x.reshape(n, n_in)
    gates = _empty(xp, (steps, 4, batch, hidden), dt)
    x_steps = x_in.reshape(steps, batch, k_in)
    w_rec = _gate_major(xp, w_hh, hidden, _empty(xp, (4, hidden, hidden), dt), True, True)
    # the states, the initial one at the end where the sequence starts: step t reads
    # index t + 1 - d and writes t + d
    hs = xp.empty((steps + 1, batch, hidden), dt)
    cs = _empty(xp, (steps + 1, batch, hidden), dt)
    tanh_c = _empty(xp, (steps, batch, hidden), dt)
    d = 0 if reverse else 1
    hs[steps * (1 - d)] = h0
    cs[steps * (1 - d)] = c0
    rec = xp.empty((4, batch, hidden), dt)
    ig = xp.empty((batch, hidden), dt)
    # rec[k] = h @ W_k for each gate k, in row blocks of the batch
    blocks = _row_blocks(xp, batch, hidden, hidden)
    h_in = _split_rows(hs, blocks, 1)[:, None]
    w_blk, rec_blk = w_rec[:, None], _split_rows(rec, blocks, 1)
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        z = gates[t]  # the input projection, then the recurrence (small GEMMs)
        xp.matmul(x_steps[t], w_in, out=z)
        xp.matmul(h_in[t + 1 - d], w_blk, out=rec_blk)
        z += rec
        xp.tanh(z, out=z)
        sig = z[:3]  # (1 + tanh(z / 2)) / 2
        sig *= 0.5
        sig += 0.5
        o, i, f, g = z
        c = cs[t + d]
        xp.multiply(f, cs[t + 1 - d], out=c)
        xp.multiply(i, g, out=ig)
        c += ig
        tc = tanh_c[t]
        xp.tanh(c, out=tc)
        xp.multiply(o, tc, out=hs[t + d])
    _give_back(w_in, w_rec)
    owned = (gates, cs, tanh_c) if bias is None else (gates, cs, tanh_c, x_in)
    cache = RNNCache("lstm", reverse, gates, cs, tanh_c, None, hs, x_in, _Buffers(*owned))
    last = steps * d
    out = hs[1:] if d else hs[:-1]
    return out, hs[last].copy(), cs[last].copy(), cache


def _lstm_factors(xp, a, gates, c_prev, tc):
    """What the gradients of a span of steps ``(m, ...)`` are made of, independent of
    them: ``a[:, 0] = tanh(c)·σ'(o)``, ``a[:, 1] = g·σ'(i)``, ``a[:, 2] = c₋₁·σ'(f)``,
    ``a[:, 3] = i·(1 - g²)`` (the pre-activations' gradients are these times ``dh``,
    ``dc``, ``dc``, ``dc``) and ``a[:, 4] = o·(1 - tanh(c)²)`` (``dh``'s part of
    ``dc``), ``σ' = σ(1 - σ)``."""
    s = gates[:, :3]
    xp.subtract(1, s, out=a[:, :3])
    a[:, :3] *= s
    o, i, g = gates[:, 0], gates[:, 1], gates[:, 3]
    a[:, 0] *= tc
    a[:, 1] *= g
    a[:, 2] *= c_prev
    xp.multiply(g, g, out=a[:, 3])
    xp.subtract(1, a[:, 3], out=a[:, 3])
    a[:, 3] *= i
    xp.multiply(tc, tc, out=a[:, 4])
    xp.subtract(1, a[:, 4], out=a[:, 4])
    a[:, 4] *= o


def _lstm_backward(xp, cache, x, w_ih, w_hh, g_out, g_h, g_c, needs, has_bias):
    """:func:`rnn_backward` for ``'lstm'`` (arrays in): per step, ``dh`` and ``dc``
    times the factors of :func:`_lstm_factors` give the gates' gradients ``dz``
    (gate-major, ``(4, T, B, H)``), and ``Σ_k dz_k @ W_k`` the previous state's; then
    the weight gradients (the biases' from the column of ones; ``W_hh``'s as its
    transpose, the faster GEMM) and ``dx`` over all steps at once, one GEMM per gate,
    written in PyTorch's gate order."""
    reverse, gates, cs, tanh_c, hs = (
        cache.reverse, cache.gates, cache.cells, cache.tanh_c, cache.states
    )  # fmt: skip
    steps, batch, n_in = x.shape
    hidden = w_hh.shape[1]
    dt = gates.dtype
    n_x, n_h0, n_c0, n_wih, n_whh, n_bih, n_bhh = needs
    d = 0 if reverse else 1
    order = range(steps) if reverse else range(steps - 1, -1, -1)
    w_rec = _gate_major(xp, w_hh, hidden, _empty(xp, (4, hidden, hidden), dt))  # dh = Σ dz_k W_k
    span_len = min(_SPAN, steps)
    dz_all = _empty(xp, (4, steps, batch, hidden), dt)
    fac = _empty(xp, (span_len, 5, batch, hidden), dt)
    rec = _empty(xp, (4, batch, hidden), dt)
    tmp = xp.empty((batch, hidden), dt)
    blocks = _row_blocks(xp, batch, hidden, hidden)  # rec[k] = dz_k @ W_k, as in the forward
    dz_blk, w_blk, rec_blk = (
        _split_rows(dz_all, blocks, 2),
        w_rec[:, None],
        _split_rows(rec, blocks, 1),
    )
    rec0, rec1, rec2, rec3 = rec
    dh = xp.array(g_h, dtype=dt, copy=True)
    dc = xp.array(g_c, dtype=dt, copy=True)
    lo = 0
    for s, t in enumerate(order):
        if s % span_len == 0:  # the next span of steps: times lo .. lo + m - 1
            m = min(span_len, steps - s)
            lo = t if reverse else t - m + 1
            span = slice(lo, lo + m)
            c_prev = cs[lo + 1 - d : lo + 1 - d + m]
            _lstm_factors(xp, fac[:m], gates[span], c_prev, tanh_c[span])
        a = fac[t - lo]
        dh += g_out[t]
        xp.multiply(dh, a[4], out=tmp)
        dc += tmp
        dz = dz_all[:, t]
        xp.multiply(dh, a[0], out=dz[0])
        xp.multiply(dc, a[1:4], out=dz[1:])
        last = s == steps - 1
        if not last or n_h0:
            xp.matmul(dz_blk[:, t], w_blk, out=rec_blk)
            xp.add(rec0, rec1, out=dh)  # (three adds: faster than a sum over axis 0)
            dh += rec2
            dh += rec3
        if not last or n_c0:
            dc *= gates[t, 2]
    n = steps * batch
    flat = dz_all.reshape(4, n, hidden)
    dx = dw_ih = dw_hh = db_ih = db_hh = None
    if n_x:
        part = xp.matmul(flat, _gate_major(xp, w_ih, hidden, xp.empty((4, hidden, n_in), dt)))
        dx = xp.empty((steps, batch, n_in), dt)
        xp.sum(part, axis=0, out=dx.reshape(n, n_in))
    want_b = has_bias and (n_bih or n_bhh)
    if n_wih:  # with the biases' gradients from the column of ones
        g_in = xp.matmul(cache.x_in.T, flat)  # (4, I + 1, H): faster than its transpose
        dw_ih = _to_torch_order(xp, g_in[:, :n_in].transpose(0, 2, 1), dt)
        if want_b:
            db_ih = _to_torch_order(xp, g_in[:, n_in], dt)
    elif want_b:
        db_ih = _to_torch_order(xp, flat.sum(axis=1), dt)
    if n_whh:  # the state each step read: hs[t + 1 - d]
        h_prev = (hs[:-1] if d else hs[1:]).reshape(n, hidden)
        g_rec = xp.matmul(h_prev.T, flat)  # (4, H, H), each W_k's transpose: faster
        dw_hh = _to_torch_order(xp, g_rec.transpose(0, 2, 1), dt)
    if want_b:
        db_hh = db_ih.copy() if n_bhh else None
        db_ih = db_ih if n_bih else None
    _give_back(dz_all, fac, rec, w_rec)
    return dx, dh if n_h0 else None, dc if n_c0 else None, dw_ih, dw_hh, db_ih, db_hh
