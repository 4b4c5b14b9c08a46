import numpy as np
import pytest

from nnkit.data import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    SampleBatch,
    Subset,
    TensorDataset,
    random_split,
)
from nnkit.data.dataset import draw_seed


def test_tensor_dataset_items_and_batches():
    x, y = np.arange(12.0).reshape(6, 2), np.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[4]
    np.testing.assert_array_equal(xi, x[4])
    assert yi == 4
    batch = ds.__getitems__(np.array([5, 0, 2]))
    assert isinstance(batch, SampleBatch) and len(batch) == 3
    np.testing.assert_array_equal(batch.columns[0], x[[5, 0, 2]])
    assert batch[1][1] == 0
    assert [s[1] for s in batch[1:]] == [0, 2]


def test_tensor_dataset_errors():
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(ValueError, match="array 0 has 3, array 1 has 4"):
        TensorDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="0-d"):
        TensorDataset(np.float32(1.0))


def test_subset_maps_indices_and_batches():
    ds = TensorDataset(np.arange(10) * 10)
    sub = Subset(ds, [7, 2, 5])
    assert len(sub) == 3
    assert sub[0][0] == 70
    np.testing.assert_array_equal(sub.__getitems__(np.array([2, 0])).columns[0], [50, 70])


def test_subset_of_plain_dataset_fetches_items():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i * i

    assert Subset(Squares(), [3, 1]).__getitems__(np.array([0, 1])) == [9, 1]


def test_concat_dataset():
    a, b = TensorDataset(np.arange(3)), TensorDataset(np.arange(10, 12))
    ds = a + b
    assert isinstance(ds, ConcatDataset) and len(ds) == 5
    assert [int(ds[i][0]) for i in range(5)] == [0, 1, 2, 10, 11]
    assert int(ds[-1][0]) == 11
    with pytest.raises(IndexError):
        ds[5]
    with pytest.raises(ValueError, match="at least one"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([a, IterableDataset()])


def test_base_classes_demand_implementation():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        len(Dataset())
    with pytest.raises(NotImplementedError):
        iter(IterableDataset())


@pytest.mark.parametrize(
    "lengths, expected",
    [
        ([6, 4], [6, 4]),
        ([0.5, 0.5], [5, 5]),
        ([0.34, 0.33, 0.33], [4, 3, 3]),
        ([0.25, 0.25, 0.25, 0.25], [3, 3, 2, 2]),
    ],
)
def test_random_split_lengths_and_disjointness(lengths, expected):
    ds = TensorDataset(np.arange(10))
    parts = random_split(ds, lengths, seed=0)
    assert [len(p) for p in parts] == expected
    seen = np.concatenate([p.indices for p in parts])
    assert sorted(seen.tolist()) == list(range(10))


def test_random_split_is_seeded():
    ds = TensorDataset(np.arange(20))
    a = [p.indices.tolist() for p in random_split(ds, [10, 10], seed=3)]
    b = [p.indices.tolist() for p in random_split(ds, [10, 10], seed=3)]
    c = [p.indices.tolist() for p in random_split(ds, [10, 10], seed=4)]
    assert a == b and a != c


def test_random_split_without_seed_follows_manual_seed():
    import nnkit.random

    ds = TensorDataset(np.arange(20))
    nnkit.random.manual_seed(5)
    a = random_split(ds, [10, 10])[0].indices.tolist()
    nnkit.random.manual_seed(5)
    assert random_split(ds, [10, 10])[0].indices.tolist() == a
    nnkit.random.manual_seed(5)
    seed = draw_seed()
    nnkit.random.manual_seed(5)
    assert draw_seed() == seed


@pytest.mark.parametrize(
    "lengths, message",
    [
        ([5, 4], "sum to 9 but the dataset has 10"),
        ([-1, 11], "non-negative"),
        ([2.5, 7.5], "integers or fractions"),
        ([], "empty"),
    ],
)
def test_random_split_errors(lengths, message):
    with pytest.raises(ValueError, match=message):
        random_split(TensorDataset(np.arange(10)), lengths, seed=0)
