"""Model.compile / fit / evaluate / predict: results, inputs, history and overrides."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import nnkit
from nnkit.callbacks import Callback, History
from nnkit.data import DataLoader, TensorDataset
from nnkit.layers import Dense, Linear

from .conftest import mlp, weights


def test_fit_digits_reaches_high_validation_accuracy(digits):
    x_train, y_train, x_test, y_test = digits
    model = mlp(64, lr=3e-3)
    history = model.fit(
        x_train, y_train, epochs=6, validation_data=(x_test, y_test), verbose=0, seed=0
    )
    assert history.history["val_accuracy"][-1] >= 0.95
    assert history.history["loss"][-1] < history.history["loss"][0]
    result = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
    assert result["accuracy"] == pytest.approx(history.history["val_accuracy"][-1])


def test_history_keys_lengths_and_params(digits):
    x, y = digits.x_train[:300], digits.y_train[:300]
    model = mlp()
    history = model.fit(x, y, batch_size=50, epochs=3, validation_split=0.2, verbose=0)
    assert isinstance(history, History) and model.history is history
    assert list(history.history) == ["loss", "accuracy", "val_loss", "val_accuracy"]
    assert all(len(v) == 3 for v in history.history.values())
    assert all(isinstance(v, float) for v in history.history["loss"])
    assert history.epoch == [0, 1, 2]
    assert history.params == {"verbose": 0, "epochs": 3, "steps": 5}  # 240 / 50 -> 5


def test_initial_epoch_and_steps_per_epoch(digits):
    model = mlp()
    seen = []

    class Count(Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    history = model.fit(
        digits.x_train,
        digits.y_train,
        epochs=5,
        initial_epoch=2,
        steps_per_epoch=4,
        callbacks=[Count()],
        verbose=0,
    )
    assert history.epoch == [2, 3, 4]
    assert seen == [0, 1, 2, 3] * 3


def test_steps_per_epoch_continues_through_the_loader():
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    batches = []

    class Record(nnkit.Sequential):
        def train_step(self, batch):
            batches.append(batch[0].numpy()[:, 0].tolist())
            return {"loss": 0.0}

    model = Record(Linear(1, 1))
    model.compile("sgd", "mse")
    model.fit(x, x, batch_size=4, epochs=2, steps_per_epoch=2, shuffle=False, verbose=0)
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9], [0, 1, 2, 3]]


@pytest.mark.parametrize("kind", ["tensors", "dataset", "dataloader"])
def test_x_as_tensors_dataset_or_dataloader_matches_arrays(digits, kind):
    x, y = digits.x_train[:256], digits.y_train[:256]
    reference = mlp()
    reference.fit(x, y, batch_size=32, epochs=2, seed=3, verbose=0)
    model = mlp()
    if kind == "tensors":
        model.fit(nnkit.tensor(x), nnkit.tensor(y), batch_size=32, epochs=2, seed=3, verbose=0)
    elif kind == "dataset":
        model.fit(TensorDataset(x, y), batch_size=32, epochs=2, seed=3, verbose=0)
    else:
        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, seed=3)
        model.fit(loader, epochs=2, verbose=0)
    expected, got = weights(reference), weights(model)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])


def test_validation_split_takes_the_last_samples_before_shuffling():
    x = np.arange(20, dtype=np.float32).reshape(20, 1)
    train_seen, val_seen = [], []

    class Record(nnkit.Sequential):
        def train_step(self, batch):
            train_seen.extend(batch[1].numpy().ravel().tolist())
            return {"loss": 0.0}

        def test_step(self, batch):
            val_seen.extend(batch[1].numpy().ravel().tolist())
            return {"loss": 0.0}

    model = Record(Linear(1, 1))
    model.compile("sgd", "mse")
    model.fit(
        x, x.copy(), batch_size=3, epochs=1, validation_split=0.25, shuffle=True, seed=0, verbose=0
    )
    assert val_seen == [15.0, 16.0, 17.0, 18.0, 19.0]
    assert sorted(train_seen) == list(map(float, range(15)))
    assert train_seen != sorted(train_seen)  # shuffled


def test_validation_data_as_dataloader(digits):
    model = mlp()
    val = DataLoader(TensorDataset(digits.x_test, digits.y_test), batch_size=64)
    history = model.fit(digits.x_train, digits.y_train, epochs=1, validation_data=val, verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(
        model.evaluate(digits.x_test, digits.y_test, verbose=0)[0]
    )  # Keras: [loss, metrics]


def test_evaluate_weights_batches_by_size():
    x = np.array([[0.0], [0.0], [0.0]], np.float32)
    y = np.array([1.0, 1.0, 4.0], np.float32)
    model = nnkit.Sequential(Linear(1, 1))
    nnkit.nn.init.zeros_(model[0].weight)
    nnkit.nn.init.zeros_(model[0].bias)
    model.compile("sgd", "mse", metrics=["mae"])
    logs = model.evaluate(x, y, batch_size=2, verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx((1 + 1 + 16) / 3)
    assert logs["mae"] == pytest.approx((1 + 1 + 4) / 3)
    assert model.evaluate(x, y, batch_size=2, verbose=0) == pytest.approx([18 / 3, 2.0])


def test_predict_equals_forward_in_eval_mode(digits):
    model = mlp(dropout=0.5)
    model.fit(digits.x_train[:128], digits.y_train[:128], epochs=1, verbose=0)
    out = model.predict(digits.x_test, batch_size=50)
    assert isinstance(out, np.ndarray) and out.shape == (len(digits.x_test), 10)
    model.eval()
    with nnkit.no_grad():
        expected = model(nnkit.tensor(digits.x_test)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert model.predict(TensorDataset(digits.x_test, digits.y_test)).shape == out.shape


def test_modes_train_during_fit_eval_for_validation_and_restored_after():
    modes = []

    class Probe(nnkit.Sequential):
        def forward(self, x):
            modes.append(("grad" if nnkit.is_grad_enabled() else "nograd", self.training))
            return super().forward(x)

    x = np.ones((4, 2), np.float32)
    model = Probe(Linear(2, 1))
    model.compile("sgd", "mse")
    model.fit(x, x[:, :1], batch_size=4, epochs=1, validation_data=(x, x[:, :1]), verbose=0)
    assert modes == [("grad", True), ("nograd", False)]
    assert model.training
    model.predict(x)
    assert modes[-1] == ("nograd", False) and model.training


def test_lazy_model_builds_at_first_batch_and_then_builds_the_optimizer(digits):
    model = mlp()
    # as Keras: compile("adam") makes the optimizer; its variables wait for the model
    assert isinstance(model.optimizer, nnkit.optimizers.Adam) and not model.optimizer.built
    model.fit(digits.x_train[:64], digits.y_train[:64], epochs=1, verbose=0)
    assert isinstance(model.optimizer, nnkit.optimizers.Adam)  # Keras's, by name
    params = set(model.parameters())
    assert {p for g in model.optimizer.param_groups for p in g["params"]} == params


def test_optimizer_instance_callable_and_lr(regression):
    x, y = regression
    model = nnkit.Sequential(Linear(4, 1))
    sgd = nnkit.optim.SGD(model.parameters(), lr=0.05)
    model.compile(sgd, "mse")
    assert model.optimizer is sgd
    model.compile(functools.partial(nnkit.optim.SGD, momentum=0.9), "mse", lr=0.02)
    model.fit(x, y, epochs=1, verbose=0)
    assert model.optimizer.param_groups[0]["lr"] == 0.02
    assert model.optimizer.param_groups[0]["momentum"] == 0.9
    for name, cls in [
        ("sgd", "SGD"),
        ("adamw", "AdamW"),
        ("rmsprop", "RMSprop"),
        ("adagrad", "Adagrad"),
    ]:
        model.compile(name, "mse", lr=0.01)
        model.fit(x, y, epochs=1, verbose=0)
        assert type(model.optimizer).__name__ == cls
        assert model.optimizer.param_groups[0]["lr"] == 0.01


def test_regression_losses_and_metrics_by_name(regression):
    x, y = regression
    for loss in ["mse", "mae", "huber"]:
        nnkit.manual_seed(0)
        model = nnkit.Sequential(Linear(4, 1))
        model.compile("adam", loss, metrics=["mse", "mae"], lr=0.05)
        history = model.fit(x, y, epochs=8, batch_size=16, verbose=0)  # y is (N,), output (N, 1)
        assert history.history["mse"][-1] < history.history["mse"][0]
        logs = model.evaluate(x, y, verbose=0, return_dict=True)
        pred = model.predict(x, verbose=0)[:, 0]
        assert logs["mae"] == pytest.approx(np.abs(pred - y).mean(), rel=1e-4)


def test_binary_and_probability_losses():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    nnkit.manual_seed(0)
    model = nnkit.Sequential(Linear(3, 1), nnkit.nn.Sigmoid())
    model.compile("adam", "bce", metrics=["binary_accuracy"], lr=0.1)
    history = model.fit(x, y, epochs=10, batch_size=16, verbose=0)
    assert history.history["binary_accuracy"][-1] > 0.9
    probs = model.predict(x)[:, 0]
    assert model.evaluate(x, y, verbose=0, return_dict=True)["binary_accuracy"] == pytest.approx(
        np.mean((probs > 0.5) == (y == 1))
    )
    model = nnkit.Sequential(Linear(3, 1))
    model.compile("adam", "bce_with_logits", lr=0.1)
    history = model.fit(x, y, epochs=5, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    one_hot = np.eye(2, dtype=np.float32)[y]
    model = nnkit.Sequential(Linear(3, 2))
    model.compile("adam", "categorical_crossentropy", metrics=["accuracy", "top_k_accuracy"])
    logs = model.fit(x, one_hot, epochs=1, verbose=0).history
    assert logs["top_k_accuracy"] == [1.0]  # k=5 > 2 classes
    model = nnkit.Sequential(Linear(3, 2), nnkit.nn.LogSoftmax(dim=1))
    model.compile("sgd", "nll", metrics=["acc"])
    assert "acc" in model.fit(x, y, epochs=1, verbose=0).history


def test_metric_functions_against_numpy():
    from nnkit.training import metrics

    rng = np.random.default_rng(0)
    scores = rng.standard_normal((50, 6)).astype(np.float32)
    labels = rng.integers(0, 6, 50)
    pred, true = nnkit.tensor(scores), nnkit.tensor(labels)
    assert metrics.accuracy(pred, true).item() == pytest.approx(np.mean(scores.argmax(1) == labels))
    rank = (scores > scores[np.arange(50), labels][:, None]).sum(1)
    assert metrics.top_k_accuracy(pred, true, k=3).item() == pytest.approx(np.mean(rank < 3))
    one_hot = nnkit.tensor(np.eye(6, dtype=np.float32)[labels])
    assert metrics.accuracy(pred, one_hot).item() == metrics.accuracy(pred, true).item()


def test_custom_metric_callable_and_multi_output_losses(regression):
    x, y = regression

    class TwoHeads(nnkit.Model):
        def __init__(self):
            super().__init__()
            self.a, self.b = Linear(4, 1), Linear(4, 1)

        def forward(self, x):
            return self.a(x), self.b(x)

    def max_error(y_pred, y_true):
        return (y_pred[:, 0] - y_true).abs().max()

    nnkit.manual_seed(0)
    model = TwoHeads()
    model.compile("sgd", ["mse", "mae"], metrics=[max_error], loss_weights=[1.0, 0.5])
    batch = (nnkit.tensor(x), (nnkit.tensor(y), nnkit.tensor(y)))
    out = model(batch[0])
    expected = (
        nnkit.nn.functional.mse_loss(out[0][:, 0], batch[1][0]).item()
        + 0.5 * nnkit.nn.functional.l1_loss(out[1][:, 0], batch[1][1]).item()
    )
    assert model.compute_loss(batch[0], batch[1], out).item() == pytest.approx(expected, rel=1e-5)
    loader = DataLoader(
        TensorDataset(x, y),
        batch_size=32,
        collate_fn=lambda s: (np.stack([a for a, _ in s]), (np.array([b for _, b in s]),) * 2),
    )
    history = model.fit(loader, epochs=2, verbose=0)
    assert set(history.history) == {"loss", "max_error"}
    preds = model.predict(x)
    assert isinstance(preds, tuple) and preds[0].shape == preds[1].shape == (96, 1)


def test_train_step_override_controls_the_logs(digits):
    calls = []

    class Custom(nnkit.Sequential):
        def train_step(self, batch):
            calls.append(len(batch[0]))
            logs = super().train_step(batch)
            return {**logs, "double": 2 * logs["loss"], "size": float(len(batch[0]))}

    nnkit.manual_seed(0)
    model = Custom([Dense(16), Dense(10)])
    model.compile("adam", "cross_entropy")
    history = model.fit(
        digits.x_train[:100], digits.y_train[:100], batch_size=32, epochs=1, verbose=0
    )
    assert calls == [32, 32, 32, 4]
    assert history.history["double"][0] == pytest.approx(2 * history.history["loss"][0])
    assert history.history["size"][0] == pytest.approx((3 * 32 * 32 + 4 * 4) / 100)


def test_callback_hook_order_and_stop_training(digits):
    events = []

    class Log(Callback):
        def on_train_begin(self, logs=None):
            events.append("train_begin")

        def on_epoch_begin(self, epoch, logs=None):
            events.append(f"epoch_begin{epoch}")

        def on_train_batch_end(self, batch, logs=None):
            events.append(f"batch{batch}")
            if batch == 1:
                self.model.stop_training = True

        def on_test_begin(self, logs=None):
            events.append("test_begin")

        def on_epoch_end(self, epoch, logs=None):
            events.append(f"epoch_end{epoch}:{sorted(logs)}")

        def on_train_end(self, logs=None):
            events.append("train_end")

    model = mlp()
    model.fit(
        digits.x_train[:200],
        digits.y_train[:200],
        epochs=3,
        verbose=0,
        validation_split=0.5,
        callbacks=[Log()],
    )
    assert events == [
        "train_begin",
        "epoch_begin0",
        "batch0",
        "batch1",
        "test_begin",
        "epoch_end0:['accuracy', 'loss', 'val_accuracy', 'val_loss']",
        "train_end",
    ]


def test_predict_and_evaluate_hooks(digits):
    events = []

    class Log(Callback):
        def on_predict_batch_end(self, batch, logs=None):
            events.append(("predict", batch, tuple(logs["outputs"].shape)))

        def on_test_batch_end(self, batch, logs=None):
            events.append(("test", batch, sorted(logs)))

    model = mlp()
    model.predict(digits.x_test[:40], batch_size=32, callbacks=[Log()])
    model.evaluate(
        digits.x_test[:40], digits.y_test[:40], batch_size=32, verbose=0, callbacks=[Log()]
    )
    assert events == [
        ("predict", 0, (32, 10)),
        ("predict", 1, (8, 10)),
        ("test", 0, ["accuracy", "loss"]),
        ("test", 1, ["accuracy", "loss"]),
    ]


def test_inputs_follow_the_model_device(digits, device):
    model = mlp()
    model(nnkit.tensor(digits.x_test[:2]))  # build on the CPU, then move
    model.to(device)
    history = model.fit(digits.x_train[:64], digits.y_train[:64], epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    out = model.predict(digits.x_test[:5])
    assert isinstance(out, np.ndarray) and out.shape == (5, 10)
    assert next(model.parameters()).device == nnkit.device(device)


def test_lazy_model_moved_before_build_trains_on_that_dtype():
    import numpy as np

    import nnkit
    from nnkit import nn

    nnkit.manual_seed(0)
    model = nnkit.Sequential(nn.Dense(8, activation="relu"), nn.Dense(2))
    model.to(nnkit.float64)  # nothing built yet: remembered for the first batch
    model.compile(optimizer="sgd", loss="cross_entropy")
    x = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    y = np.arange(16) % 2
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert all(p.dtype == nnkit.float64 for p in model.parameters())
