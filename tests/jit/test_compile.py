"""nnkit.compile: replayed steps are bitwise equal to eager ones; guards re-record;
what cannot be replayed runs eagerly with one warning."""

from __future__ import annotations

import gc
import tracemalloc
import warnings

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit import nn
from nnkit.autograd.ops import conv
from nnkit.optim import SGD, Adam, AdamW, RMSprop
from nnkit.optim.lr_scheduler import StepLR

OPTIMIZERS = {
    "sgd": lambda p: SGD(p, lr=0.05),
    "sgd_momentum": lambda p: SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "adam": lambda p: Adam(p, lr=0.01),
    "adamw": lambda p: AdamW(p, lr=0.01, weight_decay=0.1),
    "rmsprop": lambda p: RMSprop(p, lr=0.01, momentum=0.5, centered=True),
}


def _data(n_batches=10, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_batches, batch, 6)).astype(np.float32)
    y = rng.integers(0, 3, (n_batches, batch))
    return x, y


def _mlp(device="cpu", dropout=0.25):
    nnkit.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3)).to(
        device
    )


def _trainer(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def _params(model):
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def _run(step, batches, device="cpu", seed=1, sched=None):
    nnkit.manual_seed(seed)  # Dropout's draws: the same stream for both runs
    losses = []
    for x, y in batches:
        losses.append(step(nnkit.tensor(x, device=device), nnkit.tensor(y, device=device)))
        if sched is not None:
            sched.step()
    return [float(v.item()) for v in losses]


def _batches(steps, x, y):
    return [(x[i % len(x)], y[i % len(y)]) for i in range(steps)]


def _assert_same(eager_model, compiled_model):
    for a, b in zip(_params(eager_model), _params(compiled_model)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("opt_name", sorted(OPTIMIZERS))
def test_mlp_bitwise_equal_over_100_steps(opt_name):
    x, y = _data()
    batches = _batches(100, x, y)
    m1, m2 = _mlp(), _mlp()
    eager = _trainer(m1, OPTIMIZERS[opt_name](m1.parameters()))
    compiled = nnkit.compile(_trainer(m2, OPTIMIZERS[opt_name](m2.parameters())))
    assert _run(eager, batches) == _run(compiled, batches)
    _assert_same(m1, m2)
    # grads None at the first call, bound afterwards: recorded at calls 1 and 2, the
    # second program recorded again at call 3 to check that nothing in it changed
    assert compiled.num_programs == 2
    assert compiled.num_replays == 97


def test_mlp_on_device(device):
    x, y = _data(4)
    batches = _batches(12, x, y)
    m1, m2 = _mlp(device), _mlp(device)
    eager = _trainer(m1, Adam(m1.parameters(), lr=0.01))
    compiled = nnkit.compile(_trainer(m2, Adam(m2.parameters(), lr=0.01)))
    assert _run(eager, batches, device) == _run(compiled, batches, device)
    _assert_same(m1, m2)
    assert compiled.num_replays == 9


def test_scheduler_changes_the_learning_rate_of_replays():
    x, y = _data()
    batches = _batches(100, x, y)
    m1, m2 = _mlp(), _mlp()
    o1, o2 = SGD(m1.parameters(), lr=0.1, momentum=0.9), SGD(m2.parameters(), lr=0.1, momentum=0.9)
    s1, s2 = StepLR(o1, step_size=7, gamma=0.5), StepLR(o2, step_size=7, gamma=0.5)
    compiled = nnkit.compile(_trainer(m2, o2))
    assert _run(_trainer(m1, o1), batches, sched=s1) == _run(compiled, batches, sched=s2)
    _assert_same(m1, m2)
    assert o2.param_groups[0]["lr"] < 0.1 * 0.5**13
    assert compiled.num_replays == 97


def test_partial_last_batch_records_its_own_program():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 6)).astype(np.float32)
    y = rng.integers(0, 3, 50)
    batches = [(x[i : i + 16], y[i : i + 16]) for i in range(0, 50, 16)] * 3  # 16,16,16,2
    m1, m2 = _mlp(), _mlp()
    compiled = nnkit.compile(_trainer(m2, Adam(m2.parameters())))
    assert _run(_trainer(m1, Adam(m1.parameters())), batches) == _run(compiled, batches)
    _assert_same(m1, m2)
    # (16, grads None), (16, grads bound), (2, grads bound), the last two recorded twice
    assert compiled.num_programs == 3
    assert compiled.num_replays == len(batches) - 5


@pytest.mark.parametrize("winograd", [False, True], ids=["im2col", "winograd"])
def test_cnn_bitwise_equal(winograd, monkeypatch):
    # every 3x3 stride-1 convolution by Winograd F(4x4, 3x3) (even the first, of one
    # input channel), or all of them by im2col + GEMM
    monkeypatch.setattr(conv, "WINOGRAD", winograd)
    monkeypatch.setattr(conv, "WINOGRAD_MIN_CHANNELS", 1)

    def cnn():
        nnkit.manual_seed(0)
        return nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 4, 3), nn.ReLU(), nn.Flatten(), nn.Dropout(0.2), nn.Linear(16, 3),
        )  # fmt: skip

    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 8, 1, 8, 8)).astype(np.float32)
    y = rng.integers(0, 3, (4, 8))
    batches = _batches(100, x, y)
    m1, m2 = cnn(), cnn()
    compiled = nnkit.compile(_trainer(m2, Adam(m2.parameters(), lr=0.01)))
    assert _run(_trainer(m1, Adam(m1.parameters(), lr=0.01)), batches) == _run(compiled, batches)
    _assert_same(m1, m2)
    assert compiled.num_replays == 97


class _LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 8, batch_first=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


class _AttentionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(5, 8)
        self.att = nn.MultiheadAttention(8, 2, dropout=0.1, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        h = self.emb(x)
        a, _ = self.att(h, h, h)
        return self.fc(self.norm(h + a).mean(1))


class _TransformerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(5, 8)
        self.enc = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(self.enc(self.emb(x)).mean(1))


@pytest.mark.parametrize("net", [_LSTMNet, _AttentionNet, _TransformerNet])
def test_sequence_models_bitwise_equal(net):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 4, 6, 5)).astype(np.float32)
    y = rng.integers(0, 3, (5, 4))
    batches = _batches(100, x, y)
    models = []
    for _ in range(2):
        nnkit.manual_seed(0)
        models.append(net())
    m1, m2 = models
    compiled = nnkit.compile(_trainer(m2, AdamW(m2.parameters(), lr=0.01)))
    assert _run(_trainer(m1, AdamW(m1.parameters(), lr=0.01)), batches) == _run(compiled, batches)
    _assert_same(m1, m2)
    assert compiled.num_replays == 97


class _WideLSTMNet(nn.Module):
    """Per-step GEMMs in row blocks of the batch (``rnn_common._row_blocks``)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 256, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(512, 3)

    def forward(self, x):
        return self.fc(self.lstm(x)[0][-1])


def test_wide_lstm_bitwise_equal_and_replays_reuse_its_buffers(monkeypatch):
    from nnkit.backends import rnn_common, rnn_lstm

    monkeypatch.setattr(rnn_common, "_ROW_BLOCKS", [True])  # as on AVX-512 kernels
    assert rnn_common._row_blocks(np, 16, 256, 256) > 1
    taken = []
    empty = rnn_lstm._empty

    def spy(xp, shape, dt):
        taken.append(bool(rnn_common._POOL.get((shape, dt.str))))
        return empty(xp, shape, dt)

    monkeypatch.setattr(rnn_lstm, "_empty", spy)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 16, 5)).astype(np.float32)
    y = rng.integers(0, 3, (2, 16))
    batches = _batches(8, x, y)
    models = []
    for _ in range(2):
        nnkit.manual_seed(0)
        models.append(_WideLSTMNet())
    m1, m2 = models
    eager = _run(_trainer(m1, SGD(m1.parameters(), lr=0.05)), batches)
    taken.clear()
    compiled = nnkit.compile(_trainer(m2, SGD(m2.parameters(), lr=0.05)))
    assert eager == _run(compiled, batches)
    _assert_same(m1, m2)
    assert compiled.num_replays == 5
    per_step = len(taken) // 8
    assert all(taken[-2 * per_step :])  # the last replays found every buffer free


def test_keras_style_optimizer_runs_live_at_replay():
    x, y = _data(4)
    batches = _batches(20, x, y)
    m1, m2 = _mlp(), _mlp()
    o1, o2 = nnkit.optimizers.Adam(learning_rate=0.01), nnkit.optimizers.Adam(learning_rate=0.01)
    o1.build(list(m1.parameters()))
    o2.build(list(m2.parameters()))
    compiled = nnkit.compile(_trainer(m2, o2))
    assert _run(_trainer(m1, o1), batches) == _run(compiled, batches)
    _assert_same(m1, m2)
    assert o2.iterations == 20 and compiled.num_replays == 17


def test_python_value_changing_between_calls_falls_back():
    """A number computed in Python each call would be frozen into the program: the
    second recording differs from the first, and the step runs eagerly."""
    model = _mlp(dropout=0.0)
    calls = []

    def step(x):
        calls.append(1)
        return model(x) * float(len(calls))

    compiled = nnkit.compile(step)
    x = nnkit.ones(2, 6)
    first = compiled(x)
    with pytest.warns(RuntimeWarning, match="a Python value baked into `.*` changed"):
        second = compiled(x)
    third = compiled(x)
    assert np.array_equal(second.detach().numpy(), 2 * first.numpy())
    assert np.array_equal(third.detach().numpy(), 3 * first.numpy())
    assert compiled.num_replays == 0


def test_compiled_function_called_inside_another_runs_inline():
    model = _mlp(dropout=0.0)
    inner = nnkit.compile(lambda x: model(x).relu())
    outer = nnkit.compile(lambda x: inner(x).sum(1))
    x = nnkit.ones(3, 6)
    expected = model(x).relu().sum(1).detach().numpy()
    for _ in range(4):
        assert np.array_equal(outer(x).numpy(), expected)
    assert inner.num_programs == 0 and outer.num_replays == 2


def test_gradients_accumulated_across_calls():
    """Without zero_grad the program reads the gradient the previous call left."""
    x, y = _data(3)
    batches = _batches(12, x, y)

    def accumulate(model):
        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss

        return step

    m1, m2 = _mlp(dropout=0.0), _mlp(dropout=0.0)
    compiled = nnkit.compile(accumulate(m2))
    _run(accumulate(m1), batches)
    _run(compiled, batches)
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert np.array_equal(p.grad.numpy(), q.grad.numpy())
    assert compiled.num_replays == 9


def test_training_mode_is_a_guard():
    x, y = _data(2)
    m1, m2 = _mlp(dropout=0.5), _mlp(dropout=0.5)

    def forward(model):
        return lambda x: model(x)

    compiled = nnkit.compile(forward(m2))
    xt = nnkit.tensor(x[0])
    nnkit.manual_seed(2)
    a = [forward(m1)(xt).detach().numpy() for _ in range(3)]
    m1.eval()
    a += [forward(m1)(xt).detach().numpy() for _ in range(2)]
    nnkit.manual_seed(2)
    b = [compiled(xt).numpy() for _ in range(3)]
    m2.eval()
    b += [compiled(xt).numpy() for _ in range(2)]
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(b[0], b[1])  # a new dropout mask at each replay
    assert np.array_equal(b[3], b[4])
    assert compiled.num_programs == 2


def test_decorator_forms_and_results_are_detached_copies():
    model = _mlp(dropout=0.0)
    opt = SGD(model.parameters(), lr=0.1)

    @nnkit.compile
    def step(x, y):
        return _trainer(model, opt)(x, y)

    @nnkit.compile(cache_size=3)
    def predict(x):
        return model(x), None

    x, y = _data(1)
    xt, yt = nnkit.tensor(x[0]), nnkit.tensor(y[0])
    first = step(xt, yt)
    first_value = first.item()
    for _ in range(3):
        later = step(xt, yt)
    assert first.item() == first_value and later.item() < first_value
    assert first.grad_fn is None and not first.requires_grad
    out, none = predict(xt)
    assert none is None and out.shape == (16, 3)
    assert isinstance(step, nnkit.jit.CompiledFunction) and step.__name__ == "step"
    assert predict.cache_size == 3


def test_method_decorator_binds_self():
    class Trainer:
        def __init__(self):
            self.model = _mlp(dropout=0.0)
            self.opt = SGD(self.model.parameters(), lr=0.1)

        @nnkit.compile
        def step(self, x, y):
            return _trainer(self.model, self.opt)(x, y)

    t1, t2 = Trainer(), Trainer()
    x, y = _data(1)
    xt, yt = nnkit.tensor(x[0]), nnkit.tensor(y[0])
    l1 = [t1.step(xt, yt).item() for _ in range(4)]
    l2 = [_trainer(t2.model, t2.opt)(xt, yt).item() for _ in range(4)]
    assert l1 == l2


def test_data_dependent_branch_falls_back_with_one_warning():
    x, y = _data(1)
    xt, yt = nnkit.tensor(x[0]), nnkit.tensor(y[0])
    m1, m2 = _mlp(dropout=0.0), _mlp(dropout=0.0)

    def branchy(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            if loss > 0.5:  # a Python branch on data
                loss = loss * 2
            loss.backward()
            opt.step()
            return loss

        return step

    compiled = nnkit.compile(branchy(m2, SGD(m2.parameters(), lr=0.1)))
    eager = branchy(m1, SGD(m1.parameters(), lr=0.1))
    with pytest.warns(RuntimeWarning, match=r"runs eagerly: `\.item\(\)` reads a value"):
        a = [compiled(xt, yt).item()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning only
        a += [compiled(xt, yt).item() for _ in range(3)]
    b = [eager(xt, yt).item() for _ in range(4)]
    assert a == b and compiled.num_programs == 0
    _assert_same(m1, m2)


@pytest.mark.parametrize("what", ["anomaly", "module_hook", "tensor_hook", "inner_hook"])
def test_unsafe_features_fall_back(what):
    model = _mlp(dropout=0.0)
    x = nnkit.tensor(_data(1)[0][0])

    def step(x):
        out = model(x).sum()
        if what == "inner_hook":
            out.register_hook(lambda g: g)
        out.backward()
        return out

    compiled = nnkit.compile(step)
    reasons = {
        "anomaly": "anomaly detection",
        "module_hook": "forward hooks",
        "tensor_hook": "gradient hooks",
        "inner_hook": "hook is registered",
    }
    if what == "module_hook":
        model[0].register_forward_hook(lambda m, i, o: None)
    elif what == "tensor_hook":
        model[0].weight.register_hook(lambda g: g)
    with pytest.warns(RuntimeWarning, match=reasons[what]):
        if what == "anomaly":
            with nnkit.detect_anomaly():
                compiled(x)
        else:
            compiled(x)
    assert compiled.num_programs == 0


def test_checkpoint_restoring_the_random_state_falls_back():
    model = _mlp(dropout=0.0)
    x = nnkit.ones(4, 6)

    def step(x):
        h = nnkit.checkpoint(lambda t: F.dropout(model(t), 0.5), x)
        h.sum().backward()
        return h

    compiled = nnkit.compile(step)
    nnkit.manual_seed(3)
    with pytest.warns(RuntimeWarning, match="sets nnkit's random state"):
        a = [compiled(x).detach().numpy() for _ in range(3)]
    nnkit.manual_seed(3)
    b = [step(x).detach().numpy() for _ in range(3)]
    assert all(np.array_equal(u, v) for u, v in zip(a, b)) and compiled.num_programs == 0


def test_tensor_made_outside_the_mat_interface_falls_back():
    model = _mlp(dropout=0.0)
    x = nnkit.tensor(_data(1)[0][0])
    cls = type(x._impl.data)

    def step(x):
        extra = nnkit.Tensor._from_mat(cls(np.ones((16, 3), np.float32)))
        return model(x) + extra

    compiled = nnkit.compile(step)
    with pytest.warns(RuntimeWarning, match="made outside the recorded kernels"):
        compiled(x)
    assert compiled.num_programs == 0


def test_cache_size_bounds_the_programs():
    model = _mlp(dropout=0.0)
    compiled = nnkit.compile(lambda x: model(x), cache_size=2)
    for n in (4, 5, 4, 5, 4, 5):  # recorded, recorded, checked, checked, replayed
        compiled(nnkit.ones(n, 6))
    with pytest.warns(RuntimeWarning, match="cache_size=2"):
        out = compiled(nnkit.ones(7, 6))
    assert out.shape == (7, 3) and compiled.num_programs == 2 and compiled.num_replays == 2


def test_memory_is_flat_over_1000_replays():
    x, y = _data(1)
    model = _mlp(dropout=0.1)
    compiled = nnkit.compile(_trainer(model, Adam(model.parameters(), lr=1e-3)))
    xt, yt = nnkit.tensor(x[0]), nnkit.tensor(y[0])
    for _ in range(2000):  # warm-up: Python's free lists and NumPy's caches fill
        compiled(xt, yt)
    gc.collect()
    objects = len(gc.get_objects())
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(1000):
            compiled(xt, yt)
        gc.collect()
        now, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    gc.collect()
    assert compiled.num_replays == 2997
    # one leaked (16, 16) float32 activation per step would be 1 MiB
    assert now - base < 64 * 1024, now - base
    assert len(gc.get_objects()) - objects < 50


def test_replay_keeps_floating_point_errors_quiet():
    """A replay runs its kernels as eager mode does, NumPy's floating-point errors quiet
    (``log(0)`` is ``-inf``, ``exp`` overflows to ``inf``, ``0/0`` is NaN): no warning,
    which the test configuration would raise."""
    w_e = nnkit.tensor([0.0, 1.0, 2.0, 100.0], requires_grad=True)
    w_c = nnkit.tensor([0.0, 1.0, 2.0, 100.0], requires_grad=True)

    def make(w):
        def step(x):
            w.grad = None
            loss = (w * x).log().sum() + (w * x).exp().sum() + (w / w).sum()
            loss.backward()
            return loss

        return step

    eager, compiled = make(w_e), nnkit.compile(make(w_c))
    x = nnkit.tensor([1.0, 1.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):  # recorded twice, then replayed
            a, b = eager(x), compiled(x)
            assert np.array_equal(a.detach().numpy(), b.numpy(), equal_nan=True)
    assert np.array_equal(w_e.grad.numpy(), w_c.grad.numpy(), equal_nan=True)
    assert compiled.num_programs == 1 and compiled.num_replays >= 2
