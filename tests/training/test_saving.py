"""Whole-model files: ``model.save`` -> ``nnkit.load_model`` rebuilds the architecture,
the weights, the compile settings and the optimizer state, in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import nnkit
from nnkit import nn
from nnkit.io import CheckpointError
from nnkit.saving import SerializationError, deserialize, serialize
from tests.layers.test_layers import CASES, _input, _make, _run

pytest.importorskip("h5py")
ROOT = Path(__file__).resolve().parents[2]

TRAIN = """
import sys
import numpy as np
import nnkit
from nnkit.nn import BatchNorm1d, Dense, Dropout

rng = np.random.default_rng(0)
x = rng.normal(size=(64, 6)).astype("f4")
y = rng.integers(0, 3, 64)
out = sys.argv[1]
if sys.argv[2] == "save":
    nnkit.manual_seed(0)
    model = nnkit.Sequential([Dense(16, activation="relu"), BatchNorm1d(16), Dropout(0.2),
                              Dense(3)])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"], lr=0.01)
    model.fit(x, y, epochs=2, batch_size=16, verbose=0, seed=1)
    model.save(f"{out}/model.h5")
else:
    model = nnkit.load_model(f"{out}/model.h5")
np.save(f"{out}/{sys.argv[2]}_pred.npy", model.predict(x, verbose=0))
nnkit.manual_seed(5)
history = model.fit(x, y, epochs=1, batch_size=16, verbose=0, seed=2)
np.savez(f"{out}/{sys.argv[2]}_after.npz", *[p.detach().numpy() for p in model.parameters()],
         loss=history.history["loss"], accuracy=history.history["accuracy"])
"""


def test_load_model_in_a_fresh_process_predicts_and_trains_on_exactly(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TRAIN))
    for step in ("save", "load"):
        result = subprocess.run(
            [sys.executable, script, tmp_path, step],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(
        np.load(tmp_path / "save_pred.npy"), np.load(tmp_path / "load_pred.npy")
    )
    a, b = np.load(tmp_path / "save_after.npz"), np.load(tmp_path / "load_after.npz")
    assert sorted(a.files) == sorted(b.files)
    for key in a.files:  # Adam's moments and step count came back: the same next epoch
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_layer_rebuilds_from_its_config(case):
    layer = _make(case, "cpu", 0)
    x = _input(case, "cpu")
    layer.eval()
    expected = _run(case, layer, x)
    config = json.loads(json.dumps(serialize(layer)))  # through JSON text, as in a file
    rebuilt = deserialize(config)
    assert type(rebuilt) is type(layer)
    rebuilt.load_state_dict(layer.state_dict())
    rebuilt.eval()
    np.testing.assert_array_equal(
        _run(case, rebuilt, x).detach().numpy(), expected.detach().numpy()
    )


@nnkit.saving.register_serializable(package="tests")
class Scale(nn.Module):
    def __init__(self, factor=2.0):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


class Unregistered(nn.Module):
    def __init__(self, factor=3.0):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


def compiled(*layers):
    nnkit.manual_seed(0)
    model = nnkit.Sequential(list(layers))
    model.compile("sgd", "mse", lr=0.1)
    model.build((None, 4))
    return model


def test_user_layers_registered_or_given_as_custom_objects(tmp_path):
    model = compiled(nn.Dense(3), Scale(0.5))
    model.save(tmp_path / "a.h5")
    loaded = nnkit.load_model(tmp_path / "a.h5")
    assert isinstance(loaded[1], Scale) and loaded[1].factor == 0.5
    model = compiled(nn.Dense(3), Unregistered(4.0))
    model.save(tmp_path / "b.h5")
    with pytest.raises(
        SerializationError,
        match=r"'Unregistered'.*register_serializable.*"
        r"custom_objects",
    ):
        nnkit.load_model(tmp_path / "b.h5")
    loaded = nnkit.load_model(tmp_path / "b.h5", custom_objects={"Unregistered": Unregistered})
    x = nnkit.randn(2, 4)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    with nnkit.saving.custom_object_scope({"Unregistered": Unregistered}):
        assert isinstance(nnkit.load_model(tmp_path / "b.h5", compile=False)[1], Unregistered)


def test_a_file_never_imports_a_module_it_names(tmp_path):
    config = {"module": "os", "class_name": "system", "config": {}}
    with pytest.raises(SerializationError, match="Could not locate class 'system'"):
        deserialize(config)
    with pytest.raises(SerializationError, match="Could not locate function"):
        deserialize(
            {
                "module": "nnkit.layers.linear",
                "class_name": "Dense",
                "config": {"units": 2, "activation": {"__function__": "os:system"}},
            }
        )


def test_files_without_an_architecture_and_unsavable_layers(tmp_path):
    model = compiled(nn.Dense(3))
    model.save_weights(tmp_path / "w.h5")
    with pytest.raises(CheckpointError, match="holds no model architecture.*load_weights"):
        nnkit.load_model(tmp_path / "w.h5")

    class Holder(nn.Module):
        def __init__(self, table):
            super().__init__()
            self.table = table

        def forward(self, x):
            return x

    model = compiled(Holder(nnkit.zeros(3)))
    with pytest.raises(
        SerializationError,
        match=r"Holder\(table=...\): a Tensor cannot be "
        "saved",
    ):
        model.save(tmp_path / "h.h5")
    assert not (tmp_path / "h.h5").exists()


def test_compile_settings_come_back(tmp_path):
    nnkit.manual_seed(0)
    model = nnkit.Sequential([nn.Dense(4), nn.Dense(3)])
    model.compile(
        nnkit.optim.RMSprop,
        nn.CrossEntropyLoss(label_smoothing=0.1),
        metrics=["accuracy", "top_k_accuracy"],
        lr=0.003,
    )
    x = np.random.default_rng(0).normal(size=(16, 5)).astype("f4")
    y = np.arange(16) % 3
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / "m.h5")
    loaded = nnkit.load_model(tmp_path / "m.h5")
    assert type(loaded.optimizer) is nnkit.optim.RMSprop
    assert loaded.optimizer.param_groups[0]["lr"] == 0.003
    assert isinstance(loaded._compiled.loss, nn.CrossEntropyLoss)
    assert loaded._compiled.loss.label_smoothing == 0.1
    assert [name for name, _ in loaded._compiled.metrics] == ["accuracy", "top_k_accuracy"]
    assert loaded.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)
    assert nnkit.load_model(tmp_path / "m.h5", compile=False).optimizer is None


def test_a_functional_model_with_shared_and_nested_parts_round_trips(tmp_path):
    a, b = nnkit.Input((4,), name="a"), nnkit.Input((4,), name="b")
    shared = nn.Dense(6, activation="relu", name="shared")
    inner_in = nnkit.Input((12,), name="inner_in")
    inner = nnkit.Model(inner_in, nn.Dense(3, name="inner_dense")(inner_in), name="inner")
    merged = nn.concatenate([shared(a), shared(b)])
    out = inner(merged)
    model = nnkit.Model(
        [a, b], [out, nn.Dense(1, name="side")(shared(a) + shared(b))], name="two_heads"
    )
    model.compile("adam", ["cross_entropy", "mse"], loss_weights=[1.0, 0.5])
    rng = np.random.default_rng(0)
    xa, xb = (rng.normal(size=(5, 4)).astype(np.float32) for _ in range(2))
    model.save(tmp_path / "f.h5")
    loaded = nnkit.load_model(tmp_path / "f.h5")
    assert [layer.name for layer in loaded.layers] == [layer.name for layer in model.layers]
    assert list(loaded.state_dict()) == list(model.state_dict())
    for got, expected in zip(
        loaded([nnkit.tensor(xa), nnkit.tensor(xb)]), model([nnkit.tensor(xa), nnkit.tensor(xb)])
    ):
        np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    assert loaded._compiled.loss_weights == [1.0, 0.5]


def test_callbacks_describe_themselves():
    from nnkit import callbacks

    made = [
        callbacks.EarlyStopping(monitor="loss", patience=4, restore_best_weights=True),
        callbacks.ModelCheckpoint("ck/{epoch}.weights.h5", save_best_only=True),
        callbacks.ReduceLROnPlateau(factor=0.2, patience=2),
        callbacks.CSVLogger("log.csv", append=True),
        callbacks.TerminateOnNaN(),
        callbacks.BackupAndRestore("backup", save_freq=10),
    ]
    for cb in made:
        config = json.loads(json.dumps(serialize(cb)))
        again = deserialize(config)
        assert type(again) is type(cb)
        assert again.get_config() == cb.get_config()


def test_architectures_saved_when_the_models_were_in_nnkit_layers_still_load():
    # Model, Sequential and Functional moved from nnkit.layers to nnkit.models; a file
    # written before names their old modules
    old = {
        "nnkit.models.sequential": "nnkit.layers.container",
        "nnkit.models.functional": "nnkit.layers.functional_model",
    }

    def as_before(value):
        if isinstance(value, dict):
            return {k: old.get(v, v) if k == "module" else as_before(v) for k, v in value.items()}
        return [as_before(v) for v in value] if isinstance(value, list) else value

    inputs = nnkit.Input((3,))
    functional = nnkit.Model(inputs, nn.Dense(2)(inputs))
    for model in (nnkit.Sequential([nn.Dense(4), nn.ReLU()]), functional):
        config = as_before(serialize(model))
        assert config["module"].startswith("nnkit.layers.")
        rebuilt = deserialize(json.loads(json.dumps(config)))
        assert type(rebuilt) is type(model)
        assert [type(m) for m in rebuilt.modules()] == [type(m) for m in model.modules()]
    with pytest.raises(SerializationError, match="Could not locate class 'Dense'"):
        deserialize({"module": "nnkit.layers.container", "class_name": "Dense", "config": {}})


def test_compile_by_name_makes_the_optimizer_at_once_and_saves_it_unbuilt(tmp_path):
    """As Keras: ``compile("sgd")`` creates the optimizer (built by the first fit); a model
    saved before any fit keeps its learning rate and loads with an unbuilt optimizer."""
    x, y = nnkit.randn(16, 3), nnkit.randn(16, 2)
    model = nnkit.Sequential(nn.Dense(4), nn.Dense(2))
    model.compile("sgd", loss="mse", lr=0.25)
    assert type(model.optimizer).__name__ == "SGD" and not model.optimizer.built
    model(x)
    model.save(tmp_path / "m.h5")
    loaded = nnkit.load_model(tmp_path / "m.h5")
    assert not loaded.optimizer.built
    assert float(loaded.optimizer.learning_rate) == 0.25
    loaded.fit(x, y, epochs=1, verbose=0)
    assert loaded.optimizer.built and int(loaded.optimizer.iterations) == 1


def test_keras_file_arguments_overwrite_and_skip_mismatch(tmp_path):
    """``save``/``save_weights(overwrite=False)`` refuse an existing file (nnkit raises
    where Keras asks on the terminal); ``load_weights(skip_mismatch=True)`` leaves the
    weights whose saved shapes differ as they are, with a warning naming them."""
    source = nnkit.Sequential(nn.Dense(4), nn.Dense(3))
    source.build((None, 2))
    source.compile("sgd", "mse")
    path = tmp_path / "a.weights.h5"
    source.save_weights(path)
    for save in (source.save_weights, source.save):
        with pytest.raises(FileExistsError, match="overwrite=False"):
            save(path, overwrite=False)
    source.save_weights(path, overwrite=True)
    source.save(tmp_path / "new.h5", overwrite=False)  # a new file is fine
    target = nnkit.Sequential(nn.Dense(4), nn.Dense(5))  # another head
    target.build((None, 2))
    head = target.layers[1].weight.detach().numpy().copy()
    with pytest.raises(RuntimeError, match="size mismatch for 1.weight"):
        target.load_weights(path)
    with pytest.warns(UserWarning, match=r"1\.weight \(3, 4\) vs \(5, 4\), 1\.bias"):
        keys = target.load_weights(path, skip_mismatch=True)
    assert keys.missing_keys == [] and keys.unexpected_keys == []
    assert np.array_equal(target.layers[1].weight.detach().numpy(), head)
    for ours, theirs in zip(target.layers[0].get_weights(), source.layers[0].get_weights()):
        assert np.array_equal(ours, theirs)


def test_to_json_and_model_from_json_rebuild_the_architecture():
    """Keras's ``model.to_json()`` / ``model_from_json``: the same architecture (layer
    configs, frozen layers, functional graphs) with fresh weights; a bad string names
    the function."""
    model = nnkit.Sequential(nn.Dense(4, activation="relu"), nn.Dense(2, trainable=False))
    model.build((None, 3))
    twin = nnkit.models.model_from_json(model.to_json())
    assert [layer.get_config() for layer in twin.layers] == [
        layer.get_config() for layer in model.layers
    ]
    assert [layer.trainable for layer in twin.layers] == [True, False]
    assert not all(np.array_equal(a, b) for a, b in zip(twin.get_weights(), model.get_weights()))
    twin.set_weights(model.get_weights())
    x = nnkit.randn(5, 3)
    assert np.array_equal(twin(x).detach().numpy(), model(x).detach().numpy())
    inputs = nnkit.Input((3,))
    functional = nnkit.Model(inputs, nn.Dense(2)(nn.Dense(4)(inputs)))
    rebuilt = nnkit.saving.model_from_json(functional.to_json(indent=2))
    assert type(rebuilt).__name__ == "Functional" and rebuilt.count_params() == 26
    with pytest.raises(SerializationError, match="model_from_json: not a JSON string"):
        nnkit.saving.model_from_json("{not json")
