import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nnkit.random
from nnkit.data import (
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    TensorDataset,
    WorkerError,
    get_worker_info,
    sample_rng,
)


def _dataset(n=23):
    return TensorDataset(np.arange(n * 3, dtype=np.float32).reshape(n, 3), np.arange(n))


def _labels(loader):
    return [y.tolist() for _, y in loader]


class NoisyDataset(Dataset):
    """Draws randomness per sample, the way augmentation does; no __getitems__."""

    def __len__(self):
        return 17

    def __getitem__(self, i):
        rng = sample_rng(i)
        return {"x": rng.normal(size=4).astype(np.float32), "index": i}


class Failing(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 7:
            raise KeyError(f"cannot load sample {i}")
        return np.float32(i)


class Stream(IterableDataset):
    def __init__(self, n, fail_at=None):
        self.n, self.fail_at = n, fail_at

    def __iter__(self):
        for i in range(self.n):
            if i == self.fail_at:
                raise RuntimeError("stream broke")
            yield np.array([i, i * i])


def test_sequential_batches():
    batches = _labels(DataLoader(_dataset(7), batch_size=3))
    assert batches == [[0, 1, 2], [3, 4, 5], [6]]
    x, y = next(iter(DataLoader(_dataset(7), batch_size=3)))
    assert x.shape == (3, 3) and x.dtype == np.float32 and y.dtype == np.int64


def test_equal_seeds_equal_batches_and_epochs_differ():
    a = DataLoader(_dataset(), batch_size=4, shuffle=True, seed=11)
    b = DataLoader(_dataset(), batch_size=4, shuffle=True, seed=11)
    epochs_a = [_labels(a) for _ in range(3)]
    epochs_b = [_labels(b) for _ in range(3)]
    assert epochs_a == epochs_b
    assert epochs_a[0] != epochs_a[1] != epochs_a[2]
    assert _labels(DataLoader(_dataset(), batch_size=4, shuffle=True, seed=12)) != epochs_a[0]


def test_seed_from_global_generator():
    nnkit.random.manual_seed(0)
    a = _labels(DataLoader(_dataset(), batch_size=4, shuffle=True))
    nnkit.random.manual_seed(0)
    b = _labels(DataLoader(_dataset(), batch_size=4, shuffle=True))
    assert a == b


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("num_workers", [0, 2])
def test_every_sample_once_per_epoch(drop_last, num_workers):
    loader = DataLoader(
        _dataset(23),
        batch_size=5,
        shuffle=True,
        drop_last=drop_last,
        seed=0,
        num_workers=num_workers,
    )
    for _ in range(2):
        batches = _labels(loader)
        flat = [i for b in batches for i in b]
        assert len(batches) == len(loader) == (4 if drop_last else 5)
        assert len(flat) == len(set(flat)) == (20 if drop_last else 23)
        assert all(len(b) == 5 for b in batches[:4])


@pytest.mark.parametrize("num_workers, prefetch", [(1, 1), (2, 2), (4, 3)])
def test_workers_equal_single_process(num_workers, prefetch):
    def run(workers):
        loader = DataLoader(
            NoisyDataset(),
            batch_size=3,
            shuffle=True,
            seed=5,
            num_workers=workers,
            prefetch=prefetch,
        )
        return [[(b["x"].copy(), b["index"].copy()) for b in loader] for _ in range(2)]

    single, threaded = run(0), run(num_workers)
    for epoch_single, epoch_threaded in zip(single, threaded):
        for (xs, ids), (xt, it) in zip(epoch_single, epoch_threaded, strict=True):
            np.testing.assert_array_equal(ids, it)
            np.testing.assert_array_equal(xs, xt)
    # per-sample randomness changes between epochs
    assert not np.array_equal(single[0][0][0], single[1][0][0])


def test_tensor_dataset_workers_equal_single_process():
    single = _labels(DataLoader(_dataset(), batch_size=4, shuffle=True, seed=1))
    threaded = _labels(DataLoader(_dataset(), batch_size=4, shuffle=True, seed=1, num_workers=3))
    assert single == threaded


def test_prefetch_is_bounded():
    started, lock = [0], threading.Lock()

    class Counting(Dataset):
        def __len__(self):
            return 40

        def __getitem__(self, i):
            with lock:
                started[0] += 1
            return np.float32(i)

    loader = DataLoader(Counting(), batch_size=1, num_workers=2, prefetch=2)
    for consumed, _ in enumerate(loader, start=1):
        time.sleep(0.002)
        with lock:
            assert started[0] <= consumed + 2 * 2


def test_worker_exception_reaches_caller():
    loader = DataLoader(Failing(), batch_size=4, num_workers=2)
    with pytest.raises(
        WorkerError, match=r"KeyError.*batch 1 \(sample indices \[4, 5, 6, 7\]\)"
    ) as info:
        list(loader)
    assert "dataset[7]" in str(info.value)
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.__cause__.__traceback__ is not None


def test_abandoned_threaded_iterator_releases_its_threads():
    def workers():
        return [t for t in threading.enumerate() if t.name.startswith("nnkit-data")]

    it = iter(DataLoader(NoisyDataset(), batch_size=2, num_workers=2))
    next(it)
    assert workers()
    del it
    deadline = time.monotonic() + 5
    while workers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not workers()


def test_main_process_exception_is_unchanged():
    with pytest.raises(KeyError, match="cannot load sample 7") as info:
        list(DataLoader(Failing(), batch_size=4))
    notes = getattr(info.value, "__notes__", ["batch 1 dataset[7]"])  # notes need Python 3.11
    assert any("batch 1" in n for n in notes) and any("dataset[7]" in n for n in notes)


def test_worker_info():
    seen = []

    class Probe(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            seen.append(get_worker_info())
            return i

    list(DataLoader(Probe(), batch_size=2))
    assert seen == [None] * 6
    seen.clear()
    list(DataLoader(Probe(), batch_size=2, num_workers=2, seed=9))
    assert all(w.num_workers == 2 and w.seed == 9 and 0 <= w.id < 2 for w in seen)
    assert get_worker_info() is None


@pytest.mark.parametrize("num_workers", [0, 2])
def test_state_dict_resume_mid_epoch(num_workers):
    def make(seed):
        return DataLoader(
            _dataset(), batch_size=4, shuffle=True, seed=seed, num_workers=num_workers
        )

    reference = make(3)
    expected = [_labels(reference) for _ in range(3)]
    loader = make(3)
    _labels(loader)  # epoch 0
    it = iter(loader)
    head = [next(it)[1].tolist() for _ in range(2)]
    state = loader.state_dict()
    assert state == {"epoch": 1, "position": 2, "seed": 3, "sampler": {"seed": 3, "epoch": 1}}
    resumed = make(99)
    resumed.load_state_dict(state)
    assert head + _labels(resumed) == expected[1]
    assert _labels(resumed) == expected[2]


def test_load_state_dict_without_sampler_state_reseeds_shuffling():
    expected = _labels(DataLoader(_dataset(), batch_size=4, shuffle=True, seed=8))
    loader = DataLoader(_dataset(), batch_size=4, shuffle=True, seed=1)
    loader.load_state_dict({"epoch": 0, "position": 0, "seed": 8})
    assert _labels(loader) == expected


def test_state_dict_at_epoch_end_points_to_next_epoch():
    loader = DataLoader(_dataset(8), batch_size=4, shuffle=True, seed=0)
    it = iter(loader)
    next(it), next(it)
    assert loader.state_dict()["epoch"] == 1 and loader.state_dict()["position"] == 0


def test_load_state_dict_errors():
    loader = DataLoader(_dataset(8), batch_size=4)
    with pytest.raises(KeyError, match="missing keys"):
        loader.load_state_dict({"epoch": 0})
    with pytest.raises(ValueError, match="invalid epoch 0 / position 5"):
        loader.load_state_dict({"epoch": 0, "position": 5, "seed": 0})


def test_abandoned_iterator_starts_next_epoch():
    loader = DataLoader(_dataset(), batch_size=4, shuffle=True, seed=2)
    reference = DataLoader(_dataset(), batch_size=4, shuffle=True, seed=2)
    first = [_labels(reference) for _ in range(2)]
    for _ in loader:
        break
    assert loader.epoch == 0
    assert _labels(loader) == first[1] and loader.epoch == 2


def test_distributed_sampler_in_loader_changes_each_epoch():
    sampler = DistributedSampler(_dataset(20), 2, 1, seed=4)
    loader = DataLoader(_dataset(20), batch_size=5, sampler=sampler)
    e0, e1 = _labels(loader), _labels(loader)
    assert e0 != e1 and sorted(np.concatenate(e0).tolist()) != list(range(20))
    sampler.set_epoch(1)
    assert list(sampler) == np.concatenate(e1).tolist()


def test_custom_collate_and_batch_sampler():
    def collate(samples):
        return [int(y) for _, y in samples]

    loader = DataLoader(_dataset(6), batch_size=4, collate_fn=collate)
    assert list(loader) == [[0, 1, 2, 3], [4, 5]]
    loader = DataLoader(_dataset(6), batch_sampler=[[5, 0], [3]])
    assert _labels(loader) == [[5, 0], [3]] and len(loader) == 2


@pytest.mark.parametrize("num_workers", [0, 2])
def test_iterable_dataset(num_workers):
    loader = DataLoader(Stream(7), batch_size=3, num_workers=num_workers)
    assert [b[:, 0].tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    loader = DataLoader(Stream(7), batch_size=3, drop_last=True, num_workers=num_workers)
    assert [b[:, 0].tolist() for b in loader] == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(TypeError, match="__len__"):
        len(loader)


def test_iterable_dataset_resume_and_errors():
    loader = DataLoader(Stream(7), batch_size=2)
    it = iter(loader)
    next(it)
    resumed = DataLoader(Stream(7), batch_size=2)
    resumed.load_state_dict(loader.state_dict())
    assert [b[:, 0].tolist() for b in resumed] == [[2, 3], [4, 5], [6]]
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(WorkerError, match="batch 1") as info:
        list(DataLoader(Stream(7, fail_at=3), batch_size=2, num_workers=1))
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "DataLoader: batch_size must be a positive integer, got 0"),
        ({"batch_size": 2.5}, "batch_size must be a positive integer, got 2.5"),
        ({"num_workers": -1}, "num_workers must be a non-negative integer, got -1"),
        ({"prefetch": 0}, "prefetch must be a positive integer, got 0"),
        ({"shuffle": True, "sampler": [0, 1]}, "sampler is mutually exclusive with shuffle"),
        ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler is mutually exclusive"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        DataLoader(_dataset(4), **kwargs)


def test_empty_dataset():
    with pytest.raises(ValueError, match="dataset is empty"):
        DataLoader(TensorDataset(np.zeros((0, 3))), batch_size=2)


def test_sample_rng_outside_loader():
    a = sample_rng(3, seed=1).integers(1 << 30)
    assert a == sample_rng(3, seed=1).integers(1 << 30) != sample_rng(4, seed=1).integers(1 << 30)
    nnkit.random.manual_seed(2)
    b = sample_rng(3).random()
    nnkit.random.manual_seed(2)
    assert sample_rng(3).random() == b
    with pytest.raises(ValueError, match="non-negative"):
        sample_rng(-1)


def test_iterable_dataset_sees_one_worker():
    infos = []

    class Probe(IterableDataset):
        def __iter__(self):
            infos.append(get_worker_info())
            yield from range(4)

    list(DataLoader(Probe(), batch_size=2, num_workers=3))
    assert infos[0].id == 0 and infos[0].num_workers == 1


def test_state_dict_with_batch_sampler():
    loader = DataLoader(_dataset(6), batch_sampler=[[5, 0], [3], [1, 2]])
    it = iter(loader)
    next(it)
    resumed = DataLoader(_dataset(6), batch_sampler=[[5, 0], [3], [1, 2]])
    resumed.load_state_dict(loader.state_dict())
    assert _labels(resumed) == [[3], [1, 2]]


@settings(max_examples=60, deadline=None, database=None)
@given(
    n=st.integers(1, 40),
    batch_size=st.integers(1, 12),
    drop_last=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_property_every_sample_once(n, batch_size, drop_last, seed):
    loader = DataLoader(
        TensorDataset(np.arange(n)),
        batch_size=batch_size,
        shuffle=True,
        drop_last=drop_last,
        seed=seed,
    )
    flat = [int(i) for (b,) in loader for i in b]
    expected = n - n % batch_size if drop_last else n
    assert len(flat) == len(set(flat)) == expected
    assert len(loader) == -(-expected // batch_size)


@settings(max_examples=60, deadline=None, database=None)
@given(n=st.integers(1, 60), replicas=st.integers(1, 9), shuffle=st.booleans(), drop=st.booleans())
def test_property_distributed_shards(n, replicas, shuffle, drop):
    if drop and n < replicas:
        return
    shards = [
        DistributedSampler(range(n), replicas, r, shuffle=shuffle, seed=1, drop_last=drop).indices()
        for r in range(replicas)
    ]
    flat = np.concatenate(shards).tolist()
    assert len({len(s) for s in shards}) == 1
    if drop:
        assert len(flat) == len(set(flat)) == n - n % replicas
    else:
        assert set(flat) == set(range(n)) and len(flat) == -(-n // replicas) * replicas


_STUCK = """
import sys, time, numpy as np
from nnkit.data import DataLoader, Dataset

class Stuck(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        if i == 5:
            print("stuck", flush=True)
            time.sleep(3600)
        return np.zeros(2)

for batch in DataLoader(Stuck(), batch_size=4, num_workers=2):
    pass
"""


def test_sigint_ends_a_loader_whose_worker_is_stuck():
    import signal
    import subprocess
    import sys
    import time

    child = subprocess.Popen(
        [sys.executable, "-c", _STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout.readline() == "stuck\n"
    time.sleep(0.2)  # the main thread now waits for the stuck batch
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    try:
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()  # no stray process if it hung
        child.stdout.close()
        child.stderr.close()
    assert time.monotonic() - sent < 5
    assert child.returncode != 0 and "KeyboardInterrupt" in err
