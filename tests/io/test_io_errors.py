"""Every error branch of nnkit.io, and atomic writes under failure."""
# ruff: noqa: E402  (the imports below need h5py, skipped above when missing)

import os
import stat
import zlib

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
    save_weights,
)
from nnkit.layers import NotBuiltError
from nnkit.optim import SGD


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "ckpt.h5"
    save_checkpoint(path, model=L.Linear(3, 2), epoch=1)
    return path


def _leftovers(directory):
    return [name for name in os.listdir(directory) if name.endswith(".tmp")]


# ---------------------------------------------------------------- atomic writes
@pytest.mark.parametrize("exc", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_failed_write_leaves_target_untouched_and_no_temp_file(saved, monkeypatch, exc):
    before = saved.read_bytes()
    real, calls = h5py.Group.create_dataset, []

    def failing(self, name, *args, **kwargs):
        calls.append(name)
        if len(calls) == 3:  # midway: some datasets are already written
            raise exc
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(h5py.Group, "create_dataset", failing)
    with pytest.raises(type(exc)):
        save_checkpoint(saved, model=L.Linear(5, 5), epoch=2)
    assert saved.read_bytes() == before and _leftovers(saved.parent) == []
    monkeypatch.undo()
    assert load_checkpoint(saved, model=L.Linear(3, 2))["epoch"] == 1


def test_failed_rename_removes_temp_file(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("EXDEV")))
    with pytest.raises(OSError, match="EXDEV"):
        save_weights(tmp_path / "w.h5", L.Linear(2, 2))
    assert os.listdir(tmp_path) == []


def test_overwrite_replaces_whole_file_and_keeps_mode(saved):
    os.chmod(saved, 0o640)
    save_checkpoint(saved, epoch=7)
    assert read_checkpoint(saved)["epoch"] == 7 and "model" not in read_checkpoint(saved)
    assert stat.S_IMODE(os.stat(saved).st_mode) == 0o640 and _leftovers(saved.parent) == []


def test_new_file_gets_ordinary_permissions(tmp_path):
    save_weights(tmp_path / "w.h5", L.Linear(2, 2))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "w.h5").st_mode) == 0o666 & ~umask


def test_unstorable_extra_fails_without_creating_a_file(tmp_path):
    with pytest.raises(TypeError, match=r"extra\.fn: cannot store a value of type function"):
        save_checkpoint(tmp_path / "c.h5", extra={"fn": lambda: None})
    assert os.listdir(tmp_path) == []


def test_missing_directory_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError):
        save_weights(tmp_path / "no" / "w.h5", L.Linear(2, 2))


# ---------------------------------------------------------------- unbuilt lazy models
@pytest.mark.parametrize(
    "save",
    [lambda p, m: save_checkpoint(p, model=m), lambda p, m: save_weights(p, m)],
    ids=["save_checkpoint", "save_weights"],
)
def test_unbuilt_lazy_model_raises_before_creating_a_file(tmp_path, save):
    model = nnkit.Sequential(L.Dense(4), L.ReLU())
    with pytest.raises(NotBuiltError, match=r"Dense\(units=4\) has not been built yet"):
        save(tmp_path / "m.h5", model)
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- unreadable files
def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "absent.h5"
    for load in (read_checkpoint, load_checkpoint, lambda p: load_weights(p, L.Linear(1, 1))):
        with pytest.raises(FileNotFoundError, match="absent.h5") as info:
            load(path)
        assert info.value.filename == str(path)


def test_directory_is_not_a_checkpoint(tmp_path):
    with pytest.raises(IsADirectoryError, match="found a directory"):
        read_checkpoint(tmp_path)


def test_non_hdf5_file(tmp_path):
    path = tmp_path / "notes.h5"
    path.write_text("epoch: 3\n")
    with pytest.raises(CheckpointError, match=r"notes\.h5 is not an HDF5 file \(or is damaged\)"):
        load_checkpoint(path, model=L.Linear(3, 2))


def test_hdf5_file_not_written_by_nnkit(tmp_path):
    path = tmp_path / "keras.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("model_weights/dense/kernel", data=np.ones((3, 2)))
    with pytest.raises(CheckpointError, match=r"keras\.h5 was not written by nnkit"):
        load_weights(path, L.Linear(3, 2))


@pytest.mark.parametrize(
    "version, match",
    [
        (3, r"format version 3 \(written by nnkit 9\.9\), newer than the version 2"),
        (0, "invalid format_version 0"),
        ("one", "invalid format_version 'one'"),
    ],
)
def test_bad_format_versions(saved, version, match):
    with h5py.File(saved, "a") as f:
        f.attrs["format_version"] = version
        f.attrs["nnkit_version"] = "9.9"
    with pytest.raises(CheckpointError, match=match) as info:
        read_checkpoint(saved)
    assert str(saved) in str(info.value)


@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.95])
def test_truncated_file(saved, fraction):
    data = saved.read_bytes()
    saved.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(CheckpointError, match=r"ckpt\.h5 .*(damaged|truncated)"):
        load_checkpoint(saved, model=L.Linear(3, 2))


def test_damaged_object_header_is_reported_at_read_time(saved):
    data = bytearray(saved.read_bytes())
    last = data.rindex(b"OHDR")  # the header of an object inside the file, not the root
    data[last : last + 4] = b"XXXX"
    saved.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"ckpt\.h5 is damaged or truncated \("):
        read_checkpoint(saved)


def test_damaged_text_is_reported(saved):
    with h5py.File(saved, "a") as f:
        data = np.frombuffer(b"\xff\xfe", np.uint8)
        f.create_dataset("extra", data=data)
        f["extra"].attrs["nnkit_type"] = "str"
        f["extra"].attrs["nnkit_crc32"] = np.int64(zlib.crc32(data.tobytes()))
    with pytest.raises(CheckpointError, match="damaged or truncated .*utf-8"):
        read_checkpoint(saved)


# ---------------------------------------------------------------- missing sections, mismatches
def test_checkpoint_without_model_group(tmp_path):
    path = tmp_path / "opt.h5"
    save_checkpoint(path, optimizer=SGD(L.Linear(2, 2).parameters(), lr=0.1), epoch=1)
    with pytest.raises(
        CheckpointError,
        match=r"opt\.h5 has no 'model/' group \(it holds: "
        r"optimizer, rng, epoch\)",
    ):
        load_checkpoint(path, model=L.Linear(2, 2))
    with pytest.raises(CheckpointError, match="has no 'model/' group"):
        load_weights(path, L.Linear(2, 2))


def test_weights_file_has_no_optimizer_or_scheduler(tmp_path):
    path = tmp_path / "w.h5"
    save_weights(path, L.Linear(2, 2))
    opt = SGD(L.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(CheckpointError, match=r"has no 'optimizer/', 'scheduler/' group"):
        load_checkpoint(path, optimizer=opt, scheduler=nnkit.optim.lr_scheduler.StepLR(opt, 1))


def test_strict_model_mismatch_lists_every_key(tmp_path):
    save_weights(tmp_path / "w.h5", nnkit.Sequential(L.Linear(3, 2), L.ReLU(), L.Linear(2, 1)))
    model = nnkit.Sequential(L.Linear(4, 2), L.Linear(2, 1))
    with pytest.raises(
        RuntimeError,
        match=r"(?s)Missing key\(s\) in state_dict: \"1\.weight\", "
        r"\"1\.bias\".*Unexpected key\(s\) in state_dict: "
        r"\"2\.weight\", \"2\.bias\".*size mismatch for "
        r"0\.weight",
    ):
        load_checkpoint(tmp_path / "w.h5", model=model)
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight") as info:
        load_weights(tmp_path / "w.h5", model, strict=False)
    assert "Missing" not in str(info.value)


def test_optimizer_mismatch_is_reported(tmp_path):
    model = L.Linear(2, 2)
    save_checkpoint(tmp_path / "c.h5", optimizer=SGD(model.parameters(), lr=0.1))
    other = nnkit.optim.Adam(model.parameters())
    with pytest.raises(ValueError, match="optimizer SGD, but this optimizer is Adam"):
        load_checkpoint(tmp_path / "c.h5", optimizer=other)


class _Callback:
    def __init__(self):
        self.state = {"wait": 0}

    def state_dict(self):
        return dict(self.state)

    def load_state_dict(self, state):
        self.state = dict(state)


def test_callbacks_missing_from_file_start_fresh(saved):
    # a callback added since the checkpoint has no state: it is skipped, not an error
    cb = _Callback()
    cb.state = {"wait": 7}
    info = load_checkpoint(saved, callbacks={"early": cb})
    assert info["callbacks_restored"] == [] and cb.state == {"wait": 7}
    save_checkpoint(saved, callbacks={"other": _Callback(), "early": _Callback()})
    removed = _Callback()
    info = load_checkpoint(saved, callbacks={"early": cb, "new": removed})
    assert info["callbacks_restored"] == ["early"] and cb.state == {"wait": 0}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"config": 3}, "config must be YAML text or a mapping, got int"),
        ({"optimizer": object()}, "optimizer: expected an object with state_dict"),
        ({"callbacks": {"x": 1}}, r"callbacks\['x'\]: expected an object with state_dict"),
    ],
)
def test_bad_save_arguments(tmp_path, kwargs, match):
    with pytest.raises(TypeError, match=match):
        save_checkpoint(tmp_path / "c.h5", **kwargs)
    assert os.listdir(tmp_path) == []
