"""Checkpoint round trips: weights, full training state, bit-for-bit resume."""
# ruff: noqa: E402  (the imports below need h5py, skipped above when missing)

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="nnkit.io needs h5py (pip install -e .)")

import nnkit
import nnkit.nn.functional as F
from nnkit import layers as L
from nnkit.data import DataLoader, TensorDataset
from nnkit.io import (
    load_checkpoint,
    load_weights,
    read_checkpoint,
    save_checkpoint,
    save_weights,
)
from nnkit.optim import SGD, Adam
from nnkit.optim import lr_scheduler as lrs


def _cnn():
    return nnkit.Sequential(
        L.Conv2d(1, 3, 3, padding=1),
        L.BatchNorm2d(3),
        L.ReLU(),
        L.Flatten(),
        L.Linear(3 * 4 * 4, 2),
    )


def _lstm():
    return L.LSTM(3, 4, num_layers=2, batch_first=True)


def _trained(make, x):
    model = make()
    model.train()
    model(x)  # a training-mode call moves the batch-norm running statistics
    return model


def _assert_state_equal(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for key in sa:
        x, y = sa[key].numpy(), sb[key].numpy()
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), key


@pytest.mark.parametrize(
    "make, shape", [(_cnn, (2, 1, 4, 4)), (_lstm, (2, 5, 3))], ids=["conv-batchnorm-linear", "lstm"]
)
@pytest.mark.parametrize("saver", ["checkpoint", "weights"])
def test_model_weights_round_trip_into_a_fresh_model(tmp_path, make, shape, saver):
    x = nnkit.randn(*shape)
    model = _trained(make, x)
    path = tmp_path / "m.h5"
    if saver == "checkpoint":
        save_checkpoint(path, model=model)
    else:
        save_weights(path, model)
    nnkit.manual_seed(99)
    fresh = make()
    if saver == "checkpoint":
        load_checkpoint(path, model=fresh)
    else:
        assert load_weights(path, fresh) == ([], [])
    _assert_state_equal(model, fresh)
    model.eval(), fresh.eval()
    with nnkit.no_grad():
        out, out_fresh = model(x), fresh(x)
    if isinstance(out, tuple):
        out, out_fresh = out[0], out_fresh[0]
    assert np.array_equal(out.numpy(), out_fresh.numpy())


def test_hdf5_keys_are_dotted_parameter_paths(tmp_path):
    model = nnkit.Sequential()
    model.add_module("features", nnkit.Sequential(L.Conv2d(1, 2, 3), L.BatchNorm2d(2)))
    model.add_module("head", L.Linear(2, 1))
    save_weights(tmp_path / "w.h5", model)
    with h5py.File(tmp_path / "w.h5", "r") as f:
        names = list(f["model"])
        assert set(f) == {"model"}
        assert f["model/features.0.weight"].shape == (2, 1, 3, 3)
        assert f["model/features.1.running_var"].dtype == np.float32
    assert names == list(model.state_dict())
    assert "features.1.num_batches_tracked" in names and "head.bias" in names


def test_load_weights_accepts_a_full_checkpoint(tmp_path):
    model, fresh = L.Linear(3, 2), L.Linear(3, 2)
    opt = SGD(model.parameters(), lr=0.1, momentum=0.9)
    save_checkpoint(tmp_path / "c.h5", model=model, optimizer=opt, epoch=4)
    load_weights(tmp_path / "c.h5", fresh)
    _assert_state_equal(model, fresh)


def test_non_strict_load_reports_missing_and_unexpected(tmp_path):
    save_weights(tmp_path / "w.h5", nnkit.Sequential(L.Linear(2, 2)))
    bigger = nnkit.Sequential(L.Linear(2, 2), L.Linear(2, 1))
    missing, unexpected = load_weights(tmp_path / "w.h5", bigger, strict=False)
    assert missing == ["1.weight", "1.bias"] and unexpected == []


def test_saving_never_moves_the_model(tmp_path, device):
    model = L.Linear(3, 2).to(device)
    opt = Adam(model.parameters(), lr=0.1)
    model(nnkit.randn(4, 3, device=device)).sum().backward()
    opt.step()
    save_checkpoint(tmp_path / "c.h5", model=model, optimizer=opt)
    assert all(str(p.device).startswith(device) for p in model.parameters())
    assert str(opt.state[model.weight]["exp_avg"].device).startswith(device)
    fresh = L.Linear(3, 2).to(device)
    load_checkpoint(tmp_path / "c.h5", model=fresh)
    assert str(fresh.weight.device).startswith(device)
    assert np.array_equal(fresh.weight.detach().cpu().numpy(), model.weight.detach().cpu().numpy())


def test_returned_metadata_and_raw_states(tmp_path):
    model = L.Linear(2, 2)
    opt = SGD(model.parameters(), lr=0.1)
    extra = {"best": 0.25, "history": [1.0, 0.5], "tag": "run-1", "none": None}
    save_checkpoint(
        tmp_path / "c.h5",
        model=model,
        optimizer=opt,
        epoch=3,
        step=120,
        extra=extra,
        config="model:\n  units: 2\n",
    )
    info = load_checkpoint(tmp_path / "c.h5", model=L.Linear(2, 2), restore_rng=False)
    assert (info["epoch"], info["step"], info["extra"]) == (3, 120, extra)
    assert info["config"] == "model:\n  units: 2\n"
    assert info["nnkit_version"] == nnkit.__version__
    assert info["optimizer"]["param_groups"][0]["lr"] == 0.1 and "model" not in info
    assert info["rng"]["bit_generator"] == "PCG64"
    attrs = read_checkpoint(tmp_path / "c.h5")["attrs"]
    assert attrs == {
        "nnkit_format": "nnkit-checkpoint",
        "format_version": 2,
        "nnkit_version": nnkit.__version__,
        "contents": "checkpoint",
        "config": "model:\n  units: 2\n",
    }


def test_config_mapping_is_stored_as_yaml_text(tmp_path):
    save_checkpoint(tmp_path / "c.h5", config={"optimizer": {"name": "adam", "lr": 0.01}})
    info = load_checkpoint(tmp_path / "c.h5")
    assert info["config"] == "optimizer:\n  name: adam\n  lr: 0.01\n"
    assert info["epoch"] is None and info["extra"] is None


class _Counter:
    def __init__(self):
        self.best, self.wait = float("inf"), 0

    def state_dict(self):
        return {"best": self.best, "wait": self.wait}

    def load_state_dict(self, state):
        self.best, self.wait = state["best"], state["wait"]


def test_callback_states_round_trip(tmp_path):
    early = _Counter()
    early.best, early.wait = 0.125, 2
    save_checkpoint(tmp_path / "c.h5", callbacks={"early_stopping": early, "plain": {"x": [1, 2]}})
    restored = _Counter()
    info = load_checkpoint(tmp_path / "c.h5", callbacks={"early_stopping": restored})
    assert (restored.best, restored.wait) == (0.125, 2) and "callbacks" not in info
    assert read_checkpoint(tmp_path / "c.h5")["callbacks"]["plain"] == {"x": [1, 2]}


def test_rng_state_is_restored(tmp_path):
    save_checkpoint(tmp_path / "c.h5")
    expected = nnkit.rand(5).numpy()
    nnkit.manual_seed(7)
    load_checkpoint(tmp_path / "c.h5")
    assert np.array_equal(nnkit.rand(5).numpy(), expected)
    nnkit.manual_seed(7)
    load_checkpoint(tmp_path / "c.h5", restore_rng=False)
    assert not np.array_equal(nnkit.rand(5).numpy(), expected)


# ---------------------------------------------------------------- bit-for-bit resume
X = np.random.default_rng(0).standard_normal((40, 6)).astype(np.float32)
Y = np.random.default_rng(1).integers(0, 3, 40)
OPTIMIZERS = {
    "sgd-momentum-steplr": (
        lambda ps: SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
        lambda o: lrs.StepLR(o, 3, gamma=0.5),
    ),
    "adam-amsgrad-onecycle": (
        lambda ps: Adam(ps, lr=0.01, amsgrad=True),
        lambda o: lrs.OneCycleLR(o, 0.05, 20),
    ),
}


def _setup(name):
    make_opt, make_sched = OPTIMIZERS[name]
    model = nnkit.Sequential(
        L.Linear(6, 16), L.BatchNorm1d(16), L.ReLU(), L.Dropout(0.3), L.Linear(16, 3)
    )
    opt = make_opt(model.parameters())
    # No explicit seed: the shuffling seed comes from the global RNG, the checkpoint keeps it.
    loader = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=True)
    return model, opt, make_sched(opt), loader


def _batches(loader):
    while True:
        yield from loader


def _train(model, opt, sched, batches, n):
    for _ in range(n):
        x, y = next(batches)
        loss = F.cross_entropy(model(nnkit.tensor(x)), nnkit.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_resume_continues_bit_for_bit(tmp_path, name):
    model, opt, sched, loader = _setup(name)
    batches = _batches(loader)
    _train(model, opt, sched, batches, 3)  # stops mid-epoch: 5 batches per epoch
    save_checkpoint(
        tmp_path / "c.h5",
        model=model,
        optimizer=opt,
        scheduler=sched,
        loader=loader,
        epoch=0,
        step=3,
    )
    _train(model, opt, sched, batches, 9)  # crosses two epoch boundaries
    after = nnkit.rand(3).numpy()

    nnkit.manual_seed(12345)
    model2, opt2, sched2, loader2 = _setup(name)
    info = load_checkpoint(
        tmp_path / "c.h5", model=model2, optimizer=opt2, scheduler=sched2, loader=loader2
    )
    assert info["step"] == 3
    _train(model2, opt2, sched2, _batches(loader2), 9)
    for (key, p), p2 in zip(model.state_dict().items(), model2.state_dict().values()):
        assert np.array_equal(p.numpy(), p2.numpy()), key
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert np.array_equal(nnkit.rand(3).numpy(), after)
