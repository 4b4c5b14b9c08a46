"""Tensor factories against PyTorch: dtype inference and refused dtypes."""

from __future__ import annotations

import pytest

import nnkit

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.full((2,), 7),
        lambda m: m.full((2,), True),
        lambda m: m.full((2,), 0.5),
        lambda m: m.arange(3),
        lambda m: m.arange(0, 1, 0.5),
        lambda m: m.tensor([1, 2]),
        lambda m: m.tensor([1.0, 2.0]),
        lambda m: m.full_like(m.tensor([1, 2]), 2.7),
    ],
)
def test_factory_dtype_and_values_match_torch(make):
    got, want = make(nnkit), make(torch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_random_floats_refuse_integer_dtypes(name):
    for dtype in (nnkit.int64, nnkit.bool):
        with pytest.raises(RuntimeError, match="floating point"):
            getattr(nnkit, name)(2, dtype=dtype)
    with pytest.raises(RuntimeError, match="floating point"):
        getattr(nnkit, name + "_like")(nnkit.tensor([1, 2]))
    assert getattr(nnkit, name + "_like")(nnkit.tensor([1, 2]), dtype=nnkit.float64).dtype == (
        nnkit.float64
    )
