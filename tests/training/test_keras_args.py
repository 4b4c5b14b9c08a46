"""Keras 3's weighting and scheduling arguments of fit/evaluate/predict, and its defaults.

Keras is not a test dependency: the expected numbers come from Keras's documented
formulas (a weighted loss is ``sum(w_i * loss_i) / batch_size``), and the weighted
training step is checked against PyTorch doing the same arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.data import DataLoader, TensorDataset
from nnkit.nn import Linear


def problem(n=24, features=4, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = rng.integers(0, classes, n).astype(np.int64)
    w = rng.uniform(0.1, 3.0, n).astype(np.float32)
    return x, y, w


def model(seed=0, loss="sparse_categorical_crossentropy", lr=0.5, metrics=("accuracy",)):
    nnkit.manual_seed(seed)
    m = nnkit.Sequential([Linear(4, 3)])
    m.compile("sgd", loss, metrics=list(metrics), lr=lr)
    return m


def per_sample_ce(logits, y):
    shifted = logits - logits.max(1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    return -log_probs[np.arange(len(y)), y]


def test_evaluate_with_sample_weight_is_keras_sum_over_batch_size():
    x, y, w = problem()
    m = model()
    logits = m.predict(x, verbose=0)
    expected = float((w * per_sample_ce(logits, y)).sum() / len(y))
    for batch_size in (24, 5):  # batches weighted by size: the same number
        logs = m.evaluate(x, y, sample_weight=w, batch_size=batch_size, verbose=0, return_dict=True)
        assert logs["loss"] == pytest.approx(expected, rel=1e-5)
        # metrics are not weighted (Keras: only weighted_metrics are)
        assert logs["accuracy"] == pytest.approx(np.mean(logits.argmax(1) == y))
    assert m.evaluate(x, y, verbose=0, return_dict=True)["loss"] == pytest.approx(
        per_sample_ce(logits, y).mean(), rel=1e-5
    )


def test_a_weighted_training_step_equals_torch():
    torch = pytest.importorskip("torch")
    x, y, w = problem()
    m = model()
    start = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    history = m.fit(x, y, sample_weight=w, batch_size=24, epochs=1, shuffle=False, verbose=0)
    layer = torch.nn.Linear(4, 3)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(start["0.weight"]))
        layer.bias.copy_(torch.from_numpy(start["0.bias"]))
    losses = torch.nn.functional.cross_entropy(
        layer(torch.from_numpy(x)), torch.from_numpy(y), reduction="none"
    )
    loss = (losses * torch.from_numpy(w)).sum() / len(y)
    loss.backward()
    assert history.history["loss"][0] == pytest.approx(loss.item(), rel=1e-5)
    with torch.no_grad():
        expected = layer.weight - 0.5 * layer.weight.grad
    np.testing.assert_allclose(m[0].weight.detach().numpy(), expected.numpy(), atol=1e-6)


def test_class_weight_is_sample_weight_by_class():
    x, y, _ = problem()
    class_weight = {0: 0.5, 2: 3.0}  # class 1 unnamed: weight 1
    a, b = model(), model()
    ha = a.fit(x, y, class_weight=class_weight, batch_size=8, epochs=2, verbose=0, seed=1)
    w = np.array([0.5, 1.0, 3.0], np.float32)[y]
    hb = b.fit(x, y, sample_weight=w, batch_size=8, epochs=2, verbose=0, seed=1)
    assert ha.history == hb.history
    np.testing.assert_array_equal(a[0].weight.detach().numpy(), b[0].weight.detach().numpy())


def test_class_weight_with_one_hot_targets_uses_their_arg_max():
    x, y, _ = problem()
    one_hot = np.eye(3, dtype=np.float32)[y]
    a = model(loss="categorical_crossentropy", metrics=())
    b = model(metrics=())
    ha = a.fit(x, one_hot, class_weight={0: 2.0, 1: 1.0, 2: 0.25}, epochs=1, verbose=0, seed=2)
    hb = b.fit(x, y, class_weight={0: 2.0, 1: 1.0, 2: 0.25}, epochs=1, verbose=0, seed=2)
    assert ha.history["loss"] == pytest.approx(hb.history["loss"], rel=1e-6)


def test_weighting_errors():
    x, y, w = problem()
    m = model()
    with pytest.raises(ValueError, match="class_weight and sample_weight at the same time"):
        m.fit(x, y, class_weight={0: 1.0}, sample_weight=w, verbose=0)
    with pytest.raises(ValueError, match="no weight for class 2"):
        m.fit(x, y, class_weight={0: 1.0, 1: 2.0}, verbose=0)
    with pytest.raises(ValueError, match="class_weight keys must be class indices"):
        m.fit(x, y, class_weight={"a": 1.0}, verbose=0)
    with pytest.raises(ValueError, match="sample_weight has 3 entries for 24 samples"):
        m.fit(x, y, sample_weight=w[:3], verbose=0)
    with pytest.raises(ValueError, match="sample_weight must be None when x is a DataLoader"):
        m.fit(DataLoader(TensorDataset(x, y), batch_size=4), sample_weight=w, verbose=0)
    custom = model()
    custom.compile("sgd", lambda p, t: ((p - p) ** 2).mean())
    with pytest.raises(ValueError, match="need the loss of each sample"):
        custom.fit(x, y, sample_weight=w, verbose=0)


def test_sample_weights_as_the_third_element_of_a_dataset():
    x, y, w = problem()
    a, b = model(), model()
    ha = a.fit(DataLoader(TensorDataset(x, y, w), batch_size=6), epochs=1, verbose=0)
    hb = b.fit(x, y, sample_weight=w, batch_size=6, epochs=1, shuffle=False, verbose=0)
    assert ha.history == hb.history


def test_validation_freq_batch_size_and_steps():
    x, y, _ = problem()
    xv, yv, wv = problem(n=10, seed=1)
    m = model()
    history = m.fit(x, y, epochs=4, validation_data=(xv, yv), validation_freq=2, verbose=0)
    assert len(history.history["loss"]) == 4 and len(history.history["val_loss"]) == 2
    m = model()
    history = m.fit(
        x,
        y,
        epochs=1,
        validation_data=(xv, yv, wv),
        validation_batch_size=4,
        validation_steps=1,
        verbose=0,
    )
    expected = m.evaluate(xv[:4], yv[:4], sample_weight=wv[:4], verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(expected[0])
    with pytest.raises(ValueError, match="validation_freq must be a positive integer"):
        m.fit(x, y, validation_freq=0, verbose=0)


def test_keras_defaults_and_return_types(capsys):
    x, y, _ = problem(n=40)
    m = model()
    m.fit(x, y, epochs=2)  # batch_size None -> 32, verbose 'auto' -> lines (not a terminal)
    out = capsys.readouterr().out
    assert "\r" not in out and "\x1b" not in out
    lines = [line for line in out.splitlines() if line.startswith("Epoch")]
    assert len(lines) == 2 and lines[0].startswith("Epoch 1/2 - 2/2 - ")  # 40 / 32: 2 steps
    result = m.evaluate(x, y, verbose=0)
    assert isinstance(result, list) and len(result) == 2  # [loss, accuracy]
    assert isinstance(model(metrics=()).evaluate(x, y, verbose=0), float)
    assert m.evaluate(x, y, steps=1, verbose=0, return_dict=True)["loss"] == pytest.approx(
        m.evaluate(x[:32], y[:32], verbose=0, return_dict=True)["loss"]
    )
    assert m.predict(x, batch_size=8, steps=2, verbose=0).shape == (16, 3)
    with pytest.raises(ValueError, match="verbose must be 0, 1, 2 or 'auto'"):
        m.fit(x, y, verbose=3)


def test_a_three_argument_compute_loss_override_still_works():
    class Custom(nnkit.Sequential):
        def compute_loss(self, x, y, y_pred):
            return nnkit.nn.functional.cross_entropy(y_pred, y) * 2

    nnkit.manual_seed(0)
    m = Custom([Linear(4, 3)])
    m.compile("sgd", "cross_entropy")
    x, y, _ = problem()
    assert m.fit(x, y, epochs=1, verbose=0).history["loss"][0] > 0


def test_a_custom_train_step_calls_compute_loss_by_keyword_as_in_keras():
    """Keras 3's torch guide writes ``self.compute_loss(y=y, y_pred=y_pred)`` (no ``x``)
    in a custom ``train_step``; ``training=`` is taken too."""

    class Custom(nnkit.Sequential):
        def train_step(self, batch):
            x, y = batch
            y_pred = self(x)
            loss = self.compute_loss(y=y, y_pred=y_pred, training=True)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return {"loss": loss}

    x, y, _ = problem()
    nnkit.manual_seed(0)
    custom = Custom([Linear(4, 3)])
    custom.compile("sgd", "cross_entropy")
    nnkit.manual_seed(0)
    plain = nnkit.Sequential([Linear(4, 3)])
    plain.compile("sgd", "cross_entropy")
    kwargs = {"epochs": 2, "verbose": 0, "shuffle": False}
    assert custom.fit(x, y, **kwargs).history == plain.fit(x, y, **kwargs).history


def test_model_checkpoint_honours_the_weights_suffix(tmp_path):
    pytest.importorskip("h5py")
    from nnkit import io
    from nnkit.callbacks import ModelCheckpoint

    x, y, _ = problem()
    m = model()
    m.fit(
        x,
        y,
        epochs=1,
        verbose=0,
        callbacks=[
            ModelCheckpoint(tmp_path / "a.weights.h5", monitor="loss"),
            ModelCheckpoint(tmp_path / "full.h5", monitor="loss"),
        ],
    )
    assert "optimizer" not in io.read_checkpoint(tmp_path / "a.weights.h5")
    assert "optimizer" in io.read_checkpoint(tmp_path / "full.h5")
    fresh = model(seed=5)
    fresh.load_weights(tmp_path / "a.weights.h5")
    np.testing.assert_array_equal(fresh[0].weight.detach().numpy(), m[0].weight.detach().numpy())
