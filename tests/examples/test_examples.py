"""The examples run, with tiny settings, and reach sensible results."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_digits_mlp_learns():
    accuracy = _load("train_digits_mlp").train(epochs=4, verbose=False)
    assert accuracy > 0.9


def test_fit_digits_cnn_learns(capsys):
    result = _load("fit_digits_cnn").main(epochs=4, verbose=0)
    assert result["accuracy"] > 0.8
