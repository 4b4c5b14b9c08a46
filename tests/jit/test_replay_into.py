"""The fused kernels that write into given buffers (``out=``, what a replay passes:
linear, layer norm, attention, the cross-entropy's gradient): bitwise their fresh
results, for every layout they make, and a compiled Transformer-style step that copies
nothing into its buffers."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit import nn
from nnkit.backends import linear_kernels, replay
from nnkit.backends.attention_kernels import sdpa_backward, sdpa_forward
from nnkit.backends.linear_kernels import linear_backward, linear_forward
from nnkit.backends.loss_kernels import ce_backward, ce_forward
from nnkit.backends.mat import ArrayMat
from nnkit.backends.norm_kernels import layer_norm_backward, layer_norm_forward

RNG = np.random.default_rng(0)
BASE = nnkit.zeros(1)._impl.data  # makes Mats of arrays


def mat(a):
    return BASE._new(a)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _poisoned(layout):
    """A layout like ``layout`` whose arrays (same shapes and strides) hold NaN."""
    if layout is None:
        return None
    if isinstance(layout, ArrayMat):
        return mat(_poisoned(layout.array))
    if isinstance(layout, tuple):
        return tuple(_poisoned(x) for x in layout)
    a = np.empty_like(layout)  # (order "K": the strides of a contiguous original)
    a.fill(np.nan)
    return a


def _arrays(layout):
    if layout is None:
        return [None]
    if isinstance(layout, ArrayMat):
        return [layout.array]
    if isinstance(layout, tuple):
        return [a for x in layout for a in _arrays(x)]
    return [layout]


def assert_writes_into(fn, *args, **kwargs):
    """``fn(..., out=buffers)`` leaves in the buffers bitwise what ``fn(...)`` returns
    (NaN-filled buffers: nothing is read before it is written)."""
    fresh = fn(*args, **kwargs)
    out = _poisoned(fresh)
    assert fn(*args, out=out, **kwargs) is out
    for a, b in zip(_arrays(fresh), _arrays(out), strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape and a.dtype == b.dtype
            assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    return fresh


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(
    "x, g_kind",
    [
        (rand(6, 5), "plain"),
        (rand(2, 3, 5), "plain"),
        (rand(3, 2, 5).transpose(1, 0, 2), "plain"),  # folding the rows copies
        (rand(2, 3, 5), "broadcast"),  # a gradient broadcast along the rows
    ],
    ids=["2d", "3d", "3d strided", "broadcast g"],
)
@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])  # the ones column
def test_linear_forward_and_backward(x, g_kind, bias, wide, monkeypatch):
    monkeypatch.setattr(linear_kernels, "ONES_COLUMN_MIN_ROWS", 1)  # these few rows too
    n_out = 12 if wide else 4
    w, b = mat(rand(n_out, 5)), mat(rand(n_out)) if bias else None
    y, x1 = assert_writes_into(linear_forward, mat(x), w, b)
    assert (x1 is not None) == (wide and bias)
    g = rand(*y.shape) if g_kind == "plain" else np.broadcast_to(rand(n_out), y.shape)
    for need in [(True, True, True), (True, False, False), (False, True, bias), (0, 0, bias)]:
        need = (need[0], need[1], need[2] and bias)
        if any(need):
            assert_writes_into(linear_backward, mat(g), mat(x), w, need, x1)


@pytest.mark.parametrize("rows", [255, 256])
def test_linear_ones_column_needs_enough_rows(rows):
    """The bias rides in the GEMM only from ``ONES_COLUMN_MIN_ROWS`` input rows on (on
    fewer the copies cost more than the bias's pass saves); both give the plain
    product's values to float rounding."""
    x, w, b = rand(rows, 5), rand(12, 5), rand(12)
    y, x1 = linear_forward(mat(x), mat(w), mat(b))
    assert (x1 is not None) == (rows >= linear_kernels.ONES_COLUMN_MIN_ROWS)
    np.testing.assert_allclose(y.array, x @ w.T + b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize(
    "x, k",
    [
        (rand(4, 6), 1),
        (rand(2, 3, 5), 2),
        (rand(300, 4).T, 1),  # a transposed (F-ordered) input, rows long enough for
        # NumPy to sum a contiguous row pairwise but a strided one in order
        (rand(7), 1),  # no leading dimensions
    ],
    ids=["2d", "k2", "transposed", "1d"],
)
def test_layer_norm_forward_and_backward(x, k, affine):
    shape = x.shape[x.ndim - k :]
    w = mat(rand(*shape)) if affine in ("weight", "both") else None
    b = mat(rand(*shape)) if affine in ("bias", "both") else None
    y, xhat, rstd = assert_writes_into(layer_norm_forward, mat(x), w, b, k, 1e-5)
    g = rand(*x.shape)
    for need in [
        (True, True, True),
        (True, False, False),
        (False, True, True),
        (False, False, True),
    ]:
        need = (need[0], need[1] and w is not None, need[2] and b is not None)
        assert_writes_into(layer_norm_backward, mat(g), xhat, rstd, w, k, need)
    row = np.broadcast_to(rand(*shape), x.shape)  # a broadcast gradient
    assert_writes_into(layer_norm_backward, mat(row), xhat, rstd, w, k, (True, True, True))


def _masks(batch, length, source):
    keep = RNG.uniform(size=(length, source)) > 0.3
    keep[0] = False  # an all-masked row: NaN, as torch
    return {
        "none": None,
        "bool broadcast": keep,
        "bool full": RNG.uniform(size=(*batch, length, source)) > 0.3,
        "float broadcast": rand(1, 1, length, source),
        "float full": rand(*batch, length, source),
        "float wider": rand(3, *batch[1:], length, source),  # widens the scores' batch
    }


@pytest.mark.parametrize("mask_kind", list(_masks((2, 3), 4, 6)))
@pytest.mark.parametrize("q_batch", [(2, 3), (1, 3)], ids=["same", "broadcast q"])
def test_attention_without_heads(mask_kind, q_batch):
    if mask_kind == "float wider" and q_batch != (1, 3):
        q_batch = (1, 3)
    q, k, v = rand(*q_batch, 4, 5), rand(2, 3, 6, 5), rand(2, 3, 6, 7)
    if mask_kind == "float wider":
        k, v = rand(1, 3, 6, 5), rand(1, 3, 6, 7)
    mask = _masks((2, 3), 4, 6)[mask_kind]
    m = None if mask is None else mat(mask)
    out, p = assert_writes_into(sdpa_forward, mat(q), mat(k), mat(v), m, 0.4)
    g, gp = mat(rand(*out.shape)), mat(rand(*p.shape))
    float_mask = m is not None and mask.dtype != np.bool_
    for need in [(True, True, True, True), (True, False, True, False), (False, False, True, True)]:
        need = (*need[:3], need[3] and float_mask)
        for weights_grad in (None, gp):
            assert_writes_into(sdpa_backward, g, weights_grad, mat(q), mat(k), mat(v), p, 0.4, need)


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("mask_kind", ["none", "bool broadcast", "float full"])
def test_attention_with_heads(packed, mask_kind):
    n, length, e, heads = 2, 5, 8, 2
    mask = {
        "none": None,
        "bool broadcast": RNG.uniform(size=(length, length)) > 0.3,
        "float full": rand(n, heads, length, length),
    }[mask_kind]
    m = None if mask is None else mat(mask)
    if packed:
        q, k, v = mat(rand(n, length, 3 * e)), None, None
    else:
        q, k, v = mat(rand(n, length, e)), mat(rand(n, length, e)), mat(rand(n, length, e))
    out, p = assert_writes_into(sdpa_forward, q, k, v, m, 0.3, heads)
    g = mat(rand(n, length, e))
    float_mask = m is not None and mask.dtype != np.bool_
    needs = [(True, True, True, float_mask), (False, True, False, False)]
    if packed:
        needs = [(True, False, False, float_mask), (False, False, False, float_mask)]
    for need in needs:
        if any(need):
            assert_writes_into(sdpa_backward, g, None, q, k, v, p, 0.3, need, heads)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    "kind", ["index", "weight", "ignore", "smoothing", "weight+smoothing", "probs", "dims"]
)
def test_cross_entropy_gradient(kind, reduction):
    n, c = 6, 5
    x = rand(n, 4, c).transpose(0, 2, 1) if kind == "dims" else rand(n, c)  # (N, C, d)
    target = RNG.integers(0, c, (n, 4) if kind == "dims" else n)
    weight = mat(RNG.uniform(0.5, 2, c).astype(np.float32)) if "weight" in kind else None
    ignore = int(target[1]) if kind == "ignore" else -100
    smoothing = 0.1 if "smoothing" in kind else 0.0
    if kind == "probs":
        target = RNG.dirichlet(np.ones(c), n).astype(np.float32)
    loss, st = ce_forward(mat(x), mat(target), weight, ignore, smoothing, reduction, 1)
    g = mat(rand(*loss.shape) if loss.ndim else np.asarray(rand(1)[0]))
    assert_writes_into(ce_backward, g, st, weight, reduction)


class _Encoder(nn.Module):
    """Attention with a float mask, layer norms with and without an affine map."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(5, 8)
        self.att = nn.MultiheadAttention(8, 2, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.bare = nn.LayerNorm((6, 8), elementwise_affine=False)
        self.fc = nn.Linear(8, 3)

    def forward(self, x, mask):
        h = self.emb(x)
        a, _ = self.att(h, h, h, attn_mask=mask)
        h = self.bare(self.norm(h + a))
        out = F.scaled_dot_product_attention(h, h, h, attn_mask=mask > 0)
        return self.fc((h + out).mean(1))


def test_compiled_encoder_copies_nothing_into_its_buffers():
    rng = np.random.default_rng(3)
    mask = nnkit.tensor(rng.standard_normal((6, 6)).astype(np.float32))
    models = []
    for _ in range(2):
        nnkit.manual_seed(0)
        models.append(_Encoder())
    opts = [nnkit.optim.Adam(m.parameters(), lr=0.01) for m in models]

    def make(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x, mask), y, label_smoothing=0.1)
            loss.backward()
            opt.step()
            return loss

        return step

    eager, compiled = make(models[0], opts[0]), nnkit.compile(make(models[1], opts[1]))
    for i in range(8):
        x = nnkit.tensor(rng.standard_normal((4, 6, 5)).astype(np.float32))
        y = nnkit.tensor(rng.integers(0, 3, 4))
        assert eager(x, y).item() == compiled(x, y).item(), i
    for a, b in zip(models[0].parameters(), models[1].parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    assert compiled.num_replays == 5  # (recorded: grads unbound, bound, checked)
    [program] = [p for v in compiled._cache.values() for p in v if p.replays]
    into = {s.name for s in program.steps if replay._into(s) is not None}
    assert {
        "layer_norm_forward", "layer_norm_backward", "sdpa_forward", "sdpa_backward",
        "ce_backward", "linear_forward", "linear_backward",
    } <= into  # fmt: skip
    # every kernel step either writes in place (out=), rebinds, or runs for no result
    refilled = [
        s.name
        for s in program.steps
        if s.outs is not None
        and type(s.outs) is not replay.Rebind
        and replay._fast(s) is None
        and replay._into(s) is None
        and any(isinstance(a, (ArrayMat, np.ndarray)) for a in _arrays(s.outs))
    ]
    assert set(refilled) <= {"ce_forward"}, refilled  # its 0-d loss


def test_fused_results_own_their_memory():
    """The kernels' fresh results are whole arrays, not views of a buffer of another
    shape: the engine may then add a second gradient into them in place."""
    x, w, b = mat(rand(2, 3, 5)), mat(rand(12, 5)), mat(rand(12))
    (y, _), (yn, _) = linear_forward(x, w, b), linear_forward(x, mat(rand(4, 5)), None)
    gx, gw, gb = linear_backward(mat(rand(2, 3, 12)), x, w, (True, True, True))
    out, p = sdpa_forward(mat(rand(2, 5, 24)), None, None, None, 0.3, 2)
    dqkv, _, _, _ = sdpa_backward(
        mat(rand(2, 5, 8)), None, mat(rand(2, 5, 24)), None, None, p, 0.3, (True,) * 3 + (False,), 2
    )
    _, xhat, rstd = layer_norm_forward(x, mat(rand(5)), mat(rand(5)), 1, 1e-5)
    lgx, lgw, lgb = layer_norm_backward(x, xhat, rstd, mat(rand(5)), 1, (True, True, True))
    for m in (y, yn, gx, gw, gb, out, dqkv, lgx, lgw, lgb):
        assert m.array.base is None and m.array.flags.c_contiguous
