"""fit/evaluate/predict of functional models with several inputs and outputs, given as
lists or dicts of arrays (Keras 3's conventions)."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit import nn
from nnkit.data import DataLoader, Dataset


def two_by_two(seed=0):
    nnkit.manual_seed(seed)
    a, b = nnkit.Input((4,), name="a"), nnkit.Input((3,), name="b")
    shared = nn.Dense(6, activation="tanh", name="shared")
    x = nn.concatenate([shared(nn.Dense(6, name="pa")(a)), shared(nn.Dense(6, name="pb")(b))])
    model = nnkit.Model({"a": a, "b": b}, [nn.Dense(3, name="cls")(x), nn.Dense(1, name="reg")(x)])
    model.compile("sgd", ["cross_entropy", "mse"], loss_weights=[1.0, 0.5], lr=0.1)
    return model


def data(n=30):
    rng = np.random.default_rng(1)
    return (
        rng.normal(size=(n, 4)).astype(np.float32),
        rng.normal(size=(n, 3)).astype(np.float32),
        rng.integers(0, 3, n),
        rng.normal(size=(n, 1)).astype(np.float32),
    )


class Pairs(Dataset):
    def __init__(self, xa, xb, y1, y2):
        self.parts = xa, xb, y1, y2

    def __len__(self):
        return len(self.parts[0])

    def __getitem__(self, i):
        xa, xb, y1, y2 = (p[i] for p in self.parts)
        return {"a": xa, "b": xb}, (y1, y2)


def test_arrays_by_name_and_list_equal_a_dataset_of_the_same_samples():
    xa, xb, y1, y2 = data()
    kwargs = dict(epochs=2, batch_size=8, shuffle=False, verbose=0)
    reference = two_by_two()
    expected = reference.fit(
        DataLoader(Pairs(xa, xb, y1, y2), batch_size=8), epochs=2, verbose=0
    ).history
    for targets in ([y1, y2], {"cls": y1, "reg": y2}):
        model = two_by_two()
        assert model.fit({"a": xa, "b": xb}, targets, **kwargs).history == expected
        for p, q in zip(model.parameters(), reference.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    outputs = model.predict({"a": xa, "b": xb}, batch_size=7, verbose=0)
    assert [o.shape for o in outputs] == [(30, 3), (30, 1)]
    assert model.evaluate({"a": xa, "b": xb}, [y1, y2], verbose=0) == pytest.approx(
        reference.evaluate(DataLoader(Pairs(xa, xb, y1, y2), batch_size=32), verbose=0)
    )


def test_validation_split_and_weights_slice_every_array():
    xa, xb, y1, y2 = data()
    model = two_by_two()
    history = model.fit(
        {"a": xa, "b": xb},
        [y1, y2],
        sample_weight=np.ones(30, np.float32),
        validation_split=0.2,
        epochs=1,
        verbose=0,
    )
    expected = model.evaluate({"a": xa[24:], "b": xb[24:]}, [y1[24:], y2[24:]], verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(expected, rel=1e-6)


def test_structure_errors_name_the_part():
    xa, xb, y1, y2 = data()
    model = two_by_two()
    with pytest.raises(
        ValueError, match="x and y have different lengths: x has 30 samples, y has 29"
    ):
        model.fit({"a": xa, "b": xb}, [y1[:29], y2[:29]], verbose=0)
    with pytest.raises(
        ValueError,
        match=r"must name every output of the model \['cls', "
        r"'reg'\]; missing \['reg'\]",
    ):
        model.fit({"a": xa, "b": xb}, {"cls": y1, "other": y2}, verbose=0)
