import gzip
import subprocess
import sys

import numpy as np
import pytest

from nnkit.data import datasets
from nnkit.data.datasets import (
    Split,
    from_csv,
    from_npz,
    load_digits,
    load_idx,
    make_moons,
    make_spirals,
    save_idx,
)


def test_load_digits_split():
    split = load_digits(test_size=0.25, seed=1)
    assert isinstance(split, Split)
    x_train, y_train, x_test, y_test = split
    assert x_train.dtype == x_test.dtype == np.float32 and y_train.dtype == np.int64
    assert len(x_train) + len(x_test) == 1797 and len(x_test) == 450
    assert x_train.shape[1] == 64 and 0.0 <= x_train.min() and x_train.max() <= 1.0
    again = load_digits(test_size=0.25, seed=1)
    np.testing.assert_array_equal(again.y_test, y_test)
    images = load_digits(test_size=100, flatten=False, scale=False)
    assert images.x_test.shape == (100, 1, 8, 8) and images.x_test.max() == 16.0


def test_load_digits_errors(monkeypatch):
    with pytest.raises(ValueError, match="fraction must lie in"):
        load_digits(test_size=1.5)
    with pytest.raises(ValueError, match="empty train or test split"):
        load_digits(test_size=0)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match="pip install scikit-learn"):
        load_digits()


def test_importing_data_is_light():
    code = (
        "import sys, nnkit.data; "
        "print(any(m.split('.')[0] in ('sklearn', 'torch') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_make_moons():
    state = np.random.get_state()[1].copy()
    x, y = make_moons(101, noise=0.05, seed=0)
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # global RNG untouched
    assert x.shape == (101, 2) and x.dtype == np.float32 and np.bincount(y).tolist() == [50, 51]
    np.testing.assert_array_equal(make_moons(101, noise=0.05, seed=0)[0], x)
    clean, labels = make_moons(100, seed=3)
    outer = clean[labels == 0]
    np.testing.assert_allclose(np.hypot(outer[:, 0], outer[:, 1]), 1.0, atol=1e-6)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 2, got 1"):
        make_moons(1)
    with pytest.raises(ValueError, match="noise must be non-negative"):
        make_moons(10, noise=-1.0)


def test_make_spirals():
    x, y = make_spirals(100, 3, noise=0.1, seed=0)
    assert x.shape == (100, 2) and np.bincount(y).tolist() == [34, 33, 33]
    assert np.all(np.hypot(x[:, 0], x[:, 1]) <= 1.0 + 1e-6)
    np.testing.assert_array_equal(make_spirals(100, 3, noise=0.1, seed=0)[1], y)
    with pytest.raises(ValueError, match="n_classes"):
        make_spirals(10, 1)


def _write(path, text):
    path.write_text(text)
    return path


def test_from_csv_by_name_and_index(tmp_path):
    path = _write(tmp_path / "iris.csv", "a,b,label\n1.0,2,0\n\n3,4.5,2\n")
    x, y = from_csv(path, target="label")
    assert x.dtype == np.float32 and x.tolist() == [[1.0, 2.0], [3.0, 4.5]]
    assert y.dtype == np.int64 and y.tolist() == [0, 2]
    x, y = from_csv(path, target=1)
    assert x.tolist() == [[1.0, 0.0], [3.0, 2.0]] and y.dtype == np.float32
    assert y.tolist() == [2.0, 4.5]
    assert from_csv(path, target=-3)[1].dtype == np.int64
    x, none = from_csv(path, target=None)
    assert x.shape == (2, 3) and none is None


def test_from_csv_header_modes(tmp_path):
    path = _write(tmp_path / "plain.tsv", "1\t2\n3\t4\n")
    x, y = from_csv(path, delimiter="\t")
    assert x.tolist() == [[1.0], [3.0]] and y.tolist() == [2, 4]
    x, y = from_csv(path, delimiter="\t", header=True)
    assert x.tolist() == [[3.0]]
    with pytest.raises(ValueError, match="header must be"):
        from_csv(path, header="yes")


@pytest.mark.parametrize(
    "text, kwargs, error, message",
    [
        ("a,b\n1,2\n3,\n", {}, ValueError, r"bad.csv line 3, column 2 \('b'\): missing value ''"),
        ("a,b\n1,2\n3,nan\n", {}, ValueError, "line 3, column 2 .*missing value 'nan'"),
        ("1,2\n3,x7\n", {}, ValueError, r"bad.csv line 2, column 2: non-numeric value 'x7'"),
        ("a,b\n1,2\n3,4,5\n", {}, ValueError, "line 3 has 3 fields, expected 2"),
        ("a,b\n", {}, ValueError, "has no data rows"),
        ("", {}, ValueError, "has no data rows"),
        ("a,b\n1,2\n", {"target": "c"}, KeyError, r"no column 'c'; columns are \['a', 'b'\]"),
        ("1,2\n", {"target": "b"}, KeyError, "has no header row"),
        ("1,2\n", {"target": 2}, IndexError, "target column 2 is out of range"),
    ],
)
def test_from_csv_errors(tmp_path, text, kwargs, error, message):
    path = _write(tmp_path / "bad.csv", text)
    with pytest.raises(error, match=message):
        from_csv(path, **kwargs)


def test_from_npz(tmp_path):
    path = tmp_path / "d.npz"
    np.savez(path, x=np.ones((3, 2), np.float32), y=np.arange(3), other=np.zeros(4))
    x, y = from_npz(path)
    assert x.shape == (3, 2) and y.tolist() == [0, 1, 2]
    assert from_npz(path, y_key=None)[1] is None
    with pytest.raises(KeyError, match=r"no array 'z'; it holds \['other', 'x', 'y'\]"):
        from_npz(path, x_key="z")
    with pytest.raises(ValueError, match="'x' has 3 rows but 'other' has shape"):
        from_npz(path, y_key="other")
    np.savez(path, x=np.zeros((0, 2)), y=np.zeros(0))
    with pytest.raises(ValueError, match="empty"):
        from_npz(path)


@pytest.mark.parametrize("suffix", ["", ".gz"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_idx_round_trip(tmp_path, suffix, dtype):
    images = (np.arange(5 * 4 * 3) % 250).astype(dtype).reshape(5, 4, 3)
    labels = np.arange(5, dtype=np.uint8)
    save_idx(tmp_path / f"img{suffix}", images)
    save_idx(tmp_path / f"lbl{suffix}", labels)
    x, y = load_idx(tmp_path / f"img{suffix}", tmp_path / f"lbl{suffix}")
    assert x.dtype == np.dtype(dtype) and x.dtype.isnative
    np.testing.assert_array_equal(x, images)
    np.testing.assert_array_equal(y, labels)
    assert load_idx(tmp_path / f"lbl{suffix}").shape == (5,)


def test_idx_reads_the_mnist_layout_written_by_hand(tmp_path):
    header = bytes([0, 0, 0x08, 3]) + (2).to_bytes(4, "big") + (2).to_bytes(4, "big") * 2
    body = bytes(range(8))
    (tmp_path / "images-idx3-ubyte.gz").write_bytes(gzip.compress(header + body))
    labels = bytes([0, 0, 0x08, 1]) + (2).to_bytes(4, "big") + bytes([7, 3])
    (tmp_path / "labels-idx1-ubyte").write_bytes(labels)
    big = bytes([0, 0, 0x0B, 1]) + (2).to_bytes(4, "big") + (258).to_bytes(2, "big") * 2
    (tmp_path / "big").write_bytes(big)
    x, y = load_idx(tmp_path / "images-idx3-ubyte.gz", tmp_path / "labels-idx1-ubyte")
    assert x.tolist() == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]] and y.tolist() == [7, 3]
    assert load_idx(tmp_path / "big").tolist() == [258, 258]


def _idx_bytes(tmp_path, data):
    path = tmp_path / "bad-idx"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x08\x03\x00\x00", r"wrong magic number 0x08030000"),
        (bytes([0, 0, 0x07, 1]), r"wrong magic number 0x00000701"),
        (bytes([0, 0]), "truncated header: expected at least 4 bytes, found 2"),
        (bytes([0, 0, 8, 3, 0, 0]), "truncated header: expected 16 bytes, found 6"),
        (
            bytes([0, 0, 8, 1, 0, 0, 0, 10]) + bytes(4),
            r"bad-idx: truncated body: expected 10 bytes of data for shape \(10,\), found 4",
        ),
        (bytes([0, 0, 8, 1, 0, 0, 0, 2]) + bytes(3), "trailing bytes: expected 2 bytes"),
        (bytes([0, 0, 8, 1, 0, 0, 0, 0]), "no items"),
        (b"\x1f\x8b\x08\x00garbage", "damaged gzip stream"),
    ],
)
def test_idx_errors(tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        load_idx(_idx_bytes(tmp_path, data))


def test_idx_truncated_gzip_body(tmp_path):
    full = bytes([0, 0, 8, 1, 0, 0, 0, 100]) + bytes(100)
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(full)[:-12])
    with pytest.raises(ValueError, match="cut.gz"):
        load_idx(path)


def test_idx_length_mismatch_and_save_errors(tmp_path):
    save_idx(tmp_path / "x", np.zeros((4, 2), np.uint8))
    save_idx(tmp_path / "y", np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match=r"x holds 4 items but .*y holds 3 labels"):
        load_idx(tmp_path / "x", tmp_path / "y")
    with pytest.raises(TypeError, match="cannot store dtype int64"):
        save_idx(tmp_path / "z", np.zeros(3, np.int64))
    with pytest.raises(FileNotFoundError):
        load_idx(tmp_path / "missing")


def test_datasets_namespace():
    assert set(datasets.__all__) >= {
        "load_digits",
        "make_moons",
        "make_spirals",
        "from_csv",
        "from_npz",
        "load_idx",
    }


def test_synthetic_seed_none_follows_manual_seed():
    import nnkit.random

    nnkit.random.manual_seed(4)
    a = make_spirals(30, 3)[0]
    nnkit.random.manual_seed(4)
    np.testing.assert_array_equal(make_spirals(30, 3)[0], a)
