"""DistributedDataParallel / GradientSync in a hand-written loop, ranks as threads."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import nnkit
from nnkit.distributed import DistributedDataParallel, GradientSync, ThreadGroup
from nnkit.layers import Linear

from .conftest import assert_same, mlp, problem, weights

STEPS = 4


def full_batch_run(x, y, seed):
    model = mlp(seed, compiled=False)
    opt = nnkit.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    for _ in range(STEPS):
        loss = nnkit.nn.functional.cross_entropy(model(nnkit.tensor(x)), nnkit.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return weights(model)


def sharded_run(comm, x, y):
    model = mlp(100 + comm.rank, compiled=False)  # different init per rank: the wrap fixes it
    ddp = DistributedDataParallel(model, comm)
    opt = nnkit.optim.SGD(ddp.parameters(), lr=0.2, momentum=0.9)
    xs, ys = (np.array_split(a, comm.world_size)[comm.rank] for a in (x, y))
    for _ in range(STEPS):
        loss = nnkit.nn.functional.cross_entropy(ddp(nnkit.tensor(xs)), nnkit.tensor(ys))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return weights(model)


@pytest.mark.parametrize("world", [2, 3])
def test_ranks_match_each_other_and_the_full_batch(world):
    x, y = problem(n=12 * world)
    results = ThreadGroup(world).run(sharded_run, x, y)
    for other in results[1:]:
        assert_same(results[0], other)  # bit for bit
    assert_same(results[0], full_batch_run(x, y, seed=100), atol=1e-6)


def test_wrapping_broadcasts_rank_zero_weights_and_buffers():
    def work(comm):
        nnkit.manual_seed(comm.rank)
        model = nnkit.Sequential([Linear(3, 4), nnkit.nn.BatchNorm1d(4)])
        with nnkit.no_grad():
            model[1].running_mean.fill_(float(comm.rank))
        before = weights(model)
        ddp = DistributedDataParallel(model, comm)
        assert "world_size=2" in repr(ddp)
        return before, weights(model), model[1].running_mean.tolist()

    (before0, after0, mean0), (before1, after1, mean1) = ThreadGroup(2).run(work)
    assert not np.array_equal(before0[0], before1[0])
    assert_same(after0, before0)
    assert_same(after1, before0)
    assert mean0 == mean1 == [0.0] * 4


def test_accumulating_two_backwards_averages_the_sum():
    def work(comm, use_no_sync):
        model = mlp(0, compiled=False)
        ddp = DistributedDataParallel(model, comm)
        x, y = problem(n=8, seed=comm.rank)
        halves = [
            (nnkit.tensor(x[:4]), nnkit.tensor(y[:4])),
            (nnkit.tensor(x[4:]), nnkit.tensor(y[4:])),
        ]
        loss_fn = nnkit.nn.functional.cross_entropy
        with ddp.no_sync() if use_no_sync else contextlib.nullcontext():
            loss_fn(ddp(halves[0][0]), halves[0][1]).backward()
        loss_fn(ddp(halves[1][0]), halves[1][1]).backward()
        return [p.grad.numpy().copy() for p in model.parameters()]

    def reference():
        model = mlp(0, compiled=False)
        for rank in range(2):
            x, y = problem(n=8, seed=rank)
            for lo in (0, 4):
                loss = nnkit.nn.functional.cross_entropy(
                    model(nnkit.tensor(x[lo : lo + 4])), nnkit.tensor(y[lo : lo + 4])
                )
                (loss / 2).backward()
        return [p.grad.numpy().copy() for p in model.parameters()]

    expected = reference()
    for use_no_sync in (False, True):
        for grads in ThreadGroup(2).run(work, use_no_sync):
            assert_same(grads, expected, atol=1e-6)


def test_sync_covers_a_parameter_unused_on_some_rank():
    def work(comm):
        nnkit.manual_seed(0)
        a, b = Linear(2, 1), Linear(2, 1)
        sync = GradientSync([*a.parameters(), *b.parameters()], comm)
        x = nnkit.ones(1, 2)
        with sync.no_sync():
            out = a(x) if comm.rank == 0 else a(x) + b(x)
            out.sum().backward()
        sync.sync()
        sync.remove()
        return [p.grad.tolist() for p in [*a.parameters(), *b.parameters()]]

    r0, r1 = ThreadGroup(2).run(work)
    assert r0 == r1
    assert r0[2] == [[0.5, 0.5]] and r0[3] == [0.5]  # b: (0 + 1) / 2
    assert r0[1] == [1.0]


def test_removed_hooks_no_longer_communicate():
    def work(comm):
        model = mlp(comm.rank, compiled=False)
        sync = GradientSync(model.parameters(), comm)
        sync.remove()
        model(nnkit.ones(2, 5)).sum().backward()  # would deadlock at a barrier if synced
        return [p.grad.numpy().copy() for p in model.parameters()]

    g0, g1 = ThreadGroup(2, timeout=10).run(work)
    assert not np.array_equal(g0[0], g1[0])


def test_wrapping_an_unbuilt_model_names_the_layer():
    from nnkit.layers import Dense, NotBuiltError

    with pytest.raises(NotBuiltError, match="Dense"):
        DistributedDataParallel(nnkit.Sequential([Dense(3)]), ThreadGroup(1).communicator(0))
