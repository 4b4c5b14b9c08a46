"""``nnkit export CONFIG --checkpoint CK --output M.onnx``: the file predicts the classes
``nnkit predict`` prints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the onnx package is not installed")
ort = pytest.importorskip("onnxruntime", reason="the onnxruntime package is not installed")

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "digits_mlp.yaml"


@pytest.fixture
def cli():
    from typer.testing import CliRunner

    from nnkit.cli import app

    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def test_cli_export_predicts_like_nnkit_predict(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trained = cli(
        "train",
        CONFIG,
        "--set",
        "train.epochs=1",
        "--set",
        "train.verbose=0",
        "--set",
        f"output.dir={tmp_path / 'run'}",
    )
    assert trained.exit_code == 0, trained.output
    checkpoint = tmp_path / "run" / "last.h5"
    x = np.random.default_rng(0).random((50, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)

    exported = cli("export", CONFIG, "--checkpoint", checkpoint, "--output", "digits.onnx")
    assert exported.exit_code == 0, exported.output
    assert "digits.onnx" in exported.output

    predicted = cli("predict", CONFIG, "--checkpoint", checkpoint, "--input", "x.npy")
    assert predicted.exit_code == 0, predicted.output
    classes = [int(line) for line in predicted.output.split()]

    session = ort.InferenceSession(
        str(tmp_path / "digits.onnx"), providers=["CPUExecutionProvider"]
    )
    logits = session.run(None, {session.get_inputs()[0].name: x})[0]
    assert logits.shape == (50, 10)
    assert logits.argmax(axis=1).tolist() == classes


def test_cli_export_rejects_a_wrong_suffix_and_a_missing_checkpoint(cli, tmp_path):
    result = cli(
        "export", CONFIG, "--checkpoint", tmp_path / "none.h5", "--output", tmp_path / "m.txt"
    )
    assert result.exit_code == 2 and ".onnx" in result.output
    result = cli(
        "export", CONFIG, "--checkpoint", tmp_path / "none.h5", "--output", tmp_path / "m.onnx"
    )
    assert result.exit_code == 2 and "not found" in result.output
    assert not (tmp_path / "m.onnx").exists()
