"""The installed ``nnkit`` console script and ``python -m nnkit.cli``, in real processes."""
# ruff: noqa: E402  (the imports below need typer, skipped above when missing)

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("typer", reason="the CLI needs typer (pip install -e '.[dev]')")

import nnkit
from tests.cli.conftest import TINY, write_config

HEAVY = (
    "nnkit.layers",
    "nnkit.optim",
    "nnkit.data",
    "nnkit.io",
    "nnkit.training",
    "nnkit.callbacks",
    "nnkit.cli.commands",
    "nnkit.cli.config",
    "h5py",
    "yaml",
    "sklearn",
)


def _nnkit_command() -> list[str]:
    script = Path(sys.executable).with_name("nnkit")
    found = script if script.is_file() else shutil.which("nnkit")
    return [str(found)] if found else [sys.executable, "-m", "nnkit.cli"]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*_nnkit_command(), *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_version_is_printed_without_importing_the_toolkit():
    code = (
        "import sys\nfrom nnkit.cli import main\nsys.argv = ['nnkit', '--version']\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    version_line, modules_line = result.stdout.splitlines()
    assert version_line == f"nnkit {nnkit.__version__}"
    assert modules_line == "[]"


def test_python_dash_m_version():
    result = subprocess.run(
        [sys.executable, "-m", "nnkit.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stdout.strip() == f"nnkit {nnkit.__version__}"


def test_console_script_trains_then_evaluates(tmp_path):
    if _nnkit_command()[0] == sys.executable:
        pytest.skip("the nnkit console script is not installed (pip install -e .)")
    config = write_config(tmp_path, TINY)
    trained = _run("train", str(config), "--set", "train.epochs=1", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert "test accuracy: " in trained.stdout
    evaluated = _run("evaluate", str(config), "--checkpoint", "run/last.h5", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    test_line = next(line for line in trained.stdout.splitlines() if line.startswith("test "))
    assert evaluated.stdout.splitlines()[-1] == test_line


def test_config_error_in_a_real_process(tmp_path):
    config = write_config(tmp_path, TINY)
    result = _run("train", str(config), "--set", "model.layers[0].type=Dense2", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "config error: model.layers[0].type: unknown layer 'Dense2' (did you mean 'Dense'?)\n"
    )
    assert result.stdout == ""
