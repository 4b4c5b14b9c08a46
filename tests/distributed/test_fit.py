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


@pytest.mark.parametrize("world, n", [(2, 257), (2, 33), (3, 50), (3, 61), (4, 39)])
def test_fit_equals_one_process_for_any_dataset_size(world, n):
    # the last global batch splits unevenly (n % batch < world leaves some ranks no
    # sample at all): nothing is padded or repeated and each rank's gradient counts
    # by its number of samples, so the step is one process's step on the whole batch
    x, y = problem(n=n)
    kwargs = dict(batch_size=8 * world, epochs=3, seed=5, validation_data=problem(n=11, seed=2))
    results = fit_on_ranks(world, x, y, **kwargs)
    reference = mlp(7)
    expected = reference.fit(x, y, verbose=0, **kwargs).history
    for w, history in results:
        assert_same(w, results[0][0])
        assert history == results[0][1]
    assert_same(results[0][0], weights(reference), atol=1e-6)
    for name, values in expected.items():
        np.testing.assert_allclose(results[0][1][name], values, rtol=1e-5, err_msg=name)


def test_ranks_share_each_global_batch_without_repeats():
    order = nnkit.data.RandomSampler(range(29), seed=4)
    single = [b.tolist() for b in nnkit.data.BatchSampler(order, 12, False)]
    shares = [list(nnkit.data.DistributedBatchSampler(order, 12, False, 3, r)) for r in range(3)]
    assert [len(s) for s in shares] == [len(single)] * 3  # every rank takes every step
    for step, batch in enumerate(single):
        parts = [shares[r][step].tolist() for r in range(3)]
        assert sorted(sum(parts, [])) == sorted(batch)
    assert [len(shares[r][-1]) for r in range(3)] == [2, 2, 1]
    tail = list(nnkit.data.DistributedBatchSampler(order, 12, False, 8, 7))[-1]
    assert tail.size == 0  # 5 samples in the last batch: rank 7 of 8 has none
    dropped = nnkit.data.DistributedBatchSampler(order, 12, True, 3, 0)
    assert len(dropped) == len(list(dropped)) == 2


def test_an_empty_share_keeps_the_batch_structure():
    class Pairs(nnkit.data.Dataset):  # no __getitems__: collated sample by sample
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": np.full(3, i, np.float32), "y": i}

    order = nnkit.data.SequentialSampler(range(5))
    loader = DataLoader(
        Pairs(), batch_sampler=nnkit.data.DistributedBatchSampler(order, 4, False, 2, 1)
    )
    first, last = list(loader)
    assert first["x"].shape == (2, 3) and first["y"].tolist() == [1, 3]
    assert last["x"].shape == (0, 3) and last["x"].dtype == np.float32
    assert last["y"].shape == (0,)


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


def test_a_run_stopped_mid_epoch_resumes_exactly_history_included(tmp_path):
    # 45 samples, global batch 12: the last batch splits 2 + 1 (world 2); the backup
    # after step 2 of epoch 1 holds the epoch's running sums of both ranks
    x, y = problem(n=45)
    backup = tmp_path / "backup"

    class Crash(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if self.model._fit_state.global_step == 6:
                raise RuntimeError("simulated crash")

    def work(comm, crash):
        model = mlp(comm.rank)
        callbacks = [BackupAndRestore(backup, save_freq=1)] + ([Crash()] if crash else [])
        history = model.fit(
            x, y, batch_size=12, epochs=3, verbose=0, seed=1, callbacks=callbacks, distributed=comm
        )
        return history.history, weights(model)

    with pytest.raises(RuntimeError, match="simulated crash"):
        ThreadGroup(2, timeout=20).run(work, True)
    resumed = ThreadGroup(2).run(work, False)
    straight = ThreadGroup(2).run(lambda comm: work(comm, False) if not backup.exists() else None)
    assert not backup.exists() and straight[0] is not None
    for (h, w), (h_ref, w_ref) in zip(resumed, straight):
        assert_same(w, w_ref)
        assert h == h_ref


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
