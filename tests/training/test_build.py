"""Keras's build lifecycle: ``build(input_shape)`` builds every layer before any data,
and a Model subclass that creates its layers in ``build`` trains with ``fit``."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.layers.module import NotBuiltError
from nnkit.nn import Dense, Dropout, Embedding


def test_build_builds_every_layer_before_any_data(tmp_path):
    pytest.importorskip("h5py")
    model = nnkit.Sequential([Dense(8, activation="relu"), Dropout(0.5), Dense(2)])
    with pytest.raises(NotBuiltError, match="Dense"):
        model.count_params()
    model.build((None, 20))
    assert all(m.built for m in model.modules())
    assert model.count_params() == 20 * 8 + 8 + 8 * 2 + 2  # Keras's count for this model
    model.save_weights(tmp_path / "w.h5")
    fresh = nnkit.Sequential([Dense(8, activation="relu"), Dropout(0.5), Dense(2)])
    fresh.build((None, 20))
    fresh.load_weights(tmp_path / "w.h5")  # no forward call needed first
    x = nnkit.randn(3, 20)
    model.eval()
    fresh.eval()
    np.testing.assert_array_equal(model(x).detach().numpy(), fresh(x).detach().numpy())
    assert model.training is False and fresh.training is False
    lines = []
    fresh.summary(print_fn=lines.append)  # the built shape is remembered
    assert any("(None, 2)" in line for line in lines)


def test_build_keeps_the_training_mode_and_takes_token_ids():
    model = nnkit.Sequential([Embedding(10, 4), Dense(3)])
    assert model.training
    model.build((None, 7))
    assert model.training and model.count_params() == 10 * 4 + 4 * 3 + 3


def test_a_model_subclass_building_its_layers_lazily_fits():
    class Lazy(nnkit.Model):
        def __init__(self):
            super().__init__()
            self.built = False

        def build(self, input_shape):
            self.hidden, self.out = Dense(6), Dense(3)

        def forward(self, x):
            return self.out(self.hidden(x).relu())

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(24, 5)).astype(np.float32), rng.integers(0, 3, 24)
    model = Lazy()
    model.compile("adam", "cross_entropy")
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert len(history.history["loss"]) == 2
    assert model.count_params() == 5 * 6 + 6 + 6 * 3 + 3
