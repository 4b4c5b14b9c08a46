"""Connectionist temporal classification (CTC) kernels, written against ``xp`` so that
NumPy and CuPy share them.

The forward-backward algorithm of Graves et al. (2006) in log space, as PyTorch's CPU
kernel (``aten/src/ATen/native/LossCTC.cpp``) computes it: over the extended label
sequence ``l'`` (a blank before, between and after the ``L`` target labels, ``2L + 1``
positions), ``alpha[t, s]`` is the log-probability of the prefixes ending at ``s`` at
time ``t`` and ``beta[t, s]`` that of the suffixes starting there (both counting
``log_probs[t, l'[s]]``). Every step is vectorised over the batch and the label
positions; time is a Python loop. Each three-term log-sum uses torch's formula
(``log(exp(a - m) + exp(b - m) + exp(c - m)) + m``, ``m`` the maximum, 0 when all are
``-inf``), so results agree with torch's to the last bits or so.

The gradient with respect to ``log_probs`` is torch's: ``exp(lp) - exp(log_ab + nll -
lp)``, ``log_ab[t, c]`` the log of the sum of ``alpha * beta`` over the positions ``s``
with ``l'[s] = c``; it treats ``log_probs`` as given (it does not renormalise them), is
0 at times at or past a sample's input length, and 0 for an infinite loss with
``zero_infinity``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CTCState", "ctc_labels", "ctc_forward", "ctc_backward"]


class CTCState:
    """What the backward needs from the forward."""

    __slots__ = ("ext", "valid", "skip", "alpha", "nll", "il", "tl")


def ctc_labels(targets, target_lengths, blank: int, n_classes: int):
    """The target labels as an ``(N, max(target_lengths))`` int64 array (padded with
    ``blank``), from padded ``(N, S)`` or concatenated 1-d ``targets`` (an integer Mat).

    Raises IndexError for a label outside ``[0, n_classes)`` and ValueError for a label
    equal to ``blank``, naming ``ctc_loss``.
    """
    xp = targets.xp
    t = targets.array.astype(np.int64, copy=False)
    n, s = len(target_lengths), max(target_lengths, default=0)
    tl = xp.asarray(target_lengths, dtype=np.int64).reshape(n, 1)
    mask = xp.arange(s, dtype=np.int64).reshape(1, s) < tl
    if t.ndim == 1:
        starts = xp.cumsum(tl, axis=0) - tl
        index = xp.where(mask, starts + xp.arange(s, dtype=np.int64).reshape(1, s), 0)
        labels = t[index] if t.size else xp.zeros((n, s), dtype=np.int64)
    else:
        labels = t[:, :s]
    labels = xp.where(mask, labels, blank)
    if labels.size:
        bad = mask & ((labels < 0) | (labels >= n_classes))
        if bool(bad.any()):
            value = int(labels[bad][0])
            raise IndexError(
                f"ctc_loss: target label {value} is out of range for {n_classes} classes"
            )
        if bool((mask & (labels == blank)).any()):
            raise ValueError(f"ctc_loss: targets must not contain the blank label {blank}")
    return labels


def _lse3(xp, a, b, c):
    """``log(exp(a) + exp(b) + exp(c))`` elementwise, with torch's stabilisation."""
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, xp.zeros((), m.dtype), m)
    return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _shift(xp, a, k, fill):
    """``a`` moved ``k`` places along its last axis (right for ``k > 0``), ``fill`` in."""
    out = xp.full_like(a, fill)
    if k > 0:
        out[:, k:] = a[:, :-k]
    else:
        out[:, :k] = a[:, -k:]
    return out


def ctc_forward(log_probs, labels, input_lengths, target_lengths, blank: int):
    """``(nll array (N,), CTCState)`` for ``log_probs`` (a ``(T, N, C)`` floating Mat),
    ``labels`` from :func:`ctc_labels` and the lengths as lists of ints."""
    xp = log_probs.xp
    lp = log_probs.array
    steps, n = lp.shape[0], lp.shape[1]
    dtype = lp.dtype
    ninf = xp.asarray(-np.inf, dtype=dtype)
    width = 2 * labels.shape[1] + 1
    ext = xp.full((n, width), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    tl = xp.asarray(target_lengths, dtype=np.int64)
    il = xp.asarray(input_lengths, dtype=np.int64)
    pos = xp.arange(width, dtype=np.int64).reshape(1, width)
    valid = pos <= 2 * tl.reshape(n, 1)
    skip = xp.zeros((n, width), dtype=bool)
    skip[:, 2:] = ext[:, 2:] != ext[:, :-2]
    alpha = xp.full((steps, n, width), -np.inf, dtype=dtype)
    t_max = max(input_lengths, default=0)
    if t_max:
        lpe = xp.take_along_axis(lp[0], ext, axis=1)
        alpha[0] = xp.where(valid & (pos <= 1), lpe, ninf)
    for t in range(1, t_max):
        prev = alpha[t - 1]
        a3 = xp.where(skip, _shift(xp, prev, 2, -np.inf), ninf)
        step = _lse3(xp, prev, _shift(xp, prev, 1, -np.inf), a3)
        alpha[t] = xp.where(valid, step + xp.take_along_axis(lp[t], ext, axis=1), ninf)
    rows = alpha[xp.maximum(il - 1, 0), xp.arange(n)]
    l1 = xp.take_along_axis(rows, (2 * tl).reshape(n, 1), axis=1)[:, 0]
    l2 = xp.take_along_axis(rows, xp.maximum(2 * tl - 1, 0).reshape(n, 1), axis=1)[:, 0]
    m = xp.maximum(l1, l2)
    m = xp.where(m == -np.inf, xp.zeros((), dtype), m)
    nll = -xp.where(tl == 0, l1, xp.log(xp.exp(l1 - m) + xp.exp(l2 - m)) + m)
    empty = xp.where(tl == 0, xp.zeros((), dtype), xp.asarray(np.inf, dtype=dtype))
    nll = xp.where(il == 0, empty, nll)
    st = CTCState()
    st.ext, st.valid, st.skip, st.alpha, st.nll = ext, valid, skip, alpha, nll
    st.il, st.tl = input_lengths, target_lengths
    return nll, st


def ctc_backward(grad_out, log_probs, st: CTCState, zero_infinity: bool):
    """The gradient wrt ``log_probs`` (a ``(T, N, C)`` array) for the per-sample loss
    gradient ``grad_out`` (an ``(N,)`` Mat), torch's formula (see the module docs)."""
    xp = log_probs.xp
    lp = log_probs.array
    steps, n, _ = lp.shape
    dtype = lp.dtype
    ninf = xp.asarray(-np.inf, dtype=dtype)
    ext, valid, alpha = st.ext, st.valid, st.alpha
    width = ext.shape[1]
    il = xp.asarray(st.il, dtype=np.int64).reshape(n, 1)
    tl = xp.asarray(st.tl, dtype=np.int64).reshape(n, 1)
    pos = xp.arange(width, dtype=np.int64).reshape(1, width)
    last = valid & (pos >= 2 * tl - 1)  # where beta starts, at t = input_length - 1
    skip_next = _shift(xp, st.skip, -2, False)  # l'[s + 2] != l'[s]
    beta = xp.full((steps, n, width), -np.inf, dtype=dtype)
    nxt = xp.full((n, width), -np.inf, dtype=dtype)
    for t in range(max(st.il, default=0) - 1, -1, -1):
        lpe = xp.take_along_axis(lp[t], ext, axis=1)
        b3 = xp.where(skip_next, _shift(xp, nxt, -2, -np.inf), ninf)
        step = _lse3(xp, nxt, _shift(xp, nxt, -1, -np.inf), b3) + lpe
        row = xp.where(t < il - 1, xp.where(valid, step, ninf), ninf)
        nxt = beta[t] = xp.where((t == il - 1) & last, lpe, row)
    # log_ab[t, c]: the log of the sum of alpha * beta over the positions of class c. Each
    # class's sum is shifted by its own lp - nll (alpha * beta / exp(lp - nll) is the
    # share of the paths through that position: at most 1, so nothing overflows); where
    # the shift is not finite every alpha * beta is 0 and the shift is 0, as torch's.
    nll = st.nll.reshape(1, n, 1)
    shift = lp - nll
    shift = xp.where(xp.isfinite(shift), shift, xp.zeros((), dtype))
    at = (slice(None), xp.broadcast_to(xp.arange(n).reshape(n, 1), ext.shape), ext)
    total = xp.zeros(lp.shape, dtype=dtype)
    xp.add.at(total, at, xp.exp(alpha + beta - shift[at]))
    log_collected = xp.log(total) + shift
    grad = (xp.exp(lp) - xp.exp(log_collected + nll - lp)) * grad_out.array.reshape(1, n, 1)
    keep = xp.arange(steps).reshape(steps, 1, 1) < il.reshape(1, n, 1)
    if zero_infinity:
        keep = keep & (nll != np.inf)
    return xp.where(keep, grad, xp.zeros((), dtype))
