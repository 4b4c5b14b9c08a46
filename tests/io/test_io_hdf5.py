"""The nested-dict <-> HDF5 mapping: exact round trips and refusal of foreign content."""
# ruff: noqa: E402  (the imports below need h5py, skipped above when missing)

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="nnkit.io needs h5py (pip install -e .)")

import nnkit
from nnkit.io import CheckpointError, read_checkpoint, save_checkpoint
from nnkit.io.hdf5 import read_value, write_value


def _roundtrip(tmp_path, value):
    path = tmp_path / "v.h5"
    with h5py.File(path, "w", track_order=True) as f:
        write_value(f, "v", value)
    with h5py.File(path, "r") as f:
        return read_value(f["v"])


def _assert_same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b) and [type(k) for k in a] == [type(k) for k in b]
        for key in a:
            _assert_same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    else:
        assert a == b or (a != a and b != b)


EDGE_CASES = {
    "none": None,
    "empty dict": {},
    "empty list": [],
    "empty tuple": (),
    "tuple vs list": {"t": (0.9, 0.999), "l": [0.9, 0.999], "nested": [(1, [2, (3,)])]},
    "bool vs int": {"b": True, "f": False, "i": 1, "z": 0, "nb": np.bool_(True)},
    "strings": {"s": "adam", "empty": "", "unicode": "λ → ∞ 日本", "nul": "a\x00b\x00"},
    "floats": {"inf": float("inf"), "nan": float("nan"), "neg": -0.0, "tiny": 5e-324},
    "big ints": {"pcg": 2**127 + 12345, "neg": -(2**100), "edge": 2**63 - 1, "low": -(2**63)},
    "0-d arrays": {"f": np.array(1.5, np.float32), "i": np.array(3), "b": np.array(True)},
    "numpy scalars": {"f16": np.float16(0.5), "u8": np.uint8(7), "c": np.complex64(1 - 2j)},
    "arrays": {
        "empty": np.zeros((0, 3)),
        "i8": np.arange(6, dtype=np.int8).reshape(2, 3),
        "bool": np.array([True, False]),
        "f64": np.linspace(0, 1, 7),
    },
    "int keys": {0: {"step": 1}, 1: {"step": 2}, -5: None, "name": "x"},
    "dotted keys": {"features.0.weight": np.ones(2), "a.b": {"c.d": 1}},
    "deep": {"a": {"b": {"c": {"d": [{"e": ()}]}}}},
}


@pytest.mark.parametrize("value", EDGE_CASES.values(), ids=EDGE_CASES.keys())
def test_nested_values_round_trip_exactly(tmp_path, value):
    _assert_same(value, _roundtrip(tmp_path, value))


def test_numpy_int64_keys_come_back_as_ints(tmp_path):
    back = _roundtrip(tmp_path, {np.int64(3): "a", np.int32(-1): "b"})
    assert back == {3: "a", -1: "b"} and all(type(k) is int for k in back)


def test_tensors_come_back_as_arrays_of_same_dtype(tmp_path):
    t = nnkit.tensor([[1, 2], [3, 4]], dtype=nnkit.int64)
    back = _roundtrip(tmp_path, {"t": t, "s": nnkit.tensor(2.5)})
    assert back["t"].dtype == np.int64 and np.array_equal(back["t"], t.numpy())
    assert back["s"].shape == () and back["s"].dtype == np.float32


def test_insertion_order_is_kept(tmp_path):
    value = {"z": 1, "a": 2, "m": {"y": 1, "b": 2}, "10": 3, "9": 4}
    back = _roundtrip(tmp_path, value)
    assert list(back) == list(value) and list(back["m"]) == ["y", "b"]


def test_long_lists_keep_numeric_order(tmp_path):
    assert _roundtrip(tmp_path, list(range(25))) == list(range(25))


@pytest.mark.parametrize(
    "value, error, match",
    [
        ({"a": object()}, TypeError, r"v\.a: cannot store a value of type object"),
        ({"a": np.array([1, "x"], dtype=object)}, TypeError, "dtype object"),
        ({"a": np.array(["x"])}, TypeError, "dtype <U1"),
        ({"k": {(1, 2): 0}}, TypeError, r"v\.k: dict key \(1, 2\) has type tuple"),
        ({True: 1}, TypeError, "is a bool"),
        ({"a/b": 1}, ValueError, "not a valid HDF5 name"),
        ({"": 1}, ValueError, "not a valid HDF5 name"),
        ({".": 1}, ValueError, "not a valid HDF5 name"),
        ({"1": 1, 1: 2}, ValueError, "both map to HDF5 name '1'"),
        ({2**70: 1}, ValueError, "does not fit in 64 bits"),
        ({"b": b"bytes"}, TypeError, "type bytes"),
    ],
)
def test_unstorable_values_raise_naming_the_location(tmp_path, value, error, match):
    with pytest.raises(error, match=match):
        _roundtrip(tmp_path, value)


def test_file_holds_no_object_or_pickled_data(tmp_path):
    model = nnkit.Sequential(nnkit.layers.Linear(3, 2), nnkit.layers.BatchNorm1d(2))
    opt = nnkit.optim.Adam(model.parameters(), amsgrad=True)
    model(nnkit.randn(4, 3)).sum().backward()
    opt.step()
    path = tmp_path / "c.h5"
    save_checkpoint(path, model=model, optimizer=opt, extra={"s": "text", "n": None})
    seen = []

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            seen.append(name)
            if obj.dtype.kind == "O":  # only nnkit's own UTF-8 strings may be variable-length
                assert h5py.check_string_dtype(obj.dtype).encoding == "utf-8"
                assert obj.attrs["nnkit_type"] in ("str", "bigint")
            else:
                assert obj.dtype.kind in "biufc", (name, obj.dtype)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    assert "model/0.weight" in seen and len(seen) > 20
    assert b"pickle" not in path.read_bytes() and b"\x80\x04\x95" not in path.read_bytes()


def _nnkit_file(path):
    f = h5py.File(path, "w")
    f.attrs.update(nnkit_format="nnkit-checkpoint", format_version=1, nnkit_version="0.1.0")
    return f


@pytest.mark.parametrize(
    "make, match",
    [
        (
            lambda f: f.create_dataset("extra", (2,), dtype=h5py.vlen_dtype(np.int32)),
            "dtype object is not read",
        ),
        (
            lambda f: f.create_dataset("extra", data=np.zeros(2, [("a", "i4"), ("b", "f8")])),
            "is not read",
        ),
        (
            lambda f: f.create_dataset("extra", data=np.array(["x"], dtype=h5py.string_dtype())),
            "is not read",
        ),
        (
            lambda f: f.create_dataset("extra", data=1).attrs.update(nnkit_type="pickle"),
            "unknown dataset type 'pickle'",
        ),
        (
            lambda f: f.create_group("extra").attrs.update(nnkit_type="set"),
            "unknown group type 'set'",
        ),
        (
            lambda f: (
                f.create_group("extra").attrs.update(nnkit_type="list")
                or f["extra"].create_dataset("1", data=1)
            ),
            "children 0..n-1",
        ),
        (
            lambda f: f.create_dataset("extra", data=[1, 2]).attrs.update(nnkit_type="int"),
            "must be a 0-d dataset",
        ),
        (
            lambda f: f.create_dataset("extra", data=h5py.Empty("f")).attrs.update(
                nnkit_type="int"
            ),
            "empty dataset cannot hold",
        ),
        (lambda f: f.__setitem__("extra", h5py.SoftLink("/elsewhere")), "SoftLink"),
        (
            lambda f: f.create_group("extra").__setitem__("x", h5py.ExternalLink("o.h5", "/")),
            "ExternalLink; links are not followed",
        ),
    ],
)
def test_foreign_content_is_refused(tmp_path, make, match):
    path = tmp_path / "foreign.h5"
    with _nnkit_file(path) as f:
        make(f)
    with pytest.raises(CheckpointError, match=match) as info:
        read_checkpoint(path)
    assert str(path) in str(info.value)


def test_plain_numeric_content_without_tags_reads_as_arrays(tmp_path):
    path = tmp_path / "plain.h5"
    with _nnkit_file(path) as f:
        f.create_group("model").create_dataset("w", data=np.eye(2))
    assert np.array_equal(read_checkpoint(path)["model"]["w"], np.eye(2))
