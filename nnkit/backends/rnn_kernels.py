"""Fused recurrent kernels (RNN tanh/relu, LSTM, GRU), written against ``xp`` so that
NumPy and CuPy share them.

:func:`rnn_forward` runs one layer and direction over a whole sequence: one GEMM
projects every step's input, then each step does one GEMM (``h @ W_hhᵀ``) and a few
in-place elementwise passes for the gates. It keeps the gate activations (and the cell
states for LSTM) in an :class:`RNNCache`; :func:`rnn_backward` runs backpropagation
through time from them: one GEMM per step for the recurrence, then one GEMM each for the
input gradient and the two weight gradients over all steps at once.

Formulas and gate order are PyTorch's: LSTM ``(i, f, g, o)``, ``c' = f*c + i*g``,
``h' = o*tanh(c')``; GRU ``(r, z, n)``, ``n = tanh(W_in x + b_in + r*(W_hn h + b_hn))``,
``h' = n + z*(h - n)``; RNN ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``. Arrays are
time-major, ``x`` ``(T, B, I)``, states ``(B, H)``. A sigmoid gate is computed as
``(1 + tanh(z / 2)) / 2``, the halving folded into copies of its weight rows (exact: a
power of two), so that one ``tanh`` pass covers all of a step's gates; the results
differ from ``1 / (1 + exp(-z))`` by float rounding only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MODES", "RNNCache", "rnn_forward", "rnn_backward"]

# gates per mode
MODES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}

# Free NumPy work buffers by (shape, dtype), for the backward's gate gradients (used and
# given back within one call, so no result ever views them): memory the C allocator
# hands back to the system costs page faults when it is taken again, a noticeable part
# of a small LSTM step. Bounded: arrays up to _POOL_ARRAY_BYTES, _POOL_BYTES in all.
# CuPy keeps its own memory pool.
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


class RNNCache:
    """What the backward needs besides the inputs and the output sequence.

    ``gates``: the gate activations ``(T, B, G)``; ``cells`` and ``tanh_c``: LSTM's cell
    states and their tanh ``(T, B, H)``; ``rec``: GRU's ``h @ W_hhᵀ + b_hh`` ``(T, B, G)``.
    """

    __slots__ = ("mode", "reverse", "gates", "cells", "tanh_c", "rec")


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
    h2, h3 = 2 * hidden, 3 * hidden
    bias = None if b_ih is None else (b_ih if mode == "gru" else b_ih + b_hh)
    if mode == "lstm":  # (i, f, o) are sigmoids, g a tanh: halve i, f, o
        scale = xp.full((gsize,), 0.5, dt)
        scale[h2:h3] = 1
        w_ih, w_hh = w_ih * scale[:, None], w_hh * scale[:, None]
        bias = None if bias is None else bias * scale
        shift = xp.full((batch, gsize), 0.5, dt)  # full-size: faster than broadcasting
        shift[:, h2:h3] = 0
        scale = xp.ascontiguousarray(xp.broadcast_to(scale, (batch, gsize)))
    elif mode == "gru":  # (r, z) are sigmoids; n reads h @ W_hnᵀ + b_hn unscaled
        w_ih, w_hh = _half_rows(xp, w_ih, h2, dt), _half_rows(xp, w_hh, h2, dt)
        bias = None if bias is None else _half_rows(xp, bias, h2, dt)
        b_hh = None if b_hh is None else _half_rows(xp, b_hh, h2, dt)
    # the gates' pre-activations of every step (RNN: its output, computed in place)
    proj = xp.matmul(x.reshape(steps * batch, x.shape[2]), w_ih.T).reshape(steps, batch, gsize)
    if bias is not None:
        proj += bias
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    w_hh_t = xp.ascontiguousarray(w_hh.T)  # a transposed operand makes the GEMM slower
    cache = RNNCache()
    cache.mode, cache.reverse, cache.gates = mode, reverse, proj
    cache.cells = cache.tanh_c = cache.rec = None
    h, c = h0, c0
    if mode == "lstm":
        out = xp.empty((steps, batch, hidden), dt)
        cells = cache.cells = xp.empty((steps, batch, hidden), dt)
        tanh_c = cache.tanh_c = xp.empty((steps, batch, hidden), dt)
        rec = xp.empty((batch, gsize), dt)
        ig = xp.empty((batch, hidden), dt)
        for t in order:
            z = proj[t]
            xp.matmul(h, w_hh_t, out=rec)
            z += rec
            xp.tanh(z, out=z)
            z *= scale  # (1 + tanh(z / 2)) / 2 on i, f, o; tanh(z) on g
            z += shift
            cn = cells[t]
            xp.multiply(z[:, hidden:h2], c, out=cn)
            xp.multiply(z[:, :hidden], z[:, h2:h3], out=ig)
            cn += ig
            tc = tanh_c[t]
            xp.tanh(cn, out=tc)
            h = out[t]
            xp.multiply(z[:, h3:], tc, out=h)
            c = cn
        return out, h.copy(), c.copy(), cache
    if mode == "gru":
        out = xp.empty((steps, batch, hidden), dt)
        rec_all = cache.rec = xp.empty((steps, batch, gsize), dt)
        tmp = xp.empty((batch, hidden), dt)
        for t in order:
            z = proj[t]
            rec = rec_all[t]
            xp.matmul(h, w_hh_t, out=rec)
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
    rec = xp.empty((batch, gsize), dt)
    for t in order:
        z = proj[t]
        xp.matmul(h, w_hh_t, out=rec)
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
    mode, reverse, gates = cache.mode, cache.reverse, cache.gates
    steps, batch, n_in = x.shape
    hidden = w_hh.shape[1]
    gsize = w_ih.shape[0]
    dt = gates.dtype
    h2, h3 = 2 * hidden, 3 * hidden
    order = range(steps) if reverse else range(steps - 1, -1, -1)
    step = 1 if reverse else -1  # the previous step's offset in time

    def prev(t):
        p = t + step
        return (0 <= p < steps), p

    dz_all = _empty(xp, (steps, batch, gsize), dt)
    dh = xp.array(g_h, dtype=dt, copy=True)
    a = xp.empty((batch, hidden), dt)
    b = xp.empty((batch, hidden), dt)
    dc = None
    dhid_all = dz_all
    if mode == "lstm":
        dc = xp.array(g_c, dtype=dt, copy=True)
        cells, tanh_c = cache.cells, cache.tanh_c
        deriv = xp.empty((batch, gsize), dt)
        for t in order:
            dh += g_out[t]
            z = gates[t]
            i, f, g, o = z[:, :hidden], z[:, hidden:h2], z[:, h2:h3], z[:, h3:]
            has_prev, p = prev(t)
            c_prev = cells[p] if has_prev else c0
            tc = tanh_c[t]
            dz = dz_all[t]
            xp.multiply(tc, tc, out=a)  # dc += dh * o * (1 - tanh(c)²)
            xp.subtract(1, a, out=a)
            a *= o
            a *= dh
            dc += a
            # the gradients of i, f, g, o, times their derivatives: s(1 - s) for the
            # sigmoids (on all four at once, then g's block is 1 - g²)
            xp.multiply(dc, g, out=dz[:, :hidden])
            xp.multiply(dc, c_prev, out=dz[:, hidden:h2])
            xp.multiply(dc, i, out=dz[:, h2:h3])
            xp.multiply(dh, tc, out=dz[:, h3:])
            xp.subtract(1, z, out=deriv)
            deriv *= z
            dg = deriv[:, h2:h3]
            xp.multiply(g, g, out=dg)
            xp.subtract(1, dg, out=dg)
            dz *= deriv
            xp.matmul(dz, w_hh, out=dh)
            dc *= f
    elif mode == "gru":
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
            xp.matmul(dhid, w_hh, out=a)
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
            xp.matmul(dz, w_hh, out=dh)
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
