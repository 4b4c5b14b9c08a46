"""``optimizer: {keras: true, ...}``: nnkit.optimizers from the config, resumable."""

from __future__ import annotations

import numpy as np

from nnkit import io
from tests.cli.conftest import TINY, write_config

KERAS_ADAM = {
    "name": "adam",
    "keras": True,
    "learning_rate": 0.003,
    "gradient_accumulation_steps": 2,
}


def test_a_keras_optimizer_trains_and_resumes_exactly(workdir, cli):
    path = write_config(
        workdir, {**TINY, "optimizer": KERAS_ADAM, "train": {"epochs": 2, "verbose": 0}}
    )
    assert cli("train", path, "--set", "output.dir=straight").exit_code == 0
    first = cli("train", path, "--set", "output.dir=resumed", "--set", "train.epochs=1")
    assert first.exit_code == 0, first.output
    again = cli("train", path, "--set", "output.dir=resumed", "--resume", "auto")
    assert again.exit_code == 0, again.output
    a, b = (io.read_checkpoint(workdir / d / "last.h5") for d in ("straight", "resumed"))
    for key, value in a["model"].items():
        np.testing.assert_array_equal(b["model"][key], value, err_msg=key)
    assert a["optimizer"]["iterations"] > 0  # Keras's counter and moments were saved


def test_keras_arguments_are_checked(workdir, cli):
    bad = {**KERAS_ADAM, "lr": 0.1}  # nnkit.optim's name, not Keras's
    result = cli("train", write_config(workdir, {**TINY, "optimizer": bad}))
    assert result.exit_code == 2
    assert "optimizer" in result.output and "lr" in result.output
