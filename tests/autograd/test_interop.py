"""Interoperability: NumPy's array protocol and DLPack exchange."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit


def test_numpy_asarray_and_from_numpy_share_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = nnkit.from_numpy(a)
    a[0, 0] = 10.0
    assert t[0, 0].item() == 10.0
    assert np.asarray(t) is a or np.shares_memory(np.asarray(t), a)


def test_dlpack_from_numpy_shares_memory():
    a = np.arange(4.0, dtype=np.float32)
    t = nnkit.from_dlpack(a)
    a[1] = 7.0
    assert t.tolist() == [0.0, 7.0, 2.0, 3.0]
    assert t.dtype == nnkit.float32


def test_dlpack_round_trip_with_numpy():
    t = nnkit.arange(5)
    back = np.from_dlpack(t)
    assert back.tolist() == [0, 1, 2, 3, 4]


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    tt = torch.arange(4.0)
    t = nnkit.from_dlpack(tt)
    tt[0] = 9.0
    assert t.tolist() == [9.0, 1.0, 2.0, 3.0]
    assert torch.from_dlpack(nnkit.ones(3)).tolist() == [1.0, 1.0, 1.0]
