"""cat/stack/hstack promote mixed dtypes as PyTorch does (a float dtype wins over ints)."""

from __future__ import annotations

import pytest

import nnkit

torch = pytest.importorskip("torch")

PAIRS = [
    ("int64", "float32"),
    ("int32", "float16"),
    ("bool", "int64"),
    ("uint8", "int8"),
    ("float32", "float64"),
    ("bool", "float32"),
    ("int16", "int32"),
]


@pytest.mark.parametrize("a,b", PAIRS)
@pytest.mark.parametrize("op", ["cat", "stack", "hstack", "vstack"])
def test_join_promotes_like_torch(op, a, b):
    xs = [nnkit.tensor([1, 0], dtype=a), nnkit.tensor([0, 1], dtype=b)]
    ts = [
        torch.tensor([1, 0], dtype=getattr(torch, a)),
        torch.tensor([0, 1], dtype=getattr(torch, b)),
    ]
    got = getattr(nnkit, op)(xs)
    want = getattr(torch, op)(ts)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    assert got.tolist() == want.tolist()
