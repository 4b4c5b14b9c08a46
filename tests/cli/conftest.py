"""Fixtures for the command-line tests: a tiny digits config in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

TINY = {
    "seed": 0,
    "data": {"name": "digits", "batch_size": 64, "validation_split": 0.1},
    "model": {
        "layers": [
            {"type": "Dense", "units": 32, "activation": "relu"},
            {"type": "Dropout", "p": 0.1},
            {"type": "Dense", "units": 10},
        ]
    },
    "optimizer": {"name": "adam", "lr": 0.01},
    "scheduler": {"name": "StepLR", "step_size": 1, "gamma": 0.5},
    "loss": "cross_entropy",
    "metrics": ["accuracy"],
    "train": {"epochs": 1, "verbose": 0},
    "output": {"dir": "run", "checkpoint": "last.h5"},
}


def write_config(directory: Path, config: dict, name: str = "tiny.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A temporary current directory (outputs of the runs go there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def tiny_config(workdir):
    return write_config(workdir, TINY)


@pytest.fixture
def cli():
    """``cli(*args)`` runs the typer app in process and returns the click Result."""
    from typer.testing import CliRunner

    from nnkit.cli import app

    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(app, [str(a) for a in args])

    return invoke


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """A checkpoint of the tiny config trained for one epoch (shared, read-only)."""
    from nnkit.cli import app

    directory = tmp_path_factory.mktemp("trained")
    config = write_config(directory, {**TINY, "output": {"dir": str(directory / "run")}})
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["train", str(config)])
    assert result.exit_code == 0, result.output
    return config, directory / "run" / "last.h5"
