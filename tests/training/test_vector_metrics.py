"""Stateful metrics with several values (``F1Score(average=None)``, ``Precision`` with a
list of thresholds) in ``fit``/``evaluate`` logs, History, CSVLogger, the progress line,
the callbacks that monitor a log and compiled steps, as Keras 3 handles them (the Keras
comparison itself is in ``test_keras_oracle.py``)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import nnkit
import nnkit.metrics as M
from nnkit import nn
from nnkit.callbacks import (
    BackupAndRestore,
    Callback,
    CSVLogger,
    EarlyStopping,
    ModelCheckpoint,
    ReduceLROnPlateau,
)

RNG = np.random.default_rng(0)
X = RNG.standard_normal((100, 6)).astype(np.float32)
Y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 100)]


def _metrics():
    return [
        M.F1Score(average=None, name="f1"),
        M.Precision(thresholds=[0.3, 0.6], name="prec"),
        M.Recall(name="rec"),
    ]


def _fit(jit_compile=False, epochs=3, callbacks=(), verbose=0):
    nnkit.manual_seed(0)
    model = nnkit.Sequential([nn.Dense(8, activation="relu"), nn.Dense(3, activation="sigmoid")])
    model.compile("adam", "mse", metrics=_metrics(), jit_compile=jit_compile)
    history = model.fit(
        X, Y, batch_size=32, epochs=epochs, validation_split=0.2, verbose=verbose,
        callbacks=list(callbacks),
    )  # fmt: skip
    return model, history


def _expected(model, x, y):
    """The metrics over all of ``x`` computed apart, from the model's predictions."""
    pred = nnkit.tensor(model.predict(x, verbose=0))
    values = {}
    for metric in _metrics():
        metric.update_state(nnkit.tensor(y), pred)
        values[metric.name] = metric.result().numpy()
    return values


def test_fit_logs_and_history_keep_arrays():
    model, history = _fit()
    h = history.history
    assert sorted(h) == ["f1", "loss", "prec", "rec", "val_f1", "val_loss", "val_prec", "val_rec"]
    for name, shape in (("f1", (3,)), ("prec", (2,)), ("val_f1", (3,)), ("val_prec", (2,))):
        assert all(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in h[name])
        assert all(v.shape == shape for v in h[name]) and len(h[name]) == 3
    assert all(type(v) is float for v in h["loss"] + h["rec"])
    # the last epoch's validation values are those of the held-out samples
    expected = _expected(model, X[80:], Y[80:])
    np.testing.assert_array_equal(h["val_f1"][-1], expected["f1"])
    np.testing.assert_array_equal(h["val_prec"][-1], expected["prec"])


def test_evaluate_returns_arrays_as_keras():
    model, _ = _fit()
    logs = model.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
    expected = _expected(model, X, Y)
    assert isinstance(logs["f1"], np.ndarray) and logs["f1"].shape == (3,)
    np.testing.assert_array_equal(logs["f1"], expected["f1"])
    np.testing.assert_array_equal(logs["prec"], expected["prec"])
    values = model.evaluate(X, Y, batch_size=16, verbose=0)
    assert type(values) is list and type(values[0]) is float
    np.testing.assert_array_equal(values[1], logs["f1"])


def test_batch_logs_hold_the_running_arrays():
    seen = []

    class Watch(Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(logs["f1"])

    _fit(epochs=1, callbacks=[Watch()])
    assert len(seen) == 3 and all(v.shape == (3,) for v in seen)


def test_csv_logger_writes_them_as_keras(tmp_path):
    path = tmp_path / "log.csv"
    _, history = _fit(callbacks=[CSVLogger(path)])
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3
    for row, f1 in zip(rows, history.history["f1"]):
        # Keras's cell: the values joined in brackets, quoted (csv doubles the quotes)
        assert row["f1"] == '"[' + ", ".join(str(v) for v in f1) + ']"'
        assert float(row["loss"]) in history.history["loss"]
    assert '"""[' in path.read_text()


def test_the_progress_line_shows_the_mean(capsys):
    _, history = _fit(epochs=1, verbose=2)
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert f"- f1: {float(np.mean(history.history['f1'][0])):.4f} -" in line
    assert "[" not in line


@pytest.mark.parametrize(
    "callback",
    [
        lambda: EarlyStopping(monitor="val_f1"),
        lambda: ReduceLROnPlateau(monitor="prec"),
        lambda: ModelCheckpoint("m.weights.h5", monitor="val_f1", save_best_only=True),
    ],
    ids=["EarlyStopping", "ReduceLROnPlateau", "ModelCheckpoint"],
)
def test_monitoring_a_vector_metric_is_a_clear_error(callback, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cb = callback()
    owner = type(cb).__name__
    with pytest.raises(ValueError, match=rf"{owner} monitors '\w+', a metric with \d values"):
        _fit(epochs=1, callbacks=[cb])


def test_a_monitored_scalar_beside_them_works():
    _, history = _fit(epochs=4, callbacks=[EarlyStopping(monitor="val_rec", patience=1)])
    assert 1 <= len(history.history["loss"]) <= 4


def test_compiled_steps_replay_them_bitwise():
    eager_model, eager = _fit(False)
    model, compiled = _fit(True)  # a warning (fallback) would fail the test
    assert eager.history.keys() == compiled.history.keys()
    for name, values in eager.history.items():
        assert all(np.array_equal(a, b) for a, b in zip(values, compiled.history[name]))
    steps = model.__dict__["_jit_steps"]
    assert steps["train_step"].num_replays > 0 and steps["test_step"].num_replays > 0
    a = eager_model.evaluate(X, Y, verbose=0, return_dict=True)
    b = model.evaluate(X, Y, verbose=0, return_dict=True)
    assert all(np.array_equal(a[k], b[k]) for k in a)


def test_history_of_a_resumed_fit_keeps_the_arrays(tmp_path):
    class Crash(Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise RuntimeError("simulated crash")

    _, ref = _fit(epochs=4)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _fit(epochs=4, callbacks=[BackupAndRestore(tmp_path), Crash()])
    _, resumed = _fit(epochs=4, callbacks=[BackupAndRestore(tmp_path)])
    for name, values in ref.history.items():
        got = resumed.history[name]
        assert len(got) == 4 and all(type(a) is type(b) for a, b in zip(values, got))
        assert all(np.array_equal(a, b) for a, b in zip(values, got)), name
        if isinstance(values[0], np.ndarray):
            assert all(b.dtype == a.dtype for a, b in zip(values, got))


def test_mean_tracker_averages_vectors_elementwise_and_all_reduces_them():
    from nnkit.training.metrics import MeanTracker

    class TwoEqualRanks:  # an all-reduce (sum) over two ranks that tracked the same
        def allreduce_(self, t):
            return t.mul_(2)

    tracker = MeanTracker()
    tracker.update({"loss": 1.0, "v": nnkit.tensor([1.0, 2.0])}, 3)
    tracker.update({"loss": 3.0, "v": np.array([5.0, 6.0])}, 1)
    assert tracker.result()["loss"] == 1.5
    np.testing.assert_array_equal(tracker.result()["v"], [2.0, 3.0])
    restored = MeanTracker()
    restored.load_state_dict(tracker.state_dict())
    restored.allreduce(TwoEqualRanks())
    assert restored.result()["loss"] == 1.5 and restored.state_dict()["counts"]["v"] == 8.0
    np.testing.assert_array_equal(restored.result()["v"], [2.0, 3.0])
