"""Deviations from PyTorch found while documenting the ops (issue 13), each compared
against torch: binary cross-entropy's gradient at 0 and 1, ``take_along_dim`` with
``dim=None``, ``mean``/``norm`` of integer tensors, unbatched convolutions, the error
class of a product's dtype mismatch, in-place dropout, and ``nanmedian``'s result name.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

DT = {"float32": (nnkit.float32, torch.float32), "float64": (nnkit.float64, torch.float64)}


def _np(t):
    return t.detach().cpu().numpy()


def _pair(a, dtype, device, grad=True):
    """The same values as an nnkit tensor (on ``device``) and a torch one."""
    nd, td = DT[dtype]
    n = nnkit.tensor(np.asarray(a), dtype=nd, device=device, requires_grad=grad)
    t = torch.tensor(np.asarray(a), dtype=td, requires_grad=grad)
    return n, t


def _close(got, want, dtype="float64"):
    rtol = 1e-5 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(_np(got), want.detach().numpy(), rtol=rtol, atol=0)


# ------------------------------------------------------ 1. binary_cross_entropy
# exact 0 and 1 inputs against every kind of target, and interior points
_BCE_X = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.25, 0.5, 0.9, 1e-3, 0.999, 0.3]
_BCE_T = [1.0, 0.0, 0.5, 1.0, 0.0, 0.5, 1.0, 0.0, 0.3, 1.0, 0.0, 0.3]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weight", [None, "row", "full"])
def test_bce_values_and_gradients_match_torch_at_0_and_1(dtype, reduction, weight, device):
    x, tx = _pair(np.reshape(_BCE_X, (3, 4)), dtype, device)
    t, tt = _pair(np.reshape(_BCE_T, (3, 4)), dtype, device)
    w = tw = None
    if weight is not None:
        shape = (4,) if weight == "row" else (3, 4)
        vals = np.linspace(0.5, 2.0, math.prod(shape)).reshape(shape)
        w, tw = _pair(vals, dtype, device, grad=False)
    got = F.binary_cross_entropy(x, t, weight=w, reduction=reduction)
    want = TF.binary_cross_entropy(tx, tt, weight=tw, reduction=reduction)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == DT[dtype][0]
    _close(got, want, dtype)
    g = np.linspace(1.0, 2.0, max(want.numel(), 1)).reshape(tuple(want.shape))
    got.backward(nnkit.tensor(g, dtype=DT[dtype][0], device=device))
    want.backward(torch.tensor(g, dtype=DT[dtype][1]))
    _close(x.grad, tx.grad, dtype)  # -1e12 at (x=0, t=1), 0 at (x=1, t=1), ...
    _close(t.grad, tt.grad, dtype)  # -logit(x): +-inf at 0 and 1
    assert np.isinf(_np(t.grad)[0, :2]).all()


def test_bce_gradient_at_0_and_1_is_torchs_not_the_clamped_derivative():
    x = nnkit.tensor([0.0, 1.0, 0.0, 1.0], requires_grad=True)
    F.binary_cross_entropy(x, nnkit.tensor([1.0, 1.0, 0.0, 0.0]), reduction="sum").backward()
    assert _np(x.grad).tolist() == [np.float32(-1e12), 0.0, 0.0, np.float32(1e12)]


def test_bce_double_backward_matches_torch_inside():
    vals, tv = [0.2, 0.5, 0.7], [1.0, 0.3, 0.0]
    x, tx = _pair(vals, "float64", "cpu")
    (gx,) = nnkit.autograd.grad(
        F.binary_cross_entropy(x, nnkit.tensor(tv, dtype=nnkit.float64), reduction="sum"),
        x,
        create_graph=True,
    )
    (tgx,) = torch.autograd.grad(
        TF.binary_cross_entropy(tx, torch.tensor(tv, dtype=torch.float64), reduction="sum"),
        tx,
        create_graph=True,
    )
    _close(gx, tgx)
    (ggx,) = nnkit.autograd.grad(gx.sum(), x)
    (tggx,) = torch.autograd.grad(tgx.sum(), tx)
    np.testing.assert_allclose(_np(ggx), tggx.numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    "x,t,what",
    [
        ([0.5, 1.5], [1.0, 0.0], "input"),
        ([0.5, -0.1], [1.0, 0.0], "input"),
        ([0.5, math.nan], [1.0, 0.0], "input"),
        ([0.5, 0.5], [1.0, 2.0], "target"),
        ([0.5, 0.5], [1.0, math.nan], "target"),
    ],
)
def test_bce_refuses_values_outside_0_1_like_torch(x, t, what, device):
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        TF.binary_cross_entropy(torch.tensor(x), torch.tensor(t))
    with pytest.raises(RuntimeError, match=f"binary_cross_entropy: all elements of {what}"):
        F.binary_cross_entropy(nnkit.tensor(x, device=device), nnkit.tensor(t, device=device))


def test_bce_refuses_integer_input_and_unbroadcastable_weight(device):
    with pytest.raises(RuntimeError):
        TF.binary_cross_entropy(torch.tensor([1, 0]), torch.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="binary_cross_entropy: expected input.*int64"):
        F.binary_cross_entropy(nnkit.tensor([1, 0], device=device), nnkit.tensor([1, 0]))
    x, t = nnkit.tensor([0.5, 0.2], device=device), nnkit.tensor([1.0, 0.0], device=device)
    with pytest.raises(nnkit.ShapeError, match=r"binary_cross_entropy: weight of shape \(3, 2\)"):
        F.binary_cross_entropy(x, t, weight=nnkit.ones(3, 2, device=device))


# ------------------------------------------------------ 2. take_along_dim
def test_take_along_dim_none_refuses_negative_indices_like_torch(device):
    x = np.array([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.take_along_dim(torch.tensor(x), torch.tensor([-1]))
    with pytest.raises(IndexError, match="take_along_dim: index -1 is out of bounds"):
        nnkit.take_along_dim(nnkit.tensor(x, device=device), nnkit.tensor([-1], device=device))
    idx = np.array([5, 0, 3])
    got = nnkit.take_along_dim(nnkit.tensor(x, device=device), nnkit.tensor(idx, device=device))
    np.testing.assert_array_equal(
        _np(got), torch.take_along_dim(torch.tensor(x), torch.tensor(idx))
    )
    # along a given dim negative indices still wrap, as in torch
    idx = np.array([[-1], [0]])
    got = nnkit.take_along_dim(nnkit.tensor(x, device=device), nnkit.tensor(idx, device=device), 1)
    want = torch.take_along_dim(torch.tensor(x), torch.tensor(idx), 1)
    np.testing.assert_array_equal(_np(got), want.numpy())


# ------------------------------------------------------ 3. mean / norm of integers
@pytest.mark.parametrize(
    "name,call",
    [
        ("mean", lambda lib, x: lib.mean(x)),
        ("mean", lambda lib, x: x.mean(0)),
        ("mean", lambda lib, x: x.mean(dtype=lib.int32)),
        ("norm", lambda lib, x: lib.norm(x)),
        ("norm", lambda lib, x: x.norm(p=1, dim=0)),
        ("norm", lambda lib, x: lib.norm(x, dtype=lib.float32)),
        ("var", lambda lib, x: lib.var(x)),
        ("std", lambda lib, x: x.std()),
        ("var_mean", lambda lib, x: lib.var_mean(x)),
        ("std_mean", lambda lib, x: lib.std_mean(x)),
    ],
)
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integer_reductions_refused_like_torch(name, call, dtype, device):
    vals = [1, 0, 3] if dtype == "int64" else [True, False, True]
    with pytest.raises(RuntimeError):
        call(torch, torch.tensor(vals))
    x = nnkit.tensor(vals, device=device)
    with pytest.raises(RuntimeError, match=f"^{name}: .*(int64|int32|bool)") as info:
        call(nnkit, x)
    assert not isinstance(info.value, (TypeError, ValueError))


def test_mean_dtype_argument_matches_torch(device):
    got = nnkit.tensor([1, 2, 4], device=device).mean(dtype=nnkit.float64)
    want = torch.tensor([1, 2, 4]).mean(dtype=torch.float64)
    assert got.dtype == nnkit.float64 and got.item() == want.item()
    x = nnkit.tensor([[1.0, 2.0], [3.0, 5.0]], device=device, requires_grad=True)
    y = x.mean(1, keepdim=True, dtype=nnkit.float64)
    assert y.dtype == nnkit.float64 and tuple(y.shape) == (2, 1)
    y.sum().backward()
    assert x.grad.dtype == nnkit.float32 and _np(x.grad).tolist() == [[0.5, 0.5], [0.5, 0.5]]
    got = nnkit.norm(nnkit.tensor([3.0, 4.0], device=device), dtype=nnkit.float64)
    assert got.dtype == nnkit.float64 and got.item() == 5.0


def test_nnkit_metrics_average_integer_predictions_as_float():
    """The callers of ``mean`` in nnkit convert before averaging (accuracy of ints)."""
    from nnkit.training import metrics as tm

    y_pred = nnkit.tensor([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    acc = tm.accuracy(y_pred, nnkit.tensor([1, 0, 0]))
    assert acc.item() == pytest.approx(2 / 3)


# ------------------------------------------------------ 4. unbatched convolution
@pytest.mark.parametrize(
    "nd,shape,kw",
    [
        (1, (4, 9), dict(stride=2, padding=1)),
        (1, (4, 9), dict(padding="same", dilation=2, groups=2)),
        (2, (4, 7, 6), dict(stride=(2, 1), padding=1)),
        (2, (4, 7, 6), dict(groups=4)),
        (3, (2, 5, 4, 6), dict(padding=1)),
    ],
)
def test_unbatched_conv_matches_torch(nd, shape, kw, device, rng):
    c = shape[0]
    groups = kw.get("groups", 1)
    xa = rng.standard_normal(shape)
    wa = rng.standard_normal((6 if groups != 4 else 4, c // groups) + (3,) * nd)
    ba = rng.standard_normal(wa.shape[0])
    x, tx = _pair(xa, "float64", device)
    w, tw = _pair(wa, "float64", device)
    b, tb = _pair(ba, "float64", device)
    got = getattr(F, f"conv{nd}d")(x, w, b, **kw)
    want = getattr(TF, f"conv{nd}d")(tx, tw, tb, **kw)
    assert tuple(got.shape) == tuple(want.shape) and got.ndim == nd + 1
    _close(got, want)
    g = rng.standard_normal(tuple(want.shape))
    got.backward(nnkit.tensor(g, device=device))
    want.backward(torch.tensor(g))
    for a, ta in ((x, tx), (w, tw), (b, tb)):
        _close(a.grad, ta.grad)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "circular"])
def test_unbatched_conv_layers_match_torch(mode, rng):
    for nd, shape in ((1, (3, 8)), (2, (3, 6, 5))):
        layer = getattr(nn, f"Conv{nd}d")(3, 4, 3, padding=1, padding_mode=mode)
        ref = getattr(torch.nn, f"Conv{nd}d")(3, 4, 3, padding=1, padding_mode=mode)
        with torch.no_grad():
            ref.weight.copy_(torch.from_numpy(_np(layer.weight)))
            ref.bias.copy_(torch.from_numpy(_np(layer.bias)))
        xa = rng.standard_normal(shape).astype(np.float32)
        got, want = layer(nnkit.tensor(xa)), ref(torch.from_numpy(xa))
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(_np(got), want.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_conv_wrong_rank_names_both_layouts(device):
    with pytest.raises(RuntimeError):
        TF.conv2d(torch.ones(6, 6), torch.ones(1, 1, 2, 2))
    with pytest.raises(nnkit.ShapeError, match=r"conv2d: .*3 dimensions \(C, H, W\).*\(6, 6\)"):
        F.conv2d(nnkit.ones(6, 6, device=device), nnkit.ones(1, 1, 2, 2, device=device))


# ------------------------------------------------------ 5. dtype mismatch in products
@pytest.mark.parametrize(
    "name,call",
    [
        ("matmul", lambda lib, a, b: lib.matmul(a(2, 3), b(3, 2))),
        ("matmul", lambda lib, a, b: a(2, 3) @ b(3)),
        ("mm", lambda lib, a, b: lib.mm(a(2, 3), b(3, 2))),
        ("bmm", lambda lib, a, b: lib.bmm(a(1, 2, 3), b(1, 3, 2))),
        ("dot", lambda lib, a, b: lib.dot(a(3), b(3))),
        ("inner", lambda lib, a, b: lib.inner(a(2, 3), b(3))),
        ("mv", lambda lib, a, b: lib.mv(a(2, 3), b(3))),
        ("addmm", lambda lib, a, b: lib.addmm(a(2, 2), a(2, 3), b(3, 2))),
        ("tensordot", lambda lib, a, b: lib.tensordot(a(2, 3), b(3, 2), dims=1)),
        ("einsum", lambda lib, a, b: lib.einsum("ij,jk->ik", a(2, 3), b(3, 2))),
        ("linear", lambda lib, a, b: lib.nn.functional.linear(a(2, 3), b(4, 3))),
        ("linear", lambda lib, a, b: lib.nn.functional.linear(a(2, 3), a(4, 3), b(4))),
    ],
)
@pytest.mark.parametrize("other", ["float64", "int64"])
def test_product_dtype_mismatch_is_runtime_error_naming_op_and_dtypes(name, call, other, device):
    def mk(lib, dtype, dev=None):
        kw = {} if dev is None else {"device": dev}
        return lambda *s: lib.ones(*s, dtype=getattr(lib, dtype), **kw)

    with pytest.raises(RuntimeError):
        call(torch, mk(torch, "float32"), mk(torch, other))
    with pytest.raises(RuntimeError, match=f"^{name}: .*float32.*{other}") as info:
        call(nnkit, mk(nnkit, "float32", device), mk(nnkit, other, device))
    assert not isinstance(info.value, TypeError)


# ------------------------------------------------------ 6. in-place dropout
@pytest.mark.parametrize(
    "fn,shape",
    [(F.dropout, (4, 6)), (F.dropout1d, (2, 5, 3)), (F.dropout2d, (2, 5, 2, 2))],
)
def test_dropout_inplace_overwrites_input_like_torch(fn, shape, device):
    tfn = getattr(TF, fn.__name__)
    tx = torch.ones(shape)
    assert tfn(tx, 0.5, True, True) is tx and tx._version == 1
    x = nnkit.ones(*shape, device=device)
    out = fn(x, 0.5, True, True)
    assert out is x and x._version == 1
    vals = set(_np(x).ravel().tolist())
    assert vals <= {0.0, 2.0} and len(vals) == 2
    if fn is not F.dropout:  # whole channels
        flat = _np(x).reshape(shape[0] * shape[1], -1)
        assert ((flat == 0).all(1) | (flat == 2).all(1)).all()


def test_dropout_inplace_gradient_and_graph(device):
    base = nnkit.randn(50, device=device, requires_grad=True)
    h = base * 3.0
    y = F.dropout(h, 0.4, True, inplace=True)
    assert y is h
    (y * nnkit.arange(50.0, device=device)).sum().backward()
    kept = _np(h) != 0
    want = np.where(kept, 3.0 / 0.6 * np.arange(50.0), 0.0)
    np.testing.assert_allclose(_np(base.grad), want, rtol=1e-6)
    np.testing.assert_allclose(_np(h)[kept], _np(base)[kept] * 3.0 / 0.6, rtol=1e-6)


def test_dropout_inplace_refusals_like_torch(device):
    with pytest.raises(RuntimeError, match="leaf"):
        TF.dropout(torch.ones(3, requires_grad=True), 0.5, True, True)
    x = nnkit.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"dropout\(inplace=True\): a leaf tensor"):
        F.dropout(x, 0.5, True, True)
    # a value saved for backward, then overwritten: the backward refuses (as torch)
    e, te = x.exp(), torch.ones(3, requires_grad=True).exp()
    F.dropout(e, 0.5, True, True)
    TF.dropout(te, 0.5, True, True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        te.sum().backward()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        e.sum().backward()


def test_dropout_inplace_on_a_view_reaches_the_base(device):
    leaf = nnkit.ones(2, 8, device=device, requires_grad=True)
    h = leaf * 1.0
    F.dropout(h[1], 0.5, True, True)
    assert (_np(h)[0] == 1.0).all() and set(_np(h)[1].tolist()) <= {0.0, 2.0}
    h.sum().backward()
    np.testing.assert_array_equal(_np(leaf.grad), _np(h))


def test_dropout_inplace_p1_eval_and_layer(device):
    x = nnkit.tensor([1.0, math.nan, -2.0], device=device)
    assert F.dropout(x, 1.0, True, True) is x
    want = TF.dropout(torch.tensor([1.0, math.nan, -2.0]), 1.0, True, True)
    np.testing.assert_array_equal(_np(x), want.numpy())  # NaN * 0 stays NaN
    x = nnkit.ones(4, device=device)
    assert F.dropout(x, 0.5, False, True) is x and x._version == 0
    layer = nn.Dropout(0.5, inplace=True)
    z = nnkit.ones(3, 4, device=device)
    assert layer(z) is z and set(_np(z).ravel().tolist()) <= {0.0, 2.0} and z._version == 1
    layer.eval()
    z = nnkit.ones(3, device=device)
    assert layer(z) is z and z._version == 0


def test_dropout_refuses_integer_input_like_torch(device):
    with pytest.raises(RuntimeError):
        TF.dropout(torch.ones(4, dtype=torch.int64), 0.5)
    with pytest.raises(RuntimeError, match="dropout: expected a floating point input, got int64"):
        F.dropout(nnkit.ones(4, dtype=nnkit.int64, device=device), 0.5)


# ------------------------------------------------------ 7. nanmedian's result type
@pytest.mark.parametrize("vals", [[[1.0, math.nan, 3.0], [2.0, 0.0, 5.0]], [[1, 4, 3], [2, 0, 5]]])
def test_nanmedian_result_is_named_nanmedian(vals, device):
    got = nnkit.tensor(vals, device=device).nanmedian(1)
    want = torch.tensor(vals).nanmedian(1)
    assert type(got).__name__ == type(want).__name__ == "nanmedian"
    assert repr(got).startswith("nanmedian(values=")
    np.testing.assert_array_equal(_np(got.values), want.values.numpy())
    np.testing.assert_array_equal(_np(got.indices), want.indices.numpy())
    assert got._fields == ("values", "indices")
    assert type(nnkit.tensor(vals, device=device).median(1)).__name__ == "median"
