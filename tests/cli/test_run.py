"""``nnkit train`` runs you can stop, kill and resume exactly, and the run folder they leave.

The signal tests run the real command in a subprocess, send SIGINT, SIGTERM or SIGKILL
at a random moment once training has started, resume with ``--resume auto``, and
compare the final checkpoint's weights and the history files with an uninterrupted
run's, bit for bit.
"""
# ruff: noqa: E402  (the imports below need typer, skipped above when missing)

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("typer", reason="the CLI needs typer (pip install -e '.[dev]')")
pytest.importorskip("h5py")

import nnkit
from tests.cli.conftest import write_config

SLOW = {  # a few seconds of training: 8 epochs of 225 steps, checkpoints every 25 steps
    "seed": 1,
    "data": {"name": "moons", "n_samples": 5000, "batch_size": 16, "validation_split": 0.1},
    "model": {
        "layers": [
            {"type": "Dense", "units": 128, "activation": "relu"},
            {"type": "Dropout", "p": 0.2},
            {"type": "Dense", "units": 128, "activation": "relu"},
            {"type": "Dense", "units": 2},
        ]
    },
    "optimizer": {"name": "adam", "lr": 0.005},
    "scheduler": {"name": "StepLR", "step_size": 1, "gamma": 0.7},
    "metrics": ["accuracy"],
    "train": {"epochs": 8, "verbose": 2},
    "output": {"dir": "run", "save_every": 25},
}


def nnkit_train(cwd: Path, *args: str, wait: bool = True) -> Any:
    command = [sys.executable, "-m", "nnkit.cli", "train", "cfg.yaml", *args]
    if wait:
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=180)
    return subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def outcome(run_dir: Path) -> tuple[dict, str, dict]:
    ckpt = nnkit.io.read_checkpoint(run_dir / "last.h5")
    history = json.loads((run_dir / "history.json").read_text())
    return ckpt["model"], (run_dir / "history.csv").read_text(), history


def assert_same(a, b):
    weights_a, csv_a, json_a = a
    weights_b, csv_b, json_b = b
    assert weights_a.keys() == weights_b.keys()
    for key in weights_a:
        np.testing.assert_array_equal(weights_a[key], weights_b[key], err_msg=key)
    assert csv_a == csv_b
    assert json_a == json_b


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The uninterrupted run of SLOW."""
    directory = tmp_path_factory.mktemp("straight")
    write_config(directory, SLOW, "cfg.yaml")
    result = nnkit_train(directory)
    assert result.returncode == 0, result.stderr
    return outcome(directory / "run")


def _wait_for_training(process: subprocess.Popen, checkpoints: Path) -> None:
    deadline = time.monotonic() + 60
    while not (checkpoints.is_dir() and any(checkpoints.glob("backup-*.h5"))):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "training did not start"
        time.sleep(0.01)


@pytest.mark.parametrize(
    "sig, seed", [(signal.SIGINT, 1), (signal.SIGTERM, 2), (signal.SIGKILL, 3), (signal.SIGKILL, 4)]
)
def test_signal_at_a_random_moment_then_resume_auto(tmp_path, straight, sig, seed):
    write_config(tmp_path, SLOW, "cfg.yaml")
    process = nnkit_train(tmp_path, wait=False)
    _wait_for_training(process, tmp_path / "run" / "checkpoints")
    time.sleep(random.Random(seed).uniform(0.0, 1.5))
    sent = time.monotonic()
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    took = time.monotonic() - sent
    assert not (tmp_path / "run" / "last.h5").exists(), "the signal came after training"
    if sig == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
    else:
        assert process.returncode == 128 + sig, err
        [line] = [x for x in err.splitlines() if x.startswith("Interrupted at ")]
        assert line.endswith("Resume with: nnkit train cfg.yaml --resume auto")
        assert took < 10
    resumed = nnkit_train(tmp_path, "--resume", "auto")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("resuming from run/checkpoints/backup-")
    log = (tmp_path / "run" / "train.log").read_text()
    assert "resuming from" in log and "Epoch 8/8" in log
    assert_same(straight, outcome(tmp_path / "run"))


def test_resume_extends_epochs_exactly_with_a_step_scheduler(workdir, cli):
    config = {
        **SLOW,
        "data": {**SLOW["data"], "n_samples": 300},
        "scheduler": {"name": "StepLR", "step_size": 2, "gamma": 0.5, "interval": "step"},
        "train": {"epochs": 4, "verbose": 0},
        "output": {"dir": "a"},
    }
    path = write_config(workdir, config, "cfg.yaml")
    assert cli("train", path).exit_code == 0
    assert cli("train", path, "--set", "output.dir=b", "--set", "train.epochs=2").exit_code == 0
    result = cli("train", path, "--set", "output.dir=b", "--resume", "auto")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("resuming from b/checkpoints/backup-")
    assert_same(outcome(workdir / "a"), outcome(workdir / "b"))
    rows = (workdir / "b" / "history.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["epoch", "0", "1", "2", "3"]


def test_jit_compile_changes_no_result_and_may_change_on_resume(workdir, cli, monkeypatch):
    """``train.jit_compile`` (default ``auto``: the training step compiled, 27 steps a
    epoch for 3 epochs) gives the run folder of an eager run bit for bit, and a run
    resumed with another setting ends as the uninterrupted one."""
    from nnkit.jit.compiler import CompiledFunction

    replays = []
    call = CompiledFunction.__call__

    def counted(self, *args, **kwargs):
        before = self.num_replays
        out = call(self, *args, **kwargs)
        replays.append(self.num_replays - before)
        return out

    monkeypatch.setattr(CompiledFunction, "__call__", counted)
    config = {
        **SLOW,
        "data": {**SLOW["data"], "n_samples": 600},
        "train": {"epochs": 3, "verbose": 0},
        "output": {"dir": "eager"},
    }
    path = write_config(workdir, config, "cfg.yaml")
    assert cli("train", path, "--set", "train.jit_compile=false").exit_code == 0
    assert replays == []
    assert cli("train", path, "--set", "output.dir=auto").exit_code == 0
    assert len(replays) == 81 and sum(replays) > 70  # train steps only, nearly all replays
    assert_same(outcome(workdir / "eager"), outcome(workdir / "auto"))
    assert cli("train", path, "--set", "output.dir=mixed", "--set", "train.epochs=2").exit_code == 0
    result = cli(
        "train", path, "--set", "output.dir=mixed", "--set", "train.jit_compile=true",
        "--resume", "auto",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert_same(outcome(workdir / "eager"), outcome(workdir / "mixed"))


def test_run_files_and_lines_with_a_metric_of_several_values(tmp_path):
    """The run folder's writers given a log with several values (a Precision with two
    thresholds, as a model compiled in Python logs it): history.json gets a list per
    epoch, the printed line the mean (as Keras's progress bar), curves.png a line each."""
    from nnkit.callbacks import History
    from nnkit.cli import run_folder
    from nnkit.cli.commands import _format_logs

    history = History()
    history.set_model(nnkit.Sequential(nnkit.nn.Linear(2, 2)))
    files = run_folder.RunFiles(history, tmp_path / "history.json")
    for epoch in range(2):
        logs = {"loss": 0.5 / (epoch + 1), "prec": np.array([0.25, 0.5 + epoch], np.float32)}
        history.on_epoch_end(epoch, logs)
        files.on_epoch_end(epoch, logs)
    saved = json.loads((tmp_path / "history.json").read_text())
    assert saved == {
        "epoch": [0, 1],
        "history": {"loss": [0.5, 0.25], "prec": [[0.25, 0.5], [0.25, 1.5]]},
    }
    assert _format_logs(logs, "test ") == "test loss: 0.2500 - test prec: 0.8750"
    line = run_folder.plot_curves(history.history, tmp_path / "curves.png")
    assert line in (
        f"plot: {tmp_path / 'curves.png'}",
        "plot: not drawn (matplotlib is not installed: pip install 'nnkit[plot]')",
    )


def test_run_folder_contents_and_final_lines(workdir, cli):
    config = {
        **SLOW,
        "data": {**SLOW["data"], "n_samples": 300},
        "train": {"epochs": 2, "verbose": 2},
        "output": {"dir": "run", "best": "best.h5"},
    }
    result = cli("train", write_config(workdir, config, "cfg.yaml"))
    assert result.exit_code == 0, result.output
    run = workdir / "run"
    names = {p.name for p in run.iterdir()}
    assert {
        "config.yaml",
        "history.csv",
        "history.json",
        "train.log",
        "checkpoints",
        "last.h5",
        "best.h5",
    } <= names
    lines = result.stdout.splitlines()
    assert "checkpoint: run/last.h5" in lines and "best: run/best.h5" in lines
    assert "history: run/history.csv, run/history.json" in lines
    assert "log: run/train.log" in lines
    try:
        import matplotlib  # noqa: F401

        assert "plot: run/curves.png" in lines and "curves.png" in names
        assert (run / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    except ImportError:
        assert any(line.startswith("plot: not drawn (matplotlib") for line in lines)
    resolved = nnkit.cli.config.load_config(workdir / "cfg.yaml")
    assert (run / "config.yaml").read_text() == resolved.text
    assert (run / "train.log").read_text().splitlines() == lines
    history = json.loads((run / "history.json").read_text())
    assert history["epoch"] == [0, 1] and len(history["history"]["val_accuracy"]) == 2
    assert len(list((run / "checkpoints").glob("backup-*.h5"))) == 2  # output.keep


def test_print_config_creates_nothing(workdir, cli):
    path = write_config(workdir, SLOW, "cfg.yaml")
    result = cli("train", path, "--print-config", "--set", "train.epochs=3")
    assert result.exit_code == 0, result.output
    import yaml

    printed = yaml.safe_load(result.stdout)
    assert printed["train"]["epochs"] == 3 and printed["output"]["keep"] == 2
    assert printed["data"]["test_size"] == 0.2  # defaults filled in
    assert sorted(p.name for p in workdir.iterdir()) == ["cfg.yaml"]


def test_non_finite_loss_stops_with_exit_1_and_keeps_finite_checkpoints(workdir, cli):
    config = {
        **SLOW,
        "data": {**SLOW["data"], "n_samples": 300},
        "optimizer": {"name": "sgd", "lr": 1.0e12},
        "scheduler": None,
        "output": {"dir": "run", "save_every": 1},
    }
    with np.errstate(all="ignore"):
        result = cli("train", write_config(workdir, config, "cfg.yaml"))
    assert result.exit_code == 1, result.output
    [line] = [x for x in result.stderr.splitlines() if x.startswith("non-finite loss")]
    assert line.startswith("non-finite loss (nan) at epoch 1, step ") or line.startswith(
        "non-finite loss (inf) at epoch 1, step "
    )
    assert not (workdir / "run" / "last.h5").exists()
    for path in (workdir / "run" / "checkpoints").glob("backup-*.h5"):
        assert all(np.isfinite(v).all() for v in nnkit.io.read_checkpoint(path)["model"].values())


def test_changed_config_on_resume(workdir, cli):
    config = {
        **SLOW,
        "data": {**SLOW["data"], "n_samples": 300},
        "scheduler": None,
        "train": {"epochs": 1, "verbose": 0},
    }
    path = write_config(workdir, config, "cfg.yaml")
    assert cli("train", path).exit_code == 0
    result = cli(
        "train",
        path,
        "--resume",
        "auto",
        "--set",
        "model.layers[0].units=64",
        "--set",
        "optimizer.lr=0.001",
        "--set",
        "train.epochs=2",
    )
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert message.startswith("config error: --resume: the config differs")
    assert "model.layers[0].units: 128 -> 64" in message
    assert "optimizer.lr: 0.005 -> 0.001" in message and "train.epochs" not in message
    result = cli(
        "train",
        path,
        "--resume",
        "auto",
        "--set",
        "optimizer.lr=0.001",
        "--set",
        "train.epochs=2",
        "--allow-change",
        "optimizer.lr",
    )
    assert result.exit_code == 0, result.output
    assert "accepted change (--allow-change): optimizer.lr: 0.005 -> 0.001" in result.stdout
    assert "optimizer.lr: 0.005 -> 0.001" in (workdir / "run" / "changes.log").read_text()
    groups = nnkit.io.read_checkpoint(workdir / "run" / "last.h5")["optimizer"]["param_groups"]
    assert groups[0]["lr"] == 0.001
    history = json.loads((workdir / "run" / "history.json").read_text())
    assert history["epoch"] == [0, 1]


def test_resume_auto_without_checkpoints_starts_fresh(workdir, cli):
    config = {
        **SLOW,
        "data": {**SLOW["data"], "n_samples": 200},
        "train": {"epochs": 1, "verbose": 0},
    }
    result = cli("train", write_config(workdir, config, "cfg.yaml"), "--resume", "auto")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "--resume auto: no checkpoint in run/checkpoints; starting fresh"
    )


def flip_byte(path: Path, dataset: str = "model/0.weight") -> None:
    import h5py

    with h5py.File(path, "r") as f:
        offset = f[dataset].id.get_offset()
    with open(path, "r+b") as f:
        f.seek(offset + 3)
        byte = f.read(1)[0]
        f.seek(offset + 3)
        f.write(bytes([byte ^ 0x10]))


def test_verify_and_resume_auto_fall_back_from_a_damaged_checkpoint(workdir, cli):
    config = {
        **SLOW,
        "data": {**SLOW["data"], "n_samples": 300},
        "train": {"epochs": 2, "verbose": 0},
        "output": {"dir": "a", "save_every": 4},
    }
    path = write_config(workdir, config, "cfg.yaml")
    assert cli("train", path).exit_code == 0
    assert cli("train", path, "--set", "output.dir=b", "--set", "train.epochs=1").exit_code == 0
    good = cli("verify", "b/last.h5")
    assert good.exit_code == 0 and good.stdout.startswith("ok: b/last.h5 (")
    newest, previous = nnkit.callbacks.BackupAndRestore.backups(workdir / "b" / "checkpoints")
    flip_byte(Path(newest))
    bad = cli("verify", newest)
    assert bad.exit_code == 1
    assert bad.stderr.startswith(f"damaged: {newest}") and "model" in bad.stderr
    result = cli("train", path, "--set", "output.dir=b", "--resume", "auto")
    assert result.exit_code == 0, result.output
    shown = os.path.relpath(newest, workdir)
    assert f"WARNING: the checkpoint {shown} is damaged" in result.stderr
    assert os.path.exists(newest + ".damaged")
    assert result.stdout.startswith(f"resuming from {os.path.relpath(previous, workdir)}")
    assert_same(outcome(workdir / "a"), outcome(workdir / "b"))


def test_second_sigint_aborts_at_once_keeping_the_last_checkpoint(tmp_path):
    wide = [{"type": "Dense", "units": 2048, "activation": "relu"}] * 2 + [
        {"type": "Dense", "units": 2}
    ]  # steps of ~0.2 s: the second signal lands in one
    config = {
        **SLOW,
        "data": {**SLOW["data"], "batch_size": 512},
        "model": {"layers": wide},
        "output": {"dir": "run", "save_every": 1},
    }
    write_config(tmp_path, config, "cfg.yaml")
    process = nnkit_train(tmp_path, wait=False)
    checkpoints = tmp_path / "run" / "checkpoints"
    _wait_for_training(process, checkpoints)
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        # signals that arrive within one long C call coalesce into one: repeat until
        # a second one is seen
        process.send_signal(signal.SIGINT)
        time.sleep(0.02)
    _, err = process.communicate(timeout=60)
    # 130 from the abort; a later SIGINT of the loop above may kill it while it exits
    assert process.returncode in (130, -signal.SIGINT), err
    assert "Aborted: the last complete checkpoint is kept. Resume with: " in err
    assert "Traceback" not in err
    newest = nnkit.callbacks.BackupAndRestore.latest(checkpoints)
    assert newest is not None and not list(checkpoints.glob(".*.tmp"))


def test_resume_with_another_number_of_processes_is_refused(workdir, cli):
    config = {
        **SLOW,
        "data": {**SLOW["data"], "n_samples": 200},
        "train": {"epochs": 1, "verbose": 0},
    }
    path = write_config(workdir, config, "cfg.yaml")
    assert cli("train", path).exit_code == 0
    ckpt = nnkit.io.read_checkpoint("run/last.h5")
    ckpt["extra"]["fit"]["world_size"] = 2
    nnkit.io.save_checkpoint(
        "two.h5",
        model=ckpt["model"],
        optimizer=ckpt["optimizer"],
        loader=ckpt["loader"],
        callbacks=ckpt["callbacks"],
        extra=ckpt["extra"],
        epoch=ckpt["epoch"],
        step=ckpt["step"],
        config=ckpt["attrs"]["config"],
    )
    result = cli("train", path, "--set", "train.epochs=2", "--resume", "two.h5")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "config error: --resume: two.h5 was written by a run of 2 process(es); resume it "
        "with mpiexec -n 2 nnkit train, not with 1 (each process's batches, and so the "
        "weights, would differ)"
    )
