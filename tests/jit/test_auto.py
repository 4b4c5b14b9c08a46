"""``Model.compile(jit_compile="auto")`` (the default): fit's train_step is compiled where
that is safe and worthwhile, silently eager elsewhere, and the results are always the
eager ones bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit import nn
from nnkit.callbacks import BackupAndRestore, Callback, LearningRateScheduler, ReduceLROnPlateau
from nnkit.training.compiling import AUTO_MIN_STEPS


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6)).astype(np.float32)
    y = rng.integers(0, 3, n)
    return x, y, rng.uniform(0.5, 2.0, n).astype(np.float32)


def _model():
    nnkit.manual_seed(0)
    return nnkit.Sequential(
        [nn.Dense(16, activation="relu"), nn.Dropout(0.2), nn.BatchNorm1d(16), nn.Dense(3)]
    )


def _halve(epoch, lr):
    return lr * 0.5 if epoch % 3 == 2 else lr


class _Programs(Callback):
    """What the compiled training step holds when the fit ends (``"auto"`` drops its
    programs right after): ``model.at_end = (programs, fallbacks)``."""

    def on_train_end(self, logs=None):
        train = _steps(self.model).get("train_step")
        self.model.at_end = None if train is None else (train.num_programs, train.fallbacks)


def _train(jit_compile, weighting=None, epochs=10, model=None, callbacks=(), **fit_kwargs):
    """Fit (200 samples, batches of 32: six full and a partial last one per epoch, 70
    steps in 10 epochs), then evaluate and predict; everything comparable returned."""
    x, y, w = _data()
    xv, yv, _ = _data(50, seed=1)
    model = model or _model()
    model.compile(
        "adam", "cross_entropy", metrics=["accuracy", "sparse_categorical_accuracy"],
        jit_compile=jit_compile,
    )  # fmt: skip
    if weighting == "class_weight":
        fit_kwargs["class_weight"] = {0: 0.5, 1: 2.0, 2: 1.0}
    elif weighting == "sample_weight":
        fit_kwargs["sample_weight"] = w
    history = model.fit(
        x, y, batch_size=32, epochs=epochs, verbose=0, validation_data=(xv, yv), seed=3,
        callbacks=[
            LearningRateScheduler(_halve), ReduceLROnPlateau(patience=1), *callbacks, _Programs()
        ],
        **fit_kwargs,
    )  # fmt: skip
    weights = [t.detach().numpy().copy() for t in model.state_dict().values()]
    logs = model.evaluate(xv, yv, batch_size=16, verbose=0, return_dict=True)
    pred = model.predict(xv, batch_size=16, verbose=0)
    return model, history.history, weights, logs, pred


def _assert_equal(a, b):
    assert a[1] == b[1]  # history: every loss, metric, val_ value and learning rate
    assert all(np.array_equal(u, v) for u, v in zip(a[2], b[2]))
    assert a[3] == b[3] and np.array_equal(a[4], b[4])


def _steps(model):
    return model.__dict__.get("_jit_steps", {})


@pytest.mark.parametrize("weighting", [None, "class_weight", "sample_weight"])
def test_auto_compiles_fit_and_is_bitwise_eager(weighting):
    eager = _train(False, weighting)
    auto = _train("auto", weighting)
    _assert_equal(eager, auto)
    steps = _steps(auto[0])
    train = steps["train_step"]
    # the full batches and the partial last one each have their program (recorded and
    # checked); the very first call, which resolves the stateful metric, is discarded
    assert auto[0].at_end == (2, ()) and train.num_replays == 70 - 5
    assert train.num_programs == 0  # dropped when the fit returned: their memory freed
    assert set(steps) == {"train_step"}  # evaluate, predict and validation: eager
    assert len(auto[1]["learning_rate"]) == 10 and auto[1]["learning_rate"][-1] < 1e-3


@pytest.mark.parametrize("jit_compile", [False, "auto"])
def test_resume_with_backup_and_restore_is_exact(tmp_path, jit_compile):
    """Interrupted after step 40; the newest backup is that of step 35, the last batch
    of epoch 4 (before its validation): the resumed fit restores the named stateful
    metric's state there with no batch left to resolve it by (its value was NaN)."""

    class Crash(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if self.model._fit_state.global_step == 40:
                raise RuntimeError("simulated crash")

    ref = _train(False, epochs=16)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _train(jit_compile, epochs=16, callbacks=[BackupAndRestore(tmp_path, 5), Crash()])
    assert BackupAndRestore.latest(tmp_path).endswith("backup-0000000035.h5")
    resumed = _train(jit_compile, epochs=16, callbacks=[BackupAndRestore(tmp_path, 5)])
    assert resumed[1] == ref[1]  # the history of the epochs before the crash restored
    assert all(np.array_equal(u, v) for u, v in zip(ref[2], resumed[2]))
    if jit_compile:  # the resumed fit plans 11 epochs of 7 steps: compiled
        assert _steps(resumed[0])["train_step"].num_replays > 0


def test_a_short_fit_stays_eager():
    # 7 steps per epoch: 63 planned steps, one short of the threshold
    assert 7 * 9 < AUTO_MIN_STEPS <= 7 * 10
    eager, auto = _train(False, epochs=9), _train("auto", epochs=9)
    _assert_equal(eager, auto)
    assert _steps(auto[0]) == {} and auto[0].at_end is None


def test_a_later_fit_records_again():
    model = _train("auto")[0]
    replays = _steps(model)["train_step"].num_replays
    x, y, _ = _data()
    model.fit(x, y, batch_size=32, epochs=10, verbose=0, callbacks=[_Programs()])
    assert model.at_end == (2, ())  # recorded again (the first fit's were dropped)
    assert _steps(model)["train_step"].num_replays == replays + 70 - 4


class _Scale(nn.Module):
    """A layer of the user's: its forward might have Python side effects."""

    def forward(self, x):
        return x * 0.5


def _double(x):
    return x * 2.0


class _Custom(nnkit.Sequential):
    def train_step(self, batch):
        self.calls = getattr(self, "calls", 0) + 1  # a Python side effect
        return super().train_step(batch)


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda: nnkit.Sequential([nn.Dense(16), _Scale(), nn.Dense(3)]), "_Scale"),
        (lambda: nnkit.Sequential([nn.Dense(16, activation=_double), nn.Dense(3)]), "_double"),
        (lambda: _Custom([nn.Dense(16, activation="relu"), nn.Dense(3)]), "_Custom"),
    ],
)
def test_code_of_the_user_stays_eager(make, reason):
    nnkit.manual_seed(0)
    eager = _train(False, model=make())
    nnkit.manual_seed(0)
    auto = _train("auto", model=make())
    _assert_equal(eager, auto)
    assert _steps(auto[0]) == {}
    assert reason in auto[0]._auto_eager_reason("train_step")
    if isinstance(auto[0], _Custom):
        assert auto[0].calls == eager[0].calls == 70


def test_a_user_loss_function_stays_eager():
    x, y, _ = _data()
    model = _model()
    model.compile("adam", lambda p, t: nnkit.nn.functional.cross_entropy(p, t))
    model.fit(x, y, batch_size=32, epochs=10, verbose=0)
    assert _steps(model) == {}
    assert "is not nnkit's" in model._auto_eager_reason("train_step")


def test_a_step_that_cannot_replay_falls_back_silently():
    """A forward hook makes the recording refuse the step: "auto" runs it eagerly with
    no warning (pytest turns warnings into errors); ``True`` warns once."""

    def add_hook(model):
        model[0].register_forward_hook(lambda module, args, out: None)
        return model

    eager = _train(False, model=add_hook(_model()))
    auto = _train("auto", model=add_hook(_model()))
    _assert_equal(eager, auto)
    assert auto[0].at_end == (0, ("a module has forward hooks",))
    with pytest.warns(RuntimeWarning) as caught:
        _train(True, model=add_hook(_model()))
    assert sorted(str(w.message) for w in caught) == [
        f"nnkit.compile: Trainer.{name} runs eagerly: a module has forward hooks"
        for name in ("predict_step", "test_step", "train_step")
    ]


def test_anomaly_mode_falls_back_silently():
    eager = _train(False, epochs=10)
    with nnkit.autograd.detect_anomaly():
        auto = _train("auto", epochs=10)
    _assert_equal(eager, auto)
    assert auto[0].at_end == (0, ("anomaly detection is on",))


class _DropoutUp(Callback):
    """Changes a layer's Python attribute between epochs (a Dropout schedule)."""

    def on_epoch_begin(self, epoch, logs=None):
        self.model[1].p = 0.1 + 0.2 * (epoch % 2)


@pytest.mark.parametrize("jit_compile", ["auto", True])
def test_a_layer_attribute_changed_by_a_callback_is_guarded(jit_compile):
    eager = _train(False, callbacks=[_DropoutUp()])
    compiled = _train(jit_compile, callbacks=[_DropoutUp()])
    _assert_equal(eager, compiled)
    # two rates, each with its full-batch and partial-batch program
    assert compiled[0].at_end == (4, ())
    assert _steps(compiled[0])["train_step"].num_replays == 70 - 9


def test_auto_is_eager_off_the_cpu(monkeypatch):
    from tests._simulated_device import install

    install(monkeypatch)
    x, y, _ = _data()
    model = _model().to("cuda")
    model.compile("adam", "cross_entropy")
    model.fit(x, y, batch_size=32, epochs=10, verbose=0)
    assert _steps(model) == {}
    assert model._auto_eager_reason("train_step") == "the model is on cuda, not the CPU"
