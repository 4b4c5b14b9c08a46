"""``Model.compile(jit_compile=...)``: fit/evaluate/predict through nnkit.compile give
the eager results bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.metrics as M
from nnkit import nn
from nnkit.callbacks import BackupAndRestore, Callback


def _fit(jit_compile, metrics=("accuracy",)):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((100, 6)).astype(np.float32)
    y = rng.integers(0, 3, 100)
    nnkit.manual_seed(0)
    model = nnkit.Sequential([nn.Dense(16, activation="relu"), nn.Dropout(0.2), nn.Dense(3)])
    model.compile("adam", "cross_entropy", metrics=list(metrics), jit_compile=jit_compile)
    history = model.fit(x, y, batch_size=32, epochs=4, verbose=0, validation_split=0.2)
    weights = [p.detach().numpy().copy() for p in model.parameters()]
    logs = model.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)
    pred = model.predict(x, batch_size=32, verbose=0)
    return model, history.history, weights, logs, pred


@pytest.mark.parametrize("metrics", [(), ("accuracy",)])
def test_fit_evaluate_predict_equal_eager(metrics):
    _, h1, w1, l1, p1 = _fit(False, metrics)
    model, h2, w2, l2, p2 = _fit(True, metrics)
    assert h1 == h2 and l1 == l2
    assert all(np.array_equal(a, b) for a, b in zip(w1, w2))
    assert np.array_equal(p1, p2)
    steps = model.__dict__["_jit_steps"]
    # 80 training samples: batches of 32, 32, 16 per epoch
    assert steps["train_step"].num_programs == 3 and steps["train_step"].num_replays > 0
    assert steps["predict_step"].num_replays > 0


def test_auto_runs_eagerly_and_bad_values_are_refused():
    model, *_ = _fit("auto")
    assert "_jit_steps" not in model.__dict__
    with pytest.raises(ValueError, match="jit_compile must be True, False or 'auto'"):
        model.compile("adam", "mse", jit_compile="xla")


def test_run_eagerly_and_keras_compile_arguments():
    """Keras's ``compile(..., run_eagerly, steps_per_execution, jit_compile,
    auto_scale_loss)`` in Keras's order: ``run_eagerly=True`` runs every step eagerly
    (with ``jit_compile=True`` too, which it disables with Keras's warning), settable
    later; ``steps_per_execution`` only 1 (as Keras's PyTorch backend)."""
    x = np.random.default_rng(0).standard_normal((80, 6)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 3, 80)
    model = nnkit.Sequential([nn.Dense(8, activation="relu"), nn.Dense(3)])
    assert model.run_eagerly is False
    with pytest.warns(UserWarning, match="`jit_compile` cannot also be True"):
        model.compile("sgd", "cross_entropy", None, None, None, True, 1, True, True)
    assert model.run_eagerly is True
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    model.evaluate(x, y, verbose=0)
    model.predict(x, verbose=0)
    assert "_jit_steps" not in model.__dict__
    model.compile("sgd", "cross_entropy", jit_compile=True)
    assert model.run_eagerly is False
    model.run_eagerly = True  # set after compile, as in Keras
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert "_jit_steps" not in model.__dict__
    model.run_eagerly = False
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert model.__dict__["_jit_steps"]["train_step"].num_replays > 0
    for bad in (2, 0, True):
        with pytest.raises(ValueError, match="steps_per_execution must be 1"):
            model.compile("sgd", "mse", steps_per_execution=bad)


# Stateful metrics write their state in place, so a step that updates them replays (the
# guard covers the identity of the state tensors). pytest turns the fallback warning into
# an error: each of these sets must replay, bitwise equal to the eager run.
CLASSIFY = {
    "names": lambda: ["sparse_categorical_accuracy", "accuracy"],
    "sparse": lambda: [
        M.SparseCategoricalAccuracy(),
        M.SparseCategoricalCrossentropy(from_logits=True),
        M.SparseTopKCategoricalAccuracy(k=2),
    ],
}
REGRESS = {  # one-hot targets, mse loss
    "regression": lambda: [
        M.MeanAbsoluteError(),
        M.MeanSquaredError(),
        M.RootMeanSquaredError(),
        "mae",
    ],
    "confusion": lambda: [
        M.AUC(),
        M.Precision(),
        M.Recall(class_id=1),
        M.CategoricalAccuracy(),
        M.BinaryAccuracy(),
    ],
    "lazy": lambda: [
        M.F1Score(average="macro"),
        M.AUC(multi_label=True, curve="PR", num_thresholds=50),
        M.CategoricalCrossentropy(from_logits=True),
        M.MeanMetricWrapper(lambda t, p: (t - p).abs().amax(-1), name="max_abs"),
    ],
}


def _data(regression):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((100, 6)).astype(np.float32)
    y = rng.integers(0, 3, 100)
    w = rng.uniform(0.5, 2.0, 100).astype(np.float32)
    return x, (np.eye(3, dtype=np.float32)[y] if regression else y), w


def _fit_metrics(jit_compile, metrics, regression, weighted=None, epochs=3):
    x, y, w = _data(regression)
    nnkit.manual_seed(0)
    model = nnkit.Sequential([nn.Dense(16, activation="relu"), nn.Dropout(0.2), nn.Dense(3)])
    model.compile(
        "adam",
        "mse" if regression else "cross_entropy",
        metrics=metrics,
        weighted_metrics=weighted,
        jit_compile=jit_compile,
    )
    kwargs = {"sample_weight": w} if weighted else {}
    history = model.fit(
        x, y, batch_size=32, epochs=epochs, verbose=0, validation_split=0.2, **kwargs
    )
    weights = [p.detach().numpy().copy() for p in model.parameters()]
    logs = [model.evaluate(x, y, batch_size=32, verbose=0, return_dict=True) for _ in range(2)]
    assert logs[0] == logs[1]  # evaluate resets the metrics first
    # the metric names carry a counter (auc, auc_1, ...): compare the values in order
    return model, list(history.history.values()), weights, [list(v.values()) for v in logs]


def _assert_replays_equal(make, regression, weighted=None):
    _, h1, w1, l1 = _fit_metrics(False, make(), regression, None if weighted is None else make())
    model, h2, w2, l2 = _fit_metrics(True, make(), regression, None if weighted is None else make())
    assert h1 == h2 and l1 == l2
    assert all(np.array_equal(a, b) for a, b in zip(w1, w2))
    steps = model.__dict__["_jit_steps"]
    assert steps["train_step"].num_replays >= 4 and steps["test_step"].num_replays >= 2
    return h2


@pytest.mark.parametrize("name", sorted(CLASSIFY))
def test_stateful_classification_metrics_replay_bitwise(name):
    history = _assert_replays_equal(CLASSIFY[name], regression=False)
    assert len(history) == 2 + 2 * len(CLASSIFY[name]())  # loss, metrics, val_ of each
    assert all(len(v) == 3 for v in history)


@pytest.mark.parametrize("name", sorted(REGRESS))
def test_stateful_regression_and_confusion_metrics_replay_bitwise(name):
    _assert_replays_equal(REGRESS[name], regression=True)


def test_weighted_metrics_replay_bitwise():
    _assert_replays_equal(lambda: ["accuracy", M.SparseCategoricalCrossentropy()], False, True)


def test_metric_object_in_a_compiled_step_replays_bitwise():
    def run(compiled):
        nnkit.manual_seed(0)
        model = nn.Linear(3, 2)
        opt = nnkit.optim.SGD(model.parameters(), lr=0.1)
        mean, acc = M.Mean(), M.SparseCategoricalAccuracy()

        def step(x, y):
            opt.zero_grad()
            out = model(x)
            loss = nnkit.nn.functional.cross_entropy(out, y)
            loss.backward()
            opt.step()
            mean.update_state(loss.detach())
            acc.update_state(y, out.detach())
            return mean.result(), acc.result()

        fn = nnkit.compile(step) if compiled else step
        values = []
        x = nnkit.tensor(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32))
        y = nnkit.tensor([0, 1, 1, 0, 1, 0, 0, 1])
        for _epoch in range(3):
            mean.reset_state()
            acc.reset_state()
            for _ in range(4):
                values.append([v.item() for v in fn(x, y)])
            values.append([mean.result().item(), acc.result().item()])
        return values, fn

    eager, _ = run(False)
    replayed, fn = run(True)
    assert eager == replayed
    # recorded: grads None (1st call), grads bound (2nd), checked (3rd); then replays
    assert fn.num_replays == 12 - 3


class _ItemMean(M.Mean):
    """A Mean whose update reads a value into Python: it cannot replay."""

    def update_state(self, y_true, y_pred, sample_weight=None):
        if float((y_pred.amax() - y_pred.amin()).item()) >= 0:
            super().update_state((y_pred.argmax(-1) == y_true).float())


def test_metric_that_reads_data_falls_back_with_the_reason():
    _, h1, w1, _ = _fit_metrics(False, [_ItemMean(name="hit")], regression=False)
    with pytest.warns(RuntimeWarning, match=r"train_step runs eagerly: `\.item\(\)` reads"):
        with pytest.warns(RuntimeWarning, match=r"test_step runs eagerly: `\.item\(\)` reads"):
            model, h2, w2, _ = _fit_metrics(True, [_ItemMean(name="hit")], regression=False)
    assert h1 == h2 and all(np.array_equal(a, b) for a, b in zip(w1, w2))
    assert model.__dict__["_jit_steps"]["train_step"].num_replays == 0


class _Crash(Callback):
    def __init__(self, at):
        super().__init__()
        self.at, self.seen = at, 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.at:
            raise RuntimeError("simulated crash")


@pytest.mark.parametrize("crash_at", [2, 4])  # mid-epoch (metric state saved), epoch end
def test_backup_and_restore_mid_epoch_resumes_bitwise(tmp_path, crash_at):
    x, y, _ = _data(False)

    def attempt(jit_compile, backup, crash=None):
        nnkit.manual_seed(0)
        model = nnkit.Sequential([nn.Dense(16, activation="relu"), nn.Dropout(0.2), nn.Dense(3)])
        model.compile(
            "adam",
            "cross_entropy",
            metrics=["sparse_categorical_accuracy"],
            jit_compile=jit_compile,
        )
        cbs = [BackupAndRestore(backup, save_freq=1)] + ([_Crash(crash)] if crash else [])
        history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=cbs)
        return model, history.history

    ref, ref_history = attempt(False, tmp_path / "eager")
    with pytest.raises(RuntimeError, match="simulated crash"):
        attempt(True, tmp_path / "jit", crash_at)
    model, history = attempt(True, tmp_path / "jit")
    epochs_run = len(history["loss"])
    assert history == {k: v[-epochs_run:] for k, v in ref_history.items()}
    assert all(
        np.array_equal(a.detach().numpy(), b.detach().numpy())
        for a, b in zip(ref.parameters(), model.parameters())
    )
    assert model.__dict__["_jit_steps"]["train_step"].num_replays > 0
