"""Every user error: one line on stderr naming the key, exit status 2, no traceback."""
# ruff: noqa: E402  (the imports below need typer, skipped above when missing)

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("typer", reason="the CLI needs typer (pip install -e '.[dev]')")

from tests.cli.conftest import TINY, write_config


def assert_config_error(result, expected: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0], lines[0]


@pytest.mark.parametrize(
    "override, expected",
    [
        ("trian.epochs=1", "config error: trian: unknown key 'trian' (did you mean 'train'?)"),
        ("train.epochs=two", "config error: train.epochs: expected an integer"),
        (
            "model.layers[0].type=Dense2",
            "config error: model.layers[0].type: unknown layer 'Dense2' (did you mean 'Dense'?)",
        ),
        (
            "model.layers[0].unit=4",
            "config error: model.layers[0].unit: Dense has no argument 'unit' "
            "(did you mean 'units'?)",
        ),
        ("model.layers[0].units=-4", "config error: model.layers[0]: Dense(units=-4"),
        ("model.layers[1]={type: Dropout, p: 2}", "config error: model.layers[1]: Dropout(p=2)"),
        (
            "model.layers[0]={type: Conv2d, in_channels: 1}",
            "config error: model.layers[0]: Conv2d: missing a required argument: 'out_channels'",
        ),
        (
            "model.layers[0]={type: Conv2d, in_channels: 3, out_channels: 4, kernel_size: 3}",
            "config error: model: a batch of shape [64, 64] does not fit the model",
        ),
        (
            "model.input_shape=[1, 8, 8]",
            "config error: model.input_shape: [1, 8, 8] does not match",
        ),
        (
            "optimizer.name=adamm",
            "config error: optimizer.name: unknown optimizer 'adamm' (did you",
        ),
        ("optimizer.momentum=0.9", "config error: optimizer.momentum: Adam has no argument"),
        ("optimizer.lr=-1", "config error: optimizer: Adam(lr=-1): "),
        ("scheduler.name=StepLRR", "config error: scheduler.name: unknown scheduler 'StepLRR'"),
        ("scheduler.step_sise=2", "config error: scheduler.step_sise: StepLR has no argument"),
        ("loss=crossentropy", "config error: loss: unknown loss 'crossentropy' (did you mean"),
        ("metrics=[accuracy, acuracy]", "config error: metrics[1]: unknown metric 'acuracy'"),
        ("callbacks=[{type: EarlyStop}]", "config error: callbacks[0].type: unknown callback"),
        (
            "callbacks=[{type: EarlyStopping, patiense: 2}]",
            "config error: callbacks[0].patiense: EarlyStopping has no argument 'patiense'",
        ),
        (
            "data={name: csv, path: absent.csv}",
            "config error: data.path: file not found: absent.csv",
        ),
        ("data.name=mnist", "config error: data.name: unknown dataset 'mnist'"),
        ("device=tpu", "config error: device: "),
        ("train.epochs", "config error: --set: 'train.epochs': expected KEY.PATH=VALUE"),
        ("model.layers[5].units=2", "config error: model.layers[5]: index out of range"),
        (
            "model.layers[0].trainable=0",
            "config error: model.layers[0].trainable: expected true or false, got an integer",
        ),
        ("model.layers[0].name=3", "config error: model.layers[0].name: expected a string"),
    ],
)
def test_train_config_errors(cli, tiny_config, override, expected):
    assert_config_error(cli("train", tiny_config, "--set", override), expected)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("data: [\n", "config error: CONFIG: not valid YAML at line 2"),
        ("- a list\n", "config error: CONFIG: "),
        ("model: {layers: [ReLU]}\n", "config error: data: missing (required)"),
    ],
)
def test_malformed_config_files(cli, workdir, text, expected):
    (workdir / "bad.yaml").write_text(text)
    assert_config_error(cli("train", "bad.yaml"), expected)


def test_missing_config_file(cli, workdir):
    for command in (["train"], ["summary"], ["evaluate", "--checkpoint", "c.h5"]):
        assert_config_error(
            cli(*command, "absent.yaml"), "config error: CONFIG: file not found: absent.yaml"
        )


def test_checkpoint_errors(cli, trained, workdir):
    config, checkpoint = trained
    assert_config_error(
        cli("evaluate", config, "--checkpoint", "absent.h5"),
        "config error: --checkpoint: file not found: absent.h5",
    )
    (workdir / "junk.h5").write_text("not hdf5")
    assert_config_error(
        cli("evaluate", config, "--checkpoint", "junk.h5"),
        "config error: --checkpoint: junk.h5 is not an HDF5 file",
    )
    assert_config_error(
        cli("evaluate", config, "--checkpoint", checkpoint, "--set", "model.layers[0].units=16"),
        "model.0.weight: shape (32, 64) in the file, but (16, 64) is expected; refused "
        "before reading",
    )
    assert_config_error(
        cli("train", config, "--set", "model.layers[0].units=16", "--resume", checkpoint),
        "config error: --resume: ",
    )


def test_resume_with_another_optimizer_or_a_new_scheduler(cli, trained, workdir):
    config, checkpoint = trained
    result = cli("train", config, "--set", "optimizer.name=sgd", "--resume", checkpoint)
    assert_config_error(result, "config error: --resume: ")
    assert "optimizer.name: 'adam' -> 'sgd'" in result.stderr
    plain = write_config(workdir, {**TINY, "scheduler": None})
    assert cli("train", plain).exit_code == 0
    result = cli(
        "train",
        plain,
        "--set",
        "scheduler.name=ExponentialLR",
        "--set",
        "scheduler.gamma=0.5",
        "--resume",
        "run/last.h5",
    )
    assert_config_error(result, "config error: --resume: ")
    assert "scheduler" in result.stderr


def test_predict_input_errors(cli, trained, workdir):
    config, checkpoint = trained
    args = ["predict", config, "--checkpoint", checkpoint, "--input"]
    assert_config_error(cli(*args, "absent.npy"), "config error: --input: file not found")
    (workdir / "x.txt").write_text("1,2\n")
    assert_config_error(cli(*args, "x.txt"), "expected a .npy, .npz or .csv file")
    np.save(workdir / "x.npy", np.zeros((2, 63), np.float32))
    assert_config_error(
        cli(*args, "x.npy"),
        "config error: --input: samples of shape [63] "
        "do not fit the model, which takes samples of shape [64]",
    )
    np.savez(workdir / "x.npz", a=np.zeros(2), b=np.zeros(2))
    assert_config_error(cli(*args, "x.npz"), "name the input array 'x'")
    np.save(workdir / "ok.npy", np.zeros((2, 64), np.float32))
    assert_config_error(
        cli(*args, "ok.npy", "--output", "out.txt"),
        "config error: --output: out.txt: expected a .npy or .csv file name",
    )


def test_evaluate_needs_a_test_split(cli, trained, workdir):
    config, checkpoint = trained
    moons = write_config(workdir, {**TINY, "data": {"name": "moons", "test_size": 0}})
    assert_config_error(
        cli("evaluate", moons, "--checkpoint", checkpoint),
        "config error: data.test_size: no test split",
    )


@pytest.mark.parametrize("var", ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"])
def test_mpiexec_without_mpi4py_says_how_to_install(cli, tiny_config, monkeypatch, var):
    from nnkit.distributed import launch

    monkeypatch.setattr(launch, "_default", None)
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # as if not installed
    monkeypatch.setenv(var, "4")
    assert_config_error(cli("train", tiny_config), "pip install 'nnkit[distributed]'")


def test_one_process_under_mpiexec_is_fine(cli, tiny_config, monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "1")
    assert cli("train", tiny_config, "--dry-run").exit_code == 0
