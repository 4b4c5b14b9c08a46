"""Fused recurrent kernels (RNN tanh/relu, LSTM, GRU), written against ``xp`` so that
NumPy and CuPy share them.

:func:`rnn_forward` runs one layer and direction over a whole sequence: every step's
input is projected by GEMM (RNN: one GEMM for the whole sequence), each step does
GEMMs for ``h @ W_hhᵀ`` and a few in-place elementwise passes for the gates. It keeps
the gate activations (and the cell states for LSTM) in an :class:`RNNCache`;
:func:`rnn_backward` runs backpropagation through time from them: one GEMM per step
for the recurrence, then GEMMs for the input gradient and the two weight gradients
over all steps at once.

Formulas and gate order are PyTorch's: LSTM ``(i, f, g, o)``, ``c' = f*c + i*g``,
``h' = o*tanh(c')``; GRU ``(r, z, n)``, ``n = tanh(W_in x + b_in + r*(W_hn h + b_hn))``,
``h' = n + z*(h - n)``; RNN ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``. Arrays are
time-major, ``x`` ``(T, B, I)``, states ``(B, H)``. A sigmoid gate is computed as
``1 / (1 + exp(-z))``, the negation folded into copies of its weight rows (exact), in
three in-place passes over the step's adjacent sigmoid blocks: ``exp`` costs about half
of ``tanh`` where NumPy has no AVX-512 kernels (LSTM step ~6 % faster than the
``(1 + tanh(z / 2)) / 2`` of one ``tanh`` pass over all gates, which the kernels used
before; results equal to float rounding).

The LSTM and the GRU run gate-major (:mod:`nnkit.backends.rnn_lstm`,
:mod:`nnkit.backends.rnn_gru`): a step's gates are four (three) contiguous ``(B, H)``
blocks, so that no elementwise pass reads a column slice; each gate's GEMMs are
separate (the input projection one step at a time, just before the step reads it,
where those GEMMs are small enough for OpenBLAS's unpacked small-matrix kernel, else
one GEMM for all steps; the per-step ones in row blocks of the batch small enough for
that kernel), the biases enter the input projection as a column of ones (the GRU's
``b_hr`` and ``b_hz`` there too, its ``b_hn`` added to ``h W_hnᵀ`` each step, as ``r``
scales it), and the backward computes the factors of its gradients that do not depend
on them a span of steps at a time. Their results differ from a row-major, whole-width
computation (the per-step layers', the kernels before) by float rounding only.

Work buffers (the backward's and, once their graph is freed, the forward's) are reused
from a bounded pool of free NumPy arrays (:mod:`nnkit.backends.rnn_common`).
"""

from __future__ import annotations

from nnkit.backends.rnn_common import (
    RNNCache,
    _empty,
    _give_back,
    _row_blocks,
    _step_matmul,
)
from nnkit.backends.rnn_gru import gru_backward, gru_forward
from nnkit.backends.rnn_lstm import lstm_backward, lstm_forward

__all__ = ["MODES", "RNNCache", "rnn_forward", "rnn_backward"]

# gates per mode
MODES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


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
    bias = None if b_ih is None else b_ih + b_hh
    if mode == "lstm":
        return lstm_forward(xp, x, h0, c0, w_ih, w_hh, bias, reverse)
    if mode == "gru":
        return gru_forward(xp, x, h0, w_ih, w_hh, b_ih, b_hh, reverse)
    # each step's pre-activation (computed in place into its output)
    shape = (steps, batch, gsize)
    proj = xp.empty(shape, dt)
    xp.matmul(x.reshape(steps * batch, x.shape[2]), w_ih.T, out=proj.reshape(-1, gsize))
    if bias is not None:
        proj += bias
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    w_hh_t = xp.ascontiguousarray(w_hh.T)  # a transposed operand makes the GEMM slower
    blocks = _row_blocks(xp, batch, hidden, gsize)
    h = h0
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
    if cache.mode == "gru":
        return gru_backward(xp, cache, x, w_ih, w_hh, g_out, g_h, needs, has_bias)
    reverse, gates = cache.reverse, cache.gates
    steps, batch, n_in = x.shape
    hidden = w_hh.shape[1]
    gsize = w_ih.shape[0]
    dt = gates.dtype
    order = range(steps) if reverse else range(steps - 1, -1, -1)
    dz_all = _empty(xp, (steps, batch, gsize), dt)
    blocks = _row_blocks(xp, batch, gsize, hidden)  # dh = dz @ W_hh
    dh = xp.array(g_h, dtype=dt, copy=True)
    relu = cache.mode == "rnn_relu"
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
    n_x, n_h0, _, n_wih, n_whh, n_bih, n_bhh = needs
    flat = dz_all.reshape(steps * batch, gsize)
    dx = xp.matmul(flat, w_ih).reshape(steps, batch, n_in) if n_x else None
    dw_ih = xp.matmul(flat.T, x.reshape(steps * batch, n_in)) if n_wih else None
    dw_hh = None
    if n_whh:
        # the state each step read: out[t - 1] (out[t + 1] reversed), h0 at the first
        first = steps - 1 if reverse else 0
        dw_hh = xp.matmul(dz_all[first].T, h0)
        if steps > 1:
            d_rest = dz_all[:-1] if reverse else dz_all[1:]
            h_rest = out[1:] if reverse else out[:-1]
            dw_hh += xp.matmul(
                d_rest.reshape(-1, gsize).T, h_rest.reshape((steps - 1) * batch, hidden)
            )
    db_ih = db_hh = None
    if has_bias and (n_bih or n_bhh):
        db = flat.sum(axis=0)
        db_ih = db if n_bih else None
        db_hh = (db.copy() if n_bih else db) if n_bhh else None
    _give_back(dz_all)
    return dx, dh if n_h0 else None, None, dw_ih, dw_hh, db_ih, db_hh
