import numpy as np
import pytest

from nnkit.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
)


def test_sequential_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    assert len(SequentialSampler(range(4))) == 4


def test_random_sampler_is_a_function_of_seed_and_epoch():
    s = RandomSampler(range(50), seed=1)
    first = list(s)
    assert sorted(first) == list(range(50))
    assert list(s) == first  # same epoch, same order
    s.set_epoch(1)
    assert list(s) != first
    assert list(RandomSampler(range(50), seed=1)) == first


def test_random_sampler_replacement_and_num_samples():
    s = RandomSampler(range(5), replacement=True, num_samples=20, seed=0)
    draws = list(s)
    assert len(draws) == len(s) == 20 and set(draws) <= set(range(5))
    assert len(list(RandomSampler(range(5), num_samples=3, seed=0))) == 3
    with pytest.raises(ValueError, match="replacement=True"):
        RandomSampler(range(5), num_samples=6, seed=0)
    with pytest.raises(ValueError, match="positive integer, got 0"):
        RandomSampler(range(0), seed=0)


def test_random_sampler_state_dict():
    s = RandomSampler(range(10), seed=7)
    s.set_epoch(3)
    t = RandomSampler(range(10), seed=0)
    t.load_state_dict(s.state_dict())
    assert list(t) == list(s)


def test_subset_random_sampler():
    s = SubsetRandomSampler([4, 8, 15, 16], seed=0)
    assert sorted(s) == [4, 8, 15, 16] and len(s) == 4


@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_covers_each_index_once(drop_last):
    batches = list(BatchSampler(RandomSampler(range(10), seed=0), 3, drop_last))
    assert all(b.dtype == np.int64 for b in batches)
    flat = np.concatenate(batches).tolist()
    assert len(batches) == len(BatchSampler(range(10), 3, drop_last))
    if drop_last:
        assert [len(b) for b in batches] == [3, 3, 3] and len(set(flat)) == 9
    else:
        assert [len(b) for b in batches] == [3, 3, 3, 1] and sorted(flat) == list(range(10))


def test_batch_sampler_over_plain_iterable_and_bad_size():
    assert [b.tolist() for b in BatchSampler([5, 6, 7], 2, False)] == [[5, 6], [7]]
    with pytest.raises(ValueError, match="positive integer, got 0"):
        BatchSampler(range(3), 0, False)


@pytest.mark.parametrize("n, replicas", [(10, 3), (12, 4), (5, 8), (7, 1)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_sampler_shards_disjoint_and_covering(n, replicas, shuffle):
    shards = [
        list(DistributedSampler(range(n), replicas, r, shuffle=shuffle, seed=3))
        for r in range(replicas)
    ]
    size = -(-n // replicas)
    assert all(len(s) == size for s in shards)
    flat = [i for s in shards for i in s]
    assert set(flat) == set(range(n))  # covering
    assert len(flat) - len(set(flat)) == size * replicas - n  # only padding repeats
    if n >= replicas * size:
        assert len(set(flat)) == len(flat)


@pytest.mark.parametrize("n, replicas", [(10, 3), (12, 4), (11, 2)])
def test_distributed_sampler_drop_last(n, replicas):
    shards = [
        list(DistributedSampler(range(n), replicas, r, seed=0, drop_last=True))
        for r in range(replicas)
    ]
    flat = [i for s in shards for i in s]
    assert len(set(flat)) == len(flat) == (n // replicas) * replicas
    assert all(len(s) == n // replicas for s in shards)


def test_distributed_sampler_matches_torch_without_shuffle():
    torch_data = pytest.importorskip("torch.utils.data")
    for n, replicas, drop_last in [(10, 3, False), (10, 3, True), (5, 8, False)]:
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            theirs = torch_data.DistributedSampler(
                range(n), replicas, rank, shuffle=False, drop_last=drop_last
            )
            assert list(ours) == list(theirs)


def test_distributed_sampler_set_epoch():
    s = DistributedSampler(range(20), 2, 0, seed=1)
    first = list(s)
    assert list(s) == first
    s.set_epoch(1)
    assert list(s) != first


@pytest.mark.parametrize("replicas, rank", [(0, 0), (2, 2), (2, -1)])
def test_distributed_sampler_errors(replicas, rank):
    with pytest.raises(ValueError, match="num_replicas|rank"):
        DistributedSampler(range(4), replicas, rank)
