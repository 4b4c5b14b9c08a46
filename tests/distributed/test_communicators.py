"""Collectives of the thread and local communicators (the MPI one shares their base)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nnkit
from nnkit.distributed import LocalCommunicator, ThreadGroup


@pytest.mark.parametrize("world", [1, 2, 3])
def test_allreduce_ops(world):
    def work(comm):
        r = comm.rank + 1
        out = {}
        for op in ("sum", "mean", "max", "min"):
            t = nnkit.tensor([[1.0, -2.0], [3.0, 4.0]]) * r
            out[op] = comm.allreduce_(t, op).tolist()
        return out

    ranks = np.arange(1, world + 1)
    base = np.array([[1.0, -2.0], [3.0, 4.0]])
    scaled = np.stack([base * r for r in ranks])
    expected = {
        "sum": scaled.sum(0),
        "mean": scaled.mean(0),
        "max": scaled.max(0),
        "min": scaled.min(0),
    }
    for result in ThreadGroup(world).run(work):
        for op, value in expected.items():
            np.testing.assert_allclose(result[op], value)


def test_allreduce_of_a_non_contiguous_view_writes_through():
    def work(comm):
        base = nnkit.arange(6.0).reshape(2, 3) + comm.rank
        view = base.T
        comm.allreduce_(view)
        return base.tolist()

    expected = (np.arange(6.0).reshape(2, 3) * 2 + 1).tolist()
    assert ThreadGroup(2).run(work) == [expected, expected]


def test_allreduce_bumps_the_version_of_a_saved_tensor():
    def work(comm):
        w = nnkit.tensor([1.0, 2.0], requires_grad=True)
        x = nnkit.tensor([3.0, 4.0])
        y = (w * x).sum()
        comm.allreduce_(x)  # x was saved by mul: backward must notice
        with pytest.raises(RuntimeError, match="modified by an inplace operation|version"):
            y.backward()

    ThreadGroup(2).run(work)


def test_broadcast_and_scalar():
    def work(comm):
        t = nnkit.full((3,), float(comm.rank))
        i = nnkit.tensor([comm.rank * 10], dtype=nnkit.int64)
        comm.broadcast_(t, root=1)
        comm.broadcast_(i, root=2)
        return (
            t.tolist(),
            i.tolist(),
            comm.allreduce_scalar(comm.rank),
            comm.allreduce_scalar(comm.rank, op="max"),
        )

    for result in ThreadGroup(3).run(work):
        assert result == ([1.0, 1.0, 1.0], [20], 3.0, 2.0)


def test_results_are_bit_identical_across_ranks():
    def work(comm):
        rng = np.random.default_rng(comm.rank)
        t = nnkit.tensor(rng.normal(size=1000).astype(np.float32))
        return comm.allreduce_(t, "mean").numpy()

    results = ThreadGroup(3).run(work)
    assert all(np.array_equal(results[0], r) for r in results[1:])


def test_barrier_waits_for_every_rank():
    arrived = []
    lock = threading.Lock()

    def work(comm):
        with lock:
            arrived.append(comm.rank)
        comm.barrier()
        return len(arrived)

    assert ThreadGroup(3).run(work) == [3, 3, 3]


def test_local_communicator_is_the_identity():
    comm = LocalCommunicator()
    t = nnkit.tensor([1.0, 2.0])
    assert comm.allreduce_(t, "mean") is t and t.tolist() == [1.0, 2.0]
    assert comm.broadcast_(t).tolist() == [1.0, 2.0]
    assert comm.allreduce_scalar(2.5) == 2.5
    assert (comm.rank, comm.world_size, comm.is_chief) == (0, 1, True)
    comm.barrier()
    assert "world_size=1" in repr(comm)


def test_collective_errors():
    comm = LocalCommunicator()
    with pytest.raises(ValueError, match="unknown reduce op 'avg'"):
        comm.allreduce_(nnkit.ones(2), "avg")
    with pytest.raises(ValueError, match="op='mean' needs a floating point tensor"):
        comm.allreduce_(nnkit.tensor([1, 2]), "mean")
    with pytest.raises(ValueError, match="broadcast root 1 is not a rank"):
        comm.broadcast_(nnkit.ones(2), root=1)
    with pytest.raises(TypeError, match="collectives take an nnkit Tensor"):
        ThreadGroup(1).communicator(0).allreduce_(np.ones(2))
    with pytest.raises(ValueError, match="world_size must be a positive integer"):
        ThreadGroup(0)
    with pytest.raises(ValueError, match="rank 2 is not in a group of 2"):
        ThreadGroup(2).communicator(2)


def test_a_failing_rank_releases_the_others_and_its_error_is_raised():
    def work(comm):
        if comm.rank == 1:
            raise KeyError("rank 1 failed")
        comm.allreduce_(nnkit.ones(2))

    with pytest.raises(KeyError, match="rank 1 failed"):
        ThreadGroup(3, timeout=10).run(work)


def test_mismatched_shapes_are_an_error():
    def work(comm):
        comm.allreduce_(nnkit.ones(2 + comm.rank))

    with pytest.raises(ValueError, match="different shapes"):
        ThreadGroup(2, timeout=10).run(work)


def test_collectives_on_every_device(device):
    def work(comm):
        t = nnkit.full((2, 3), float(comm.rank + 1), device=device)
        comm.allreduce_(t, "mean")
        u = nnkit.full((2,), float(comm.rank), device=device)
        comm.broadcast_(u, root=1)
        return str(t.device), t.cpu().tolist(), u.cpu().tolist()

    for result in ThreadGroup(2).run(work):
        assert result == (str(nnkit.device(device)), [[1.5] * 3] * 2, [1.0, 1.0])
