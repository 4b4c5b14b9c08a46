"""The Tensor path: nnkit Tensors in, nnkit Tensors out."""

import numpy as np
import pytest

import nnkit
from nnkit.data import DataLoader, TensorDataset, default_collate

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int64)


def test_tensor_dataset_keeps_tensors():
    ds = TensorDataset(nnkit.tensor(X), nnkit.tensor(Y))
    assert len(ds) == 10
    x, y = ds[4]
    assert isinstance(x, nnkit.Tensor) and x.shape == (3,)
    np.testing.assert_array_equal(x.numpy(), X[4])
    assert int(y.item()) == 4


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_yields_tensors_equal_to_array_batches(num_workers):
    arrays = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True, seed=3)
    tensors = DataLoader(
        TensorDataset(nnkit.tensor(X), nnkit.tensor(Y)),
        batch_size=4,
        shuffle=True,
        seed=3,
        num_workers=num_workers,
    )
    for (xa, ya), (xt, yt) in zip(arrays, tensors, strict=True):
        assert isinstance(xt, nnkit.Tensor) and isinstance(yt, nnkit.Tensor)
        np.testing.assert_array_equal(xt.numpy(), xa)
        np.testing.assert_array_equal(yt.numpy(), ya)


def test_mixed_tensor_and_array_columns():
    loader = DataLoader(TensorDataset(nnkit.tensor(X), Y), batch_size=5)
    xb, yb = next(iter(loader))
    assert isinstance(xb, nnkit.Tensor) and isinstance(yb, np.ndarray)


def test_collate_stacks_tensors_inside_containers():
    samples = [{"x": nnkit.tensor(X[i]), "y": (nnkit.tensor(X[i, :2]), i)} for i in range(3)]
    batch = default_collate(samples)
    assert isinstance(batch["x"], nnkit.Tensor) and batch["x"].shape == (3, 3)
    np.testing.assert_array_equal(batch["x"].numpy(), X[:3])
    assert batch["y"][0].shape == (3, 2) and batch["y"][1].tolist() == [0, 1, 2]


def test_collate_rejects_tensors_of_different_shapes():
    with pytest.raises(ValueError, match="Tensors of different shapes"):
        default_collate([nnkit.tensor(X[0]), nnkit.tensor(X[0, :2])])


def test_item_by_item_loading_of_tensor_samples():
    class Rows(nnkit.data.Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return nnkit.tensor(X[i]), int(Y[i])

    xb, yb = next(iter(DataLoader(Rows(), batch_size=4)))
    assert isinstance(xb, nnkit.Tensor) and xb.shape == (4, 3) and yb.tolist() == [0, 1, 2, 3]
