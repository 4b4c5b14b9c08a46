"""The same script on Keras 3 (the model API's oracle, torch backend) and on nnkit gives
the same numbers. Skipped where Keras is not installed (CI installs it)."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
if keras.backend.backend() != "torch":  # pragma: no cover - another backend preselected
    pytest.skip("these comparisons use Keras's torch backend", allow_module_level=True)

import nnkit  # noqa: E402
from nnkit import nn  # noqa: E402

# Keras's own code, not nnkit's, warns about NumPy 2's copy keyword
pytestmark = pytest.mark.filterwarnings(
    "ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning"
)


def numpy(value):
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)


def copy_dense(keras_layer, nnkit_layer):
    kernel, bias = (numpy(w) for w in keras_layer.get_weights())
    with nnkit.no_grad():
        nnkit_layer.weight.copy_(nnkit.tensor(kernel.T))
        nnkit_layer.bias.copy_(nnkit.tensor(bias))


RNG = np.random.default_rng(0)
BINARY = [
    (
        RNG.integers(0, 2, (12, 1)).astype("f4"),
        RNG.uniform(size=(12, 1)).astype("f4"),
        RNG.uniform(0.1, 2, 12).astype("f4"),
    )
    for _ in range(2)
]
CLASSES = [
    (
        RNG.integers(0, 4, 12),
        RNG.dirichlet(np.ones(4), 12).astype("f4"),
        RNG.uniform(0.1, 2, 12).astype("f4"),
    )
    for _ in range(2)
]


@pytest.mark.parametrize(
    "name, kwargs, data",
    [
        ("AUC", {}, BINARY),
        ("AUC", {"curve": "PR"}, BINARY),
        ("Precision", {}, BINARY),
        ("Recall", {"thresholds": 0.3}, BINARY),
        ("BinaryAccuracy", {}, BINARY),
        ("BinaryCrossentropy", {}, BINARY),
        ("MeanSquaredError", {}, BINARY),
        ("MeanAbsoluteError", {}, BINARY),
        ("RootMeanSquaredError", {}, BINARY),
        ("SparseCategoricalAccuracy", {}, CLASSES),
        ("SparseCategoricalCrossentropy", {}, CLASSES),
        ("SparseTopKCategoricalAccuracy", {"k": 2}, CLASSES),
        ("CategoricalAccuracy", {}, "one_hot"),
        ("F1Score", {"average": "macro"}, "one_hot"),
        ("CategoricalCrossentropy", {}, "one_hot"),
    ],
)
def test_metrics_after_two_weighted_updates(name, kwargs, data):
    if data == "one_hot":
        data = [(np.eye(4, dtype="f4")[y], p, w) for y, p, w in CLASSES]
    ours, theirs = getattr(nnkit.metrics, name)(**kwargs), getattr(keras.metrics, name)(**kwargs)
    for y_true, y_pred, weight in data:
        if name == "F1Score":
            weight = None  # Keras's F1Score takes sample weights of the batch's rank only
        theirs.update_state(y_true, y_pred, sample_weight=weight)
        ours.update_state(
            nnkit.tensor(y_true),
            nnkit.tensor(y_pred),
            sample_weight=None if weight is None else nnkit.tensor(weight),
        )
    np.testing.assert_allclose(numpy(ours.result()), numpy(theirs.result()), rtol=2e-6, atol=1e-7)


def twin_models(units=3, features=4):
    theirs = keras.Sequential([keras.Input((features,)), keras.layers.Dense(units)])
    ours = nnkit.Sequential([nn.Dense(units)])
    ours.build((None, features))
    copy_dense(theirs.layers[0], ours[0])
    return ours, theirs


@pytest.mark.parametrize("weighting", ["class_weight", "sample_weight"])
def test_the_first_weighted_step(weighting):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(16, 4)).astype("f4"), rng.integers(0, 3, 16)
    kwargs = (
        {"class_weight": {0: 0.5, 2: 3.0}}
        if weighting == "class_weight"
        else {"sample_weight": rng.uniform(0.1, 2.0, 16).astype("f4")}
    )
    ours, theirs = twin_models()
    theirs.compile(
        keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    ours.compile("sgd", "sparse_categorical_crossentropy", lr=0.1)
    expected = theirs.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0, **kwargs)
    got = ours.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0, **kwargs)
    np.testing.assert_allclose(got.history["loss"], expected.history["loss"], rtol=1e-6)
    np.testing.assert_allclose(
        ours[0].weight.detach().numpy().T, numpy(theirs.layers[0].get_weights()[0]), atol=1e-6
    )


def test_validation_freq_history_and_evaluate_return_types():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(20, 4)).astype("f4"), rng.integers(0, 3, 20)
    ours, theirs = twin_models()
    theirs.compile(
        "sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
    )
    ours.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"], lr=0.01)
    kwargs = dict(
        epochs=4,
        batch_size=5,
        validation_data=(x[:6], y[:6]),
        validation_freq=2,
        shuffle=False,
        verbose=0,
    )
    expected, got = theirs.fit(x, y, **kwargs).history, ours.fit(x, y, **kwargs).history
    assert {k: len(v) for k, v in got.items()} == {k: len(v) for k, v in expected.items()}
    np.testing.assert_allclose(got["val_loss"], expected["val_loss"], rtol=1e-5)
    ours_eval, theirs_eval = ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0)
    assert type(ours_eval) is type(theirs_eval) is list
    np.testing.assert_allclose(ours_eval, theirs_eval, rtol=1e-5)


def test_parameter_counts():
    theirs = keras.Sequential(
        [
            keras.Input((20,)),
            keras.layers.Dense(64),
            keras.layers.BatchNormalization(),
            keras.layers.Dense(10),
        ]
    )
    ours = nnkit.Sequential([nn.Dense(64), nn.BatchNorm1d(64), nn.Dense(10)])
    ours.build((None, 20))
    assert ours.count_params() == theirs.count_params() == 2250


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
        ("Adam", {"learning_rate": 0.05, "amsgrad": True}),
        ("AdamW", {"learning_rate": 0.05}),
        ("RMSprop", {"learning_rate": 0.01, "centered": True, "momentum": 0.5}),
        ("Adagrad", {"learning_rate": 0.1}),
        ("Adam", {"learning_rate": 0.05, "gradient_accumulation_steps": 2, "clipnorm": 0.5}),
    ],
)
def test_optimizer_updates(name, kwargs):
    import torch

    rng = np.random.default_rng(3)
    start = rng.normal(size=(3, 2)).astype("f4")
    grads = [rng.normal(size=(3, 2)).astype("f4") for _ in range(6)]
    theirs_var = keras.Variable(start)
    theirs = getattr(keras.optimizers, name)(**kwargs)
    ours_var = nnkit.tensor(start)
    ours = getattr(nnkit.optimizers, name)(**kwargs)
    for g in grads:
        theirs.apply([torch.from_numpy(g)], [theirs_var])
        ours.apply([nnkit.tensor(g)], [ours_var])
    np.testing.assert_allclose(ours_var.numpy(), numpy(theirs_var.value), rtol=1e-5, atol=1e-6)
    assert ours.iterations == int(numpy(theirs.iterations))


def test_a_two_input_model_with_a_shared_layer():
    rng = np.random.default_rng(4)
    xa, xb = (rng.normal(size=(8, 4)).astype("f4") for _ in range(2))
    y = rng.normal(size=(8, 1)).astype("f4")

    def build(lib, layers):
        a, b = lib.Input((4,)), lib.Input((4,))
        shared = layers.Dense(5, activation="tanh")
        merged = layers.concatenate([shared(a), shared(b)])
        return lib.Model([a, b], layers.Dense(1)(merged))

    theirs, ours = build(keras, keras.layers), build(nnkit, nn)
    dense = [layer for layer in ours.layers if isinstance(layer, nn.Dense)]
    for k, o in zip([la for la in theirs.layers if isinstance(la, keras.layers.Dense)], dense):
        copy_dense(k, o)
    assert ours.count_params() == theirs.count_params()
    np.testing.assert_allclose(
        ours.predict([xa, xb], verbose=0), numpy(theirs.predict([xa, xb], verbose=0)), atol=1e-6
    )
    theirs.compile(keras.optimizers.SGD(0.2), "mse")
    ours.compile("sgd", "mse", lr=0.2)
    expected = theirs.fit([xa, xb], y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    got = ours.fit([xa, xb], y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(got.history["loss"], expected.history["loss"], rtol=1e-5)


def _csv_cells(path):
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_metrics_with_several_values_in_logs_history_evaluate_and_csv(tmp_path):
    """F1Score(average=None) and Precision with two thresholds: Keras keeps NumPy arrays
    in the logs, History and evaluate's results, and its CSVLogger writes ``"[a, b]"``."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 4)).astype("f4")
    y = np.eye(3, dtype="f4")[rng.integers(0, 3, 20)]
    ours, theirs = twin_models()

    def metrics(lib):
        return [
            lib.metrics.F1Score(average=None, threshold=0.2, name="f1"),
            lib.metrics.Precision(thresholds=[0.1, 0.6], name="prec"),
        ]

    theirs.compile(keras.optimizers.SGD(0.05), "mse", metrics=metrics(keras))
    ours.compile("sgd", "mse", metrics=metrics(nnkit), lr=0.05)
    kwargs = dict(epochs=2, batch_size=5, validation_data=(x[:6], y[:6]), shuffle=False, verbose=0)
    expected = theirs.fit(
        x, y, callbacks=[keras.callbacks.CSVLogger(str(tmp_path / "k.csv"))], **kwargs
    ).history
    got = ours.fit(x, y, callbacks=[nnkit.callbacks.CSVLogger(tmp_path / "n.csv")], **kwargs)
    got = got.history
    assert got.keys() == expected.keys()
    for name in expected:
        for a, b in zip(got[name], expected[name], strict=True):
            assert type(a) is type(b), name
            assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
    ours_eval = ours.evaluate(x, y, verbose=0, return_dict=True)
    theirs_eval = theirs.evaluate(x, y, verbose=0, return_dict=True)
    assert ours_eval.keys() == theirs_eval.keys()
    for name, value in theirs_eval.items():
        assert type(ours_eval[name]) is type(value)
        np.testing.assert_allclose(ours_eval[name], value, rtol=1e-5, atol=1e-6)
    k_rows, n_rows = _csv_cells(tmp_path / "k.csv"), _csv_cells(tmp_path / "n.csv")
    assert [r.keys() for r in n_rows] == [r.keys() for r in k_rows]
    for n_row, k_row in zip(n_rows, k_rows):
        for key, cell in k_row.items():
            if cell.startswith('"['):  # the same layout, the same numbers
                assert n_row[key].startswith('"[') and n_row[key].endswith(']"')
                ours_values = [float(v) for v in n_row[key][2:-2].split(", ")]
                theirs_values = [float(v) for v in cell[2:-2].split(", ")]
                np.testing.assert_allclose(ours_values, theirs_values, rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_allclose(float(n_row[key]), float(cell), rtol=1e-5)


def test_compile_fit_evaluate_predict_take_keras_arguments_in_keras_order():
    """Keras's positional order of ``compile``/``fit``/``evaluate``/``predict`` (and the
    other training methods') arguments
    is nnkit's (nnkit's extras, such as compile's ``lr``, come after them, keyword-only),
    with Keras's defaults."""
    import inspect

    names = ("compile", "fit", "evaluate", "predict", "compute_loss", "compute_metrics")
    for name in names + ("train_on_batch", "test_on_batch", "predict_on_batch"):
        theirs = inspect.signature(getattr(keras.Model, name)).parameters
        ours = inspect.signature(getattr(nnkit.Model, name)).parameters
        keras_args = [p for p in theirs.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
        assert list(ours)[: len(keras_args)] == [p.name for p in keras_args], name
        for p in keras_args:
            assert ours[p.name].default == p.default, (name, p.name)


def _twin_mlps(seed=5):
    """A Keras MLP 4-6-3 and the nnkit one with the same weights."""
    keras.utils.set_random_seed(seed)
    theirs = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)]
    )
    ours = nnkit.Sequential(nn.Dense(6, activation="relu"), nn.Dense(3))
    ours.build((None, 4))
    for k_layer, n_layer in zip(theirs.layers, ours.layers):
        copy_dense(k_layer, n_layer)
    return theirs, ours


def _assert_same_weights(theirs, ours):
    for k_layer, n_layer in zip(theirs.layers, ours.layers):
        kernel, bias = (numpy(w) for w in k_layer.get_weights())
        weight, b = n_layer.get_weights()  # nnkit's (PyTorch's) layout: (units, input_dim)
        np.testing.assert_allclose(weight, kernel.T, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, bias, rtol=1e-5, atol=1e-6)


def test_on_batch_methods_match_keras():
    """train_on_batch (with sample and class weights), test_on_batch and
    predict_on_batch: the same values, batch after batch."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(10, 4)).astype("f4")
    y = rng.integers(0, 3, 10)
    sw = rng.uniform(0.5, 2.0, 10).astype("f4")
    theirs, ours = _twin_mlps()
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    theirs.compile(keras.optimizers.SGD(0.1), loss, metrics=["accuracy"])
    ours.compile(nnkit.optimizers.SGD(0.1), "cross_entropy", metrics=["accuracy"])
    calls = [{}, {"sample_weight": sw}, {"class_weight": {0: 1.0, 1: 3.0, 2: 0.5}}, {}]
    for kwargs in calls:
        np.testing.assert_allclose(
            ours.train_on_batch(x, y, **kwargs), theirs.train_on_batch(x, y, **kwargs),
            rtol=1e-5,
        )  # fmt: skip
    np.testing.assert_allclose(ours.test_on_batch(x, y), theirs.test_on_batch(x, y), rtol=1e-5)
    np.testing.assert_allclose(
        ours.predict_on_batch(x), numpy(theirs.predict_on_batch(x)), rtol=1e-5, atol=1e-6
    )
    _assert_same_weights(theirs, ours)


def test_a_frozen_layer_trains_as_in_keras():
    """``layers[0].trainable = False`` before compile: the weight lists and a fit agree
    with Keras (the frozen layer unchanged, the other trained)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(32, 4)).astype("f4")
    y = rng.integers(0, 3, 32)
    theirs, ours = _twin_mlps()
    theirs.layers[0].trainable = False
    ours.layers[0].trainable = False
    assert len(ours.trainable_weights) == len(theirs.trainable_weights) == 2
    assert len(ours.non_trainable_weights) == len(theirs.non_trainable_weights) == 2
    assert [w.shape for w in ours.layers[1].get_weights()] == [(3, 6), (3,)]
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    theirs.compile(keras.optimizers.SGD(0.1, momentum=0.9), loss)
    ours.compile(nnkit.optimizers.SGD(0.1, momentum=0.9), "cross_entropy")
    kwargs = {"epochs": 3, "batch_size": 8, "shuffle": False, "verbose": 0}
    h_theirs = theirs.fit(x, y, **kwargs).history["loss"]
    h_ours = ours.fit(x, y, **kwargs).history["loss"]
    np.testing.assert_allclose(h_ours, h_theirs, rtol=1e-5)
    _assert_same_weights(theirs, ours)
