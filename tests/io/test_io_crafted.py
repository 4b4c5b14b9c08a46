"""Crafted checkpoints are refused before their data is read: bounded time and memory.

Each crafted file is loaded in a child process whose peak RSS and time are measured,
so a regression that reads (or allocates) a huge declared dataset fails here instead
of exhausting the machine.
"""
# ruff: noqa: E402  (the imports below need h5py, skipped above when missing)

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="nnkit.io needs h5py (pip install -e .)")

import nnkit
from nnkit import layers as L
from nnkit.io import save_checkpoint
from nnkit.optim import Adam

_LOAD = r"""
import json, resource, sys, time
import nnkit
from nnkit import layers as L
from nnkit.optim import Adam
nnkit.manual_seed(0)
model = nnkit.Sequential(L.Linear(8, 4), L.Linear(4, 2))
opt = Adam(model.parameters())
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    getattr(nnkit.io, sys.argv[2])(sys.argv[1], **({"model": model, "optimizer": opt}
                                   if sys.argv[2] == "load_checkpoint" else {}))
    error = None
except nnkit.io.CheckpointError as err:
    error = str(err)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
print(json.dumps({"error": error, "seconds": time.perf_counter() - t0, "peak_kib": peak}))
"""


@pytest.fixture
def good(tmp_path):
    nnkit.manual_seed(0)
    model = nnkit.Sequential(L.Linear(8, 4), L.Linear(4, 2))
    opt = Adam(model.parameters())
    model(nnkit.randn(3, 8)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.h5"
    save_checkpoint(path, model=model, optimizer=opt, epoch=1)
    return path


def load_in_child(path, how="load_checkpoint"):
    out = subprocess.run(
        [sys.executable, "-c", _LOAD, str(path), how], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["seconds"] < 5, result
    assert result["peak_kib"] < 64 * 1024, result  # nothing near the declared size
    return result["error"]


def replace(path, dataset, **create):
    with h5py.File(path, "a") as f:
        attrs = dict(f[dataset].attrs)
        del f[dataset]
        new = f.create_dataset(dataset, **create)
        new.attrs.update(attrs)


@pytest.mark.parametrize("elements", [2**29, 2**32, 2**40], ids=["2GiB", "16GiB", "2^40"])
@pytest.mark.parametrize("dataset", ["model/0.weight", "optimizer/state/0/exp_avg"])
def test_a_huge_declared_dataset_is_refused_before_reading(good, dataset, elements):
    replace(good, dataset, shape=(elements,), dtype="f4")
    error = load_in_child(good)
    where = dataset.replace("/", ".")
    assert error is not None and f"ckpt.h5: {where}: " in error
    assert "refused before reading" in error
    if dataset.startswith("optimizer"):
        assert load_in_child(good, "read_checkpoint") == error


def test_compressed_zeros_are_refused(good):
    replace(
        good,
        "optimizer/state/0/exp_avg",
        shape=(2**28,),
        dtype="f4",
        chunks=(2**20,),
        compression="gzip",
    )  # 1 GiB of zeros (the fill value) in a few bytes
    error = load_in_child(good)
    assert "optimizer.state.0.exp_avg: is stored through filter(s)" in error


def test_virtual_and_external_datasets_are_refused(good, tmp_path):
    source = tmp_path / "elsewhere.h5"
    with h5py.File(source, "w") as f:
        f["data"] = np.full((4, 8), 7.0, np.float32)
    layout = h5py.VirtualLayout(shape=(4, 8), dtype="f4")
    layout[:] = h5py.VirtualSource(str(source), "data", shape=(4, 8))
    with h5py.File(good, "a") as f:
        attrs = dict(f["model/0.weight"].attrs)
        del f["model/0.weight"]
        f.create_virtual_dataset("model/0.weight", layout).attrs.update(attrs)
    assert "model.0.weight: is a virtual dataset" in load_in_child(good)
    raw = tmp_path / "raw.bin"
    raw.write_bytes(np.ones(8, np.float32).tobytes())
    replace(good, "model/0.weight", shape=(4, 8), dtype="f4", external=[(str(raw), 0, 32 * 4)])
    assert "model.0.weight: keeps its data in external files" in load_in_child(good)


def test_cli_reports_a_crafted_checkpoint_in_one_line(good, tmp_path):
    typer = pytest.importorskip("typer")  # noqa: F841
    from typer.testing import CliRunner

    from nnkit.cli import app
    from tests.cli.conftest import TINY, write_config

    config = write_config(tmp_path, {**TINY, "output": {"dir": str(tmp_path / "run")}})
    assert CliRunner().invoke(app, ["train", str(config)]).exit_code == 0
    checkpoint = tmp_path / "run" / "last.h5"
    replace(checkpoint, "model/0.weight", shape=(2**40,), dtype="f4")
    started = time.monotonic()
    result = CliRunner().invoke(app, ["evaluate", str(config), "--checkpoint", str(checkpoint)])
    assert result.exit_code == 2 and time.monotonic() - started < 10
    [line] = result.stderr.splitlines()
    assert line.startswith("config error: --checkpoint: ") and "model.0.weight" in line
