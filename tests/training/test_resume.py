"""Exact resume in the fit API: an interrupted run, resumed, equals an uninterrupted one.

Every case trains a small Dropout MLP twice: once straight through, and once
interrupted (an exception from a callback, or a signal-style request) and then resumed
by a fresh model and a fresh ``fit`` call with ``BackupAndRestore``, as a restarted
process would. Final weights, the History and the CSV rows must be bitwise equal.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

import nnkit
from nnkit import nn
from nnkit.callbacks import (
    BackupAndRestore,
    Callback,
    CSVLogger,
    EarlyStopping,
    LearningRateScheduler,
    ReduceLROnPlateau,
    TerminateOnNaN,
)
from nnkit.data import DataLoader, TensorDataset
from nnkit.optim import SGD, Adam
from nnkit.optim.lr_scheduler import OneCycleLR, StepLR
from nnkit.training import TrainingInterrupted, graceful_interrupts
from nnkit.training import interrupt as interrupt_mod

pytest.importorskip("h5py")

EPOCHS = 4


class Crash(Callback):
    """Raises after the ``at``-th training step of this fit (an interruption)."""

    def __init__(self, at: int, how: str = "raise") -> None:
        super().__init__()
        self.at, self.how, self.seen = at, how, 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.at:
            if self.how == "raise":
                raise RuntimeError("simulated crash")
            interrupt_mod.request(signal.SIGTERM)


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 8)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1).astype(np.int64)
    return x, y


def make_model():
    nnkit.manual_seed(0)
    model = nnkit.Sequential([nn.Dense(16, activation="relu"), nn.Dropout(0.3), nn.Dense(3)])
    with nnkit.no_grad():
        model(nnkit.zeros(1, 8))  # build, so that schedulers can take the optimizer
    model.compile(Adam(model.parameters(), lr=0.01), "cross_entropy", metrics=["accuracy"])
    return model


def run(
    tmp_path,
    tag,
    *,
    crash_at=None,
    how="raise",
    save_freq="epoch",
    first=False,
    extra=lambda model: [],
    fit_kwargs=None,
    x=None,
    epochs=EPOCHS,
    resume_extra=None,
):
    """One run; with ``crash_at`` the first attempt is interrupted and a second,
    fresh attempt resumes it. Returns (weights, history, csv text)."""
    fit_kwargs = dict(fit_kwargs or {})
    csv = tmp_path / f"{tag}.csv"

    def attempt(crash, extra_fn):
        model = make_model()
        backup = BackupAndRestore(tmp_path / f"{tag}_backup", save_freq=save_freq)
        callbacks = extra_fn(model) + [CSVLogger(csv)]
        callbacks = [backup] + callbacks if first else callbacks + [backup]
        if crash is not None:
            callbacks.insert(1, Crash(crash, how))
        inputs = data() if x is None else (x(), None)
        history = model.fit(
            *inputs, batch_size=16, epochs=epochs, verbose=0, callbacks=callbacks, **fit_kwargs
        )
        return model, history

    if crash_at is not None:
        if how == "raise":
            with pytest.raises(RuntimeError, match="simulated crash"):
                attempt(crash_at, extra)
        else:
            with graceful_interrupts(), pytest.raises(TrainingInterrupted) as stopped:
                attempt(crash_at, extra)
            assert stopped.value.signum == signal.SIGTERM
            assert stopped.value.checkpoint is not None
    model, history = attempt(None, resume_extra or extra)
    assert not (tmp_path / f"{tag}_backup").exists()  # deleted at the end
    weights = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    return weights, history, csv.read_text() if csv.exists() else None


def flip_a_weight_byte(path, name="0.weight"):
    """Flip one byte inside a float dataset's data (where h5py says it is)."""
    import h5py

    with h5py.File(path, "r") as f:
        offset = f["model"][name].id.get_offset()
    with open(path, "r+b") as f:
        f.seek(offset + 5)
        byte = f.read(1)
        f.seek(offset + 5)
        f.write(bytes([byte[0] ^ 0x40]))


def assert_same(a, b):
    wa, ha, ca = a
    wb, hb, cb = b
    assert wa.keys() == wb.keys()
    for key in wa:
        np.testing.assert_array_equal(wa[key], wb[key], err_msg=key)
    assert ha.epoch == hb.epoch
    assert ha.history == hb.history
    assert ca == cb


@pytest.mark.parametrize("crash_at", [3, 6, 13, 24])  # mid-epoch, epoch ends, late
def test_shuffled_dropout_run_resumes_bitwise(tmp_path, crash_at):
    straight = run(tmp_path, "a", fit_kwargs={"shuffle": True})
    resumed = run(tmp_path, "b", crash_at=crash_at, fit_kwargs={"shuffle": True})
    assert_same(straight, resumed)


def test_dropout_with_validation_split(tmp_path):
    kwargs = {"validation_split": 0.25, "shuffle": True}
    straight = run(tmp_path, "a", fit_kwargs=kwargs)
    resumed = run(tmp_path, "b", crash_at=8, fit_kwargs=kwargs)
    assert "val_loss" in straight[1].history
    assert_same(straight, resumed)


@pytest.mark.parametrize("first", [False, True], ids=["backup-last", "backup-first"])
def test_epoch_scheduler_and_plateau_any_callback_order(tmp_path, first):
    def extra(model):
        return [
            LearningRateScheduler(StepLR(model.optimizer, step_size=1, gamma=0.5)),
            ReduceLROnPlateau(monitor="loss", patience=0, factor=0.5, min_delta=10.0),
            EarlyStopping(monitor="loss", patience=10),
        ]

    straight = run(tmp_path, "a", extra=extra, first=first)
    resumed = run(tmp_path, "b", crash_at=10, extra=extra, first=first)
    rates = straight[1].history["learning_rate"]  # both lower it, every epoch
    assert all(later < earlier for earlier, later in zip(rates, rates[1:]))
    assert_same(straight, resumed)


def test_per_step_scheduler_mid_epoch(tmp_path):
    def extra(model):
        return [
            LearningRateScheduler(
                OneCycleLR(model.optimizer, max_lr=0.05, total_steps=40), interval="step"
            )
        ]

    straight = run(tmp_path, "a", extra=extra)
    resumed = run(tmp_path, "b", crash_at=11, extra=extra, save_freq=3)
    assert_same(straight, resumed)


@pytest.mark.parametrize("crash_at", [5, 8, 17])
def test_save_freq_in_steps_resumes_mid_epoch(tmp_path, crash_at):
    straight = run(tmp_path, "a")
    resumed = run(tmp_path, "b", crash_at=crash_at, save_freq=2)
    assert_same(straight, resumed)


def test_signal_request_checkpoints_the_step_it_stops_at(tmp_path):
    # a SIGTERM-style request at step 11 (mid-epoch 2; save_freq would only save at
    # epoch ends): the checkpoint is of step 11 itself, and the resume is exact
    straight = run(tmp_path, "a")
    resumed = run(tmp_path, "b", crash_at=11, how="signal")
    assert_same(straight, resumed)


def test_callback_added_on_resume_starts_fresh(tmp_path):
    log = tmp_path / "added.csv"
    straight = run(tmp_path, "a")
    resumed = run(tmp_path, "b", crash_at=10, resume_extra=lambda model: [CSVLogger(log)])
    assert_same(straight, resumed)
    rows = log.read_text().splitlines()
    assert rows[0].startswith("epoch,") and [r.split(",")[0] for r in rows[1:]] == ["1", "2", "3"]


def test_num_workers_loader(tmp_path):
    def loader():
        x, y = data()
        return DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, seed=3, num_workers=2)

    straight = run(tmp_path, "a", x=loader)
    resumed = run(tmp_path, "b", crash_at=12, x=loader, save_freq=4)
    assert_same(straight, resumed)


def test_damaged_newest_backup_falls_back_with_a_warning(tmp_path):
    straight = run(tmp_path, "a")
    model = make_model()
    backup = BackupAndRestore(tmp_path / "bk", save_freq=2, double_checkpoint=True)
    with pytest.raises(RuntimeError):
        model.fit(
            *data(),
            batch_size=16,
            epochs=EPOCHS,
            verbose=0,
            callbacks=[Crash(9), CSVLogger(tmp_path / "b.csv"), backup],
        )
    files = BackupAndRestore.backups(tmp_path / "bk")
    assert len(files) == 2
    flip_a_weight_byte(files[0])  # damage the newest: its checksums fail
    model = make_model()
    with pytest.warns(RuntimeWarning, match="damaged"):
        history = model.fit(
            *data(),
            batch_size=16,
            epochs=EPOCHS,
            verbose=0,
            callbacks=[
                CSVLogger(tmp_path / "b.csv"),
                BackupAndRestore(tmp_path / "bk", save_freq=2),
            ],
        )
    weights = {k: v.numpy() for k, v in model.state_dict().items()}
    assert_same(straight, (weights, history, (tmp_path / "b.csv").read_text()))


@pytest.mark.parametrize("raise_error", [False, True])
def test_no_backup_of_non_finite_weights(tmp_path, raise_error):
    x, y = data()
    x[40:] = np.inf  # from the third batch on, the loss and then the weights are NaN
    model = make_model()
    backup = BackupAndRestore(tmp_path / "bk", save_freq=1, delete_checkpoint=False)
    fit = dict(
        batch_size=16,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[TerminateOnNaN(raise_error=raise_error), backup],
    )
    with np.errstate(all="ignore"):
        if raise_error:
            with pytest.raises(
                RuntimeError,
                match=r"non-finite loss \(nan\) at epoch 1, "
                r"step 3",
            ):
                model.fit(x, y, **fit)
        else:
            with pytest.warns(RuntimeWarning, match="NaN or infinite"):
                model.fit(x, y, **fit)
    files = BackupAndRestore.backups(tmp_path / "bk")
    assert os.path.basename(files[0]) == "backup-0000000002.h5"
    assert all(np.isfinite(v).all() for v in nnkit.io.read_checkpoint(files[0])["model"].values())


def test_resuming_with_another_world_size_is_refused(tmp_path):
    model = make_model()
    with pytest.raises(RuntimeError):
        model.fit(
            *data(),
            batch_size=16,
            epochs=2,
            verbose=0,
            callbacks=[Crash(9), BackupAndRestore(tmp_path / "bk")],
        )
    path = BackupAndRestore.backups(tmp_path / "bk")[0]
    ckpt = nnkit.io.read_checkpoint(path)
    ckpt["extra"]["fit"]["world_size"] = 2
    nnkit.io.save_checkpoint(
        path,
        model=ckpt["model"],
        optimizer=ckpt["optimizer"],
        loader=ckpt["loader"],
        callbacks=ckpt["callbacks"],
        extra=ckpt["extra"],
        epoch=ckpt["epoch"],
        step=ckpt["step"],
    )
    with pytest.raises(ValueError, match="2 processes.*with 1"):
        make_model().fit(
            *data(),
            batch_size=16,
            epochs=2,
            verbose=0,
            callbacks=[BackupAndRestore(tmp_path / "bk")],
        )


def test_initial_epoch_continues_the_shuffle_order():
    # fit(epochs=2) then fit(initial_epoch=2, epochs=4) on the same model sees the
    # batches an uninterrupted fit(epochs=4) sees (same seed), without any backup
    x, y = data()
    x = np.arange(len(x), dtype=np.float32)[:, None].repeat(8, axis=1)  # sample ids
    order = {}
    for key, spans in (("straight", [(0, 4)]), ("split", [(0, 2), (2, 4)])):
        model = nnkit.Sequential([nn.Dense(3)])
        model.compile(lambda p: SGD(p, lr=0.0), "cross_entropy")
        firsts: list[float] = []
        for start, stop in spans:
            model.fit(
                x,
                y,
                batch_size=30,
                epochs=stop,
                initial_epoch=start,
                seed=5,
                verbose=0,
                callbacks=[_Batches(firsts)],
            )
        order[key] = firsts
    assert len(order["straight"]) == 16 and order["straight"] == order["split"]


class _Batches(Callback):
    """Records the first sample id of every training batch."""

    def __init__(self, out):
        super().__init__()
        self.out = out

    def on_train_batch_begin(self, batch, logs=None):
        pass

    def set_model(self, model):
        super().set_model(model)
        if "train_step" in vars(model):
            return
        original = model.train_step

        def train_step(batch):
            self.out.append(float(batch[0].numpy()[0, 0]))
            return original(batch)

        model.train_step = train_step


def test_save_load_then_initial_epoch_continues_exactly(tmp_path):
    # Keras's manual route: fit(epochs=2) -> model.save -> load into a new model ->
    # fit(initial_epoch=2, epochs=4) equals fit(epochs=4), Dropout and shuffling
    # included, given the loader's seed (the checkpoint restores the dropout stream)
    x, y = data()
    kwargs = dict(batch_size=16, verbose=0, shuffle=True, seed=3, validation_split=0.2)
    straight = make_model()
    straight.fit(x, y, epochs=4, **kwargs)
    first = make_model()
    first.fit(x, y, epochs=2, **kwargs)
    first.save(tmp_path / "model.h5")
    nnkit.manual_seed(99)  # another process
    second = make_model()
    nnkit.io.load_checkpoint(tmp_path / "model.h5", model=second, optimizer=second.optimizer)
    second.fit(x, y, epochs=4, initial_epoch=2, **kwargs)
    for key, value in straight.state_dict().items():
        np.testing.assert_array_equal(second.state_dict()[key].numpy(), value.numpy())


@pytest.mark.parametrize("crash_at", [4, 7, 12])
def test_steps_per_epoch_spanning_loader_epochs(tmp_path, crash_at):
    # 5 steps per epoch over a loader of 8 batches: epochs straddle the loader's epochs
    kwargs = {"steps_per_epoch": 5}
    straight = run(tmp_path, "a", fit_kwargs=kwargs)
    resumed = run(tmp_path, "b", crash_at=crash_at, save_freq=3, fit_kwargs=kwargs)
    assert_same(straight, resumed)
