"""Each callback's behaviour inside Model.fit."""

from __future__ import annotations

import csv
import os
import sys

import numpy as np
import pytest

import nnkit
from nnkit.callbacks import (
    BackupAndRestore,
    Callback,
    CSVLogger,
    EarlyStopping,
    LearningRateScheduler,
    ModelCheckpoint,
    ReduceLROnPlateau,
    TerminateOnNaN,
)
from nnkit.layers import Linear

from .conftest import ScriptedLogs, Snapshots, mlp, weights


@pytest.fixture
def small(digits):
    return digits.x_train[:160], digits.y_train[:160]


def test_early_stopping_stops_and_restores_best_weights(small):
    model = mlp()
    snapshots = Snapshots()
    stop = EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    script = ScriptedLogs("val_loss", [1.0, 0.5, 0.7, 0.8, 0.9, 0.1])
    history = model.fit(
        *small, epochs=6, verbose=0, validation_split=0.25, callbacks=[script, snapshots, stop]
    )
    assert history.epoch == [0, 1, 2, 3]
    assert stop.stopped_epoch == 3 and stop.best_epoch == 1 and stop.best == 0.5
    assert not all(
        np.array_equal(a, b)
        for a, b in zip(snapshots.by_epoch[3].values(), snapshots.by_epoch[1].values())
    )
    for name, value in weights(model).items():
        np.testing.assert_array_equal(value, snapshots.by_epoch[1][name])


def test_early_stopping_mode_delta_baseline_and_start_epoch(small):
    stop = EarlyStopping(monitor="val_accuracy", min_delta=0.05, patience=1)
    assert stop.compare.mode == "max"
    mlp().fit(
        *small,
        epochs=5,
        verbose=0,
        callbacks=[ScriptedLogs("val_accuracy", [0.5, 0.52, 0.53, 0.9, 1]), stop],
    )
    assert stop.stopped_epoch == 1  # +0.02 is below min_delta
    for baseline, epochs_run in [(None, 3), (0.1, 2)]:  # the first epoch misses the baseline
        stop = EarlyStopping(monitor="loss", patience=2, baseline=baseline)
        history = mlp().fit(
            *small, epochs=5, verbose=0, callbacks=[ScriptedLogs("loss", [0.5] * 5), stop]
        )
        assert len(history.epoch) == epochs_run
    stop = EarlyStopping(monitor="loss", patience=1, start_from_epoch=3)
    history = mlp().fit(
        *small, epochs=6, verbose=0, callbacks=[ScriptedLogs("loss", [1, 2, 3, 4, 5, 6]), stop]
    )
    assert history.epoch == [0, 1, 2, 3, 4]


def test_model_checkpoint_best_only_with_formatted_names(small, tmp_path):
    model = mlp()
    pattern = str(tmp_path / "ckpt" / "w-{epoch:02d}-{val_loss:.2f}.h5")
    ckpt = ModelCheckpoint(pattern, save_best_only=True, save_weights_only=True)
    model.fit(
        *small,
        epochs=4,
        verbose=0,
        validation_split=0.25,
        callbacks=[ScriptedLogs("val_loss", [1.0, 0.5, 0.7, 0.25]), ckpt],
    )
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["w-01-1.00.h5", "w-02-0.50.h5", "w-04-0.25.h5"]
    restored = mlp()
    restored(nnkit.tensor(small[0][:1]))
    restored.load_weights(tmp_path / "ckpt" / "w-04-0.25.h5")
    for name, value in weights(model).items():
        np.testing.assert_array_equal(weights(restored)[name], value)


def test_model_checkpoint_full_save_every_epoch_and_by_batches(small, tmp_path):
    model = mlp()
    model.fit(
        *small,
        epochs=2,
        batch_size=40,
        verbose=0,
        callbacks=[
            ModelCheckpoint(tmp_path / "full-{epoch}.h5"),
            ModelCheckpoint(tmp_path / "b-{epoch}-{batch}.h5", save_freq=3, save_weights_only=True),
        ],
    )
    names = sorted(os.listdir(tmp_path))
    assert names == ["b-1-3.h5", "b-2-2.h5", "full-1.h5", "full-2.h5"]  # batches 3 and 6
    ckpt = nnkit.io.read_checkpoint(tmp_path / "full-2.h5")
    assert "optimizer" in ckpt and '"loss": ["cross_entropy"]' in ckpt["attrs"]["config"]
    fresh = mlp()
    fresh(nnkit.tensor(small[0][:1]))
    opt = nnkit.optimizers.Adam()
    opt.build(list(fresh.parameters()))
    nnkit.io.load_checkpoint(tmp_path / "full-2.h5", model=fresh, optimizer=opt)
    assert opt.iterations == model.optimizer.iterations  # the last epoch's end


def test_reduce_lr_on_plateau_lowers_lr(small):
    model = mlp(lr=0.01)
    plateau = ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=2, min_lr=0.003)
    history = model.fit(
        *small,
        epochs=6,
        verbose=0,
        validation_split=0.25,
        callbacks=[ScriptedLogs("val_loss", [1.0] * 6), plateau],
    )
    assert history.history["learning_rate"] == pytest.approx(
        [0.01, 0.01, 0.01, 0.005, 0.005, 0.003]
    )
    assert model.optimizer.param_groups[0]["lr"] == pytest.approx(0.003)


def test_reduce_lr_on_plateau_cooldown(small):
    model = mlp(lr=1.0, compile_args=("sgd", "cross_entropy"))
    plateau = ReduceLROnPlateau(monitor="loss", factor=0.1, patience=1, cooldown=2)
    history = model.fit(
        *small, epochs=6, verbose=0, callbacks=[ScriptedLogs("loss", [1.0] * 6), plateau]
    )
    assert history.history["learning_rate"] == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01, 0.01])


def test_learning_rate_scheduler_function(small):
    model = mlp()
    sched = LearningRateScheduler(lambda epoch, lr: 0.1 * (epoch + 1) if epoch < 2 else lr / 4)
    history = model.fit(*small, epochs=3, verbose=0, callbacks=[sched])
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.2, 0.05])
    assert model.optimizer.param_groups[0]["lr"] == pytest.approx(0.05)


def test_learning_rate_scheduler_wraps_an_lr_scheduler(regression):
    x, y = regression
    model = nnkit.Sequential(Linear(4, 1))
    opt = nnkit.optim.SGD(model.parameters(), lr=0.08)
    model.compile(opt, "mse")
    step = nnkit.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[LearningRateScheduler(step)])
    assert history.history["learning_rate"] == pytest.approx([0.08, 0.04, 0.02])
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
    plateau = nnkit.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    model.fit(
        x,
        y,
        epochs=3,
        verbose=0,
        callbacks=[ScriptedLogs("val_loss", [1.0] * 3), LearningRateScheduler(plateau)],
    )
    assert opt.param_groups[0]["lr"] == pytest.approx(0.0025)


def test_csv_logger_contents_and_append(small, tmp_path):
    path = tmp_path / "log.csv"
    model = mlp()
    history = model.fit(
        *small, epochs=3, verbose=0, validation_split=0.25, callbacks=[CSVLogger(path)]
    )
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "2"]
    assert [float(r[2]) for r in rows[1:]] == history.history["loss"]
    model.fit(
        *small,
        epochs=5,
        initial_epoch=3,
        verbose=0,
        validation_split=0.25,
        callbacks=[CSVLogger(path, append=True)],
    )
    lines = path.read_text().splitlines()
    assert len(lines) == 6 and lines[0].startswith("epoch,") and lines[-1].startswith("4,")
    model.fit(*small, epochs=1, verbose=0, callbacks=[CSVLogger(path, separator=";")])
    assert path.read_text().splitlines()[0] == "epoch;accuracy;loss"


def test_terminate_on_nan_stops_at_the_bad_batch(small, capsys):
    x, y = small[0].copy(), small[1]
    x[70] = np.nan
    batches = []

    class Count(Callback):
        def on_train_batch_end(self, batch, logs=None):
            batches.append(batch)

    history = mlp().fit(
        x,
        y,
        batch_size=32,
        epochs=4,
        shuffle=False,
        verbose=0,
        callbacks=[TerminateOnNaN(), Count()],
    )
    assert batches == [0, 1, 2] and history.epoch == [0]
    assert np.isnan(history.history["loss"][0])
    assert "Batch 2: Invalid loss, terminating training" in capsys.readouterr().out


class _Interrupt(Callback):
    def __init__(self, at_epoch: int) -> None:
        super().__init__()
        self.at_epoch = at_epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.at_epoch:
            raise KeyboardInterrupt(f"simulated interruption at epoch {epoch}")


def _resumable_run(digits, backup_dir, extra=()):
    model = mlp(16, dropout=0.25)
    stop = EarlyStopping(monitor="val_loss", patience=50, restore_best_weights=True)
    callbacks = [stop, *extra] + ([BackupAndRestore(backup_dir)] if backup_dir else [])
    history = model.fit(
        digits.x_train[:400],
        digits.y_train[:400],
        batch_size=48,
        epochs=6,
        validation_data=(digits.x_test[:100], digits.y_test[:100]),
        callbacks=callbacks,
        verbose=0,
    )
    return model, history, stop


def test_backup_and_restore_resumes_bit_for_bit(digits, tmp_path):
    reference, ref_history, ref_stop = _resumable_run(digits, None)
    backup_dir = tmp_path / "backup"
    with pytest.raises(KeyboardInterrupt):
        _resumable_run(digits, backup_dir, extra=[_Interrupt(3)])
    [backup] = BackupAndRestore.backups(backup_dir)
    assert nnkit.io.read_checkpoint(backup)["epoch"] == 2
    nnkit.manual_seed(123)  # the new process's RNG differs; the backup restores it
    model, history, stop = _resumable_run(digits, backup_dir)
    assert history.epoch == [0, 1, 2, 3, 4, 5]  # the History is the whole run's
    assert history.history == ref_history.history
    assert (stop.best, stop.best_epoch) == (ref_stop.best, ref_stop.best_epoch)
    assert stop.best_epoch == 5  # else the restored best weights are compared below
    for name, value in weights(reference).items():
        np.testing.assert_array_equal(weights(model)[name], value)
    state = model.optimizer.state_dict()["variables"]
    for key, ref in reference.optimizer.state_dict()["variables"].items():
        for a, b in zip(state[key], ref):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=key)
    assert not backup_dir.exists()  # deleted once training finished


def test_backup_after_the_last_epoch_trains_nothing_more(digits, tmp_path):
    model = mlp()
    backup = BackupAndRestore(tmp_path / "b", delete_checkpoint=False)
    model.fit(digits.x_train[:64], digits.y_train[:64], epochs=2, verbose=0, callbacks=[backup])
    assert len(BackupAndRestore.backups(tmp_path / "b")) == 1
    before = weights(model)
    history = model.fit(
        digits.x_train[:64], digits.y_train[:64], epochs=2, verbose=0, callbacks=[backup]
    )
    assert backup.restored_epoch == 1 and history.epoch == [0, 1]
    for name, value in weights(model).items():
        np.testing.assert_array_equal(value, before[name])


def test_progress_output(small, capsys):
    model = mlp()
    model.fit(*small, epochs=2, verbose=0, validation_split=0.25)
    model.evaluate(*small, verbose=0)
    model.predict(small[0], verbose=0)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    model.fit(*small, epochs=2, batch_size=40, verbose=1, validation_split=0.25)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "3/3" in out
    assert "val_accuracy=" in out and "loss=" in out
    model.fit(*small, epochs=2, verbose=2, validation_split=0.25)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].startswith("Epoch 2/2 - ")
    assert " - loss: " in lines[1] and " - val_accuracy: " in lines[1]
    model.evaluate(*small, batch_size=80, verbose=1)
    assert "Evaluate" in capsys.readouterr().out


def test_a_log_record_during_the_bar_gets_its_own_line(small, capsys):
    import logging

    class Logs(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                logging.getLogger("nnkit.test").warning("halfway there")

    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stdout)  # the usual basicConfig(stream=stdout)
    root.addHandler(handler)
    try:
        model = mlp()
        model.fit(*small, epochs=1, batch_size=40, verbose=1, callbacks=[Logs()])
    finally:
        root.removeHandler(handler)
    lines = capsys.readouterr().out.replace("\r", "\n").splitlines()
    assert "halfway there" in lines  # a line of its own, not glued to the bar
    assert root.handlers.count(handler) == 0
