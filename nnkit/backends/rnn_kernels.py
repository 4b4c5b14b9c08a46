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

The LSTM runs gate-major (:mod:`nnkit.backends.rnn_lstm`): a step's gates are four
contiguous ``(B, H)`` blocks, so that no elementwise pass reads a column slice; each
gate's GEMMs are separate (the input projection one step at a time, just before the
step reads it, where those GEMMs are small enough for OpenBLAS's unpacked small-matrix
kernel, else one GEMM for all steps; the per-step ones in row blocks of the batch small
enough for that kernel), the biases enter the input projection as
a column of ones, and the backward computes the factors of its gradients that do not
depend on them a span of steps at a time. Its results differ from a row-major,
whole-width computation (the per-step layers', the kernel before) by float rounding
only.

Work buffers (the backward's and, once their graph is freed, the forward's) are reused
from a bounded pool of free NumPy arrays (:mod:`nnkit.backends.rnn_common`).
"""

from __future__ import annotations

from nnkit.backends.rnn_common import (
    RNNCache,
    _Buffers,
    _empty,
    _give_back,
    _row_blocks,
    _step_matmul,
)
from nnkit.backends.rnn_lstm import lstm_backward, lstm_forward

__all__ = ["MODES", "RNNCache", "rnn_forward", "rnn_backward"]

# gates per mode
MODES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


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
        return lstm_forward(xp, x, h0, c0, w_ih, w_hh, bias, reverse)
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
        return lstm_backward(xp, cache, x, w_ih, w_hh, g_out, g_h, g_c, needs, has_bias)
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
