"""The replay's fast paths (``out=`` kernels into the recorded buffers), read-only
results refilled through the array they view, constants made by a recording, and
embedding's range check as a kernel: each bitwise equal to eager over several calls."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit import nn
from nnkit.backends import replay


def _programs(cf):
    return [p for v in cf._cache.values() if isinstance(v, list) for p in v]


def _fast_names(cf) -> tuple[set, set]:
    """Step names of the compiled programs that take a fast path, and the others."""
    fast, slow = set(), set()
    for prog in _programs(cf):
        for step in prog.steps:
            (fast if replay._fast(step) is not None else slow).add(step.name)
    return fast, slow


def _ops(x, y, w):
    """One of each op with a fast path (forward and backward)."""
    a = (x * y + x - y) / (y.abs() + 1.0) + x @ w
    b = a.exp().log1p().sqrt() + a.neg().tanh() + a.sin() * a.cos() + a.floor() + a.ceil()
    c = nnkit.maximum(a, y) + nnkit.minimum(a, y) + (x.abs() + 0.5) ** y
    d = a.relu() + (a > 0).float() + nnkit.where(a < y, a, y) + (x >= y).float()
    m = x @ w + (w.t() @ x.t()).t()
    e = m.sum() + m.mean() + m.amax(1).sum() + m.amin(0).mean() + m.sum(1, keepdim=True).mean()
    g = F.tanh(b) * F.sigmoid(c) + F.relu(d) + x.clone() + nnkit.full((4,), 2.0)
    return g.sum() + e + nnkit.zeros(3).sum()


def test_fast_paths_bitwise_equal_to_eager():
    rng = np.random.default_rng(0)
    w1 = nn.Parameter(nnkit.tensor(rng.standard_normal((4, 4)).astype(np.float32)))
    w2 = nn.Parameter(nnkit.tensor(w1.detach().numpy().copy()))

    def make(w):
        def step(x, y):
            w.grad = None
            out = _ops(x, y, w)
            out.backward()
            return out

        return step

    eager, compiled = make(w1), nnkit.compile(make(w2))
    for k in range(6):  # new values at every call: the buffers are refilled
        x = nnkit.tensor(rng.standard_normal((5, 4)).astype(np.float32))
        y = nnkit.tensor(rng.standard_normal((5, 4)).astype(np.float32))
        a, b = eager(x, y), compiled(x, y)
        assert np.array_equal(a.detach().numpy(), b.numpy()), k
        assert np.array_equal(w1.grad.numpy(), w2.grad.numpy()), k
    assert compiled.num_replays == 4
    fast, _ = _fast_names(compiled)
    expected = {
        "add", "sub", "mul", "div", "abs", "exp", "log1p", "sqrt", "neg", "tanh", "sin",
        "cos", "floor", "ceil", "maximum", "minimum", "pow", "relu", "gt", "ge", "lt",
        "matmul", "sum", "mean", "amax", "amin", "copy", "astype", "where", "tanh_grad",
        "sigmoid_grad", "relu_grad",
    }  # fmt: skip
    assert expected <= fast, expected - fast


def test_mlp_replay_allocates_no_results():
    """The MLP's kernels all write into the recorded buffers: the result arrays keep
    their identity from one replay to the next."""
    nnkit.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = nnkit.optim.SGD(model.parameters(), lr=0.1)

    @nnkit.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = nnkit.ones(8, 6), nnkit.zeros(8, 3)
    for _ in range(4):
        step(x, y)
    (prog,) = [p for p in _programs(step) if p.calls is not None]
    grads = [p.grad._impl.data.array for p in model.parameters()]
    step(x, y)
    assert all(p.grad._impl.data.array is g for p, g in zip(model.parameters(), grads))
    fast, slow = _fast_names(step)
    assert {"relu", "relu_grad"} <= fast
    into = {s.name for p in _programs(step) for s in p.steps if replay._into(s) is not None}
    assert {"linear_forward", "linear_backward"} <= into  # the Linear layers' kernels


def test_read_only_broadcast_result_is_refilled():
    """``sum(keepdim).mean()``: mean's backward is a read-only broadcast of a temporary,
    which the next backward views; the replay refills the temporary."""
    rng = np.random.default_rng(1)
    p1 = nn.Parameter(nnkit.tensor(rng.standard_normal((3, 4)).astype(np.float32)))
    p2 = nn.Parameter(nnkit.tensor(p1.detach().numpy().copy()))

    def make(p):
        def step(x):
            p.grad = None
            loss = (p * x).sum(1, keepdim=True).mean() * 3.0
            loss.backward()
            return loss

        return step

    eager, compiled = make(p1), nnkit.compile(make(p2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            x = nnkit.tensor(rng.standard_normal((3, 4)).astype(np.float32))
            assert np.array_equal(eager(x).detach().numpy(), compiled(x).numpy())
            assert np.array_equal(p1.grad.numpy(), p2.grad.numpy())
    assert compiled.num_replays == 2


def test_constant_first_made_inside_the_recording():
    """A scalar constant first made (and cached) by the first recording is found
    cached by the second: the two recordings still agree."""
    value = float(np.float32(1.0 + np.random.default_rng().random()))  # new to the cache
    p = nn.Parameter(nnkit.ones(4))

    @nnkit.compile
    def step(x):
        p.grad = None
        loss = (p * x + value).sum()
        loss.backward()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(4):
            x = nnkit.full((4,), float(k))
            assert step(x).item() == np.float32(4 * (k + value))
    assert step.num_replays == 2


class _EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8, padding_idx=0)
        self.fc = nn.Linear(8, 3)

    def forward(self, idx):
        return self.fc(self.emb(idx).mean(1))


def test_embedding_model_compiles_and_checks_range_at_replay():
    rng = np.random.default_rng(0)
    nets = []
    for _ in range(2):
        nnkit.manual_seed(0)
        nets.append(_EmbeddingNet())

    def make(net):
        opt = nnkit.optim.Adam(net.parameters(), lr=0.01)

        def step(idx, y):
            opt.zero_grad()
            loss = F.cross_entropy(net(idx), y)
            loss.backward()
            opt.step()
            return loss

        return step

    eager, compiled = make(nets[0]), nnkit.compile(make(nets[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning
        for _ in range(6):
            idx = nnkit.tensor(rng.integers(0, 20, (4, 5)))
            y = nnkit.tensor(rng.integers(0, 3, 4))
            assert np.array_equal(eager(idx, y).detach().numpy(), compiled(idx, y).numpy())
    assert compiled.num_replays == 3
    for a, b in zip(nets[0].parameters(), nets[1].parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    programs = compiled.num_programs
    with pytest.raises(IndexError, match="embedding: index 20 out of range for 20 embeddings"):
        compiled(nnkit.tensor(np.full((4, 5), 20)), y)
    with pytest.raises(IndexError, match="embedding: index -1 out of range"):
        compiled(nnkit.tensor(np.full((4, 5), -1)), y)
    assert compiled.num_programs == programs  # the replays raised: no new recording
    with pytest.raises(IndexError, match="embedding: index 20 out of range"):
        eager(nnkit.tensor(np.full((4, 5), 20)), y)
    # the failed replays unbound the gradients (zero_grad ran), as the eager call did:
    # the next calls match the program recorded with unbound gradients
    for _ in range(3):
        idx = nnkit.tensor(rng.integers(0, 20, (4, 5)))
        assert np.array_equal(eager(idx, y).detach().numpy(), compiled(idx, y).numpy())
    assert compiled.num_replays == 5
    for a, b in zip(nets[0].parameters(), nets[1].parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())


def test_lazily_built_model_compiles_once_built():
    """A lazy model unbuilt at the first call: that call builds it (and runs as is),
    the next ones record and replay; the replayed values are the eager ones."""
    nnkit.manual_seed(0)
    model = nnkit.Sequential([nn.Dense(4, activation="tanh"), nn.Dense(2)])

    @nnkit.compile
    def forward(x):
        return model(x).sum(1)

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            x = nnkit.tensor(rng.standard_normal((3, 5)).astype(np.float32))
            out = forward(x)
            with nnkit.no_grad():
                assert np.array_equal(out.detach().numpy(), model(x).sum(1).numpy())
    assert forward.num_programs == 1 and forward.num_replays == 2
