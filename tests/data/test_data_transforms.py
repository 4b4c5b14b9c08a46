import numpy as np
import pytest

import nnkit.data
from nnkit.data import Compose, minmax_scale, one_hot, standardize


def test_standardize():
    x = np.array([[1.0, 5.0], [3.0, 5.0]], np.float32)
    z = standardize(x)
    assert z.dtype == np.float32 and z.tolist() == [[-1.0, 0.0], [1.0, 0.0]]
    assert standardize(np.array([[4.0]]), mean=[2.0], std=[2.0]).tolist() == [[1.0]]
    assert standardize(np.array([1, 3])).dtype == np.float32
    assert standardize(x, axis=None).mean() == pytest.approx(0.0, abs=1e-6)


def test_minmax_scale():
    x = np.array([[0.0, 2.0], [10.0, 2.0], [5.0, 2.0]])
    assert minmax_scale(x).tolist() == [[0.0, 0.0], [1.0, 0.0], [0.5, 0.0]]
    assert minmax_scale(x, feature_range=(-1, 1))[:, 0].tolist() == [-1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="low < high"):
        minmax_scale(x, feature_range=(1, 1))


def test_one_hot():
    out = one_hot(np.array([[0, 2], [1, 1]]))
    assert out.shape == (2, 2, 3) and out.dtype == np.float32
    assert out[0, 1].tolist() == [0.0, 0.0, 1.0]
    assert one_hot([1], 4, dtype=np.int64).tolist() == [[0, 1, 0, 0]]
    with pytest.raises(ValueError, match="label 3 is out of range for num_classes=3"):
        one_hot([3], 3)
    with pytest.raises(ValueError, match="non-negative"):
        one_hot([-1], 3)
    with pytest.raises(TypeError, match="integers"):
        one_hot([0.5], 3)


def test_compose():
    pipeline = Compose([minmax_scale, lambda a: a * 2])
    assert pipeline(np.array([[0.0], [2.0]])).tolist() == [[0.0], [2.0]]
    assert "minmax_scale" in repr(pipeline)


def test_public_names():
    for name in nnkit.data.__all__:
        obj = getattr(nnkit.data, name)
        assert obj.__doc__, name
