"""The fused recurrent op (``nnkit.autograd.ops.rnn_fused``) and the layers that use it:
against PyTorch (float64 tight, float32 loose), against the per-step layers, float64
gradcheck of every mode and direction, and the double-backward contract."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
from nnkit.autograd import gradcheck, gradgradcheck
from nnkit.autograd.ops.rnn_fused import rnn_sequence

MODES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}

CONFIGS = [
    ("LSTM", {"num_layers": 3, "bidirectional": True, "batch_first": True}),
    ("LSTM", {"bias": False, "bidirectional": True}),
    ("GRU", {"bias": False, "batch_first": True}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("RNN", {"bidirectional": True, "num_layers": 2}),
    ("RNN", {"nonlinearity": "relu", "bias": False, "bidirectional": True}),
]


def _layer_pair(torch, name, kwargs, dtype, device="cpu"):
    layer = getattr(nn, name)(3, 5, **kwargs).to(device)
    ref = getattr(torch.nn, name)(3, 5, **kwargs)
    layer = layer.double() if dtype == "float64" else layer
    ref = ref.double() if dtype == "float64" else ref
    ref.load_state_dict({k: torch.tensor(v.cpu().numpy()) for k, v in layer.state_dict().items()})
    return layer, ref


def _run(layer, x, state):
    out, hidden = layer(x, state)
    finals = hidden if isinstance(hidden, tuple) else (hidden,)
    return out, finals


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[f"{n}-{k}" for n, k in CONFIGS])
def test_fused_layers_match_torch(name, kwargs, dtype, device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    layer, ref = _layer_pair(torch, name, kwargs, dtype, device)
    assert layer.fused
    tol = {"atol": 1e-10, "rtol": 1e-10} if dtype == "float64" else {"atol": 2e-5, "rtol": 1e-4}
    steps, batch = 6, 4
    shape = (batch, steps, 3) if kwargs.get("batch_first") else (steps, batch, 3)
    x_np = rng.standard_normal(shape).astype(dtype)
    n_states = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    s_np = [rng.standard_normal((n_states, batch, 5)).astype(dtype) for _ in range(2)]
    x = nnkit.tensor(x_np, device=device, requires_grad=True)
    tx = torch.tensor(x_np, requires_grad=True)
    states = [nnkit.tensor(s, device=device, requires_grad=True) for s in s_np]
    tstates = [torch.tensor(s, requires_grad=True) for s in s_np]
    if name != "LSTM":
        states, tstates = states[:1], tstates[:1]
    out, finals = _run(layer, x, tuple(states) if name == "LSTM" else states[0])
    tout, tfinals = _run(ref, tx, tuple(tstates) if name == "LSTM" else tstates[0])
    np.testing.assert_allclose(out.detach().cpu().numpy(), tout.detach().numpy(), **tol)
    for f, tf in zip(finals, tfinals):
        np.testing.assert_allclose(f.detach().cpu().numpy(), tf.detach().numpy(), **tol)
    w_out = rng.standard_normal(tuple(out.shape)).astype(dtype)
    w_fin = [rng.standard_normal(tuple(f.shape)).astype(dtype) for f in finals]
    loss = (out * nnkit.tensor(w_out, device=device)).sum()
    tloss = (tout * torch.tensor(w_out)).sum()
    for f, tf, w in zip(finals, tfinals, w_fin):
        loss = loss + (f * nnkit.tensor(w, device=device)).sum()
        tloss = tloss + (tf * torch.tensor(w)).sum()
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), **tol)
    for s, ts in zip(states, tstates):
        np.testing.assert_allclose(s.grad.cpu().numpy(), ts.grad.numpy(), **tol)
    for (n, p), (_, tp) in zip(layer.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.cpu().numpy(), tp.grad.numpy(), err_msg=n, **tol)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_fused_equals_per_step_with_dropout(name):
    """Dropout between layers draws the same masks on both paths."""
    layer = getattr(nn, name)(4, 6, num_layers=3, dropout=0.5, bidirectional=True).double()
    x = nnkit.randn(5, 2, 4, dtype=nnkit.float64, requires_grad=True)
    results = []
    for fused in (True, False):
        layer.fused = fused
        layer.zero_grad()
        x.grad = None
        nnkit.manual_seed(7)
        out, hidden = layer(x)
        finals = hidden if isinstance(hidden, tuple) else (hidden,)
        (out.sin().sum() + sum((f * f).sum() for f in finals)).backward()
        grads = [p.grad.numpy().copy() for p in layer.parameters()]
        results.append(
            [out.detach().numpy(), *[f.detach().numpy() for f in finals], x.grad.numpy()]
        )
        results[-1] += grads
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_fused_layer_records_one_node_per_layer_and_direction():
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    out, _ = lstm(nnkit.randn(7, 2, 3))
    seen, stack = set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    assert sum(n.name() == "FusedRNNBackward" for n in seen) == 4


def _random_args(mode, reverse, bias, rng):
    steps, batch, n_in, hidden = 4, 3, 2, 3
    gsize = MODES[mode] * hidden

    def t(*shape, scale=1.0):
        return nnkit.tensor(scale * rng.standard_normal(shape), requires_grad=True)

    # relu: weights and inputs kept so that no pre-activation sits near the kink
    args = [t(steps, batch, n_in), t(batch, hidden), t(batch, hidden) if mode == "lstm" else None]
    args += [t(gsize, n_in, scale=0.6), t(gsize, hidden, scale=0.6)]
    args += [t(gsize), t(gsize)] if bias else [None, None]
    return args


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("mode", list(MODES))
def test_rnn_sequence_gradcheck(mode, reverse, bias):
    rng = np.random.default_rng(len(mode) + 2 * reverse + bias)
    args = _random_args(mode, reverse, bias, rng)
    idx = [k for k, a in enumerate(args) if a is not None]

    def fn(*ts):
        full = list(args)
        for k, v in zip(idx, ts):
            full[k] = v
        return rnn_sequence(mode, *full, reverse=reverse)

    assert gradcheck(fn, tuple(args[k] for k in idx), max_full=0, n_directions=6)


def test_rnn_sequence_matches_reverse_of_flipped_input():
    rng = np.random.default_rng(0)
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = _random_args("lstm", False, True, rng)
    out, h, c = rnn_sequence("lstm", x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse=True)
    fout, fh, fc = rnn_sequence("lstm", x.flip(0), h0, c0, w_ih, w_hh, b_ih, b_hh)
    np.testing.assert_allclose(out.detach().numpy(), fout.flip(0).detach().numpy())
    np.testing.assert_allclose(c.detach().numpy(), fc.detach().numpy())


def test_create_graph_first_order_then_double_backward_raises():
    lstm = nn.LSTM(2, 3).double()
    x = nnkit.randn(4, 2, 2, dtype=nnkit.float64, requires_grad=True)
    out, _ = lstm(x)
    (gx,) = nnkit.autograd.grad(out.sum(), x, create_graph=True)
    lstm.fused = False
    (ref,) = nnkit.autograd.grad(lstm(x)[0].sum(), x)
    np.testing.assert_allclose(gx.detach().numpy(), ref.numpy(), rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="double backward through a fused recurrent"):
        (gx * gx).sum().backward()


def test_per_step_layers_support_double_backward():
    gru = nn.GRU(2, 2).double()
    gru.fused = False
    x = nnkit.randn(3, 1, 2, dtype=nnkit.float64, requires_grad=True)
    assert gradgradcheck(lambda t: gru(t)[0], (x,))


def test_rnn_sequence_rejects_bad_arguments():
    x, h = nnkit.randn(2, 1, 3), nnkit.zeros(1, 4)
    w_ih, w_hh = nnkit.randn(4, 3), nnkit.randn(4, 4)
    with pytest.raises(ValueError, match="unknown mode"):
        rnn_sequence("lstmx", x, h, None, w_ih, w_hh)
    with pytest.raises(TypeError, match="floating dtype"):
        rnn_sequence("rnn_tanh", x, h, None, w_ih.double(), w_hh)
    with pytest.raises(ValueError, match="c0 is for 'lstm' only"):
        rnn_sequence("lstm", x, h, None, nnkit.randn(16, 3), nnkit.randn(16, 4))
    with pytest.raises(ValueError, match=r"T ≥ 1"):
        rnn_sequence("rnn_tanh", x[:0], h, None, w_ih, w_hh)
    with pytest.raises(ValueError, match=r"expected w_ih of shape \(4, 3\).*got \(4, 2\)"):
        rnn_sequence("rnn_tanh", x, h, None, w_ih[:, :2], w_hh)
    with pytest.raises(ValueError, match=r"expected h0 of shape \(1, 4\)"):
        rnn_sequence("rnn_tanh", x, nnkit.zeros(2, 4), None, w_ih, w_hh)


def test_layer_keeps_the_mixed_dtype_error():
    """A float32 layer given a float64 state refuses it on both paths (as PyTorch)."""
    rnn = nn.RNN(3, 4)
    x, h0 = nnkit.randn(2, 1, 3), nnkit.randn(1, 1, 4, dtype=nnkit.float64)
    for fused in (True, False):
        rnn.fused = fused
        with pytest.raises(RuntimeError, match="same dtype"):
            rnn(x, h0)


def test_subclass_runs_fused_like_its_base():
    class MyGRU(nn.GRU):
        pass

    layer = MyGRU(3, 4).double()
    x = nnkit.randn(4, 2, 3, dtype=nnkit.float64)
    out, h = layer(x)
    assert out.grad_fn.name() == "FusedRNNBackward"
    layer.fused = False
    np.testing.assert_allclose(out.detach().numpy(), layer(x)[0].detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_reused_work_buffers_do_not_leak_between_graphs(name):
    """Two graphs alive at once, and no-grad forwards in between (whose buffers are freed
    and reused at once): every gradient still equals the per-step layer's."""
    layer = getattr(nn, name)(3, 4, num_layers=2).double()
    xs = [nnkit.randn(5, 2, 3, dtype=nnkit.float64, requires_grad=True) for _ in range(2)]
    outs = [layer(x)[0] for x in xs]
    with nnkit.no_grad():
        for _ in range(3):
            layer(nnkit.randn(5, 2, 3, dtype=nnkit.float64))
    got = []
    for x, out in zip(xs[::-1], outs[::-1]):
        (out * out).sum().backward()
        got.append(x.grad.numpy().copy())
        layer(nnkit.randn(5, 2, 3, dtype=nnkit.float64))[0].sum().backward()
    layer.fused = False
    for x, g in zip(xs[::-1], got):
        x.grad = None
        out = layer(x)[0]
        (out * out).sum().backward()
        np.testing.assert_allclose(g, x.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_row_blocked_gemms_match_the_per_step_layer(monkeypatch, name):
    """A batch and hidden size whose per-step GEMMs run in row blocks of the batch
    (``rnn_common._row_blocks``, as on BLAS kernels with a small-matrix GEMM), over more
    steps than one span of LSTM's backward factors (and not a multiple of it): values
    and gradients as the per-step layer's."""
    from nnkit.backends import rnn_common, rnn_gru, rnn_lstm

    monkeypatch.setattr(rnn_common, "_ROW_BLOCKS", [True])
    assert rnn_common._row_blocks(np, 64, 128, 128) > 1  # one GEMM per gate (RNN: one)
    assert rnn_lstm._SPAN < 11 and rnn_gru._SPAN < 11
    layer = getattr(nn, name)(3, 128, bidirectional=True).double()
    x = nnkit.randn(11, 64, 3, dtype=nnkit.float64, requires_grad=True)
    results = []
    for fused in (True, False):
        layer.fused = fused
        layer.zero_grad()
        x.grad = None
        out, hidden = layer(x)
        finals = hidden if isinstance(hidden, tuple) else (hidden,)
        (out.sin().sum() + sum((f * f).sum() for f in finals)).backward()
        grads = [p.grad.numpy().copy() for p in layer.parameters()]
        results.append([out.detach().numpy(), finals[0].detach().numpy(), x.grad.numpy()])
        results[-1] += grads
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("small_gemm", [0, 160, 10**9], ids=["large", "blocked", "small"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_gated_projection_paths_match_the_per_step_layer(monkeypatch, name, small_gemm, bias):
    """The input projection as one GEMM for all steps (GEMMs too large for the small-
    matrix kernel), one per step in row blocks, or one per step whole."""
    from nnkit.backends import rnn_common

    monkeypatch.setattr(rnn_common, "_SMALL_GEMM", small_gemm)
    monkeypatch.setattr(rnn_common, "_ROW_BLOCKS", [True])
    want = {0: None, 160: 2, 10**9: 1}[small_gemm]
    assert rnn_common._small_blocks(np, 16, 3 + bias, 5) == want
    layer = getattr(nn, name)(3, 5, bias=bias, bidirectional=True).double()
    x = nnkit.randn(10, 16, 3, dtype=nnkit.float64, requires_grad=True)
    results = []
    for fused in (True, False):
        layer.fused = fused
        layer.zero_grad()
        x.grad = None
        out, state = layer(x)
        h, c = state if name == "LSTM" else (state, state)
        (out.sin().sum() + (h * c).sum()).backward()
        grads = [p.grad.numpy().copy() for p in layer.parameters()]
        results.append([out.detach().numpy(), h.detach().numpy(), x.grad.numpy(), *grads])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_lstm_work_buffers_go_back_once_the_graph_is_freed(monkeypatch):
    """The forward's work buffers stay the graph's while it can run backward (twice
    with retain_graph) and serve a later forward once it is freed."""
    from nnkit.autograd.ops import rnn_fused

    made = []  # each forward's gate buffer (holding the cache would keep it alive)
    forward = rnn_fused.rnn_forward

    def spy(*args, **kwargs):
        res = forward(*args, **kwargs)
        made.append(res[3].gates)
        return res

    monkeypatch.setattr(rnn_fused, "rnn_forward", spy)
    lstm = nn.LSTM(3, 4).double()
    x = nnkit.randn(5, 2, 3, dtype=nnkit.float64, requires_grad=True)
    out = lstm(x)[0]
    gates = made[-1]
    other = lstm(x)[0]  # a second graph alive: its own buffers
    assert made[-1] is not gates
    (out * out).sum().backward(retain_graph=True)
    first = x.grad.numpy().copy()
    lstm(x)  # retained: not reused
    assert made[-1] is not gates
    x.grad = None
    (out * out).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), first)
    del out
    lstm(x)  # freed: reused
    assert made[-1] is gates
    del other


def test_buffers_follow_the_cache_that_holds_them_last():
    """A replay refills the recorded cache with the new call's arrays: the buffers it
    held go back then, the new call's stay with it (not given back when the new,
    emptied cache dies)."""
    from nnkit.backends import rnn_common as K

    a, b = np.empty((3, 7, 11)), np.empty((3, 7, 11))
    free = K._POOL.setdefault(((3, 7, 11), a.dtype.str), [])
    recorded = K.RNNCache("lstm", False, a, buffers=K._Buffers(a))
    new = K.RNNCache("lstm", False, b, buffers=K._Buffers(b))
    for k in K.RNNCache.__slots__:  # as replay.refill does
        setattr(recorded, k, getattr(new, k))
    assert any(x is a for x in free) and not any(x is b for x in free)
    del new
    assert not any(x is b for x in free)
    del recorded
    assert any(x is b for x in free)
    K._POOL.pop(((3, 7, 11), a.dtype.str))


def test_row_blocks_only_on_kernels_with_a_small_matrix_gemm(monkeypatch):
    """OpenBLAS's AVX-512 kernel families run small GEMMs without packing (row blocks
    pay); elsewhere a GEMM too large for one is not cut (the input projection then one
    GEMM for all steps). The kernel family is read from NumPy's OpenBLAS where it is."""
    from nnkit.backends import blas_info, rnn_common

    assert rnn_common.row_blocks_pay("SkylakeX") and rnn_common.row_blocks_pay("cooperlake")
    assert not rnn_common.row_blocks_pay("Haswell") and not rnn_common.row_blocks_pay("Zen")
    assert not rnn_common.row_blocks_pay("")
    monkeypatch.setattr(rnn_common, "_ROW_BLOCKS", [False])
    assert rnn_common._small_blocks(np, 64, 128, 128) is None
    assert rnn_common._row_blocks(np, 64, 128, 128) == 1
    assert rnn_common._small_blocks(np, 64, 33, 128) == 1  # small enough as it is
    monkeypatch.setattr(rnn_common, "_ROW_BLOCKS", [True])
    assert rnn_common._row_blocks(np, 64, 128, 128) == 2
    core = blas_info.openblas_core()
    info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    if "openblas" in str(info.get("name", "")).lower():
        assert isinstance(core, str) and core  # e.g. 'Haswell', 'SkylakeX', 'Zen'
    assert blas_info.openblas_core("/nonexistent/maps") is None


def test_pool_keeps_plain_numpy_arrays_only():
    """Another device's arrays (the simulated device's ndarray subclass, say) never enter
    the free-buffer pool of NumPy work arrays, where a CPU kernel would take them."""
    from nnkit.backends import rnn_common as K

    class Other(np.ndarray):
        pass

    shape = (3, 7, 13)
    K._give_back(np.empty(shape, np.float32).view(Other), None)
    assert not K._POOL.get((shape, np.dtype(np.float32).str))
    plain = np.empty(shape, np.float32)
    K._give_back(plain)
    assert K._empty(np, shape, np.dtype(np.float32)) is plain
