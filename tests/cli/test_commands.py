"""train / evaluate / predict / summary on the digits data, in process (CliRunner)."""
# ruff: noqa: E402  (the imports below need typer, skipped above when missing)

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("typer", reason="the CLI needs typer (pip install -e '.[dev]')")

import nnkit
from tests.cli.conftest import TINY, write_config


def test_train_writes_a_checkpoint_and_prints_test_accuracy(cli, tiny_config, workdir):
    result = cli("train", tiny_config, "--set", "train.epochs=2")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("epoch 2/2: loss: ")
    assert "test accuracy: " in lines[1] and "(360 test samples)" in lines[1]
    assert float(lines[1].split("test accuracy: ")[1].split()[0]) > 0.5
    assert lines[2] == "checkpoint: run/last.h5"
    info = nnkit.io.read_checkpoint(workdir / "run" / "last.h5")
    assert info["epoch"] == 1
    assert {"model", "optimizer", "callbacks", "loader", "rng"} <= set(info)
    assert info["callbacks"]["LearningRateScheduler"]["scheduler"]["last_epoch"] == 2
    assert "epochs: 2" in info["attrs"]["config"]  # the effective config, overrides applied


def test_a_layer_frozen_in_the_config_stays_as_it_was_made(cli, workdir):
    """Keras's ``trainable`` (and ``name``) keywords of any layer, in ``model.layers``:
    the frozen layer's weights come out of training as they went in, through a resume
    too (the PyTorch-style optimizer is made over the trainable parameters only)."""
    layers = [{**TINY["model"]["layers"][0], "trainable": False, "name": "features"}]
    config = {**TINY, "model": {"layers": layers + TINY["model"]["layers"][1:]}}
    path = write_config(workdir, config, "frozen.yaml")
    assert cli("train", path).exit_code == 0
    first = nnkit.io.read_checkpoint(workdir / "run" / "last.h5")["model"]
    assert cli("train", path, "--set", "train.epochs=2", "--resume", "auto").exit_code == 0
    second = nnkit.io.read_checkpoint(workdir / "run" / "last.h5")["model"]
    frozen = [k for k in first if k.startswith("0.")]
    assert frozen and all(np.array_equal(first[k], second[k]) for k in frozen)
    assert not np.array_equal(first["2.weight"], second["2.weight"])


def test_evaluate_reproduces_the_test_metrics(cli, trained):
    config, checkpoint = trained
    first = cli("evaluate", config, "--checkpoint", checkpoint)
    second = cli("evaluate", config, "--checkpoint", checkpoint)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("test loss: ") and "test accuracy: " in first.stdout
    assert first.stdout == second.stdout


def test_predict_prints_classes_and_writes_outputs(cli, trained, workdir):
    config, checkpoint = trained
    x = nnkit.data.datasets.load_digits().x_test[:4]
    np.save(workdir / "x.npy", x)
    printed = cli("predict", config, "--checkpoint", checkpoint, "--input", "x.npy")
    assert printed.exit_code == 0, printed.output
    labels = [int(line) for line in printed.stdout.split()]
    written = cli(
        "predict", config, "--checkpoint", checkpoint, "--input", "x.npy", "--output", "out.npy"
    )
    assert written.exit_code == 0, written.output
    outputs = np.load(workdir / "out.npy")
    assert outputs.shape == (4, 10)
    assert outputs.argmax(1).tolist() == labels


def test_predict_reads_csv_and_npz(cli, trained, workdir):
    config, checkpoint = trained
    x = nnkit.data.datasets.load_digits().x_test[:3]
    np.savetxt(workdir / "x.csv", x, delimiter=",")
    np.savez(workdir / "x.npz", x=x)
    results = [
        cli("predict", config, "--checkpoint", checkpoint, "--input", name)
        for name in ("x.csv", "x.npz")
    ]
    assert [r.exit_code for r in results] == [0, 0], results[0].output + results[1].output
    assert results[0].stdout == results[1].stdout and len(results[0].stdout.split()) == 3


def test_dry_run_prints_the_summary_and_writes_nothing(cli, tiny_config, workdir):
    result = cli("train", tiny_config, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "(None, 32)" in result.stdout and "Total params: 2,410" in result.stdout
    assert "dry run: the config is valid" in result.stdout
    assert not (workdir / "run").exists()


def test_summary_uses_input_shape_without_data(cli, workdir):
    config = {
        **TINY,
        "data": {"name": "csv", "path": "absent.csv"},
        "model": {
            "input_shape": [1, 8, 8],
            "layers": [
                {"type": "Conv2d", "in_channels": 1, "out_channels": 4, "kernel_size": 3},
                "Flatten",
                {"type": "Dense", "units": 10},
            ],
        },
    }
    result = cli("summary", write_config(workdir, config))
    assert result.exit_code == 0, result.output
    assert "(None, 4, 6, 6)" in result.stdout and "(None, 144)" in result.stdout


def test_resume_continues_from_the_stored_epoch(cli, tiny_config, workdir):
    assert cli("train", tiny_config).exit_code == 0
    first = nnkit.io.read_checkpoint("run/last.h5")["optimizer"]
    (workdir / "run" / "last.h5").rename(workdir / "first.h5")
    result = cli("train", tiny_config, "--set", "train.epochs=3", "--resume", "first.h5")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("resuming from first.h5 (after epoch 1)\nepoch 3/3: ")
    info = nnkit.io.read_checkpoint("run/last.h5")
    assert info["epoch"] == 2
    scheduler = info["callbacks"]["LearningRateScheduler"]["scheduler"]
    assert scheduler["last_epoch"] == 3  # StepLR stepped once per epoch, 3 in all
    optimizer = info["optimizer"]
    assert optimizer["param_groups"][0]["lr"] == pytest.approx(first["param_groups"][0]["lr"] / 4)
    assert optimizer["state"][0]["step"] == 3 * first["state"][0]["step"]  # Adam kept counting


def test_resume_at_the_last_epoch_trains_nothing(cli, trained):
    config, checkpoint = trained
    result = cli("train", config, "--resume", checkpoint)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("nothing to train: the checkpoint has 1 epochs")


@pytest.mark.parametrize(
    "name, extra, layers",
    [
        ("moons", {"n_samples": 64}, [{"type": "Dense", "units": 2}]),
        ("spirals", {"n_samples": 60, "n_classes": 3}, [{"type": "Dense", "units": 3}]),
    ],
)
def test_synthetic_datasets_train(cli, workdir, name, extra, layers):
    config = {
        **TINY,
        "scheduler": None,
        "data": {"name": name, **extra},
        "model": {"layers": layers},
    }
    result = cli("train", write_config(workdir, config))
    assert result.exit_code == 0, result.output
    assert "test accuracy" in result.stdout


def test_csv_and_npz_datasets_with_test_files(cli, workdir):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 3)), rng.integers(0, 2, size=40)
    np.savetxt("train.csv", np.column_stack([x, y]), delimiter=",")
    np.savez("train.npz", x=x, y=y)
    base = {**TINY, "scheduler": None, "model": {"layers": [{"type": "Dense", "units": 2}]}}
    for data in (
        {"name": "csv", "path": "train.csv", "test_path": "train.csv"},
        {"name": "npz", "path": "train.npz", "test_size": 0.25},
    ):
        result = cli("train", write_config(workdir, {**base, "data": data}))
        assert result.exit_code == 0, result.output
        samples = 40 if data["name"] == "csv" else 10
        assert f"({samples} test samples)" in result.stdout


def test_callbacks_write_inside_the_output_dir(cli, tiny_config, workdir):
    result = cli(
        "train",
        tiny_config,
        "--set",
        "callbacks=[{type: CSVLogger, filename: h.csv}]",
        "--set",
        "output.best=best.h5",
    )
    assert result.exit_code == 0, result.output
    assert (workdir / "run" / "h.csv").read_text().startswith("epoch,")
    assert (workdir / "run" / "best.h5").is_file()


@pytest.mark.parametrize("name", ["digits_mlp", "digits_cnn"])
def test_example_configs_train(cli, workdir, name):
    config = Path(__file__).resolve().parents[2] / "examples" / f"{name}.yaml"
    result = cli("train", config, "--set", "train.epochs=1", "--set", "train.verbose=0")
    assert result.exit_code == 0, result.output
    assert "test accuracy: " in result.stdout
    assert (workdir / "runs" / name / "last.h5").is_file()


def test_train_evaluate_predict_on_each_device(cli, tiny_config, workdir, device):
    result = cli("train", tiny_config, "--device", device)
    assert result.exit_code == 0, result.output
    assert "test accuracy: " in result.stdout
    np.save(workdir / "x.npy", np.zeros((3, 64), np.float32))
    for command in (["evaluate"], ["predict", "--input", "x.npy"]):
        result = cli(*command, tiny_config, "--checkpoint", "run/last.h5", "--device", device)
        assert result.exit_code == 0, result.output
