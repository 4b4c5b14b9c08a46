"""``nnkit.nn.functional``: values against independent NumPy references, numerical
stability, semantics (running stats, padding_idx, dropout), error messages, and a
differential test against PyTorch where it is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from tests.optable_nn import (
    ref_batch_norm,
    ref_conv,
    ref_cross_entropy,
    ref_log_softmax,
    ref_pool,
    ref_softmax,
)


def t64(a, grad=False, device="cpu"):
    return nnkit.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad, device=device)


# ------------------------------------------------------------- forward values
@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(stride=2, padding=1),
        dict(dilation=2, groups=2),
        dict(padding="same"),
        dict(stride=(2, 1), padding=(0, 2)),
    ],
)
def test_conv2d_matches_direct_loop(kw, device, rng):
    x = rng.standard_normal((2, 4, 7, 6))
    w = rng.standard_normal((6, 4 // kw.get("groups", 1), 3, 3))
    b = rng.standard_normal(6)
    got = F.conv2d(t64(x, device=device), t64(w, device=device), t64(b, device=device), **kw)
    np.testing.assert_allclose(got.cpu().numpy(), ref_conv(x, w, b, **kw), atol=1e-10)


def test_conv_float32_and_chained_layout(device, rng):
    x = rng.standard_normal((3, 2, 9, 9)).astype(np.float32)
    w1 = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((5, 4, 2, 2)).astype(np.float32)
    tx = nnkit.tensor(x, device=device)
    h = F.max_pool2d(F.relu(F.conv2d(tx, nnkit.tensor(w1, device=device))), 2)
    y = F.conv2d(h, nnkit.tensor(w2, device=device))
    ref_h = ref_pool(np.maximum(ref_conv(x.astype(np.float64), w1), 0), 2)
    assert y.dtype == nnkit.float32
    np.testing.assert_allclose(y.cpu().numpy(), ref_conv(ref_h, w2), rtol=1e-4, atol=1e-4)


def test_conv1d_matches_loop(rng):
    x, w = rng.standard_normal((2, 3, 9)), rng.standard_normal((4, 3, 3))
    got = F.conv1d(t64(x), t64(w), stride=2, padding=1)
    np.testing.assert_allclose(got.numpy(), ref_conv(x, w, stride=2, padding=1), atol=1e-10)


@pytest.mark.parametrize(
    "kw",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=3, stride=2, ceil_mode=True),
        dict(kernel_size=2, stride=1, dilation=2),
    ],
)
def test_max_pool2d_matches_loop(kw, device, rng):
    x = rng.standard_normal((2, 3, 7, 8))
    got = F.max_pool2d(t64(x, device=device), **kw)
    np.testing.assert_array_equal(got.cpu().numpy(), ref_pool(x, **kw))


def test_max_pool_gradient_goes_to_first_maximum():
    x = t64([[[[1.0, 1.0], [0.0, 1.0]]]], grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad.numpy().ravel().tolist() == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("cip", [True, False])
def test_avg_pool2d_matches_loop(cip, rng):
    x = rng.standard_normal((2, 2, 7, 6))
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=cip)
    got = F.avg_pool2d(t64(x), **kw)
    np.testing.assert_allclose(got.numpy(), ref_pool(x, mode="avg", **kw), atol=1e-12)


def test_adaptive_avg_pool_global_is_mean(rng):
    x = rng.standard_normal((2, 3, 5, 7))
    got = F.adaptive_avg_pool2d(t64(x), 1)
    np.testing.assert_allclose(got.numpy(), x.mean(axis=(2, 3), keepdims=True), atol=1e-12)


def test_softmax_and_log_softmax_stable_for_large_inputs():
    x = np.array([[1000.0, 1000.0, -1000.0], [-1e4, 0.0, 1e4]])
    for dtype in (nnkit.float32, nnkit.float64):
        s = F.softmax(nnkit.tensor(x, dtype=dtype), dim=1).numpy()
        ls = F.log_softmax(nnkit.tensor(x, dtype=dtype), dim=1).numpy()
        assert np.isfinite(s).all() and np.isfinite(ls).all()
        np.testing.assert_allclose(s, ref_softmax(x, 1), atol=1e-6)
        np.testing.assert_allclose(ls, ref_log_softmax(x, 1), rtol=1e-6)
    np.testing.assert_allclose(ls[0], [-math.log(2), -math.log(2), -2000 - math.log(2)])


def test_softmax_of_fully_masked_row_is_nan_without_warning():
    s = F.softmax(nnkit.tensor([[-math.inf, -math.inf], [0.0, -math.inf]]), dim=1).numpy()
    assert np.isnan(s[0]).all() and s[1].tolist() == [1.0, 0.0]


def test_bce_with_logits_extreme_logits_finite():
    x = t64([100.0, -100.0, 100.0, -100.0, 0.0], grad=True)
    y = t64([1.0, 0.0, 0.0, 1.0, 0.5])
    loss = F.binary_cross_entropy_with_logits(x, y, reduction="none")
    np.testing.assert_allclose(
        loss.detach().numpy(), [0.0, 0.0, 100.0, 100.0, math.log(2)], atol=1e-12
    )
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 1.0, -1.0, 0.0], atol=1e-12)
    f32 = F.binary_cross_entropy_with_logits(nnkit.tensor([1e4, -1e4]), nnkit.tensor([0.0, 1.0]))
    assert f32.item() == pytest.approx(1e4)


def test_bce_clamps_log_at_minus_100():
    loss = F.binary_cross_entropy(t64([0.0, 1.0, 1.0]), t64([1.0, 0.0, 1.0]), reduction="none")
    np.testing.assert_allclose(loss.numpy(), [100.0, 100.0, 0.0])


def test_cross_entropy_weighted_mean_and_all_ignored(rng):
    x, t = rng.standard_normal((5, 4)), np.array([0, 3, -100, 1, 3])
    w = rng.uniform(0.5, 2.0, 4)
    got = F.cross_entropy(t64(x), nnkit.tensor(t), weight=t64(w), label_smoothing=0.2)
    want = ref_cross_entropy(x, t, weight=w, label_smoothing=0.2)
    assert got.item() == pytest.approx(want, rel=1e-12)
    manual = (
        -(ref_log_softmax(x, 1)[[0, 1, 3, 4], [0, 3, 1, 3]] * w[[0, 3, 1, 3]]).sum()
        / w[[0, 3, 1, 3]].sum()
    )
    assert F.cross_entropy(t64(x), nnkit.tensor(t), weight=t64(w)).item() == pytest.approx(manual)
    assert math.isnan(F.cross_entropy(t64(x), nnkit.full((5,), -100, dtype=nnkit.int64)).item())


def test_nll_loss_matches_manual(rng):
    logp = ref_log_softmax(rng.standard_normal((3, 4)), 1)
    t = np.array([2, 0, 3])
    got = F.nll_loss(t64(logp), nnkit.tensor(t), reduction="none").numpy()
    np.testing.assert_allclose(got, -logp[np.arange(3), t])


def test_one_hot():
    oh = F.one_hot(nnkit.tensor([0, 2, 1]), 4)
    assert oh.dtype == nnkit.int64 and oh.tolist() == [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
    assert F.one_hot(nnkit.tensor([[1], [0]])).shape == (2, 1, 2)


# ------------------------------------------------------------------ semantics
def test_batch_norm_updates_running_stats_like_torch(rng):
    x = rng.standard_normal((4, 3, 2, 2))
    rm, rv = nnkit.zeros(3, dtype=nnkit.float64), nnkit.ones(3, dtype=nnkit.float64)
    y = F.batch_norm(t64(x), rm, rv, training=True, momentum=0.2)
    np.testing.assert_allclose(y.numpy(), ref_batch_norm(x, None, None, training=True))
    axes = (0, 2, 3)
    np.testing.assert_allclose(rm.numpy(), 0.2 * x.mean(axes))
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * x.var(axes, ddof=1))
    ev = F.batch_norm(t64(x), rm, rv, training=False)
    np.testing.assert_allclose(ev.numpy(), ref_batch_norm(x, rm.numpy(), rv.numpy()))


def test_embedding_padding_idx_gets_no_gradient(rng):
    w = t64(rng.standard_normal((5, 3)), grad=True)
    idx = nnkit.tensor([[0, 2], [2, 4]])
    out = F.embedding(idx, w, padding_idx=2)
    np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[idx.numpy()])
    out.sum().backward()
    assert w.grad.numpy()[:, 0].tolist() == [1.0, 0.0, 0.0, 0.0, 1.0]


def test_dropout_scaling_seed_and_eval():
    x = nnkit.ones(200, 50)
    nnkit.manual_seed(3)
    a = F.dropout(x, 0.3)
    nnkit.manual_seed(3)
    b = F.dropout(x, 0.3)
    vals = a.numpy()
    assert np.array_equal(vals, b.numpy())
    np.testing.assert_allclose(np.unique(vals), [0.0, 1 / 0.7], rtol=1e-6)
    assert abs((vals == 0).mean() - 0.3) < 0.02
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 1.0).sum().item() == 0.0


def test_gelu_exact_uses_accurate_erf():
    x = np.linspace(-8, 8, 1601)
    want = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    np.testing.assert_allclose(F.gelu(t64(x)).numpy(), want, rtol=1e-12, atol=1e-15)
    erf = nnkit.erf(t64(np.linspace(-7, 7, 2001))).numpy()
    np.testing.assert_allclose(erf, np.vectorize(math.erf)(np.linspace(-7, 7, 2001)), rtol=1e-14)


@pytest.mark.parametrize(
    "mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]
)
def test_pad_modes_match_numpy(mode, np_mode, rng):
    x = rng.standard_normal((1, 2, 3, 4))
    got = F.pad(t64(x), (2, 1, 1, 2), mode=mode)
    np.testing.assert_array_equal(
        got.numpy(), np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], mode=np_mode)
    )


def test_sdpa_bool_mask_equals_float_mask_and_causal(rng):
    q, k, v = (t64(rng.standard_normal((2, 4, 3))) for _ in range(3))
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    keep = nnkit.ones(4, 4, dtype=nnkit.bool).tril()
    masked = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    additive = nnkit.tensor(np.where(np.tril(np.ones((4, 4))) > 0, 0.0, -np.inf))
    added = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    np.testing.assert_allclose(causal.numpy(), masked.numpy())
    np.testing.assert_allclose(causal.numpy(), added.numpy())
    np.testing.assert_allclose(causal.numpy()[:, 0], v.numpy()[:, 0])  # row 0 sees key 0


# ------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call,exc,msg",
    [
        (
            lambda: F.conv2d(nnkit.randn(28, 28), nnkit.randn(4, 1, 3, 3)),
            nnkit.ShapeError,
            r"conv2d: expected input with 3 dimensions \(C, H, W\) \(unbatched\) or 4 "
            r"\(N, C, H, W\) \(batched\), got shape \(28, 28\)",
        ),
        (
            lambda: F.conv2d(nnkit.randn(3, 28, 28), nnkit.randn(4, 1, 3, 3)),
            nnkit.ShapeError,
            r"conv2d: input has 3 channels but weight expects 1 .*input shape \(3, 28, 28\)",
        ),
        (
            lambda: F.conv2d(nnkit.randn(1, 3, 8, 8), nnkit.randn(4, 1, 3, 3)),
            nnkit.ShapeError,
            r"conv2d: input has 3 channels but weight expects 1 \(groups=1\)",
        ),
        (
            lambda: F.conv2d(nnkit.randn(1, 1, 2, 2), nnkit.randn(4, 1, 3, 3)),
            nnkit.ShapeError,
            r"conv2d: the \(padded\) input \(1, 1, 2, 2\) is smaller than",
        ),
        (
            lambda: F.conv2d(
                nnkit.randn(1, 1, 5, 5), nnkit.randn(4, 1, 3, 3), stride=2, padding="same"
            ),
            ValueError,
            "padding='same' is not supported",
        ),
        (
            lambda: F.cross_entropy(nnkit.randn(2, 10), nnkit.tensor([3, 12])),
            IndexError,
            r"cross_entropy: target class 12 out of range for 10 classes",
        ),
        (
            lambda: F.cross_entropy(nnkit.randn(2, 10), nnkit.tensor([3, 1, 2])),
            nnkit.ShapeError,
            r"cross_entropy: expected target of shape \(2,\)",
        ),
        (
            lambda: F.nll_loss(nnkit.randn(2, 3), nnkit.tensor([-1, 0])),
            IndexError,
            r"nll_loss: target class -1 out of range for 3 classes",
        ),
        (
            lambda: F.max_pool2d(nnkit.randn(1, 1, 2, 2), 3),
            nnkit.ShapeError,
            r"max_pool2d: input \(1, 1, 2, 2\) is too small",
        ),
        (
            lambda: F.max_pool2d(nnkit.randn(1, 1, 6, 6), 2, padding=2),
            ValueError,
            r"padding should be at most half",
        ),
        (
            lambda: F.linear(nnkit.randn(4, 3), nnkit.randn(2, 5)),
            nnkit.ShapeError,
            r"linear: input of shape \(4, 3\) does not fit weight of shape \(2, 5\)",
        ),
        (
            lambda: F.embedding(nnkit.tensor([0, 7]), nnkit.randn(5, 2)),
            IndexError,
            r"embedding: index 7 out of range for 5 embeddings",
        ),
        (lambda: F.dropout(nnkit.randn(3), 1.5), ValueError, r"dropout probability"),
        (
            lambda: F.binary_cross_entropy(nnkit.tensor([1.5]), nnkit.tensor([1.0])),
            RuntimeError,
            r"between 0 and 1",
        ),
        (
            lambda: F.mse_loss(nnkit.randn(3), nnkit.randn(3), reduction="avg"),
            ValueError,
            r"mse_loss: reduction must be one of",
        ),
        (
            lambda: F.batch_norm(nnkit.randn(1, 3), None, None, training=True),
            ValueError,
            r"more than 1 value per channel",
        ),
        (
            lambda: F.layer_norm(nnkit.randn(2, 5), (4,)),
            nnkit.ShapeError,
            r"does not end with normalized_shape \(4,\)",
        ),
        (
            lambda: F.pad(nnkit.randn(1, 2), (2, 2), mode="reflect"),
            ValueError,
            r"reflect padding \(2, 2\) is invalid",
        ),
        (lambda: F.gelu(nnkit.randn(2), approximate="fast"), ValueError, r"approximate"),
    ],
)
def test_error_messages(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_mse_loss_broadcast_warns():
    with pytest.warns(UserWarning, match="target size"):
        F.mse_loss(nnkit.randn(3, 1), nnkit.randn(3))


# ------------------------------------------------------- differential vs torch
def _pair(rng, shape, torch):
    a = rng.standard_normal(shape)
    return t64(a, grad=True), torch.tensor(a, requires_grad=True)


def _compare(ours, theirs, tens, torch, rng, atol=1e-10):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=atol)
    g = rng.standard_normal(tuple(theirs.shape))
    (ours * t64(g)).sum().backward()
    (theirs * torch.tensor(g)).sum().backward()
    for a, b in tens:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=atol)


@pytest.mark.parametrize(
    "kw",
    [
        dict(stride=2, padding=1),
        dict(dilation=2, groups=2),
        dict(padding="same"),
        dict(stride=(1, 2), padding=(2, 0)),
    ],
)
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_torch_conv2d(kw, rng):
    torch = pytest.importorskip("torch")
    x, tx = _pair(rng, (2, 4, 7, 8), torch)
    w, tw = _pair(rng, (6, 4 // kw.get("groups", 1), 3, 2), torch)
    b, tb = _pair(rng, (6,), torch)
    _compare(
        F.conv2d(x, w, b, **kw),
        torch.nn.functional.conv2d(tx, tw, tb, **kw),
        [(x, tx), (w, tw), (b, tb)],
        torch,
        rng,
    )


def test_torch_conv2d_double_backward(rng):
    torch = pytest.importorskip("torch")
    x, tx = _pair(rng, (1, 2, 5, 5), torch)
    w, tw = _pair(rng, (3, 2, 3, 3), torch)
    (gx,) = nnkit.autograd.grad(
        F.conv2d(x, w, stride=2, padding=1).pow(2).sum(), [x], create_graph=True
    )
    (tgx,) = torch.autograd.grad(
        torch.nn.functional.conv2d(tx, tw, stride=2, padding=1).pow(2).sum(),
        [tx],
        create_graph=True,
    )
    gx.sum().backward()
    tgx.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize(
    "name,kw",
    [
        ("max_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
        ("max_pool2d", dict(kernel_size=2, dilation=2, stride=1)),
        ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
        (
            "avg_pool2d",
            dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), count_include_pad=False),
        ),
        ("adaptive_avg_pool2d", dict(output_size=(3, 4))),
    ],
)
def test_torch_pools(name, kw, rng):
    torch = pytest.importorskip("torch")
    x, tx = _pair(rng, (2, 3, 7, 9), torch)
    _compare(
        getattr(F, name)(x, **kw),
        getattr(torch.nn.functional, name)(tx, **kw),
        [(x, tx)],
        torch,
        rng,
    )


def test_torch_max_pool_indices(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 7, 9))
    _, idx = F.max_pool2d(t64(x), 3, 2, 1, return_indices=True)
    _, tidx = torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())


def test_torch_batch_norm_training(rng):
    torch = pytest.importorskip("torch")
    x, tx = _pair(rng, (4, 3, 2, 3), torch)
    w, tw = _pair(rng, (3,), torch)
    b, tb = _pair(rng, (3,), torch)
    rm, rv = nnkit.zeros(3, dtype=nnkit.float64), nnkit.ones(3, dtype=nnkit.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    _compare(
        F.batch_norm(x, rm, rv, w, b, training=True),
        torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training=True),
        [(x, tx), (w, tw), (b, tb)],
        torch,
        rng,
    )
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(label_smoothing=0.15, ignore_index=2),
        dict(weight=True, ignore_index=0, reduction="sum"),
        dict(weight=True, label_smoothing=0.1),
    ],
)
def test_torch_cross_entropy(kw, rng):
    torch = pytest.importorskip("torch")
    x, tx = _pair(rng, (6, 5, 2), torch)
    tgt = rng.integers(0, 5, (6, 2))
    if kw.pop("weight", False):
        wv = rng.uniform(0.5, 2, 5)
        kw_ours, kw_torch = dict(kw, weight=t64(wv)), dict(kw, weight=torch.tensor(wv))
    else:
        kw_ours = kw_torch = kw
    _compare(
        F.cross_entropy(x, nnkit.tensor(tgt), **kw_ours),
        torch.nn.functional.cross_entropy(tx, torch.tensor(tgt), **kw_torch),
        [(x, tx)],
        torch,
        rng,
    )


def test_torch_cross_entropy_probabilities(rng):
    torch = pytest.importorskip("torch")
    x, tx = _pair(rng, (4, 3), torch)
    p = ref_softmax(rng.standard_normal((4, 3)), 1)
    _compare(
        F.cross_entropy(x, t64(p), label_smoothing=0.2),
        torch.nn.functional.cross_entropy(tx, torch.tensor(p), label_smoothing=0.2),
        [(x, tx)],
        torch,
        rng,
    )


@pytest.mark.parametrize("mask", ["bool", "float", "causal"])
def test_torch_sdpa(mask, rng):
    torch = pytest.importorskip("torch")
    q, tq = _pair(rng, (2, 2, 3, 4), torch)
    k, tk = _pair(rng, (2, 2, 5, 4), torch)
    v, tv = _pair(rng, (2, 2, 5, 3), torch)
    kw_ours, kw_torch = {}, {}
    if mask == "bool":
        m = rng.uniform(size=(3, 5)) > 0.3
        m[:, 0] = True
        kw_ours, kw_torch = dict(attn_mask=nnkit.tensor(m)), dict(attn_mask=torch.tensor(m))
    elif mask == "float":
        m = rng.standard_normal((3, 5))
        kw_ours, kw_torch = dict(attn_mask=t64(m)), dict(attn_mask=torch.tensor(m))
    else:
        kw_ours = kw_torch = dict(is_causal=True)
    _compare(
        F.scaled_dot_product_attention(q, k, v, **kw_ours),
        torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **kw_torch),
        [(q, tq), (k, tk), (v, tv)],
        torch,
        rng,
    )


@pytest.mark.parametrize(
    "name,kw",
    [
        ("gelu", {}),
        ("gelu", dict(approximate="tanh")),
        ("silu", {}),
        ("elu", dict(alpha=0.7)),
        ("leaky_relu", dict(negative_slope=0.1)),
        ("log_softmax", dict(dim=1)),
        ("softmax", dict(dim=0)),
    ],
)
def test_torch_activations(name, kw, rng):
    torch = pytest.importorskip("torch")
    x, tx = _pair(rng, (4, 5), torch)
    _compare(
        getattr(F, name)(x, **kw),
        getattr(torch.nn.functional, name)(tx, **kw),
        [(x, tx)],
        torch,
        rng,
    )


def test_torch_layer_and_group_norm(rng):
    torch = pytest.importorskip("torch")
    x, tx = _pair(rng, (2, 4, 3), torch)
    w, tw = _pair(rng, (4, 3), torch)
    _compare(
        F.layer_norm(x, (4, 3), w),
        torch.nn.functional.layer_norm(tx, (4, 3), tw),
        [(x, tx), (w, tw)],
        torch,
        rng,
    )
    x, tx = _pair(rng, (2, 4, 3), torch)
    _compare(F.group_norm(x, 2), torch.nn.functional.group_norm(tx, 2), [(x, tx)], torch, rng)
