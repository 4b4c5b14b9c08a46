"""Recurrent layers: ``RNN``, ``LSTM`` and ``GRU`` (PyTorch semantics and names).

Each layer and direction runs as one fused op (:mod:`nnkit.autograd.ops.rnn_fused`:
the input projection of every time step in one GEMM, then one GEMM and one gate update
per step, and backpropagation through time in one backward). Its backward is not
differentiable again; a layer with ``fused = False`` (an attribute, True by default)
runs per-step ops instead, which support double backward. Parameters are named
``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (with a
``_reverse`` suffix for the backward direction) and hold the gates stacked in PyTorch's
order: LSTM ``(i, f, g, o)``, GRU ``(r, z, n)``.
"""

from __future__ import annotations

import math

from nnkit.autograd import function as _function
from nnkit.autograd.factories import empty, zeros
from nnkit.autograd.ops import cat, relu, sigmoid, stack, tanh
from nnkit.autograd.ops.rnn_fused import rnn_sequence
from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers import initializers as init
from nnkit.layers.module import Module, Parameter

__all__ = ["RNN", "LSTM", "GRU"]


class _RNNBase(Module):
    """Shared parameters and the layer/direction/time loops of RNN, LSTM and GRU."""

    _num_gates = 1
    _has_cell = False
    # Run each layer and direction as one fused op (nnkit.autograd.ops.rnn_fused); False
    # runs per-step ops, which also support double backward (create_graph twice).
    fused = True
    _fused_mode = None  # the fused op's mode ('lstm', 'gru'); None: per-step ops only

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        for arg, value in (
            ("input_size", input_size),
            ("hidden_size", hidden_size),
            ("num_layers", num_layers),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"{name}: {arg} must be a positive integer. Received: {arg}={value!r}"
                )
        if isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError(
                f"{name}: dropout should be a number in [0, 1]. Received: dropout={dropout!r}"
            )
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional = bidirectional
        directions = 2 if bidirectional else 1
        gate_size = self._num_gates * hidden_size
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else hidden_size * directions
            for direction in range(directions):
                sfx = f"_l{layer}" + ("_reverse" if direction else "")
                setattr(
                    self,
                    "weight_ih" + sfx,
                    Parameter(empty(gate_size, layer_in, device=device, dtype=dtype)),
                )
                setattr(
                    self,
                    "weight_hh" + sfx,
                    Parameter(empty(gate_size, hidden_size, device=device, dtype=dtype)),
                )
                if bias:
                    setattr(
                        self,
                        "bias_ih" + sfx,
                        Parameter(empty(gate_size, device=device, dtype=dtype)),
                    )
                    setattr(
                        self,
                        "bias_hh" + sfx,
                        Parameter(empty(gate_size, device=device, dtype=dtype)),
                    )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(−1/√hidden_size, 1/√hidden_size), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self._parameters.values():
            init.uniform_(p, -bound, bound)

    def flatten_parameters(self) -> None:
        """A no-op kept for PyTorch compatibility (there is no cuDNN weight buffer)."""

    def _weights(self, layer: int, direction: int) -> tuple:
        sfx = f"_l{layer}" + ("_reverse" if direction else "")
        p = self._parameters
        return (
            p["weight_ih" + sfx],
            p["weight_hh" + sfx],
            p.get("bias_ih" + sfx),
            p.get("bias_hh" + sfx),
        )

    def _initial_state(self, input: Tensor, hx) -> tuple:
        """The initial state as a tuple of ``(layers·directions, B, H)`` tensors."""
        shape = (
            self.num_layers * (2 if self.bidirectional else 1),
            input.shape[1],
            self.hidden_size,
        )
        if hx is None:
            h = zeros(shape, dtype=input.dtype, device=input.device)
            return (h, h) if self._has_cell else (h,)
        states = tuple(hx) if self._has_cell else (hx,)
        if self._has_cell and len(states) != 2:
            raise ValueError(f"{type(self).__name__}: hx must be a tuple (h_0, c_0)")
        for s in states:
            if tuple(s.shape) != shape:
                raise ValueError(
                    f"{type(self).__name__}: expected hidden state of shape "
                    f"{shape}, got {tuple(s.shape)}"
                )
        return states

    def forward(self, input: Tensor, hx=None):
        """Run the recurrence.

        Args:
            input: ``(T, B, input_size)`` (``(B, T, input_size)`` with ``batch_first``),
                or unbatched ``(T, input_size)``.
            hx: the initial state, ``(layers·directions, B, hidden_size)`` (a pair
                ``(h_0, c_0)`` for LSTM); zeros if omitted.

        Returns:
            ``(output, h_n)`` (``(output, (h_n, c_n))`` for LSTM); ``output`` holds the
            last layer's hidden state at every step, ``(T, B, directions·hidden_size)``.
        """
        batched = input.ndim == 3
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            raise ValueError(
                f"{type(self).__name__}: expected input of shape (T, B, "
                f"{self.input_size}) or (T, {self.input_size}), got "
                f"{tuple(input.shape)}"
            )
        if not batched:
            input = input.unsqueeze(1)
            hx = (
                None
                if hx is None
                else (tuple(h.unsqueeze(1) for h in hx) if self._has_cell else hx.unsqueeze(1))
            )
        elif self.batch_first:
            input = input.transpose(0, 1)
        states = self._initial_state(input, hx)
        output, finals = self._run_layers(input, states)
        if not batched:
            output = output.squeeze(1)
            finals = [f.squeeze(1) for f in finals]
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, (tuple(finals) if self._has_cell else finals[0])

    def _run_layers(self, x: Tensor, states: tuple) -> tuple:
        directions = 2 if self.bidirectional else 1
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                k = layer * directions + direction
                out, last = self._run_direction(
                    x,
                    tuple(s[k] for s in states),
                    self._weights(layer, direction),
                    reverse=direction == 1,
                )
                outputs.append(out)
                for acc, s in zip(finals, last):
                    acc.append(s)
            x = outputs[0] if directions == 1 else cat(outputs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        # one layer and direction: a view (as stacking one tensor, without the copy)
        return x, [f[0].unsqueeze(0) if len(f) == 1 else stack(f, 0) for f in finals]

    def _mode(self) -> str:
        return self._fused_mode

    def _run_direction(self, x: Tensor, state: tuple, weights: tuple, reverse: bool):
        w_ih, w_hh, b_ih, b_hh = weights
        # per-step ops while nnkit.onnx traces op by op (a subclass: not mapped whole)
        mode = self._mode() if self.fused else None
        if mode and x.shape[0] and x.dtype.is_floating_point and _function.trace_hook is None:
            dtype = x.dtype
            if all(t is None or t.dtype == dtype for t in (*state, *weights)):
                res = rnn_sequence(
                    mode, x, state[0], state[1] if self._has_cell else None, *weights,
                    reverse=reverse,
                )  # fmt: skip
                return res[0], res[1:]
        steps, batch, _ = x.shape
        projected = x.reshape(steps * batch, x.shape[2]) @ w_ih.T
        if b_ih is not None:
            projected = projected + self._input_bias(b_ih, b_hh)
        projected = projected.reshape(steps, batch, projected.shape[1]).unbind(0)
        w_hh_t = w_hh.T
        outputs = [None] * steps
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            state = self._cell(projected[t], state, w_hh_t, b_hh)
            outputs[t] = state[0]
        return stack(outputs, 0), state

    def _input_bias(self, b_ih: Tensor, b_hh: Tensor) -> Tensor:
        """The bias added to the all-steps input projection (both biases by default)."""
        return b_ih + b_hh

    def _cell(self, x_t: Tensor, state: tuple, w_hh_t: Tensor, b_hh) -> tuple:
        raise NotImplementedError

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(_RNNBase):
    """Elman RNN: hₜ = act(xₜ W_ihᵀ + b_ih + hₜ₋₁ W_hhᵀ + b_hh), act = tanh or relu.

    Args:
        input_size: features of each input step.
        hidden_size: features of the hidden state.
        num_layers: stacked recurrent layers.
        nonlinearity: ``'tanh'`` or ``'relu'``.
        bias: whether to learn the biases.
        batch_first: inputs and outputs are ``(B, T, F)`` instead of ``(T, B, F)``.
        dropout: dropout on the outputs of each layer but the last (training only).
        bidirectional: also run a reversed-time pass and concatenate the outputs.

    Example:
        >>> rnn = RNN(10, 20, 2)
        >>> output, h_n = rnn(nnkit.randn(5, 3, 10))
        >>> output.shape, h_n.shape
        ((5, 3, 20), (2, 3, 20))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        device=None,
        dtype=None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"RNN: nonlinearity must be 'tanh' or 'relu'. Received: "
                f"nonlinearity={nonlinearity!r}"
            )
        self.nonlinearity = nonlinearity
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )

    def _mode(self) -> str:
        return "rnn_" + self.nonlinearity

    def _cell(self, x_t, state, w_hh_t, b_hh):
        pre = x_t + state[0] @ w_hh_t
        return (tanh(pre) if self.nonlinearity == "tanh" else relu(pre),)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + ", nonlinearity='relu'"


class LSTM(_RNNBase):
    """Long short-term memory, PyTorch's formulation (gates stacked as i, f, g, o).

    iₜ = σ(W_ii xₜ + b_ii + W_hi hₜ₋₁ + b_hi), fₜ = σ(…), gₜ = tanh(…), oₜ = σ(…),
    cₜ = fₜ ⊙ cₜ₋₁ + iₜ ⊙ gₜ, hₜ = oₜ ⊙ tanh(cₜ).

    Arguments are those of :class:`RNN` without ``nonlinearity``. ``forward(input,
    (h_0, c_0))`` returns ``(output, (h_n, c_n))``.

    Example:
        >>> lstm = LSTM(10, 20, batch_first=True)
        >>> output, (h_n, c_n) = lstm(nnkit.randn(3, 5, 10))
        >>> output.shape
        (3, 5, 20)
    """

    _num_gates = 4
    _has_cell = True
    _fused_mode = "lstm"

    def _cell(self, x_t, state, w_hh_t, b_hh):
        h, c = state
        i, f, g, o = (x_t + h @ w_hh_t).chunk(4, 1)
        c = sigmoid(f) * c + sigmoid(i) * tanh(g)
        return sigmoid(o) * tanh(c), c


class GRU(_RNNBase):
    """Gated recurrent unit, PyTorch's formulation (gates stacked as r, z, n).

    rₜ = σ(W_ir xₜ + b_ir + W_hr hₜ₋₁ + b_hr), zₜ = σ(…),
    nₜ = tanh(W_in xₜ + b_in + rₜ ⊙ (W_hn hₜ₋₁ + b_hn)), hₜ = (1 − zₜ) ⊙ nₜ + zₜ ⊙ hₜ₋₁.

    Arguments are those of :class:`RNN` without ``nonlinearity``.

    Example:
        >>> gru = GRU(10, 20, 2)
        >>> output, h_n = gru(nnkit.randn(5, 3, 10))
    """

    _num_gates = 3
    _fused_mode = "gru"

    def _input_bias(self, b_ih, b_hh):
        return b_ih  # b_hn sits inside r ⊙ (...), so b_hh is added per step

    def _cell(self, x_t, state, w_hh_t, b_hh):
        h = state[0]
        hidden = h @ w_hh_t
        if b_hh is not None:
            hidden = hidden + b_hh
        x_r, x_z, x_n = x_t.chunk(3, 1)
        h_r, h_z, h_n = hidden.chunk(3, 1)
        r = sigmoid(x_r + h_r)
        z = sigmoid(x_z + h_z)
        n = tanh(x_n + r * h_n)
        return (n + z * (h - n),)
