"""Views share their base's Storage; in-place ops write through them, bump the version
counter, and keep gradients right."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit


def _base(device):
    return nnkit.arange(6, dtype=nnkit.float32, device=device).reshape(2, 3)


VIEWS = {
    "transpose": (lambda b: b.transpose(0, 1), (0, 1), (1, 0)),
    "T": (lambda b: b.T, (2, 0), (0, 2)),
    "permute": (lambda b: b.permute(1, 0), (1, 1), (1, 1)),
    "slice": (lambda b: b[:, 1:], (1, 0), (1, 1)),
    "step-slice": (lambda b: b[:, ::2], (0, 1), (0, 2)),
    "int-index": (lambda b: b[1], (2,), (1, 2)),
    "none-ellipsis": (lambda b: b[None, ..., 2], (0, 1), (1, 2)),
    "reshape": (lambda b: b.reshape(3, 2), (2, 1), (1, 2)),
    "view": (lambda b: b.view(6), (4,), (1, 1)),
    "flatten": (lambda b: b.flatten(), (3,), (1, 0)),
    "unsqueeze": (lambda b: b.unsqueeze(0), (0, 1, 1), (1, 1)),
    "squeeze": (lambda b: b.reshape(2, 1, 3).squeeze(1), (0, 2), (0, 2)),
    "unbind": (lambda b: b.unbind(1)[2], (0,), (0, 2)),
    "split": (lambda b: b.split(1, dim=0)[1], (0, 0), (1, 0)),
    "detach": (lambda b: b.detach(), (0, 0), (0, 0)),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_shares_storage_and_writes_show_in_base(name, device):
    fn, vidx, bidx = VIEWS[name]
    base = _base(device)
    v = fn(base)
    assert v.untyped_storage() is base.untyped_storage()
    before = base._version
    v[vidx] = -100.0
    assert base[bidx].item() == -100.0
    assert base._version == v._version == before + 1


def test_expand_is_a_view_and_read_only(device):
    base = nnkit.tensor([[1.0, 2.0, 3.0]], device=device)
    e = base.expand(4, 3)
    assert e.untyped_storage() is base.untyped_storage()
    assert e.stride() == (0, 1)
    with nnkit.no_grad():
        base[0, 1] = 9.0
    assert e[:, 1].tolist() == [9.0] * 4
    with pytest.raises(RuntimeError, match="expanded"):
        e.add_(1)


def test_writes_to_base_show_in_view(device):
    base = _base(device)
    v = base.T
    base.add_(10)
    assert v.tolist() == [[10.0, 13.0], [11.0, 14.0], [12.0, 15.0]]


@pytest.mark.parametrize(
    "fn",
    [
        lambda b: b.T.reshape(6),
        lambda b: b[:, ::2].reshape(4),
        lambda b: b.T.flatten(),
        lambda b: b[[0, 1]],
        lambda b: b[b > 2],
        lambda b: b.clone(),
        lambda b: b.T.contiguous(),
        lambda b: b.repeat(2, 1),
        lambda b: b.flip(0),  # torch's flip, fliplr, flipud and rot90 copy
        lambda b: b.fliplr(),
        lambda b: b.flipud(),
        lambda b: b.rot90(),
    ],
)
def test_copies_do_not_share_storage(fn, device):
    base = _base(device)
    c = fn(base)
    assert c.untyped_storage() is not base.untyped_storage()
    c.fill_(-1.0)
    assert base.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_reshape_of_non_contiguous_copies_values_in_logical_order(device):
    base = _base(device)
    r = base.T.reshape(6)
    assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert base.T.is_contiguous() is False and r.is_contiguous()


def test_contiguous_returns_self_when_contiguous(device):
    base = _base(device)
    assert base.contiguous() is base


# ------------------------------------------------------------- version counter
@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.add_(1),
        lambda t: t.sub_(1),
        lambda t: t.mul_(2),
        lambda t: t.div_(2),
        lambda t: t.zero_(),
        lambda t: t.fill_(3),
        lambda t: t.copy_(nnkit.ones(3)),
        lambda t: t.clamp_(0, 1),
        lambda t: t.__setitem__(0, 5.0),
        lambda t: t.__iadd__(1),
        lambda t: t.__imul__(2),
    ],
)
def test_every_inplace_op_bumps_the_version(op):
    t = nnkit.tensor([1.0, 2.0, 3.0])
    v = t[1:]
    before = t._version
    op(t)
    assert t._version == before + 1 and v._version == t._version


def test_out_of_place_ops_do_not_bump(device):
    t = nnkit.ones(3, device=device)
    _ = t + 1, t.T, t[1:], t.reshape(3, 1), t.clone()
    assert t._version == 0


# ------------------------------------------------------------- in place: values
def test_inplace_values(device):
    t = nnkit.tensor([1.0, -2.0, 3.0], device=device)
    assert t.add_(1) is t and t.tolist() == [2.0, -1.0, 4.0]
    t.sub_(nnkit.tensor([1.0, 1.0, 1.0], device=device), alpha=2)
    assert t.tolist() == [0.0, -3.0, 2.0]
    t.mul_(nnkit.tensor(2.0, device=device))
    assert t.tolist() == [0.0, -6.0, 4.0]
    t.div_(4)
    assert t.tolist() == [0.0, -1.5, 1.0]
    t.clamp_(min=-1.0)
    assert t.tolist() == [0.0, -1.0, 1.0]
    t.clamp_(max=0.5)
    assert t.tolist() == [0.0, -1.0, 0.5]
    t.add_(nnkit.tensor([1.0, 1.0, 1.0], device=device), alpha=0.5)
    assert t.tolist() == [0.5, -0.5, 1.0]
    t.copy_(nnkit.tensor([7, 8, 9], device=device))  # cast on copy
    assert t.tolist() == [7.0, 8.0, 9.0] and t.dtype == nnkit.float32
    t.fill_(2.5)
    assert t.tolist() == [2.5] * 3
    t.zero_()
    assert t.tolist() == [0.0] * 3


def test_inplace_broadcasts_other_but_not_self(device):
    t = nnkit.zeros(2, 3, device=device)
    t.add_(nnkit.tensor([1.0, 2.0, 3.0], device=device))
    assert t.tolist() == [[1.0, 2.0, 3.0]] * 2
    t.copy_(nnkit.tensor([[5.0], [6.0]], device=device))
    assert t.tolist() == [[5.0] * 3, [6.0] * 3]
    with pytest.raises(RuntimeError, match="broadcast"):
        nnkit.zeros(3, device=device).add_(nnkit.ones(2, 3, device=device))


def test_int_inplace_keeps_int(device):
    i = nnkit.tensor([1, 2], device=device)
    i += 3
    i.mul_(2)
    assert i.dtype == nnkit.int64 and i.tolist() == [8, 10]


def test_setitem_on_plain_tensor(device):
    t = nnkit.zeros(3, 4, device=device)
    t[1] = 1.0
    t[:, 0] = nnkit.tensor([7.0, 8.0, 9.0], device=device)
    t[2, 1:3] = nnkit.tensor([[4.0, 5.0]], device=device).reshape(2)
    t[t == 0] = -1.0
    t[nnkit.tensor([0, 0], device=device), nnkit.tensor([3, 2], device=device)] = 6.0
    assert t.tolist() == [[7.0, -1.0, 6.0, 6.0], [8.0, 1.0, 1.0, 1.0], [9.0, 4.0, 5.0, -1.0]]
    assert t._version == 5


# ------------------------------------------------------------- in place: gradients
def test_setitem_gradients_for_history_and_value(device):
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((3, 4))
    x = nnkit.tensor(xn, dtype=nnkit.float64, device=device, requires_grad=True)
    v = nnkit.tensor(rng.standard_normal(4), dtype=nnkit.float64, device=device, requires_grad=True)
    y = x * 2
    y[1] = v * 3
    assert y.grad_fn is not None
    (y * y).sum().backward()
    expect_x = 8 * xn
    expect_x[1] = 0.0  # overwritten: no gradient to x's history there
    np.testing.assert_allclose(x.grad.numpy(), expect_x)
    np.testing.assert_allclose(v.grad.numpy(), 18 * v.detach().numpy())


def test_setitem_advanced_index_gradient(device):
    x = nnkit.ones(2, 3, device=device, requires_grad=True)
    v = nnkit.tensor([5.0, 6.0], device=device, requires_grad=True)
    y = x * 1
    y[nnkit.tensor([0, 1], device=device), nnkit.tensor([2, 0], device=device)] = v
    (y * nnkit.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0, 0.0], [0.0, 5.0, 6.0]]
    assert v.grad.tolist() == [3.0, 4.0]


def test_setitem_scalar_value_gradient(device):
    x = nnkit.ones(3, device=device, requires_grad=True)
    y = x * 2
    y[0] = 0.0
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 2.0]


def test_setitem_value_requiring_grad_into_plain_tensor(device):
    buf = nnkit.zeros(3, device=device)
    v = nnkit.tensor(2.0, device=device, requires_grad=True)
    buf[1] = v
    assert buf.requires_grad and buf.grad_fn is not None
    (buf * 3).sum().backward()
    assert v.grad.item() == 3.0


@pytest.mark.parametrize(
    "op,dfdx",
    [
        (lambda y: y.add_(2), lambda x: np.ones_like(x)),
        (lambda y: y.sub_(2), lambda x: np.ones_like(x)),
        (lambda y: y.mul_(3), lambda x: 3 * np.ones_like(x)),
        (lambda y: y.div_(4), lambda x: np.full_like(x, 0.25)),
        (lambda y: y.zero_(), lambda x: np.zeros_like(x)),
        (lambda y: y.fill_(1.5), lambda x: np.zeros_like(x)),
        (lambda y: y.clamp_(-0.5, 0.5), lambda x: (np.abs(x) < 0.5).astype(float)),
        (lambda y: y.copy_(nnkit.ones(4, dtype=nnkit.float64)), lambda x: np.zeros_like(x)),
    ],
)
def test_inplace_gradients_through_non_leaf(op, dfdx):
    xn = np.array([-1.2, -0.3, 0.4, 2.0])
    x = nnkit.tensor(xn, dtype=nnkit.float64, requires_grad=True)
    y = x * 1  # a non-leaf
    out = op(y)
    assert out is y and y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), dfdx(xn))


def test_inplace_with_tensor_operand_gradients(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    w = nnkit.tensor([3.0, 4.0], device=device, requires_grad=True)
    y = x * 1
    y.mul_(w)
    y.add_(w, alpha=2)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]
    assert w.grad.tolist() == [3.0, 4.0]  # x + 2


def test_copy_into_plain_tensor_records_source_gradient(device):
    buf = nnkit.zeros(2, 2, device=device)
    src = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    buf.copy_(src)
    (buf * buf).sum().backward()
    assert src.grad.tolist() == [4.0, 8.0]


def test_inplace_chain_keeps_history(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x * x
    y.mul_(3).add_(1).sub_(x)  # y = 3x^2 + 1 - x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array([1.0, 2.0]) - 1, rtol=1e-6)


def test_inplace_on_output_saved_by_its_op_is_detected(device):
    x = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x.exp()  # Exp saves its output
    y.mul_(2)
    with pytest.raises(RuntimeError, match="ExpBackward"):
        y.sum().backward()


def test_inplace_under_no_grad_on_leaf_parameter(device):
    w = nnkit.ones(3, device=device, requires_grad=True)
    (w * 2).sum().backward()
    with nnkit.no_grad():
        w.sub_(w.grad, alpha=0.5)
        w[0] = 10.0
    assert w.tolist() == [10.0, 0.0, 0.0] and w.is_leaf and w.requires_grad


# ---- in-place on views inside the graph (replayed on the base, as PyTorch's CopySlices)
def test_inplace_on_view_updates_base_gradient(device):
    w = nnkit.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = w * 1.0
    y[1:].mul_(w[1:])
    (y * nnkit.tensor([1.0, 10.0, 100.0], device=device)).sum().backward()
    assert y.tolist() == [1.0, 4.0, 9.0]
    assert w.grad.tolist() == [1.0, 40.0, 600.0]


def test_augmented_assignment_on_slice(device):
    x = nnkit.zeros(2, 3, device=device)
    a = nnkit.tensor([5.0, 6.0], device=device, requires_grad=True)
    x[:, 1:2] += a.reshape(2, 1)
    (x * x).sum().backward()
    assert x.tolist() == [[0.0, 5.0, 0.0], [0.0, 6.0, 0.0]]
    assert a.grad.tolist() == [10.0, 12.0]


def test_copy_into_view_of_constant_buffer(device):
    a = nnkit.tensor([1.0, 2.0], device=device, requires_grad=True)
    buf = nnkit.zeros(2, 2, device=device)
    buf[1].copy_(a * 3)
    buf.sum().backward()
    assert buf.requires_grad and a.grad.tolist() == [3.0, 3.0]


def test_view_regains_history_after_inplace(device):
    x = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    y = x * 3
    v = y.T[0]  # view of a view: the first column of y
    v.add_(1)
    (v * v).sum().backward()
    assert v.tolist() == [4.0, 10.0]
    assert x.grad.tolist() == [[24.0, 0.0], [60.0, 0.0]]


def test_inplace_on_view_gradcheck(device):
    def fn(x, w):
        y = x * 1.0
        y[:, 1].mul_(w)
        y[0].add_(w.sum())
        return y

    x = nnkit.randn(3, 2, dtype=nnkit.float64, device=device, requires_grad=True)
    w = nnkit.randn(3, dtype=nnkit.float64, device=device, requires_grad=True)
    assert nnkit.autograd.gradcheck(fn, (x, w))
    assert nnkit.autograd.gradgradcheck(fn, (x, w))
