"""Ops on hostile input: torch's answer or a clear error naming the op (issue 11).

Each case once answered silently wrong (NaN where torch is finite, wrapped negative
indices) or with a bare NumPy error; torch is the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit.autograd.function import ShapeError

torch = pytest.importorskip("torch")
tF = torch.nn.functional
INF = float("inf")


def both(data, dtype=np.float32):
    array = np.asarray(data, dtype=dtype)
    return (nnkit.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True))


def assert_close(ours, theirs):
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-7, equal_nan=True
    )


@pytest.mark.parametrize("how", ["cross_entropy", "nll_of_log_softmax", "masked_fill"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_with_minus_inf_logits_is_finite(how, dtype):
    logits = [[-INF, 1.0, 2.0], [0.5, -INF, -1.0], [3.0, 0.0, -INF]]
    target = [1, 2, 0]
    mask = [[True, False, False], [False, True, False], [False, False, True]]
    a, b = both(logits if how != "masked_fill" else np.ones((3, 3)), dtype)
    ta, tb = nnkit.tensor(target), torch.tensor(target)
    if how == "cross_entropy":
        ours, theirs = F.cross_entropy(a, ta), tF.cross_entropy(b, tb)
    elif how == "nll_of_log_softmax":
        ours = F.nll_loss(F.log_softmax(a, 1), ta)
        theirs = tF.nll_loss(torch.log_softmax(b, 1), tb)
    else:  # the usual attention / vocabulary mask
        ours = F.cross_entropy(a.masked_fill(nnkit.tensor(mask), -INF), ta)
        theirs = tF.cross_entropy(b.masked_fill(torch.tensor(mask), -INF), tb)
    assert np.isfinite(ours.item())
    assert_close(ours, theirs)
    ours.backward()
    theirs.backward()
    assert np.isfinite(a.grad.numpy()).all()
    assert_close(a.grad, b.grad)


def test_cross_entropy_with_a_masked_logit_passes_gradcheck():
    x = nnkit.tensor(
        np.random.default_rng(0).normal(size=(4, 5)), dtype=nnkit.float64, requires_grad=True
    )
    mask = nnkit.tensor(np.eye(4, 5, k=1, dtype=bool))
    target = nnkit.tensor([0, 1, 2, 3])
    assert nnkit.autograd.gradcheck(
        lambda x: F.cross_entropy(x.masked_fill(mask, -INF), target), (x,)
    )


def test_integer_logits_are_refused():
    with pytest.raises(TypeError, match="cross_entropy: expected floating-point logits, got int64"):
        F.cross_entropy(nnkit.tensor([[1, 2]]), nnkit.tensor([0]))
    with pytest.raises(RuntimeError):
        tF.cross_entropy(torch.tensor([[1, 2]]), torch.tensor([0]))


@pytest.mark.parametrize("bad", [-1, 2, 7])
def test_out_of_range_indices_raise_naming_the_op(bad):
    x = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
    src = nnkit.ones(2, 2)
    cases = {
        "gather": lambda i: x.gather(1, nnkit.tensor([[i, 0], [0, 1]])),
        "index_select": lambda i: nnkit.index_select(x, 0, nnkit.tensor([0, i])),
        "scatter_add": lambda i: nnkit.scatter_add(x, 0, nnkit.tensor([[i, 0]]), src),
        "index_add": lambda i: nnkit.index_add(x, 1, nnkit.tensor([i, 1]), src),
    }
    for op, call in cases.items():
        with pytest.raises(
            IndexError,
            match=rf"{op}: index {bad} is out of bounds for "
            r"dimension \d with size 2 \(valid indices: 0 "
            "to 1\\)",
        ):
            call(bad)
    with pytest.raises((IndexError, RuntimeError)):
        torch.tensor([[1.0, 2.0]]).gather(1, torch.tensor([[bad, 0]]))


def test_where_needs_a_boolean_condition():
    with pytest.raises(TypeError, match="where: condition must be a boolean tensor, got float32"):
        nnkit.where(nnkit.tensor([1.0, 0.0]), nnkit.tensor([1.0, 2.0]), nnkit.tensor([3.0, 4.0]))
    with pytest.raises(RuntimeError):
        torch.where(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))


def test_transpose_of_a_0d_tensor():
    scalar = nnkit.tensor(3.0)
    assert scalar.transpose(0, -1).item() == 3.0  # dims 0 and -1 exist, as in torch
    with pytest.raises(IndexError, match=r"transpose: dimension 1 out of range"):
        scalar.transpose(0, 1)
    with pytest.raises(IndexError):
        torch.tensor(3.0).transpose(0, 1)


@pytest.mark.parametrize("data", [[INF, 1.0], [1.0, INF], [-INF, -INF], [-INF, 1.0], [np.nan, 1.0]])
def test_softmax_and_log_softmax_of_infinities(data):
    a, b = both(data)
    assert_close(F.softmax(a, 0), torch.softmax(b, 0))
    assert_close(F.log_softmax(a, 0), torch.log_softmax(b, 0))


def test_cat_of_0d_tensors_is_a_clear_error():
    with pytest.raises(ShapeError, match=r"cat: tensors\[0\] is zero-dimensional"):
        nnkit.cat([nnkit.tensor(1.0), nnkit.tensor(2.0)])
    with pytest.raises(RuntimeError):
        torch.cat([torch.tensor(1.0), torch.tensor(2.0)])


@pytest.mark.parametrize("groups", [1, 3])
def test_conv2d_on_an_empty_batch(groups):
    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 3 // groups, 3, 3)).astype(np.float32)
    x, tx = both(np.zeros((0, 3, 8, 8)))
    wa, wb = both(w)
    ours = F.conv2d(x, wa, padding=1, stride=2, groups=groups)
    theirs = tF.conv2d(tx, wb, padding=1, stride=2, groups=groups)
    assert ours.shape == tuple(theirs.shape) == (0, 6, 4, 4)
    ours.sum().backward()
    theirs.sum().backward()
    assert x.grad.shape == (0, 3, 8, 8)
    assert_close(wa.grad, wb.grad)  # zeros


def test_where_keeps_a_nan_gradient_out_of_the_unselected_branch():
    torch = pytest.importorskip("torch")
    for lib in (nnkit, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        out = lib.where(lib.tensor([True, False]), a, b)
        (out * lib.tensor([float("nan"), 1.0])).sum().backward()
        assert [bool(v) for v in lib.isnan(a.grad)] == [True, False]
        assert a.grad[1].item() == 0.0 and b.grad[0].item() == 0.0
