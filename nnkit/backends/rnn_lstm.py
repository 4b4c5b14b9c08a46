"""The fused LSTM kernels behind :func:`nnkit.backends.rnn_kernels.rnn_forward` and
:func:`~nnkit.backends.rnn_kernels.rnn_backward` (``mode='lstm'``; arrays in, arrays
out), gate-major: see :mod:`nnkit.backends.rnn_kernels` for the formulas and the
layout, :func:`lstm_forward` and :func:`lstm_backward` for the arrays kept. (Not a
``*_kernels`` module: ``nnkit.compile`` records the calls of those entry points, which
run these.)
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

__all__ = ["lstm_forward", "lstm_backward"]

# LSTM, gate-major: each step's gates are four contiguous (B, H) blocks (every
# elementwise pass runs over whole blocks; a column slice of a (B, 4H) row would cost
# NumPy one inner loop per row), in the order (o, i, f, g): the sigmoids o, i, f
# together (their passes run over all three at once), and i, f, g, whose gradients all
# scale the cell's gradient, together (one broadcast pass in the backward).
_PERM = [3, 0, 1, 2]  # PyTorch's (i, f, g, o) row block of each internal gate
_SPAN = 8  # time steps per run of the backward's gradient-independent passes


def _gate_major(xp, w, hidden, out, negate=False, transpose=False):
    """``(4H, K)`` weight rows (or ``(4H,)`` biases) in PyTorch's gate order written
    into ``out`` ``(4, H, K)`` (``(4, K, H)`` with ``transpose``; ``(4, H)``) in the
    internal order; ``negate`` negates the sigmoid gates (exact)."""
    w4 = w.reshape((4, hidden) + w.shape[1:])
    for k, j in enumerate(_PERM):
        src = w4[j].T if transpose else w4[j]
        if negate and k < 3:
            xp.negative(src, out=out[k])
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


def lstm_forward(xp, x, h0, c0, w_ih, w_hh, bias, reverse):
    """:func:`~nnkit.backends.rnn_kernels.rnn_forward` for ``'lstm'`` (arrays in;
    ``bias`` is ``b_ih + b_hh``).

    ``gates`` ``(T, 4, B, H)`` holds each step's ``(o, i, f, g)`` activations (each
    step writes its input projection there, small GEMMs whose results are still in
    cache for the gate passes, or takes it from one large GEMM, and adds ``h @ W_k``);
    ``states`` and ``cells`` ``(T + 1, B, H)`` the hidden and cell states, the initial
    ones at the end where the sequence starts (``out`` views ``states``); ``x_in`` the
    inputs with a column of ones, ``(T·B, I + 1)``.
    """
    steps, batch, n_in = x.shape
    hidden = w_hh.shape[1]
    dt = x.dtype
    n = steps * batch
    # the input projection of every step, the bias through a column of ones
    k_in = n_in + (bias is not None)
    w_in = _empty(xp, (4, k_in, hidden), dt)
    _gate_major(xp, w_ih, hidden, w_in[:, :n_in], negate=True, transpose=True)
    if bias is not None:
        _gate_major(xp, bias, hidden, w_in[:, n_in], negate=True)
        x_in = _empty(xp, (n, k_in), dt)
        x_in.reshape(steps, batch, k_in)[:, :, :n_in] = x
        x_in[:, n_in] = 1
    else:
        x_in = x.reshape(n, n_in)
    gates = _empty(xp, (steps, 4, batch, hidden), dt)
    proj = None
    blocks_in = _small_blocks(xp, batch, k_in, hidden)
    if blocks_in is None:  # large: one GEMM for all steps (the weights packed once)
        proj = xp.matmul(x_in, w_in, out=_empty(xp, (4, n, hidden), dt))
        proj_t = proj.reshape(4, steps, batch, hidden).transpose(1, 0, 2, 3)
    else:  # small: each step's just before the step (still in cache for its passes)
        x_blk = _split_rows(x_in.reshape(steps, batch, k_in), blocks_in, 1)[:, None]
        w_in_blk, gates_blk = w_in[:, None], _split_rows(gates, blocks_in, 2)
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
        z = gates[t]
        xp.matmul(h_in[t + 1 - d], w_blk, out=rec_blk)
        if proj is None:
            xp.matmul(x_blk[t], w_in_blk, out=gates_blk[t])
            z += rec
        else:
            xp.add(proj_t[t], rec, out=z)
        sig = z[:3]  # 1 / (1 + exp(-z)), the weights negated
        xp.exp(sig, out=sig)
        sig += 1
        xp.reciprocal(sig, out=sig)
        o, i, f, g = z
        xp.tanh(g, out=g)
        c = cs[t + d]
        xp.multiply(f, cs[t + 1 - d], out=c)
        xp.multiply(i, g, out=ig)
        c += ig
        tc = tanh_c[t]
        xp.tanh(c, out=tc)
        xp.multiply(o, tc, out=hs[t + d])
    _give_back(w_in, w_rec, proj)
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


def lstm_backward(xp, cache, x, w_ih, w_hh, g_out, g_h, g_c, needs, has_bias):
    """:func:`~nnkit.backends.rnn_kernels.rnn_backward` for ``'lstm'`` (arrays in):
    per step, ``dh`` and ``dc`` times the factors of :func:`_lstm_factors` give the
    gates' gradients ``dz`` (gate-major, ``(4, T, B, H)``), and ``Σ_k dz_k @ W_k`` the
    previous state's; then the weight gradients (the biases' from the column of ones;
    ``W_hh``'s as its transpose, the faster GEMM) and ``dx`` over all steps at once,
    one GEMM per gate, written in PyTorch's gate order."""
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
