"""Op-table rows of the fused recurrent op (``nnkit.autograd.ops.rnn_fused``), appended to
``tests/optable_nn.py``'s table: one row per mode, samples in both directions with and
without biases, against textbook NumPy loops. No gradgradcheck: the fused op's backward
is not differentiable (see ``tests/layers/test_recurrent_fused.py``)."""

from __future__ import annotations

import numpy as np

from nnkit.autograd.ops.rnn_fused import rnn_sequence
from tests.opspec import OpSpec, Sample

OPS: list[OpSpec] = []

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def ref_rnn_sequence(mode, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, reverse=False):
    """PyTorch's cell formulas, one step at a time."""
    steps = x.shape[0]
    b_ih = 0.0 if b_ih is None else b_ih
    b_hh = 0.0 if b_hh is None else b_hh
    h, c = h0, c0
    out = np.zeros((steps,) + h0.shape)
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        gi, gh = x[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        if mode == "lstm":
            i, f, g, o = np.split(gi + gh, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
        elif mode == "gru":
            (i_r, i_z, i_n), (h_r, h_z, h_n) = np.split(gi, 3, axis=1), np.split(gh, 3, axis=1)
            r, z = _sigmoid(i_r + h_r), _sigmoid(i_z + h_z)
            n = np.tanh(i_n + r * h_n)
            h = (1 - z) * n + z * h
        else:
            pre = gi + gh
            h = np.tanh(pre) if mode == "rnn_tanh" else np.maximum(pre, 0)
        out[t] = h
    return [out, h] + ([c] if mode == "lstm" else [])


def _samples(mode):
    def samples(rng):
        steps, batch, n_in, hidden = 3, 2, 3, 2
        gsize = _GATES[mode] * hidden

        def rn(*shape):
            return np.asarray(rng.standard_normal(shape))

        out = []
        for reverse, bias in ((False, True), (True, True), (True, False)):
            c0 = rn(batch, hidden) if mode == "lstm" else None
            biases = (rn(gsize), rn(gsize)) if bias else (None, None)
            args = (mode, rn(steps, batch, n_in), rn(batch, hidden), c0)
            args += (rn(gsize, n_in), rn(gsize, hidden), *biases, reverse)
            out.append(
                Sample(
                    args, desc=("reverse" if reverse else "forward") + ("" if bias else "-nobias")
                )
            )
        return out

    return samples


for _mode in _GATES:
    OPS.append(
        OpSpec(
            name=f"rnn_sequence_{_mode}",
            fn=rnn_sequence,
            ref=ref_rnn_sequence,
            samples=_samples(_mode),
            gradgrad=False,
        )
    )
