"""``clamp``, ``hardtanh`` and ``relu6`` of integer tensors against PyTorch, where the op
table does not reach: an integer tensor clamped by a float number takes the default float
dtype (not NumPy's float64); ``hardtanh``/``relu6`` keep the integer dtype."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("lo", "hi"), [(2.5, 7), (2, 7.5), (2.5, None), (None, 7.5), (2, 7)], ids=str
)
def test_clamp_of_integer_tensor_by_numbers_matches_torch_dtype(lo, hi):
    values = [1, 5, 9]
    got = nnkit.clamp(nnkit.tensor(values), lo, hi)
    want = torch.clamp(torch.tensor(values), lo, hi)
    assert str(got.dtype).rsplit(".", 1)[-1] == str(want.dtype).rsplit(".", 1)[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    ("name", "args"), [("hardtanh", ()), ("hardtanh", (-1.5, 1.5)), ("relu6", ())], ids=str
)
def test_hardtanh_and_relu6_keep_an_integer_dtype_as_torch(name, args):
    values = [-2, 0, 2, 7]
    got = getattr(nnkit.nn.functional, name)(nnkit.tensor(values), *args)
    want = getattr(torch.nn.functional, name)(torch.tensor(values), *args)
    assert str(got.dtype).rsplit(".", 1)[-1] == str(want.dtype).rsplit(".", 1)[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
