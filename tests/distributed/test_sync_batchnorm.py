"""SyncBatchNorm: the statistics of the global batch over a group of ranks.

On ranks (threads of a ThreadGroup, and processes under ``mpiexec``), with uneven
shards and empty ones, the layer gives what one BatchNorm gives on the concatenated
batch: outputs, running statistics and gradients; ``fit`` with converted layers trains
the model one process trains.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

import nnkit
import nnkit.nn as nn
from nnkit.distributed import LocalCommunicator, SyncBatchNorm, ThreadGroup
from nnkit.distributed.sync_batchnorm import fit_group
from tests.cli.conftest import TINY

from .conftest import _SEEDING, assert_same, problem, weights

C = 3


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(loc=2.0, scale=3.0, size=shape)
    return x, rng.normal(size=shape), rng.normal(size=shape[1]), rng.normal(size=shape[1])


def _set_affine(layer, gamma, beta):
    if layer.weight is None:
        return
    with nnkit.no_grad():
        layer.weight.copy_(nnkit.tensor(gamma))
        layer.bias.copy_(nnkit.tensor(beta))


def _reference(cls, x, r, gamma, beta, steps, **kwargs):
    """One BatchNorm on the whole batch: per step the output and the input gradient of
    ``sum(out * r)``, then the summed affine gradients and the buffers."""
    layer = cls(x.shape[1], dtype=nnkit.float64, **kwargs)
    _set_affine(layer, gamma, beta)
    outs = []
    for _ in range(steps):
        xt = nnkit.tensor(x, requires_grad=True)
        out = layer(xt)
        (out * nnkit.tensor(r)).sum().backward()
        outs.append((out.detach().numpy(), xt.grad.numpy()))
    return outs, layer


def _on_ranks(sizes, x, r, gamma, beta, steps, **kwargs):
    bounds = np.cumsum([0, *sizes])

    def work(comm):
        layer = SyncBatchNorm(x.shape[1], process_group=comm, dtype=nnkit.float64, **kwargs)
        _set_affine(layer, gamma, beta)
        part = slice(bounds[comm.rank], bounds[comm.rank + 1])
        outs = []
        for _ in range(steps):
            xt = nnkit.tensor(x[part], requires_grad=True)
            out = layer(xt)
            (out * nnkit.tensor(r[part])).sum().backward()
            outs.append((out.detach().numpy(), xt.grad.numpy()))
        return outs, layer

    return ThreadGroup(len(sizes)).run(work)


CASES = [  # (layer class, input shape tail after (N, C), shard sizes)
    (nn.BatchNorm1d, (), [5, 0]),
    (nn.BatchNorm1d, (), [2, 7]),
    (nn.BatchNorm1d, (4,), [3, 0, 6]),
    (nn.BatchNorm1d, (4,), [1, 1, 5]),
    (nn.BatchNorm2d, (3, 2), [4, 2]),
    (nn.BatchNorm2d, (2, 3), [0, 3, 2]),
]


@pytest.mark.parametrize("cls,tail,sizes", CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("kwargs", [{}, {"momentum": None}, {"affine": False}])
def test_equals_batchnorm_on_the_concatenated_batch(cls, tail, sizes, kwargs):
    x, r, gamma, beta = _data((sum(sizes), C, *tail))
    expected, ref = _reference(cls, x, r, gamma, beta, 2, **kwargs)
    ranks = _on_ranks(sizes, x, r, gamma, beta, 2, **kwargs)
    for step, (out, grad) in enumerate(expected):
        np.testing.assert_allclose(
            np.concatenate([o[step][0] for o, _ in ranks]), out, rtol=0, atol=1e-6
        )
        np.testing.assert_allclose(
            np.concatenate([o[step][1] for o, _ in ranks]), grad, rtol=0, atol=1e-6
        )
    for name in ("weight", "bias"):  # each rank's own share; their sum is the whole
        if getattr(ref, name) is not None:
            total = sum(getattr(layer, name).grad.numpy() for _, layer in ranks)
            np.testing.assert_allclose(total, getattr(ref, name).grad.numpy(), rtol=0, atol=1e-6)
    for _, layer in ranks:
        assert layer.num_batches_tracked.item() == 2
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(
                getattr(layer, name).numpy(), getattr(ref, name).numpy(), rtol=0, atol=1e-6
            )


@pytest.mark.parametrize("tail,sizes", [((), [4, 0, 3]), ((5,), [2, 6])])
def test_equals_torch_batchnorm(tail, sizes):
    torch = pytest.importorskip("torch")
    x, r, gamma, beta = _data((sum(sizes), C, *tail), seed=1)
    ranks = _on_ranks(sizes, x, r, gamma, beta, 1, momentum=0.3)
    ref = torch.nn.BatchNorm1d(C, momentum=0.3).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(gamma))
        ref.bias.copy_(torch.tensor(beta))
    xt = torch.tensor(x, requires_grad=True)
    out = ref(xt)
    (out * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(
        np.concatenate([o[0][0] for o, _ in ranks]), out.detach().numpy(), rtol=0, atol=1e-6
    )
    np.testing.assert_allclose(
        np.concatenate([o[0][1] for o, _ in ranks]), xt.grad.numpy(), rtol=0, atol=1e-6
    )
    np.testing.assert_allclose(
        sum(layer.weight.grad.numpy() for _, layer in ranks),
        ref.weight.grad.numpy(),
        rtol=0,
        atol=1e-6,
    )
    for _, layer in ranks:
        np.testing.assert_allclose(
            layer.running_var.numpy(), ref.running_var.numpy(), rtol=0, atol=1e-6
        )
        np.testing.assert_allclose(
            layer.running_mean.numpy(), ref.running_mean.numpy(), rtol=0, atol=1e-6
        )


def test_on_the_device_of_the_input(device):
    sizes = [3, 0, 4]
    x, r, gamma, beta = (a.astype(np.float32) for a in _data((sum(sizes), C, 2), seed=4))
    bounds = np.cumsum([0, *sizes])

    def work(comm):
        layer = SyncBatchNorm(C, process_group=comm).to(device)
        part = slice(bounds[comm.rank], bounds[comm.rank + 1])
        xt = nnkit.tensor(x[part], device=device, requires_grad=True)
        out = layer(xt)
        (out * nnkit.tensor(r[part], device=device)).sum().backward()
        assert out.device == layer.running_var.device == nnkit.device(device)
        return out.detach().cpu().numpy(), xt.grad.cpu().numpy(), layer.running_var.cpu()

    ranks = ThreadGroup(3).run(work)
    ref = nn.BatchNorm1d(C).to(device)
    xt = nnkit.tensor(x, device=device, requires_grad=True)
    out = ref(xt)
    (out * nnkit.tensor(r, device=device)).sum().backward()
    np.testing.assert_allclose(
        np.concatenate([o for o, _, _ in ranks]), out.detach().cpu().numpy(), rtol=0, atol=1e-5
    )
    np.testing.assert_allclose(
        np.concatenate([g for _, g, _ in ranks]), xt.grad.cpu().numpy(), rtol=0, atol=1e-5
    )
    np.testing.assert_allclose(ranks[0][2].numpy(), ref.running_var.cpu().numpy(), atol=1e-6)


def test_shares_weight_the_input_gradient_for_fits_weighted_average():
    # fit averages the ranks' gradients weighted by their sample counts (uneven shards):
    # with each rank's loss the mean over its samples, share_r · dx_r must be the
    # gradient of the whole batch's summed loss
    sizes = [4, 1, 0]
    x, r, gamma, beta = _data((sum(sizes), C, 2), seed=2)
    bounds = np.cumsum([0, *sizes])

    def work(comm):
        layer = SyncBatchNorm(C, dtype=nnkit.float64)
        _set_affine(layer, gamma, beta)
        part = slice(bounds[comm.rank], bounds[comm.rank + 1])
        n = sizes[comm.rank]
        xt = nnkit.tensor(x[part], requires_grad=True)
        with fit_group(layer, comm, lambda: n):
            loss = (layer(xt) * nnkit.tensor(r[part])).sum() / max(n, 1)
        loss.backward()
        assert layer._fit_group is None and layer._fit_share is None  # restored
        return xt.grad.numpy() * n

    grads = ThreadGroup(3).run(work)
    ((_, expected),) = _reference(nn.BatchNorm1d, x, r, gamma, beta, 1)[0]
    np.testing.assert_allclose(np.concatenate(grads), expected, rtol=0, atol=1e-6)


def test_eval_mode_and_a_group_of_one_are_batchnorm():
    x = nnkit.tensor(_data((6, C, 4))[0].astype(np.float32))
    plain = nn.BatchNorm1d(C)
    for group in (None, LocalCommunicator()):
        sync = SyncBatchNorm(C, process_group=group)
        np.testing.assert_array_equal(sync(x).detach().numpy(), plain(x).detach().numpy())
        np.testing.assert_array_equal(sync.running_var.numpy(), plain.running_var.numpy())
        plain.reset_running_stats()

    def work(comm):  # eval: the running statistics, no collective (rank 1 never calls)
        sync = SyncBatchNorm(C, process_group=comm).eval()
        return sync(x).detach().numpy() if comm.rank == 0 else None

    expected = plain.eval()(x).detach().numpy()
    np.testing.assert_array_equal(ThreadGroup(2).run(work)[0], expected)


def test_one_value_per_channel_over_the_group_raises_on_every_rank():
    def work(comm):
        layer = SyncBatchNorm(C, process_group=comm)
        try:
            layer(nnkit.ones(1 - comm.rank, C))
        except ValueError as err:
            return str(err)
        return None

    messages = ThreadGroup(2).run(work)
    assert all("expected more than 1 value per channel when training" in m for m in messages)


def test_every_rank_empty_gives_empty_outputs_and_keeps_the_statistics():
    def work(comm):
        layer = SyncBatchNorm(C, process_group=comm)
        x = nnkit.zeros(0, C, 2, requires_grad=True)
        out = layer(x)
        out.sum().backward()
        return out.shape, x.grad.shape, layer.running_mean.tolist()

    for shape, grad_shape, mean in ThreadGroup(2).run(work):
        assert shape == grad_shape == (0, C, 2) and mean == [0.0] * C


def test_bad_inputs_and_arguments():
    with pytest.raises(TypeError, match="process_group must be an nnkit.distributed"):
        SyncBatchNorm(C, process_group="world")
    with pytest.raises(ValueError, match="expected at least 2D input"):
        SyncBatchNorm(C)(nnkit.ones(4))

    def work(comm):
        with pytest.raises(ValueError, match="expected 3 channels"):
            SyncBatchNorm(C, process_group=comm)(nnkit.ones(4, 2))

    ThreadGroup(2).run(work)


def test_double_backward_is_refused_with_a_clear_error():
    def work(comm):
        layer = SyncBatchNorm(C, process_group=comm, dtype=nnkit.float64)
        x = nnkit.tensor(_data((4, C))[0], requires_grad=True)
        y = (layer(x) ** 3).sum()
        (grad,) = nnkit.autograd.grad(y, [x], create_graph=True)  # allowed, like torch
        with pytest.raises(RuntimeError, match="does not support double backward"):
            grad.sum().backward()
        (plain,) = nnkit.autograd.grad((layer(x) ** 3).sum(), [x])
        np.testing.assert_allclose(grad.detach().numpy(), plain.numpy(), rtol=1e-12)

    ThreadGroup(2).run(work)


def test_the_given_process_group_wins_over_the_fit_group():
    layer = SyncBatchNorm(C)
    assert layer._group() is None
    other = ThreadGroup(2)
    with fit_group(nn.Sequential(layer), other.communicator(0)):
        assert layer._group() is not None and layer._group().rank == 0
        layer.process_group = LocalCommunicator()
        assert layer._group() is None  # a group of one: BatchNorm
    assert layer._group() is None


# -------------------------------------------------------------------- conversion
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        shared = nn.BatchNorm1d(4)
        self.features = nn.Sequential(
            nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2, momentum=None), nn.ReLU()
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(8, 4), shared, nn.Tanh(), shared)
        self.inner = nn.ModuleDict({"norm": nn.BatchNorm1d(4, affine=False, eps=1e-3)})

    def forward(self, x):
        return self.inner["norm"](self.head(self.features(x)))


def test_convert_sync_batchnorm_keeps_state_nesting_and_identity():
    torch_like = Net().double()
    torch_like.features[1].weight.requires_grad_(False)
    torch_like(nnkit.randn(3, 1, 4, 4, dtype=nnkit.float64))  # moves the statistics
    torch_like.head.eval()
    before = {k: v.numpy().copy() for k, v in torch_like.state_dict().items()}
    tensors = dict(torch_like.state_dict(keep_vars=True))
    group = LocalCommunicator()
    converted = SyncBatchNorm.convert_sync_batchnorm(torch_like, process_group=group)
    assert converted is torch_like  # the root is kept, its BatchNorm children replaced
    layers = [m for m in converted.modules() if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d)]
    assert layers == []
    sync = [m for m in converted.modules() if isinstance(m, SyncBatchNorm)]
    assert len(sync) == 3 and all(m.process_group is group for m in sync)
    assert converted.head[2] is converted.head[4]  # still one shared layer
    bn2 = converted.features[1]
    assert (bn2.momentum, bn2.training, bn2.weight.requires_grad) == (None, True, False)
    assert converted.head[2].training is False
    norm = converted.inner["norm"]
    assert (norm.affine, norm.eps, norm.weight) == (False, 1e-3, None)
    after = converted.state_dict(keep_vars=True)
    assert list(after) == list(tensors)  # the same keys, in the same order
    for key, value in after.items():
        assert value is tensors[key]  # the very tensors: device, dtype, optimizer state
        np.testing.assert_array_equal(value.detach().numpy(), before[key])
    assert converted.features[1].num_batches_tracked.item() == 1
    assert "SyncBatchNorm(2, eps=1e-05, momentum=None" in repr(converted)

    layer = nn.BatchNorm2d(5).eval()
    single = SyncBatchNorm.convert_sync_batchnorm(layer)
    assert type(single) is SyncBatchNorm and single.weight is layer.weight
    assert single.training is False and single.process_group is None


def test_checkpoints_load_across_batchnorm_and_syncbatchnorm(tmp_path):
    from nnkit import io

    def net(seed):
        nnkit.manual_seed(seed)
        return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))

    source = net(0)
    source(nnkit.randn(8, 3))
    synced = SyncBatchNorm.convert_sync_batchnorm(net(1))
    io.save_checkpoint(tmp_path / "plain.h5", model=source)
    io.load_checkpoint(tmp_path / "plain.h5", model=synced)
    assert_same(weights(synced), weights(source))
    np.testing.assert_array_equal(synced[1].running_var.numpy(), source[1].running_var.numpy())
    synced[1].running_mean.fill_(0.5)
    io.save_checkpoint(tmp_path / "sync.h5", model=synced)
    plain = net(2)
    io.load_checkpoint(tmp_path / "sync.h5", model=plain)
    assert plain[1].running_mean.tolist() == [0.5] * 4
    assert plain.state_dict().keys() == synced.state_dict().keys()


def test_deepcopy_shares_the_group_and_drops_the_fit_group():
    group = ThreadGroup(2)
    layer = SyncBatchNorm(C, process_group=group.communicator(1))
    with fit_group(layer, group.communicator(0)):
        clone = copy.deepcopy(layer)
    assert clone.process_group is layer.process_group
    assert clone._fit_group is None and clone.weight is not layer.weight


# -------------------------------------------------------------------------- fit
def bn_model(seed, kind):
    with _SEEDING:  # ranks are threads sharing nnkit's generator
        nnkit.manual_seed(seed)
        if kind == "mlp":
            layers = [nn.Linear(5, 16), nn.BatchNorm1d(16), nn.Tanh(), nn.Linear(16, 3)]
        else:
            layers = [
                nn.Conv2d(1, 4, 3, padding=1),
                nn.BatchNorm2d(4),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(64, 3),
            ]
        model = nnkit.Sequential(layers)
    model.compile("sgd", "cross_entropy", metrics=["accuracy"], lr=0.2)
    return model


def _state(model):
    return [v.numpy().astype(np.float64) for v in model.state_dict().values()]


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_fit_with_sync_batchnorm_equals_one_process(kind):
    x, y = problem(n=48, features=5 if kind == "mlp" else 16)
    if kind == "cnn":
        x = x.reshape(-1, 1, 4, 4)
    val = (x[:10] * 0.5, y[:10])
    kwargs = dict(batch_size=12, epochs=2, seed=3, validation_data=val, verbose=0)

    def work(comm, convert):
        model = bn_model(7 + comm.rank, kind)  # fit broadcasts rank 0's weights
        if convert:
            SyncBatchNorm.convert_sync_batchnorm(model)
        history = model.fit(x, y, distributed=comm, **kwargs)
        return _state(model), history.history

    results = ThreadGroup(2).run(work, True)
    reference = bn_model(7, kind)
    expected = reference.fit(x, y, **kwargs).history
    assert_same(results[0][0], results[1][0])  # identical replicas, statistics included
    assert_same(results[0][0], _state(reference), atol=1e-5)
    for name, values in expected.items():
        np.testing.assert_allclose(results[0][1][name], values, rtol=1e-5, err_msg=name)
    assert all(m._fit_group is None for m in reference.modules() if hasattr(m, "_fit_group"))

    plain = ThreadGroup(2).run(work, False)  # per-rank statistics: another model
    assert max(np.abs(a - b).max() for a, b in zip(plain[0][0], _state(reference))) > 1e-3


def test_fit_with_uneven_shards_equals_one_process():
    # 46 samples in batches of 12 over 3 ranks: the last batch of 10 gives the ranks 4, 4
    # and 2 samples; fit then weights each rank's gradient by its count, and
    # SyncBatchNorm's input gradient is computed for that weighted average
    from nnkit.training.distributed_fit import DistributedFit

    if not hasattr(DistributedFit, "set_batch_size"):
        pytest.skip("fit does not weight the ranks' gradients by their sample counts")
    x, y = problem(n=46)
    kwargs = dict(batch_size=12, epochs=2, seed=3, verbose=0)

    def work(comm):
        model = SyncBatchNorm.convert_sync_batchnorm(bn_model(7, "mlp"))
        model.fit(x, y, distributed=comm, **kwargs)
        return _state(model)

    results = ThreadGroup(3).run(work)
    reference = bn_model(7, "mlp")
    reference.fit(x, y, **kwargs)
    assert_same(results[0], _state(reference), atol=1e-5)


# ------------------------------------------------------------------ command line
BN_LAYERS = [  # no bias before BatchNorm: its gradient is 0 but for rounding, which Adam
    {"type": "Dense", "units": 32, "use_bias": False},  # would turn into steps of lr
    {"type": "BatchNorm1d", "num_features": 32},
    {"type": "ReLU"},
    {"type": "Dense", "units": 10},
]


def _bn_config(tmp_path):
    # 1280 training samples: 20 global batches of 64, split evenly over 2 ranks
    data = {**TINY["data"], "validation_split": 0.1092}
    config = {
        **TINY,
        "data": data,
        "model": {"layers": BN_LAYERS},
        "train": {"epochs": 2, "verbose": 2},
    }
    path = tmp_path / "bn.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def test_cli_sync_batchnorm_in_one_process_is_batchnorm(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from nnkit import io
    from nnkit.cli import app, build

    converted = []
    convert = build.sync_batchnorm
    monkeypatch.setattr(
        build,
        "sync_batchnorm",
        lambda config, model: converted.append(convert(config, model)) or converted[-1],
    )
    monkeypatch.chdir(tmp_path)
    path = _bn_config(tmp_path)
    for out, flag in (("sync", "true"), ("plain", "false")):
        result = CliRunner().invoke(
            app,
            [
                "train",
                str(path),
                "--set",
                f"output.dir={out}",
                "--set",
                f"distributed.sync_batchnorm={flag}",
            ],
        )
        assert result.exit_code == 0, result.output
    assert [type(m[1]).__name__ for m in converted] == ["SyncBatchNorm", "BatchNorm1d"]
    a, b = (io.read_checkpoint(tmp_path / d / "last.h5") for d in ("sync", "plain"))
    assert a["model"].keys() == b["model"].keys()
    for key, value in b["model"].items():
        np.testing.assert_array_equal(a["model"][key], value, err_msg=key)
    result = CliRunner().invoke(
        app, ["evaluate", str(path), "--checkpoint", str(tmp_path / "sync" / "last.h5")]
    )
    assert result.exit_code == 0, result.output  # a SyncBatchNorm run's checkpoint: BatchNorm


def test_cli_train_with_sync_batchnorm_under_mpiexec(tmp_path):
    from tests.distributed import test_mpi  # skips without mpi4py (importorskip)

    if test_mpi.MPIEXEC is None:
        pytest.skip("mpiexec is not on PATH")
    from nnkit import io

    path = _bn_config(tmp_path)
    sync = ["--set", "distributed.sync_batchnorm=true"]
    parallel = test_mpi.check(
        test_mpi.run(
            ["-m", "nnkit.cli", "train", path, "--set", "output.dir=mpi", *sync], cwd=tmp_path, n=2
        )
    )
    test_mpi.check(
        test_mpi.run(["-m", "nnkit.cli", "train", path, "--set", "output.dir=one"], cwd=tmp_path)
    )
    assert parallel.stdout.count("Epoch 2/2") == 1
    a, b = (io.read_checkpoint(tmp_path / d / "last.h5") for d in ("mpi", "one"))
    assert any("running_var" in key for key in b["model"])
    for key, value in b["model"].items():
        np.testing.assert_allclose(a["model"][key], value, atol=1e-5, err_msg=key)
