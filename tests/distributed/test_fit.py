"""Model.fit over a group of ranks (threads): sharding, identical replicas, logs, files."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.callbacks import BackupAndRestore, Callback, CSVLogger, EarlyStopping, ModelCheckpoint
from nnkit.data import DataLoader, DistributedSampler, SubsetRandomSampler, TensorDataset
from nnkit.distributed import LocalCommunicator, ThreadGroup
from nnkit.training.distributed_fit import resolve_communicator

from .conftest import assert_same, mlp, problem, weights


def fit_on_ranks(world, x, y, **kwargs):
    def work(comm):
        model = mlp(7 + comm.rank)  # replicas start different; fit broadcasts rank 0's
        history = model.fit(x, y, verbose=0, distributed=comm, **kwargs)
        return weights(model), history.history

    return ThreadGroup(world).run(work)


@pytest.mark.parametrize("world", [2, 3])
def test_fit_equals_one_process_over_the_same_global_batches(world):
    x, y = problem(n=36 * world)
    val = problem(n=10, seed=1)
    kwargs = dict(batch_size=6 * world, epochs=2, seed=3, validation_data=val)
    results = fit_on_ranks(world, x, y, **kwargs)
    reference = mlp(7)
    expected = reference.fit(x, y, verbose=0, **kwargs).history
    for w, history in results:
        assert_same(w, results[0][0])  # bit-identical replicas
        assert history == results[0][1]
    assert_same(results[0][0], weights(reference), atol=1e-6)
    for name, values in expected.items():  # loss/accuracy: means over all ranks' samples
        np.testing.assert_allclose(results[0][1][name], values, rtol=1e-5, err_msg=name)


def test_ranks_agree_on_the_shuffling_seed():
    x, y = problem(n=32)
    results = fit_on_ranks(2, x, y, batch_size=8, epochs=1, seed=None)
    assert_same(results[0][0], results[1][0])


def test_only_rank_zero_writes_checkpoints_logs_and_backups(tmp_path):
    x, y = problem(n=32)

    def work(comm):
        out = tmp_path / f"rank{comm.rank}"
        out.mkdir()
        callbacks = [
            ModelCheckpoint(out / "ckpt.h5", monitor="loss"),
            CSVLogger(out / "log.csv"),
            BackupAndRestore(out / "backup", delete_checkpoint=False),
        ]
        mlp(0).fit(x, y, batch_size=8, epochs=2, verbose=1, callbacks=callbacks, distributed=comm)

    ThreadGroup(2).run(work)
    assert sorted(p.name for p in (tmp_path / "rank0").iterdir()) == [
        "backup",
        "ckpt.h5",
        "log.csv",
    ]
    assert list((tmp_path / "rank1").iterdir()) == []


def test_every_rank_restores_rank_zeros_backup(tmp_path):
    x, y = problem(n=32)
    backup = tmp_path / "backup"

    def work(comm, epochs):
        model = mlp(comm.rank)
        history = model.fit(
            x,
            y,
            batch_size=8,
            epochs=epochs,
            verbose=0,
            seed=1,
            callbacks=[BackupAndRestore(backup, delete_checkpoint=False)],
            distributed=comm,
        )
        return history.epoch, weights(model)

    ThreadGroup(2).run(work, 1)
    (epochs0, w0), (epochs1, w1) = ThreadGroup(2).run(work, 3)
    assert epochs0 == epochs1 == [0, 1, 2]  # the History is the whole run's
    assert_same(w0, w1)


class StopOnRank(Callback):
    def __init__(self, rank, comm):
        super().__init__()
        self.rank, self.comm, self.batches = rank, comm, 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        if self.comm.rank == self.rank and batch == 1:
            self.model.stop_training = True


def test_a_stop_requested_by_one_rank_stops_all():
    x, y = problem(n=64)

    def work(comm):
        stop = StopOnRank(1, comm)
        history = mlp(0).fit(
            x, y, batch_size=8, epochs=3, verbose=0, callbacks=[stop], distributed=comm
        )
        return history.epoch, stop.batches

    assert ThreadGroup(2).run(work) == [([0], 2), ([0], 2)]


def test_early_stopping_decides_the_same_on_every_rank():
    x, y = problem(n=32)

    def work(comm):
        stop = EarlyStopping(monitor="loss", min_delta=10.0, patience=1)
        return (
            mlp(comm.rank)
            .fit(x, y, batch_size=6, epochs=5, verbose=0, callbacks=[stop], distributed=comm)
            .epoch
        )

    assert ThreadGroup(3).run(work) == [[0, 1]] * 3


def test_a_loader_with_a_distributed_sampler_is_used_as_given():
    x, y = problem(n=32)
    dataset = TensorDataset(x, y)

    def work(comm):
        sampler = DistributedSampler(dataset, comm.world_size, comm.rank, seed=2)
        model = mlp(0)
        model.fit(DataLoader(dataset, 4, sampler=sampler), epochs=1, verbose=0, distributed=comm)
        return weights(model)

    w0, w1 = ThreadGroup(2).run(work)
    reference = mlp(0)
    reference.fit(DataLoader(dataset, 8, shuffle=True, seed=2), epochs=1, verbose=0)
    assert_same(w0, w1)
    assert_same(w0, weights(reference), atol=1e-6)


def test_sharding_errors():
    x, y = problem(n=30)
    with pytest.raises(
        ValueError,
        match="batch_size=9 is the global batch and must be divisible by the 2 processes",
    ):
        fit_on_ranks(2, x, y, batch_size=9)
    loader = DataLoader(TensorDataset(x, y), 4, sampler=SubsetRandomSampler(range(8), seed=0))

    def work(comm):
        mlp(0).fit(loader, verbose=0, distributed=comm)

    with pytest.raises(ValueError, match="cannot shard a DataLoader with a SubsetRandomSampler"):
        ThreadGroup(2, timeout=10).run(work)


def test_resolve_communicator(monkeypatch):
    for var in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert resolve_communicator(None) is None
    assert resolve_communicator(False) is None
    assert resolve_communicator(True) is None  # one process: nothing to distribute
    assert resolve_communicator(LocalCommunicator()) is None
    comm = ThreadGroup(2).communicator(1)
    assert resolve_communicator(comm) is comm
    with pytest.raises(TypeError, match="distributed must be None, a bool or an"):
        resolve_communicator("mpi")


def test_fit_without_distribution_is_unchanged():
    x, y = problem(n=16)
    a, b = mlp(0), mlp(0)
    a.fit(x, y, batch_size=4, verbose=0, seed=0)
    b.fit(x, y, batch_size=4, verbose=0, seed=0, distributed=False)
    assert_same(weights(a), weights(b))
    assert nnkit.distributed.launched_world_size() == 1


def test_fit_on_every_device(device):
    x, y = problem(n=16)

    def work(comm):
        model = mlp(comm.rank).to(device)
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, seed=0, distributed=comm)
        return weights(model)

    w0, w1 = ThreadGroup(2).run(work)
    reference = mlp(0).to(device)
    reference.fit(x, y, batch_size=8, epochs=1, verbose=0, seed=0)
    assert_same(w0, w1)
    assert_same(w0, weights(reference), atol=1e-6)
