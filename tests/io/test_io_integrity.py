"""Checksums on every dataset, verified at load, and temp files of killed saves removed."""
# ruff: noqa: E402  (the imports below need h5py, skipped above when missing)

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="nnkit.io needs h5py (pip install -e .)")

import nnkit
from nnkit import layers as L
from nnkit.io import (
    CheckpointError,
    load_checkpoint,
    load_weights,
    read_checkpoint,
    save_checkpoint,
    verify_checkpoint,
)
from nnkit.optim import Adam


@pytest.fixture
def saved(tmp_path):
    nnkit.manual_seed(0)
    model = nnkit.Sequential(L.Linear(6, 5), L.ReLU(), L.Linear(5, 2))
    opt = Adam(model.parameters(), lr=0.01)
    model(nnkit.randn(4, 6)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.h5"
    save_checkpoint(path, model=model, optimizer=opt, epoch=3, config="seed: 1\n")
    return path


def fresh():
    model = nnkit.Sequential(L.Linear(6, 5), L.ReLU(), L.Linear(5, 2))
    return model, Adam(model.parameters(), lr=0.01)


def flip(path, dataset, at=5, bit=0x40):
    """Flip one bit of a dataset's data, at the offset h5py reports for it."""
    with h5py.File(path, "r") as f:
        offset = f[dataset].id.get_offset()
    with open(path, "r+b") as f:
        f.seek(offset + at)
        byte = f.read(1)[0]
        f.seek(offset + at)
        f.write(bytes([byte ^ bit]))


def test_a_good_file_verifies(saved):
    summary = verify_checkpoint(saved)
    assert summary["format_version"] == 2 and summary["datasets"] > 10
    assert summary["bytes"] >= (6 * 5 + 5 + 5 * 2 + 2) * 4 * 3  # weights + Adam's moments


@pytest.mark.parametrize("dataset", ["model/0.weight", "optimizer/state/0/exp_avg", "model/2.bias"])
def test_a_flipped_bit_in_float_data_is_detected_everywhere(saved, dataset):
    flip(saved, dataset, at=1)
    where = dataset.replace("/", ".")
    pattern = rf"ckpt\.h5: {where}: checksum mismatch .*the data is damaged"
    for read in (
        lambda: verify_checkpoint(saved),
        lambda: read_checkpoint(saved),
        lambda: load_checkpoint(saved, model=fresh()[0], optimizer=fresh()[1]),
    ):
        with pytest.raises(CheckpointError, match=pattern):
            read()
    if dataset.startswith("model"):
        with pytest.raises(CheckpointError, match=pattern):
            load_weights(saved, fresh()[0])


def test_the_object_is_untouched_when_the_file_is_damaged(saved):
    flip(saved, "model/2.weight")
    model, opt = fresh()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with pytest.raises(CheckpointError):
        load_checkpoint(saved, model=model, optimizer=opt)
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[key])


def test_a_damaged_config_and_a_missing_checksum(saved, tmp_path):
    with h5py.File(saved, "a") as f:
        f.attrs["config"] = "seed: 2\n"
    with pytest.raises(CheckpointError, match="config attribute does not match its checksum"):
        read_checkpoint(saved, sections=[])
    other = tmp_path / "other.h5"
    save_checkpoint(other, epoch=1)
    with h5py.File(other, "a") as f:
        del f["epoch"].attrs["nnkit_crc32"]
    with pytest.raises(CheckpointError, match=r"other\.h5: epoch: has no checksum"):
        verify_checkpoint(other)


def test_version_1_files_load_but_cannot_be_verified(saved):
    with h5py.File(saved, "a") as f:  # what nnkit 0.1's first format wrote
        f.attrs["format_version"] = 1
        del f.attrs["config_crc32"]
        f.visititems(lambda _, node: node.attrs.pop("nnkit_crc32", None))
    model, opt = fresh()
    assert load_checkpoint(saved, model=model, optimizer=opt)["epoch"] == 3
    with pytest.raises(CheckpointError, match="format version 1, which carries no checksums"):
        verify_checkpoint(saved)


def test_sections_read_only_what_is_asked(saved):
    content = read_checkpoint(saved, sections=["epoch"])
    assert set(content) == {"attrs", "epoch"} and content["epoch"] == 3
    assert set(read_checkpoint(saved, sections=[])) == {"attrs"}


_BIG_SAVE = """
import sys, numpy as np, nnkit
state = {f"w{i}": np.ones((1024, 1024, 16), np.float32) for i in range(8)}  # 512 MiB
print("start", flush=True)
nnkit.io.save_checkpoint(sys.argv[1], extra=state)
"""


def test_temp_file_of_a_killed_save_is_removed_by_the_next_save(tmp_path):
    target = tmp_path / "big.h5"
    child = subprocess.Popen(
        [sys.executable, "-c", _BIG_SAVE, str(target)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline() == "start\n"
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") and p.stat().st_size > 2**20 for p in tmp_path.iterdir()):
        assert child.poll() is None and time.monotonic() < deadline, "the save was not caught"
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    [stale] = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert stale.name.startswith(f".big.h5.{child.pid}.") and not target.exists()
    live = tmp_path / f".other.h5.{os.getppid()}.abcd.tmp"  # a live process's write
    live.write_bytes(b"x")
    save_checkpoint(tmp_path / "small.h5", epoch=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["small.h5", live.name])
