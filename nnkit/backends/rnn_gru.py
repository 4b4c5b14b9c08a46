"""The fused GRU kernels behind :func:`nnkit.backends.rnn_kernels.rnn_forward` and
:func:`~nnkit.backends.rnn_kernels.rnn_backward` (``mode='gru'``; arrays in, arrays
out), gate-major as the LSTM's (:mod:`nnkit.backends.rnn_lstm`): see
:mod:`nnkit.backends.rnn_kernels` for the formulas and the layout, :func:`gru_forward`
and :func:`gru_backward` for the arrays kept. (Not a ``*_kernels`` module:
``nnkit.compile`` records the calls of those entry points, which run these.)
"""

from __future__ import annotations

from nnkit.backends.rnn_common import (
    RNNCache,
    _Buffers,
    _empty,
    _give_back,
    _row_blocks,
    _small_blocks,
    _split_rows,
)

__all__ = ["gru_forward", "gru_backward"]

# GRU, gate-major: each step's gates are three contiguous (B, H) blocks in PyTorch's
# order (r, z, n), the sigmoids r and z together (their passes run over both at once).
# The backward's gradients are four blocks (n, r, z, hn): the input projection's
# (n, r, z) and the recurrence's (r, z, hn) are each three adjacent ones.
_SPAN = 8  # time steps per run of the backward's gradient-independent passes


def _blocks(xp, w, hidden, out, negate=False, transpose=False):
    """``(3H, K)`` weight rows (or ``(3H,)`` biases) written into ``out`` ``(3, H, K)``
    (``(3, K, H)`` with ``transpose``; ``(3, H)``); ``negate`` negates r's and z's (the
    sigmoids' pre-activations, exact)."""
    w3 = w.reshape((3, hidden) + w.shape[1:])
    for k in range(3):
        src = w3[k].T if transpose else w3[k]
        if negate and k < 2:
            xp.negative(src, out=out[k])
        else:
            out[k][...] = src
    return out


def gru_forward(xp, x, h0, w_ih, w_hh, b_ih, b_hh, reverse):
    """:func:`~nnkit.backends.rnn_kernels.rnn_forward` for ``'gru'`` (arrays in).

    ``gates`` ``(T, 3, B, H)`` holds each step's ``(r, z, n)`` activations (each step
    writes its input projection there, as the LSTM, and adds ``h @ W_k``); ``rec``
    ``(T, B, H)`` each step's ``h @ W_hnᵀ + b_hn``, which ``r`` scales; ``states``
    ``(T + 1, B, H)`` the hidden states, the initial one at the end where the sequence
    starts (``out`` views it); ``x_in`` the inputs with a column of ones,
    ``(T·B, I + 1)``, whose weight row is ``(b_ir + b_hr, b_iz + b_hz, b_in)``.
    """
    steps, batch, n_in = x.shape
    hidden = w_hh.shape[1]
    dt = x.dtype
    n = steps * batch
    bias = b_ih is not None
    k_in = n_in + bias
    w_in = _empty(xp, (3, k_in, hidden), dt)
    _blocks(xp, w_ih, hidden, w_in[:, :n_in], negate=True, transpose=True)
    if bias:
        b_in = b_ih.copy()
        b_in[: 2 * hidden] += b_hh[: 2 * hidden]
        _blocks(xp, b_in, hidden, w_in[:, n_in], negate=True)
        x_in = _empty(xp, (n, k_in), dt)
        x_in.reshape(steps, batch, k_in)[:, :, :n_in] = x
        x_in[:, n_in] = 1
        b_hn = b_hh[2 * hidden :]
    else:
        x_in = x.reshape(n, n_in)
        b_hn = None
    gates = _empty(xp, (steps, 3, batch, hidden), dt)
    proj = None
    blocks_in = _small_blocks(xp, batch, k_in, hidden)
    if blocks_in is None:  # large: one GEMM for all steps (the weights packed once)
        proj = xp.matmul(x_in, w_in, out=_empty(xp, (3, n, hidden), dt))
        proj_t = proj.reshape(3, steps, batch, hidden).transpose(1, 0, 2, 3)
    else:  # small: each step's just before the step (still in cache for its passes)
        x_blk = _split_rows(x_in.reshape(steps, batch, k_in), blocks_in, 1)[:, None]
        w_in_blk, gates_blk = w_in[:, None], _split_rows(gates, blocks_in, 2)
    w_rec = _blocks(xp, w_hh, hidden, _empty(xp, (3, hidden, hidden), dt), True, True)
    hs = xp.empty((steps + 1, batch, hidden), dt)
    rec_n = _empty(xp, (steps, batch, hidden), dt)
    d = 0 if reverse else 1
    hs[steps * (1 - d)] = h0
    rec = xp.empty((3, batch, hidden), dt)
    tmp = xp.empty((batch, hidden), dt)
    blocks = _row_blocks(xp, batch, hidden, hidden)
    h_in = _split_rows(hs, blocks, 1)[:, None]
    w_blk, rec_blk = w_rec[:, None], _split_rows(rec, blocks, 1)
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        g3 = gates[t]
        xp.matmul(h_in[t + 1 - d], w_blk, out=rec_blk)
        rz = g3[:2]
        if proj is None:
            xp.matmul(x_blk[t], w_in_blk, out=gates_blk[t])
            rz += rec[:2]
        else:
            xp.add(proj_t[t, :2], rec[:2], out=rz)
            g3[2] = proj_t[t, 2]
        xp.exp(rz, out=rz)  # 1 / (1 + exp(-z)), the weights negated
        rz += 1
        xp.reciprocal(rz, out=rz)
        r, z, nn = g3
        hn = rec_n[t]
        if b_hn is None:
            hn[...] = rec[2]
        else:
            xp.add(rec[2], b_hn, out=hn)
        xp.multiply(r, hn, out=tmp)
        nn += tmp
        xp.tanh(nn, out=nn)
        h = hs[t + d]
        xp.subtract(hs[t + 1 - d], nn, out=h)  # h' = n + z (h - n)
        h *= z
        h += nn
    _give_back(w_in, w_rec, proj)
    owned = (gates, rec_n) if not bias else (gates, rec_n, x_in)
    cache = RNNCache(
        "gru", reverse, gates, rec=rec_n, states=hs, x_in=x_in, buffers=_Buffers(*owned)
    )
    last = steps * d
    out = hs[1:] if d else hs[:-1]
    return out, hs[last].copy(), None, cache


def _gru_factors(xp, a, gates, rec_n, h_prev):
    """What the gradients of a span of steps ``(m, ...)`` are made of, independent of
    them: ``a[:, 0] = (1 - z)·(1 - n²)`` (n's pre-activation's gradient is this times
    ``dh``), ``a[:, 1] = r(1 - r)·(h W_hnᵀ + b_hn)`` (r's: this times n's) and
    ``a[:, 2] = z(1 - z)·(h₋₁ - n)`` (z's: this times ``dh``)."""
    r, z, n = gates[:, 0], gates[:, 1], gates[:, 2]
    f0, f1, f2 = a[:, 0], a[:, 1], a[:, 2]
    xp.multiply(n, n, out=f0)
    xp.subtract(1, f0, out=f0)
    xp.subtract(1, z, out=f2)
    f0 *= f2
    f2 *= z
    xp.subtract(h_prev, n, out=f1)
    f2 *= f1
    xp.subtract(1, r, out=f1)
    f1 *= r
    f1 *= rec_n


def gru_backward(xp, cache, x, w_ih, w_hh, g_out, g_h, needs, has_bias):
    """:func:`~nnkit.backends.rnn_kernels.rnn_backward` for ``'gru'`` (arrays in): per
    step, ``dh`` times the factors of :func:`_gru_factors` gives the gates' gradients
    (``dz`` ``(4, T, B, H)``: n, r, z for the input projection, r, z and ``hn = r·dn``
    for the recurrence), and ``dh·z + Σ_k dz_k @ W_k`` the previous state's; then the
    weight gradients (the input biases' from the column of ones) and ``dx`` over all
    steps at once, one GEMM per gate, written in PyTorch's gate order."""
    reverse, gates, rec_n, hs = cache.reverse, cache.gates, cache.rec, cache.states
    steps, batch, n_in = x.shape
    hidden = w_hh.shape[1]
    dt = gates.dtype
    n_x, n_h0, _, n_wih, n_whh, n_bih, n_bhh = needs
    d = 0 if reverse else 1
    order = range(steps) if reverse else range(steps - 1, -1, -1)
    w_rec = _blocks(xp, w_hh, hidden, _empty(xp, (3, hidden, hidden), dt))  # dh = Σ dz_k W_k
    span_len = min(_SPAN, steps)
    dz_all = _empty(xp, (4, steps, batch, hidden), dt)  # (n, r, z, hn)
    fac = _empty(xp, (span_len, 3, batch, hidden), dt)
    rec = _empty(xp, (3, batch, hidden), dt)
    blocks = _row_blocks(xp, batch, hidden, hidden)
    dz_blk = _split_rows(dz_all[1:], blocks, 2)
    w_blk, rec_blk = w_rec[:, None], _split_rows(rec, blocks, 1)
    rec0, rec1, rec2 = rec
    dh = xp.array(g_h, dtype=dt, copy=True)
    lo = 0
    for s, t in enumerate(order):
        if s % span_len == 0:  # the next span of steps: times lo .. lo + m - 1
            m = min(span_len, steps - s)
            lo = t if reverse else t - m + 1
            span = slice(lo, lo + m)
            h_prev = hs[lo + 1 - d : lo + 1 - d + m]
            _gru_factors(xp, fac[:m], gates[span], rec_n[span], h_prev)
        a = fac[t - lo]
        dh += g_out[t]
        dn, dr, dz, dhn = dz_all[:, t]
        xp.multiply(dh, a[0], out=dn)
        xp.multiply(dn, a[1], out=dr)
        xp.multiply(dh, a[2], out=dz)
        xp.multiply(dn, gates[t, 0], out=dhn)
        if s < steps - 1 or n_h0:
            xp.matmul(dz_blk[:, t], w_blk, out=rec_blk)
            dh *= gates[t, 1]
            dh += rec0
            dh += rec1
            dh += rec2
    n = steps * batch
    flat_in = dz_all[:3].reshape(3, n, hidden)  # (n, r, z)
    flat_rec = dz_all[1:].reshape(3, n, hidden)  # (r, z, hn)
    dx = dw_ih = dw_hh = db_ih = db_hh = None
    if n_x:
        w3 = _blocks(xp, w_ih, hidden, xp.empty((3, hidden, n_in), dt))
        part = xp.matmul(flat_in, w3[[2, 0, 1]])
        dx = xp.empty((steps, batch, n_in), dt)
        xp.sum(part, axis=0, out=dx.reshape(n, n_in))
    want_b = has_bias and (n_bih or n_bhh)
    if n_wih:  # with the input biases' gradients from the column of ones
        g_in = xp.matmul(cache.x_in.T, flat_in)  # (3, I + 1, H), gates (n, r, z)
        dw_ih = _torch_order(xp, g_in[:, :n_in].transpose(0, 2, 1), (2, 0, 1), dt)
        if want_b:
            db_ih = _torch_order(xp, g_in[:, n_in], (2, 0, 1), dt)
    elif want_b:
        db_ih = _torch_order(xp, flat_in.sum(axis=1), (2, 0, 1), dt)
    if n_whh:  # the state each step read: hs[t + 1 - d]
        h_prev = (hs[:-1] if d else hs[1:]).reshape(n, hidden)
        g_rec = xp.matmul(h_prev.T, flat_rec)  # (3, H, H), each W_k's transpose
        dw_hh = _torch_order(xp, g_rec.transpose(0, 2, 1), (0, 1, 2), dt)
    if want_b and n_bhh:  # b_hr's and b_hz's as b_ir's and b_iz's; b_hn's from hn
        db_hh = db_ih.copy()
        db_hh[2 * hidden :] = dz_all[3].reshape(n, hidden).sum(axis=0)
    db_ih = db_ih if n_bih else None
    _give_back(dz_all, fac, rec, w_rec)
    return dx, dh if n_h0 else None, None, dw_ih, dw_hh, db_ih, db_hh


def _torch_order(xp, g3, order, dt):
    """A ``(3, H, ...)`` gradient whose blocks are the gates ``order`` (indices into
    PyTorch's r, z, n) as a fresh ``(3H, ...)`` array in PyTorch's order."""
    res = xp.empty((g3.shape[0] * g3.shape[1],) + g3.shape[2:], dt)
    res3 = res.reshape(g3.shape)
    for k, j in enumerate(order):
        res3[j] = g3[k]
    return res
