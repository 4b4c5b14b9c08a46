"""RNN/LSTM/GRU layers as ONNX's recurrent operators (one node per layer).

Traced op by op, a recurrent layer would unroll with its zero initial state frozen
at the example's batch size; mapped whole, the batch stays dynamic. ONNX stacks the
gates in another order than PyTorch: LSTM ``i, o, f, c`` (PyTorch ``i, f, g, o``), GRU
``z, r, h`` (PyTorch ``r, z, n``, with ``linear_before_reset=1``).
"""

from __future__ import annotations

import numpy as np

from nnkit.layers.recurrent import GRU, LSTM, RNN
from nnkit.onnx._graph import UnsupportedOpError, to_numpy

__all__ = ["maps", "emit"]

_GATE_ORDER = {LSTM: (0, 3, 1, 2), GRU: (1, 0, 2), RNN: (0,)}


def maps(module) -> bool:
    return type(module) in _GATE_ORDER


def _reorder(w, order, hidden):
    return np.concatenate([w[k * hidden : (k + 1) * hidden] for k in order], axis=0)


def emit(g, module, args, out) -> None:
    """Add the nodes of ``module`` run on ``args``; bind its outputs ``out``."""
    x = args[0]
    if x.ndim != 3:
        raise UnsupportedOpError(
            f"nnkit.onnx.export: {type(module).__name__} on an unbatched input has no ONNX mapping"
        )
    cls = type(module)
    op_type = cls.__name__
    hidden, dirs = module.hidden_size, 2 if module.bidirectional else 1
    order = _GATE_ORDER[cls]
    hx = args[1] if len(args) > 1 else None
    states = None if hx is None else (tuple(hx) if module._has_cell else (hx,))
    name = g.name(x)
    if module.batch_first:
        name = g.node("Transpose", [name], perm=[1, 0, 2])
    finals = [[] for _ in range(2 if module._has_cell else 1)]
    for layer in range(module.num_layers):
        ws, rs, bs = [], [], []
        for direction in range(dirs):
            w_ih, w_hh, b_ih, b_hh = module._weights(layer, direction)
            ws.append(_reorder(to_numpy(w_ih), order, hidden))
            rs.append(_reorder(to_numpy(w_hh), order, hidden))
            if b_ih is not None:
                bs.append(
                    np.concatenate(
                        [
                            _reorder(to_numpy(b_ih), order, hidden),
                            _reorder(to_numpy(b_hh), order, hidden),
                        ]
                    )
                )
        inputs = [
            name,
            g.const(np.stack(ws), "W"),
            g.const(np.stack(rs), "R"),
            g.const(np.stack(bs), "B") if bs else "",
            "",
        ]
        if states is not None:
            lo, hi = layer * dirs, (layer + 1) * dirs
            for s in states:
                inputs.append(g.node("Slice", [g.name(s), g.ints([lo]), g.ints([hi]), g.ints([0])]))
        while inputs[-1] == "":
            inputs.pop()
        attrs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
        if cls is GRU:
            attrs["linear_before_reset"] = 1
        if cls is RNN:
            attrs["activations"] = ["Tanh" if module.nonlinearity == "tanh" else "Relu"] * dirs
        n_out = 3 if module._has_cell else 2
        outs = g.node(op_type, inputs, n_out=n_out, **attrs)
        # Y: (T, dirs, B, H) -> (T, B, dirs·H)
        y = g.node("Transpose", [outs[0]], perm=[0, 2, 1, 3])
        name = g.node("Reshape", [y, g.ints([0, 0, -1])])
        for acc, s in zip(finals, outs[1:]):
            acc.append(s)
    if module.batch_first:
        name = g.node("Transpose", [name], perm=[1, 0, 2])
    output, rest = out
    g.bind(output, name, 0 if module.batch_first else 1)
    rest = tuple(rest) if module._has_cell else (rest,)
    for t, parts in zip(rest, finals):
        g.bind(t, parts[0] if len(parts) == 1 else g.node("Concat", parts, axis=0), 1)
