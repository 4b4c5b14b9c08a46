"""In-place ops whose result is floating refuse an integer tensor, as in PyTorch
(they used to truncate silently: ``tensor([1, 2]).sqrt_()`` gave ``[1, 1]``)."""

from __future__ import annotations

import pytest

import nnkit

torch = pytest.importorskip("torch")

OPS = {
    "sqrt_": lambda t: t.sqrt_(),
    "exp_": lambda t: t.exp_(),
    "sigmoid_": lambda t: t.sigmoid_(),
    "tanh_": lambda t: t.tanh_(),
    "pow_half": lambda t: t.pow_(0.5),
}


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_float_result_into_int_tensor_raises(name, dtype):
    with pytest.raises(RuntimeError, match="can't be cast"):
        OPS[name](torch.tensor([1, 4], dtype=getattr(torch, dtype)))
    x = nnkit.tensor([1, 4], dtype=dtype)
    with pytest.raises(RuntimeError, match="can't be cast"):
        OPS[name](x)
    assert x.tolist() == [1, 4]


@pytest.mark.parametrize(
    "fn",
    [lambda t: t.pow_(2), lambda t: t.neg_(), lambda t: t.relu_()],
    ids=["pow_2", "neg_", "relu_"],
)
def test_integer_results_still_work_in_place(fn):
    x = nnkit.tensor([-1, 3])
    assert fn(x) is x
    assert x.tolist() == fn(torch.tensor([-1, 3])).tolist()
