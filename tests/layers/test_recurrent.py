"""RNN, LSTM and GRU against PyTorch with copied weights, and a float64 gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
from nnkit.autograd import gradcheck

CONFIGS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"bias": False}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True}),
]


def _copy_to_torch(torch, layer, ref):
    ref.load_state_dict({k: torch.tensor(v.cpu().numpy()) for k, v in layer.state_dict().items()})


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{k}" for n, k in CONFIGS])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "given-state"])
def test_recurrent_matches_torch(name, kwargs, with_state, device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    layer = getattr(nn, name)(3, 4, **kwargs).to(device).double()
    ref = getattr(torch.nn, name)(3, 4, **kwargs).double()
    _copy_to_torch(torch, layer, ref)
    assert [n for n, _ in layer.named_parameters()] == [n for n, _ in ref.named_parameters()]
    steps, batch = 5, 2
    shape = (batch, steps, 3) if kwargs.get("batch_first") else (steps, batch, 3)
    x_np = rng.standard_normal(shape)
    x = nnkit.tensor(x_np, device=device, requires_grad=True)
    tx = torch.tensor(x_np, requires_grad=True)
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    state_np = [rng.standard_normal((layers, batch, 4)) for _ in range(2)]
    args, targs = (x,), (tx,)
    if with_state:
        states = [nnkit.tensor(s, device=device) for s in state_np]
        tstates = [torch.tensor(s) for s in state_np]
        args += ((states[0], states[1]) if name == "LSTM" else states[0],)
        targs += ((tstates[0], tstates[1]) if name == "LSTM" else tstates[0],)
    out, hidden = layer(*args)
    tout, thidden = ref(*targs)
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), atol=1e-10)
    finals = hidden if name == "LSTM" else (hidden,)
    tfinals = thidden if name == "LSTM" else (thidden,)
    for f, tf in zip(finals, tfinals):
        np.testing.assert_allclose(f.detach().cpu().numpy(), tf.detach().numpy(), atol=1e-10)
    (out.sum() + sum(f.sum() for f in finals)).backward()
    (tout.sum() + sum(f.sum() for f in tfinals)).backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), atol=1e-10)
    for (n, p), (_, tp) in zip(layer.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), atol=1e-10, err_msg=n)


def test_unbatched_input_matches_batched():
    lstm = nn.LSTM(3, 4)
    x = nnkit.randn(5, 3)
    out, (h, c) = lstm(x)
    bout, (bh, bc) = lstm(x.unsqueeze(1))
    assert out.shape == (5, 4) and h.shape == (1, 4)
    np.testing.assert_allclose(out.detach().numpy(), bout.squeeze(1).detach().numpy())
    np.testing.assert_allclose(c.detach().numpy(), bc.squeeze(1).detach().numpy())


def test_recurrent_rejects_bad_shapes():
    gru = nn.GRU(3, 4)
    with pytest.raises(ValueError, match="expected input of shape"):
        gru(nnkit.randn(5, 2, 7))
    with pytest.raises(ValueError, match="hidden state of shape"):
        gru(nnkit.randn(5, 2, 3), nnkit.zeros(1, 3, 4))
    with pytest.raises(ValueError, match=r"\(h_0, c_0\)"):
        nn.LSTM(3, 4)(nnkit.randn(5, 2, 3), (nnkit.zeros(1, 2, 4),))


def test_lstm_gradcheck_over_several_steps():
    lstm = nn.LSTM(2, 3).double()
    names = [n for n, _ in lstm.named_parameters()]
    weights = [p.detach().clone().requires_grad_() for p in lstm.parameters()]
    x = nnkit.randn(4, 2, 2, dtype=nnkit.float64, requires_grad=True)
    h0 = nnkit.randn(1, 2, 3, dtype=nnkit.float64, requires_grad=True)
    c0 = nnkit.randn(1, 2, 3, dtype=nnkit.float64, requires_grad=True)
    originals = dict(lstm._parameters)

    def fn(x, h0, c0, *ws):
        lstm._parameters.update(zip(names, ws))  # plain tensors stand in for the weights
        out, (h, c) = lstm(x, (h0, c0))
        return out, h, c

    try:
        assert gradcheck(fn, (x, h0, c0, *weights), max_full=0, n_directions=4)
    finally:
        lstm._parameters.update(originals)


def test_lstm_learns_to_sum_a_sequence():
    nnkit.manual_seed(0)
    rng = np.random.default_rng(0)
    lstm, head = nn.LSTM(1, 8, batch_first=True), nn.Linear(8, 1)
    params = list(lstm.parameters()) + list(head.parameters())
    x = nnkit.tensor(rng.uniform(-1, 1, (64, 5, 1)).astype(np.float32))
    y = x.sum(1)
    losses = []
    for _ in range(150):
        out, _ = lstm(x)
        loss = ((head(out[:, -1]) - y) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        with nnkit.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=0.1)
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
