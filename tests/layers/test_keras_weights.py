"""Keras's ``trainable`` flag and weight lists on every module (``nnkit/layers/weights.py``);
the same scripts on Keras 3 are in ``tests/training/test_keras_oracle.py``."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit import nn


def _model():
    nnkit.manual_seed(0)
    model = nnkit.Sequential(nn.Dense(5, activation="relu"), nn.BatchNorm1d(5), nn.Dense(2))
    model.build((None, 3))
    return model


def test_weights_lists_in_module_order_with_buffers_as_non_trainable():
    model = _model()
    dense0, bn, dense1 = model.layers
    expected = [
        dense0.weight, dense0.bias, bn.weight, bn.bias, bn.running_mean, bn.running_var,
        dense1.weight, dense1.bias,
    ]  # fmt: skip
    assert [id(w) for w in model.weights] == [id(w) for w in expected]
    assert [id(w) for w in model.trainable_weights] == [
        id(w) for w in expected if w is not bn.running_mean and w is not bn.running_var
    ]
    assert [id(w) for w in model.non_trainable_weights] == [id(bn.running_mean), id(bn.running_var)]
    assert nn.Dense(3).weights == []  # lazily built: none yet


def test_trainable_freezes_a_layer_and_everything_inside():
    model = _model()
    dense0 = model.layers[0]
    dense0.trainable = False
    assert dense0.trainable is False and model.trainable is True
    assert not dense0.weight.requires_grad and not dense0.bias.requires_grad
    assert len(model.trainable_weights) == 4 and len(model.non_trainable_weights) == 4
    model.trainable = False
    assert all(not m.trainable for m in model.modules())
    assert model.trainable_weights == []
    model.trainable = True
    assert all(w.requires_grad for w in model.parameters())


def test_a_frozen_lazy_layer_is_built_frozen():
    layer = nn.Dense(4)
    layer.trainable = False
    layer(nnkit.randn(2, 3))
    assert [w.requires_grad for w in layer.weights] == [False, False]


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_fit_leaves_a_frozen_layer_alone(optimizer):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = rng.integers(0, 2, 64)
    model = _model()
    model.layers[0].trainable = False
    before = model.get_weights()
    model.compile(optimizer, "cross_entropy")
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    after = model.get_weights()
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert not np.array_equal(before[6], after[6])  # the last Dense trains


def test_get_and_set_weights_round_trip_and_errors():
    model, other = _model(), _model()
    with nnkit.no_grad():
        for p in other.parameters():
            p.add_(1.0)
    values = other.get_weights()
    assert all(isinstance(v, np.ndarray) for v in values)
    values[0][...] = 7  # copies: the model's weights do not change
    assert not np.array_equal(other.layers[0].weight.detach().numpy(), values[0])
    model.set_weights(values)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), values))
    model.set_weights([nnkit.tensor(v) for v in other.get_weights()])  # Tensors too
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), other.get_weights()))
    dense = model.layers[0]
    dense.set_weights([np.zeros((5, 3), np.float64), np.ones(5)])  # cast to the dtype
    assert dense.weight.dtype == nnkit.float32 and dense.bias.detach().numpy().tolist() == [1.0] * 5
    name = dense.name
    with pytest.raises(ValueError, match=f"layer '{name}' with a weight list of length 1"):
        dense.set_weights([np.zeros((5, 3))])
    with pytest.raises(ValueError, match=rf"Layer {name} weight shape \(5, 3\) is not"):
        dense.set_weights([np.zeros((3, 5)), np.zeros(5)])
    assert dense.bias.detach().numpy().tolist() == [1.0] * 5  # nothing assigned on an error


def test_trainable_survives_save_and_load(tmp_path):
    model = _model()
    model.layers[2].trainable = False
    model.compile("sgd", "cross_entropy")
    path = tmp_path / "m.h5"
    model.save(path)
    loaded = nnkit.load_model(path)
    assert [layer.trainable for layer in loaded.layers] == [True, True, False]
    assert [w.requires_grad for w in loaded.parameters()] == [True] * 4 + [False] * 2


def test_on_batch_methods(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3)).astype(np.float32)
    y = rng.integers(0, 2, 16)
    model = nnkit.Sequential(nn.Dense(4, activation="relu"), nn.Dense(2))
    with pytest.raises(RuntimeError, match="compile"):
        model.train_on_batch(x, y)
    model.compile("sgd", "cross_entropy", metrics=["accuracy"])
    model.eval()
    loss, accuracy = model.train_on_batch(x, y)  # builds the lazy model and optimizer
    assert isinstance(loss, float) and 0 <= accuracy <= 1
    assert model.training is False  # the mode is restored
    logs = model.train_on_batch(x, y, sample_weight=np.ones(16), return_dict=True)
    assert list(logs) == ["loss", "accuracy"] and logs["loss"] < loss
    with pytest.raises(ValueError, match="cannot be specified at the same time"):
        model.train_on_batch(x, y, sample_weight=np.ones(16), class_weight={0: 1, 1: 2})
    before = model.get_weights()
    test = model.test_on_batch(x, y, return_dict=True)
    evaluated = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    assert test == evaluated
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    out = model.predict_on_batch(x)
    assert isinstance(out, np.ndarray) and np.array_equal(out, model.predict(x, verbose=0))
    # class weights weight each sample's loss by its class
    weighted = model.test_on_batch(x, y, sample_weight=np.where(y == 1, 2.0, 1.0))
    model2 = nnkit.Sequential(nn.Dense(4, activation="relu"), nn.Dense(2))
    model2.compile("sgd", "cross_entropy", metrics=["accuracy"])
    model2.build((None, 3))
    model2.set_weights(model.get_weights())
    by_class = model2.train_on_batch(x, y, class_weight={0: 1.0, 1: 2.0})
    assert by_class[0] == pytest.approx(weighted[0], rel=1e-6)


def test_train_on_batch_with_jit_compile_replays_bitwise():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3)).astype(np.float32)
    y = rng.integers(0, 2, 16)
    results = []
    for jit in (False, True):
        nnkit.manual_seed(0)
        model = nnkit.Sequential(nn.Dense(4, activation="relu"), nn.Dense(2))
        model.compile("adam", "cross_entropy", metrics=["accuracy"], jit_compile=jit)
        results.append(([model.train_on_batch(x, y) for _ in range(5)], model.get_weights()))
    assert results[0][0] == results[1][0]
    assert all(np.array_equal(a, b) for a, b in zip(results[0][1], results[1][1]))
    assert model.__dict__["_jit_steps"]["train_step"].num_replays > 0


def test_every_layer_takes_keras_trainable_keyword(tmp_path):
    """``Dense(3, trainable=False)``, as in Keras, for every layer (nnkit's PyTorch-style
    ones too); the flag is not one of the layer's config arguments but is saved."""
    dense = nn.Dense(3, trainable=False, name="frozen")
    conv = nn.Conv2d(1, 2, 3, trainable=False)
    assert dense.name == "frozen" and "trainable" not in dense.get_config()
    assert [p.requires_grad for p in conv.parameters()] == [False, False]
    model = nnkit.Sequential(dense, nn.Dense(2, trainable=True))
    model.build((None, 4))
    assert [w.requires_grad for w in model.weights] == [False, False, True, True]
    model.compile("sgd", "mse")
    model.save(tmp_path / "m.h5")
    loaded = nnkit.load_model(tmp_path / "m.h5")
    assert [layer.trainable for layer in loaded.layers] == [False, True]


def test_training_call_argument_sets_the_mode_for_that_call():
    """Keras's ``layer(x, training=...)``: the call runs in that mode, every layer inside
    too, and each layer's own mode comes back afterwards; a forward that takes
    ``training`` gets it; a functional model keeps it in its graph."""
    nnkit.manual_seed(0)
    x = nnkit.randn(64, 4)
    model = nnkit.Sequential(nn.Dense(8), nn.BatchNorm1d(8), nn.Dropout(0.5))
    model.eval()
    with nnkit.no_grad():
        dropped = model(x, training=True).numpy()  # (batch norm updates its statistics)
    assert (dropped == 0).mean() > 0.2  # dropout was on for that call
    assert [m.training for m in model.modules()] == [False] * 4
    reference = model(x).detach().numpy()
    model.train()
    model.layers[1].eval()
    assert np.array_equal(model(x, training=False).detach().numpy(), reference)
    assert [m.training for m in model.modules()] == [True, True, False, True]

    class TakesIt(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def forward(self, x, training=None):
            return self.drop(x), training

    layer = TakesIt()
    layer.eval()
    out, seen = layer(x, training=True)
    assert seen is True and (out.numpy() == 0).any() and not layer.training

    inputs = nnkit.Input((4,))
    outputs = nn.Dropout(0.5)(nn.Dense(8)(inputs), training=True)
    functional = nnkit.Model(inputs, outputs)
    functional.eval()
    with nnkit.no_grad():
        assert (functional(x).numpy() == 0).any()
