"""The error branches of compile / fit / evaluate, with their messages."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.callbacks import ModelCheckpoint
from nnkit.data import DataLoader, TensorDataset
from nnkit.layers import Dense, Linear, NotBuiltError

X = np.zeros((10, 3), np.float32)
Y = np.zeros(10, np.int64)


def model():
    return nnkit.Sequential(Linear(3, 2))


@pytest.mark.parametrize(
    "kwargs, unknown, valid",
    [
        ({"optimizer": "adamax"}, "optimizer 'adamax'", "adagrad, adam, adamw, rmsprop, sgd"),
        ({"loss": "hinge"}, "loss 'hinge'", "bce, bce_with_logits"),
    ],
)
def test_unknown_names_list_the_valid_ones(kwargs, unknown, valid):
    with pytest.raises(ValueError, match=f"Unknown {unknown}; valid names are: .*{valid}"):
        model().compile(**kwargs)


def test_an_unknown_metric_names_both_catalogues():
    with pytest.raises(
        ValueError,
        match=r"Unknown metric 'acurracy': neither one of nnkit's "
        r"metric functions \(acc, accuracy, binary_accuracy.*"
        r"Did you mean 'accuracy'",
    ):
        model().compile(metrics=["acurracy"])


def test_wrong_types_and_inconsistent_compile_arguments():
    m = model()
    with pytest.raises(TypeError, match="optimizer must be"):
        m.compile(optimizer=3)
    with pytest.raises(TypeError, match="loss must be"):
        m.compile(loss=3)
    with pytest.raises(TypeError, match="metric must be"):
        m.compile(loss="mse", metrics=[3])
    with pytest.raises(ValueError, match="lr"):
        m.compile(nnkit.optim.SGD(m.parameters(), lr=0.1), "mse", lr=0.1)
    with pytest.raises(ValueError, match="loss_weights has 2 entries but there are 1"):
        m.compile("sgd", "mse", loss_weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="distinct names"):
        m.compile("sgd", "mse", metrics=["mae", "mae"])


@pytest.mark.parametrize("call", ["fit", "evaluate"])
def test_fit_or_evaluate_before_compile(call):
    with pytest.raises(RuntimeError, match=r"call compile\(\) first"):
        getattr(model(), call)(X, Y, verbose=0)


def test_fit_without_a_loss_or_targets():
    m = model()
    m.compile("sgd")
    with pytest.raises(ValueError, match="No loss"):
        m.fit(X, Y, verbose=0)
    m.compile("sgd", "cross_entropy")
    with pytest.raises(ValueError, match="no targets"):
        m.fit(X, verbose=0)


def test_x_and_y_length_mismatch():
    m = model()
    m.compile("sgd", "cross_entropy")
    with pytest.raises(ValueError, match="x has 10 samples, y has 9"):
        m.fit(X, Y[:9], verbose=0)
    with pytest.raises(ValueError, match="x has 10 samples, y has 9"):
        m.evaluate(X, Y[:9], verbose=0)
    with pytest.raises(ValueError, match="x is required"):
        m.fit(verbose=0)


def test_validation_split_errors():
    m = model()
    m.compile("sgd", "cross_entropy")
    loader = DataLoader(TensorDataset(X, Y), batch_size=4)
    with pytest.raises(
        ValueError, match="validation_split is only supported for arrays.*DataLoader"
    ):
        m.fit(loader, validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match="validation_split is only supported.*TensorDataset"):
        m.fit(TensorDataset(X, Y), validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\)"):
        m.fit(X, Y, validation_split=1.5, verbose=0)
    with pytest.raises(ValueError, match="empty"):
        m.fit(X, Y, validation_split=0.95, verbose=0)
    with pytest.raises(ValueError, match="y must be None"):
        m.fit(loader, Y, verbose=0)
    with pytest.raises(ValueError, match="validation_data must be"):
        m.fit(X, Y, validation_data=(X, Y, Y, Y), verbose=0)


def test_bad_batches_and_inputs():
    m = model()
    m.compile("sgd", "cross_entropy")
    with pytest.raises(ValueError, match=r"\(x, y, sample_weight\); got a tuple of 4 parts"):
        m.fit(DataLoader(TensorDataset(X, Y, Y, Y), batch_size=5), verbose=0)
    with pytest.raises(TypeError, match="x must be arrays"):
        m.fit(object(), verbose=0)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        m.fit(X, Y, steps_per_epoch=0, verbose=0)
    with pytest.raises(ValueError, match="2 losses but the model returned 1"):
        m.compile("sgd", ["mse", "mse"])
        m.fit(X, Y, verbose=0)


def test_unbuilt_model_errors_name_the_layer(tmp_path):
    lazy = nnkit.Sequential([Dense(4)])
    with pytest.raises(NotBuiltError, match="Dense"):
        nnkit.optim.Adam(lazy.parameters())
    with pytest.raises(NotBuiltError, match="Dense"):
        lazy.save_weights(tmp_path / "w.h5")
    assert not (tmp_path / "w.h5").exists()


def test_callback_errors(tmp_path):
    from nnkit.callbacks import (
        BackupAndRestore,
        EarlyStopping,
        LearningRateScheduler,
        ReduceLROnPlateau,
    )

    with pytest.raises(ValueError, match="mode"):
        EarlyStopping(mode="up")
    with pytest.raises(ValueError, match="factor"):
        ReduceLROnPlateau(factor=1.5)
    with pytest.raises(ValueError, match="save_freq"):
        ModelCheckpoint(tmp_path / "x.h5", save_freq=0)
    with pytest.raises(ValueError, match="save_freq"):
        BackupAndRestore(tmp_path, save_freq=0)
    with pytest.raises(ValueError, match="save_freq"):
        BackupAndRestore(tmp_path, save_freq="batch")
    with pytest.raises(TypeError, match="schedule"):
        LearningRateScheduler(3)
    with pytest.raises(TypeError, match="Callback instances"):
        m = model()
        m.compile("sgd", "cross_entropy")
        m.fit(X, Y, callbacks=[print], verbose=0)
    with pytest.raises(KeyError, match="needs 'val_loss'"):
        ModelCheckpoint(tmp_path / "{val_loss}.h5").format_path(0, {"loss": 1.0})


def test_missing_monitor_warns():
    from nnkit.callbacks import EarlyStopping

    m = model()
    m.compile("sgd", "cross_entropy")
    with pytest.warns(RuntimeWarning, match="'val_loss', which is not available"):
        m.fit(X, Y, callbacks=[EarlyStopping()], verbose=0)
