"""The fused recurrent Op: one layer and direction of an RNN, LSTM or GRU as one node.

Forward and backward through time run in :mod:`nnkit.backends.rnn_kernels` (one GEMM
per step each way, the input projection and the weight gradients as one GEMM over all
steps). The backward is not itself differentiable: with ``create_graph=True`` it is
recorded as one node whose own backward raises (as PyTorch's cuDNN RNN does), so first
order gradients work and double backward asks for the per-step layers
(``layer.fused = False``), which are made of ordinary ops.
"""

from __future__ import annotations

from nnkit.autograd.function import NO_GRAPH, Op, ShapeError
from nnkit.autograd.tensor import Tensor
from nnkit.backends.rnn_kernels import MODES, rnn_backward, rnn_forward

__all__ = ["rnn_sequence"]


class FusedRNN(Op):
    """One recurrent layer and direction over a time-major sequence (see
    :func:`rnn_sequence`); outputs ``(output, h_n)``, plus ``c_n`` for LSTM."""

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, mode, reverse):
        out, h_n, c_n, cache = rnn_forward(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse)
        out_m = x._new(out)
        ctx.cache, ctx.has_bias = cache, b_ih is not None
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, out_m)
        if c_n is None:
            return out_m, x._new(h_n)
        return out_m, x._new(h_n), x._new(c_n)

    @staticmethod
    def backward(ctx, g_out, g_h, g_c=None):
        x, h0, c0, w_ih, w_hh, out = ctx.saved_tensors
        grads = FusedRNNGrad.apply(
            g_out, g_h, g_c, x, h0, c0, w_ih, w_hh, out, ctx.cache,
            ctx.needs_input_grad[:7], ctx.has_bias,
        )  # fmt: skip
        it = iter(grads)
        return (*[next(it) if n else None for n in ctx.needs_input_grad[:7]], None, None)

    @staticmethod
    def backward_mat(ctx, g_out, g_h, g_c=None):
        x, h0, c0, w_ih, w_hh, out = ctx.saved_mats
        grads = FusedRNNGrad.forward(
            NO_GRAPH, g_out, g_h, g_c, x, h0, c0, w_ih, w_hh, out, ctx.cache,
            ctx.needs_input_grad[:7], ctx.has_bias,
        )  # fmt: skip
        it = iter(grads)
        return (*[next(it) if n else None for n in ctx.needs_input_grad[:7]], None, None)


class FusedRNNGrad(Op):
    """The gradients of :class:`FusedRNN` (recorded only under ``create_graph``; then
    differentiating them again raises)."""

    @staticmethod
    def forward(ctx, g_out, g_h, g_c, x, h0, c0, w_ih, w_hh, out, cache, needs, has_bias):
        grads = rnn_backward(cache, x, h0, c0, w_ih, w_hh, out, g_out, g_h, g_c, needs, has_bias)
        # only the gradients asked for (a None output would be an output without
        # metadata for the engine, under create_graph)
        return tuple([x._new(g) for g in grads if g is not None])

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise RuntimeError(
            "double backward through a fused recurrent layer (RNN, LSTM, GRU) is not "
            "supported; set `layer.fused = False` before the forward to run it as "
            "per-step ops, which support higher-order gradients"
        )


def rnn_sequence(mode, input, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, reverse=False):
    """One recurrent layer and direction over a whole sequence, as one fused op.

    Args:
        mode: ``'lstm'``, ``'gru'``, ``'rnn_tanh'`` or ``'rnn_relu'``.
        input: ``(T, B, I)`` time-major inputs, ``T ≥ 1``.
        h0: the initial hidden state ``(B, H)``; c0: LSTM's initial cell state
            ``(B, H)`` (None for the other modes).
        w_ih, w_hh: ``(G·H, I)`` and ``(G·H, H)`` weights, ``G`` gates stacked in
            PyTorch's order (LSTM ``i, f, g, o``; GRU ``r, z, n``; RNN one).
        b_ih, b_hh: ``(G·H,)`` biases, both given or both None.
        reverse: run from the last step to the first (a bidirectional layer's backward
            direction); ``output[t]`` is still the state after reading ``input[t]``.

    Returns:
        ``(output, h_n)`` (``(output, h_n, c_n)`` for LSTM): ``output`` ``(T, B, H)``
        holds every step's hidden state. All tensors must share one floating dtype.

    Gradient: for every tensor argument; differentiating it again raises (see the
    module docstring).

    Example:
        >>> from nnkit.autograd.ops.rnn_fused import rnn_sequence
        >>> w_ih, w_hh = nnkit.ones(1, 1), nnkit.zeros(1, 1)
        >>> out, h_n = rnn_sequence("rnn_tanh", nnkit.tensor([[[1.0]], [[2.0]]]),
        ...                         nnkit.zeros(1, 1), None, w_ih, w_hh)
        >>> out.flatten()
        tensor([0.7616, 0.9640])
    """
    if mode not in MODES:
        raise ValueError(f"rnn_sequence: unknown mode {mode!r}; expected one of {list(MODES)}")
    tensors = [t for t in (input, h0, c0, w_ih, w_hh, b_ih, b_hh) if t is not None]
    if not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("rnn_sequence: expected Tensors")
    dtype = input.dtype
    if not dtype.is_floating_point or any(t.dtype != dtype for t in tensors):
        raise TypeError("rnn_sequence: every tensor must have the input's floating dtype")
    if (mode == "lstm") != (c0 is not None) or (b_ih is None) != (b_hh is None):
        raise ValueError("rnn_sequence: c0 is for 'lstm' only; give both biases or neither")
    if input.ndim != 3 or input.shape[0] == 0:
        raise ValueError(f"rnn_sequence: expected input (T ≥ 1, B, I), got {tuple(input.shape)}")
    _, batch, n_in = input.shape
    hidden = w_hh.shape[-1]
    gates = MODES[mode] * hidden
    want = {"h0": (batch, hidden), "c0": (batch, hidden), "w_ih": (gates, n_in)}
    want.update(w_hh=(gates, hidden), b_ih=(gates,), b_hh=(gates,))
    given = dict(h0=h0, c0=c0, w_ih=w_ih, w_hh=w_hh, b_ih=b_ih, b_hh=b_hh)
    for name, t in given.items():
        if t is not None and tuple(t.shape) != want[name]:
            raise ShapeError(
                f"rnn_sequence: expected {name} of shape {want[name]} for input "
                f"{tuple(input.shape)} and hidden size {hidden}, got {tuple(t.shape)}"
            )
    return FusedRNN.apply(input, h0, c0, w_ih, w_hh, b_ih, b_hh, mode, reverse)
