"""End to end on a simulated second device: nothing above ``nnkit/backends`` may care
which backend runs (``tests/_simulated_device.py``). Runs without a GPU or CuPy."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit import nn
from nnkit.data import DataLoader, TensorDataset
from tests._simulated_device import MixedDeviceError, SimArray, SimMat, install


@pytest.fixture
def sim(monkeypatch):
    """Device type 'cuda' served by SimMat for this test; returns the device string."""
    install(monkeypatch)
    return "cuda"


def _host(t):
    return t.detach().cpu().numpy()


def _on(t, dev):
    assert t.device == nnkit.device(dev), f"{t.device} != {dev}"
    return t


def _mlp():
    nnkit.manual_seed(3)
    return nn.Sequential(
        nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)
    )


def _train(model, dev, x, y, steps=3):
    model.to(dev)
    opt = nnkit.optim.Adam(model.parameters(), lr=0.01)
    xb, yb = nnkit.tensor(x, device=dev), nnkit.tensor(y, device=dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb, label_smoothing=0.1)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, opt, losses


def test_the_simulated_device_is_cuda(sim):
    t = nnkit.ones(2, device=sim)
    assert nnkit.cuda.is_available() and t.is_cuda and str(t.device) == "cuda:0"
    assert isinstance(t._impl.data, SimMat) and isinstance(t._impl.data.array, SimArray)
    assert str(t).endswith("device=cuda:0)")
    host = t.numpy()
    host[0] = 5.0  # a download is a copy, as from a real device
    assert t.tolist() == [1.0, 1.0]


def test_mixing_raw_arrays_is_detected(sim):
    m = nnkit.ones(3, device=sim)._impl.data
    with pytest.raises(MixedDeviceError, match="mixed device arrays"):
        m.array + np.ones(3)
    with pytest.raises(MixedDeviceError, match="mixed device arrays"):
        nnkit.ones(3)._impl.data.add(m)


def test_mlp_training_matches_cpu_bit_for_bit(sim, rng):
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.integers(0, 3, 8)
    cpu_model, _, cpu_losses = _train(_mlp(), "cpu", x, y)
    dev_model, opt, dev_losses = _train(_mlp(), sim, x, y)
    assert dev_losses == cpu_losses
    for (name, p), q in zip(dev_model.named_parameters(), cpu_model.parameters()):
        _on(p, sim)
        _on(p.grad, sim)
        np.testing.assert_array_equal(_host(p), _host(q), err_msg=name)
        for buf in opt.state[p].values():
            if isinstance(buf, nnkit.Tensor):
                _on(buf, sim)


def test_conv_net_forward_backward_matches_cpu(sim, rng):
    x = rng.standard_normal((2, 3, 10, 10)).astype(np.float32)

    def run(dev):
        nnkit.manual_seed(5)
        net = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(4, 4, 3, stride=2, groups=2),
            nn.AvgPool2d(2),
            nn.Flatten(),
            nn.Linear(4, 2),
        ).to(dev)
        inp = nnkit.tensor(x, device=dev, requires_grad=True)
        out = net(inp)
        (out * out).sum().backward()
        return out, inp.grad, net

    out_c, gin_c, net_c = run("cpu")
    out_d, gin_d, net_d = run(sim)
    np.testing.assert_array_equal(_host(_on(out_d, sim)), _host(out_c))
    np.testing.assert_array_equal(_host(_on(gin_d, sim)), _host(gin_c))
    for p, q in zip(net_d.parameters(), net_c.parameters()):
        np.testing.assert_array_equal(_host(_on(p.grad, sim)), _host(q.grad))
    for b, c in zip(net_d.buffers(), net_c.buffers()):
        np.testing.assert_array_equal(_host(_on(b, sim)), _host(c))


def test_mixing_devices_raises_naming_both(sim):
    a, b = nnkit.ones(3, device=sim), nnkit.ones(3)
    with pytest.raises(RuntimeError, match=r"same device.*cuda:0.*cpu"):
        a + b
    with pytest.raises(RuntimeError, match=r"same device.*cpu.*cuda:0"):
        b.add_(a)
    with pytest.raises(RuntimeError, match=r"cpu.*cuda:0|cuda:0.*cpu"):
        nn.Linear(3, 2)(a.reshape(1, 3))
    w = nnkit.ones(3, device=sim, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"gradient on cpu for a tensor on cuda:0"):
        (w * 2).backward(nnkit.ones(3))


def test_module_to_moves_params_buffers_and_optimizer_state_stays(sim, rng):
    model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.Linear(5, 1))
    model.to(sim)
    for t in list(model.parameters()) + list(model.buffers()):
        _on(t, sim)
    for opt_cls, kw in [
        (nnkit.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
        (nnkit.optim.Adam, {"lr": 0.1}),
        (nnkit.optim.RMSprop, {"lr": 0.1}),
    ]:
        opt = opt_cls(model.parameters(), **kw)
        for _ in range(2):
            opt.zero_grad()
            model(nnkit.randn(6, 4, device=sim)).pow(2).mean().backward()
            opt.step()
        # a state saved on the CPU comes back onto the parameters' device
        cpu_model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.Linear(5, 1))
        cpu_opt = opt_cls(cpu_model.parameters(), **kw)
        cpu_model(nnkit.randn(6, 4)).sum().backward()
        cpu_opt.step()
        opt.load_state_dict(cpu_opt.state_dict())
        opt.step()
        for p in model.parameters():
            _on(p, sim)
            for buf in opt.state[p].values():
                if isinstance(buf, nnkit.Tensor):
                    _on(buf, sim)
    model.load_state_dict(cpu_model.state_dict())
    for t in list(model.parameters()) + list(model.buffers()):
        _on(t, sim)
    model.cpu()
    for t in list(model.parameters()) + list(model.buffers()):
        _on(t, "cpu")


def test_round_trip_keeps_gradients_flowing(sim):
    x = nnkit.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x.to(sim) * 2).cpu().sum().backward()
    assert _on(x.grad, "cpu").tolist() == [2.0, 2.0, 2.0]
    w = nnkit.tensor([1.0, -1.0], device=sim, requires_grad=True)
    (w.cpu() ** 2).cuda().sum().backward()
    assert _on(w.grad, sim).tolist() == [2.0, -2.0]


def test_dataloader_batches_moved_to_the_device(sim, rng):
    ds = TensorDataset(
        nnkit.tensor(rng.standard_normal((10, 4)).astype(np.float32)), nnkit.arange(10)
    )
    model = nn.Linear(4, 2).to(sim)
    seen = []
    for xb, yb in DataLoader(ds, batch_size=4, shuffle=True, seed=0):
        xb, yb = xb.to(sim), yb.to(sim)
        _on(model(xb), sim)
        seen += _host(yb).tolist()
    assert sorted(seen) == list(range(10))
    on_device = TensorDataset(nnkit.randn(6, 4, device=sim), nnkit.arange(6, device=sim))
    for xb, yb in DataLoader(on_device, batch_size=4):
        _on(xb, sim), _on(yb, sim)


def test_index_and_type_helpers_follow_the_device(sim):
    x = nnkit.arange(6.0, device=sim).reshape(3, 2)
    r = x.repeat_interleave(nnkit.tensor([1, 0, 2], device=sim), dim=0)
    assert _on(r, sim).tolist() == [[0.0, 1.0], [4.0, 5.0], [4.0, 5.0]]
    assert _on(x.repeat_interleave(2), sim).shape == (12,)
    assert _on(nnkit.ones(2, dtype=nnkit.int64).type_as(x), sim).dtype == nnkit.float32
    assert _on(x[np.array([2, 0])], sim).tolist() == [[4.0, 5.0], [0.0, 1.0]]
    assert _on(x.new_zeros((2,)), sim).tolist() == [0.0, 0.0]


def test_summary_probe_batch_follows_the_model(sim):
    lines = []
    model = nnkit.Sequential(nn.Linear(4, 3), nn.ReLU()).to(sim)
    model.summary(input_shape=(4,), print_fn=lines.append)
    assert any("(None, 3)" in line for line in lines), lines
