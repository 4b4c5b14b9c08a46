from collections import namedtuple

import numpy as np
import pytest

from nnkit.data import SampleBatch, default_collate

Pair = namedtuple("Pair", "image label")


def test_arrays_and_numbers():
    batch = default_collate([np.zeros(3, np.float32), np.ones(3, np.float32)])
    assert batch.shape == (2, 3) and batch.dtype == np.float32
    assert default_collate([1, 2]).dtype == np.int64
    assert default_collate([1.5, 2.0]).tolist() == [1.5, 2.0]
    assert default_collate([np.float32(1), np.float32(2)]).dtype == np.float32


def test_recursion_into_containers():
    samples = [{"x": np.full(2, i), "meta": (i, f"name{i}", [i, i + 1])} for i in range(3)]
    batch = default_collate(samples)
    assert set(batch) == {"x", "meta"}
    assert batch["x"].shape == (3, 2)
    ids, names, pairs = batch["meta"]
    assert isinstance(batch["meta"], tuple)
    assert ids.tolist() == [0, 1, 2] and names == ["name0", "name1", "name2"]
    assert isinstance(pairs, list) and [p.tolist() for p in pairs] == [[0, 1, 2], [1, 2, 3]]


def test_namedtuple_and_none():
    batch = default_collate([Pair(np.zeros(2), 0), Pair(np.ones(2), 1)])
    assert isinstance(batch, Pair) and batch.label.tolist() == [0, 1]
    with pytest.raises(TypeError, match=r"sample\(s\) \[0, 1\] of the batch hold None"):
        default_collate([None, None])  # torch's default_collate refuses None too


def test_a_dataset_returning_none_names_collate_and_the_indices():
    from nnkit.data import DataLoader, Dataset

    class Holes(Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return (None if i == 4 else np.zeros(2), 1)

    loader = DataLoader(Holes(), batch_size=3)
    with pytest.raises(
        TypeError,
        match=r"default_collate: sample\(s\) \[1\] of the batch "
        r"hold None at batch\[0\].*\(collating batch 1, "
        r"dataset indices \[3, 4, 5\]\)",
    ):
        list(loader)


def test_sample_batch_is_passed_through():
    cols = (np.zeros((2, 3)), np.arange(2))
    assert default_collate(SampleBatch(cols)) is not None
    assert default_collate(SampleBatch(cols))[1] is cols[1]


@pytest.mark.parametrize(
    "samples, error, message",
    [
        ([np.zeros(2), np.zeros(3)], ValueError, r"different shapes \[\(2,\), \(3,\)\] at batch"),
        ([(1, 2), (1,)], ValueError, "different lengths"),
        ([{"a": np.zeros(1)}, {"a": np.zeros(2)}], ValueError, r"at batch\['a'\]"),
        ([object(), object()], TypeError, "cannot batch samples of type object"),
        ([], ValueError, "empty"),
    ],
)
def test_collate_errors(samples, error, message):
    with pytest.raises(error, match=message):
        default_collate(samples)
