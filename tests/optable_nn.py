"""The op table for the neural-network functional ops (``nnkit.nn.functional``).

One ``OpSpec`` row per op (see ``tests/opspec.py``); ``tests/autograd/test_op_table.py``
runs forward against the NumPy references below, gradcheck and gradgradcheck.
Inputs stay at a few dozen elements. The references are direct loops / textbook
formulas, independent of the implementation (also used by
``tests/layers/test_functional.py``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

import nnkit.nn.functional as F
from tests.opspec import OpSpec, Sample

OPS: list[OpSpec] = []


def row(name, fn, ref, samples, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


def rn(rng, *shape):
    return np.asarray(rng.standard_normal(shape))


def away(rng, *shape, gap=0.2):
    x = rng.standard_normal(shape)
    return np.asarray(x + gap * np.where(x >= 0, 1.0, -1.0))


def distinct(rng, *shape, gap=0.1):
    """Values at least ``gap`` apart (no ties in max pooling)."""
    n = math.prod(shape)
    vals = np.arange(n) * (gap + 4.0 / n) - 2.0
    return np.asarray(rng.permutation(vals).reshape(shape))


# ------------------------------------------------------------------ references
def _pairs(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def ref_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct-loop N-d cross-correlation (one output position at a time)."""
    nd = x.ndim - 2
    s, d = _pairs(stride, nd), _pairs(dilation, nd)
    k = w.shape[2:]
    if padding == "same":
        tot = [dd * (kk - 1) for dd, kk in zip(d, k)]
        pads = [(t // 2, t - t // 2) for t in tot]
    elif padding == "valid":
        pads = [(0, 0)] * nd
    else:
        pads = [(p, p) for p in _pairs(padding, nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    og = o // groups
    out_sp = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    y = np.zeros((n, o) + tuple(out_sp))
    for pos in itertools.product(*(range(m) for m in out_sp)):
        sl = tuple(
            slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i]) for i in range(nd)
        )
        for g in range(groups):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
            wg = w[g * og : (g + 1) * og]
            y[(slice(None), slice(g * og, (g + 1) * og)) + pos] = np.tensordot(
                patch, wg, axes=(list(range(1, nd + 2)), list(range(1, nd + 2)))
            )
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


def _pool_out(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def ref_pool(
    x,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode=False,
    count_include_pad=True,
    mode="max",
):
    """Loop pooling over ``(N, C, *S)``: each output reads its window element by element.

    An unbatched input is recognised by a tuple ``kernel_size`` one shorter than it.
    """
    if not isinstance(kernel_size, int) and len(kernel_size) == x.ndim - 1:
        return ref_pool(
            x[None], kernel_size, stride, padding, dilation, ceil_mode, count_include_pad, mode
        )[0]
    nd = x.ndim - 2
    k = _pairs(kernel_size, nd)
    s = k if stride is None else _pairs(stride, nd)
    p, d = _pairs(padding, nd), _pairs(dilation, nd)
    sp = x.shape[2:]
    out_sp = [_pool_out(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(out_sp))
    for pos in itertools.product(*(range(m) for m in out_sp)):
        vals, count = [], 0
        for off in itertools.product(*(range(m) for m in k)):
            idx = [pos[i] * s[i] - p[i] + off[i] * d[i] for i in range(nd)]
            if all(-p[i] <= idx[i] < sp[i] + p[i] for i in range(nd)):
                count += 1  # inside input + padding (not the ceil overhang)
            if all(0 <= idx[i] < sp[i] for i in range(nd)):
                vals.append(x[(slice(None), slice(None)) + tuple(idx)])
        if mode == "max":
            y[(Ellipsis,) + pos] = np.max(vals, axis=0)
        else:
            div = count if count_include_pad else len(vals)
            y[(Ellipsis,) + pos] = np.sum(vals, axis=0) / div
    return y


def ref_softmax(x, dim):
    if x.size == 0:
        return x.copy()
    dim = None if x.ndim == 0 else dim
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def ref_log_softmax(x, dim):
    if x.size == 0:
        return x.copy()
    dim = None if x.ndim == 0 else dim
    z = x - x.max(axis=dim, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=dim, keepdims=True))


def _reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](loss)


def ref_nll(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    cd = 1 if logp.ndim >= 2 else 0
    c = logp.shape[cd]
    w = np.ones(c) if weight is None else weight
    lp = np.moveaxis(logp, cd, -1).reshape(-1, c)
    t = target.reshape(-1)
    valid = t != ignore_index
    ts = np.where(valid, t, 0)
    wt = w[ts] * valid
    loss = -lp[np.arange(len(t)), ts] * wt
    if reduction == "mean":
        return loss.sum() / wt.sum()
    return _reduce(loss.reshape(target.shape), reduction)


def ref_cross_entropy(
    x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    cd = 1 if x.ndim >= 2 else 0
    c = x.shape[cd]
    logp = ref_log_softmax(x, cd)
    w = np.ones(c) if weight is None else weight
    wshape = [1] * x.ndim
    wshape[cd] = c
    if target.dtype.kind == "f":  # class probabilities
        t = target * (1 - label_smoothing) + label_smoothing / c
        loss = -(logp * t * w.reshape(wshape)).sum(cd)
        return loss.sum() / (x.size // c) if reduction == "mean" else _reduce(loss, reduction)
    nll = ref_nll(logp, target, weight, ignore_index, reduction)
    valid = target != ignore_index
    smooth = -(logp * w.reshape(wshape)).sum(cd) * valid
    if reduction == "mean":
        smooth = smooth.sum() / (w[np.where(valid, target, 0)] * valid).sum()
    else:
        smooth = _reduce(smooth, reduction)
    return (1 - label_smoothing) * nll + smooth * label_smoothing / c


def ref_sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    s = (q @ np.swapaxes(k, -1, -2)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        attn_mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), bool))
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    return ref_softmax(s, -1) @ v


def ref_batch_norm(x, rm, rv, w=None, b=None, training=False, momentum=0.1, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        m, v = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    else:
        m, v = rm.reshape(shape), rv.reshape(shape)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


def ref_layer_norm(x, normalized_shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def ref_group_norm(x, groups, w=None, b=None, eps=1e-5):
    g = x.reshape(x.shape[0], groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return y * (1 if w is None else w.reshape(shape)) + (0 if b is None else b.reshape(shape))


def _erf(x):
    return np.vectorize(math.erf)(x)


def ref_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def ref_softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(x * beta, 0.0) / beta)


def ref_pad(x, pad, mode="constant", value=0.0):
    k = len(pad) // 2
    widths = [(0, 0)] * (x.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
    if mode == "constant":
        return np.pad(x, widths, constant_values=value)
    return np.pad(
        x, widths, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    )


# ---------------------------------------------------------------- convolution
def _conv_samples(rng):
    return [
        Sample((rn(rng, 2, 2, 5, 4), rn(rng, 3, 2, 3, 2), rn(rng, 3)), desc="bias"),
        Sample(
            (rn(rng, 1, 2, 6, 5), rn(rng, 2, 2, 3, 3)), dict(stride=2, padding=1), desc="stride-pad"
        ),
        Sample(
            (rn(rng, 1, 4, 5, 5), rn(rng, 4, 2, 2, 2), rn(rng, 4)),
            dict(dilation=2, groups=2, padding=(1, 0)),
            desc="dilation-groups",
        ),
        Sample((rn(rng, 1, 1, 5, 4), rn(rng, 2, 1, 2, 3)), dict(padding="same"), desc="same"),
        Sample(
            (rn(rng, 2, 3, 3, 4), rn(rng, 3, 1, 1, 1)),
            dict(groups=3, stride=(1, 2)),
            desc="depthwise-1x1",
        ),
        Sample(  # 3x3, stride 1, 4 channels in, 5 out: Winograd F(4x4, 3x3)
            (rn(rng, 1, 4, 5, 6), rn(rng, 5, 4, 3, 3), rn(rng, 5)),
            dict(padding=1),
            desc="winograd",
        ),
    ]


row("conv2d", F.conv2d, ref_conv, _conv_samples)
row(
    "conv1d",
    F.conv1d,
    ref_conv,
    lambda rng: [
        Sample((rn(rng, 2, 2, 7), rn(rng, 3, 2, 3), rn(rng, 3)), dict(stride=2, padding=1)),
        Sample((rn(rng, 1, 4, 6), rn(rng, 2, 2, 2)), dict(dilation=2, groups=2)),
    ],
)
row(
    "conv3d",
    F.conv3d,
    ref_conv,
    lambda rng: [
        Sample(
            (rn(rng, 1, 2, 3, 3, 3), rn(rng, 2, 2, 2, 2, 2), rn(rng, 2)), dict(padding=1, stride=2)
        ),
    ],
)
row(
    "linear",
    F.linear,
    lambda x, w, b=None: x @ w.T + (0 if b is None else b),
    lambda rng: [
        Sample((rn(rng, 4, 3), rn(rng, 5, 3), rn(rng, 5))),
        Sample((rn(rng, 2, 3, 4), rn(rng, 2, 4)), desc="batched-nobias"),
    ],
)

# -------------------------------------------------------------------- pooling
row(
    "max_pool2d",
    F.max_pool2d,
    ref_pool,
    lambda rng: [
        Sample((distinct(rng, 2, 2, 4, 4), 2), desc="k2"),
        Sample((distinct(rng, 1, 2, 5, 6), 3), dict(stride=2, padding=1), desc="overlap-pad"),
        Sample(
            (distinct(rng, 1, 1, 6, 7), (3, 2)), dict(stride=(2, 1), ceil_mode=True), desc="ceil"
        ),
        Sample((distinct(rng, 1, 2, 6, 6), 2), dict(stride=1, dilation=2), desc="dilation"),
        Sample((distinct(rng, 2, 5, 5), (3, 3)), dict(stride=2, ceil_mode=True), desc="unbatched"),
    ],
)
row(
    "max_pool1d",
    F.max_pool1d,
    ref_pool,
    lambda rng: [
        Sample((distinct(rng, 2, 3, 7), 3), dict(stride=2, padding=1)),
    ],
)
row(
    "avg_pool2d",
    F.avg_pool2d,
    lambda x, *a, **k: ref_pool(x, *a, mode="avg", **k),
    lambda rng: [
        Sample((rn(rng, 2, 2, 4, 4), 2), desc="k2"),
        Sample((rn(rng, 1, 2, 5, 6), 3), dict(stride=2, padding=1), desc="overlap-pad"),
        Sample(
            (rn(rng, 1, 2, 5, 6), 3),
            dict(stride=2, padding=1, count_include_pad=False),
            desc="exclude-pad",
        ),
        Sample(
            (rn(rng, 1, 1, 6, 7), (3, 2)),
            dict(stride=(2, 1), ceil_mode=True, padding=1),
            desc="ceil",
        ),
    ],
)
row(
    "avg_pool1d",
    F.avg_pool1d,
    lambda x, *a, **k: ref_pool(x, *a, mode="avg", **k),
    lambda rng: [Sample((rn(rng, 2, 3, 7), 3), dict(stride=2, padding=1))],
)


def _ref_adaptive(x, output_size):
    sizes = (output_size,) * 2 if isinstance(output_size, int) else output_size
    h, w = x.shape[-2:]
    oh, ow = sizes
    y = np.zeros(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, he = i * h // oh, -(-(i + 1) * h // oh)
            ws, we = j * w // ow, -(-(j + 1) * w // ow)
            y[..., i, j] = x[..., hs:he, ws:we].mean(axis=(-2, -1))
    return y


row(
    "adaptive_avg_pool2d",
    F.adaptive_avg_pool2d,
    _ref_adaptive,
    lambda rng: [
        Sample((rn(rng, 2, 2, 5, 7), (3, 2))),
        Sample((rn(rng, 1, 3, 4, 4), 1), desc="global"),
    ],
)

# -------------------------------------------------------------- activations
row(
    "softmax",
    F.softmax,
    ref_softmax,
    lambda rng: [
        Sample((rn(rng, 3, 4), 1)),
        Sample((rn(rng, 2, 3, 4), 0), desc="dim0"),
        Sample((rn(rng, 5), -1), desc="1d"),
        Sample((rn(rng), 0), desc="0d"),
        Sample((rn(rng, 2, 0), 1), desc="empty"),
    ],
)
row(
    "log_softmax",
    F.log_softmax,
    ref_log_softmax,
    lambda rng: [
        Sample((rn(rng, 3, 4), 1)),
        Sample((rn(rng, 2, 3, 4), -2), desc="mid"),
        Sample((rn(rng), -1), desc="0d"),
        Sample((rn(rng, 2, 0), 1), desc="empty"),
    ],
)
row(
    "gelu",
    F.gelu,
    ref_gelu,
    lambda rng: [
        Sample((rn(rng, 3, 4) * 2,)),
        Sample((rn(rng, 3, 4) * 2,), dict(approximate="tanh"), desc="tanh"),
    ],
)
row("silu", F.silu, lambda x: x / (1 + np.exp(-x)), lambda rng: [Sample((rn(rng, 3, 4),))])
row(
    "leaky_relu",
    F.leaky_relu,
    lambda x, s=0.01: np.where(x > 0, x, s * x),
    lambda rng: [Sample((away(rng, 3, 4),)), Sample((away(rng, 3, 4), 0.2), desc="slope")],
)
row(
    "elu",
    F.elu,
    lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))),
    lambda rng: [Sample((away(rng, 3, 4) * 3,), dict(alpha=1.5))],
)
row(
    "selu",
    F.selu,
    lambda x: (
        1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0)))
    ),
    lambda rng: [Sample((away(rng, 3, 4),))],
)
row(
    "softplus",
    F.softplus,
    ref_softplus,
    lambda rng: [
        Sample((rn(rng, 3, 4) * 3,)),
        # linear above the threshold: inputs kept away from beta * x == threshold
        Sample((np.array([[-2.0, 0.3, 1.2], [1.9, 2.6, 4.0]]), 2.0, 3.0), desc="threshold"),
        Sample((np.array([-1.0, 0.4, 0.7, 3.0]), 1.0, 0.5), desc="low-threshold"),
    ],
)
row(
    "hardtanh",
    F.hardtanh,
    lambda x: np.clip(x, -1, 1),
    lambda rng: [Sample((distinct(rng, 3, 4, gap=0.05) * 1.5,))],
)
row("relu6", F.relu6, lambda x: np.clip(x, 0, 6), lambda rng: [Sample((away(rng, 3, 4) * 3 + 3,))])
row(
    "logsigmoid",
    F.logsigmoid,
    lambda x: -np.logaddexp(0, -x),
    lambda rng: [Sample((rn(rng, 3, 4) * 4,))],
)
row(
    "mish",
    F.mish,
    lambda x: x * np.tanh(np.logaddexp(x, 0)),
    lambda rng: [Sample((rn(rng, 3, 4),))],
)

# ------------------------------------------------------ norm, dropout, misc
row(
    "batch_norm",
    F.batch_norm,
    ref_batch_norm,
    lambda rng: [
        Sample(
            (rn(rng, 4, 3), None, None, rn(rng, 3), rn(rng, 3)),
            dict(training=True),
            desc="train-1d",
        ),
        Sample(
            (rn(rng, 2, 3, 2, 3), rn(rng, 3), np.abs(rn(rng, 3)) + 0.5, rn(rng, 3), rn(rng, 3)),
            dict(training=True),
            diff=(0, 3, 4),
            desc="train-2d-running",
        ),
        Sample(
            (rn(rng, 2, 3, 2, 2), rn(rng, 3), np.abs(rn(rng, 3)) + 0.5, rn(rng, 3)),
            dict(training=False),
            diff=(0, 3),
            desc="eval",
        ),
    ],
)
row(
    "layer_norm",
    F.layer_norm,
    ref_layer_norm,
    lambda rng: [
        Sample((rn(rng, 3, 5), (5,), rn(rng, 5), rn(rng, 5))),
        Sample((rn(rng, 2, 3, 4), (3, 4)), desc="2d-noaffine"),
    ],
)
row(
    "group_norm",
    F.group_norm,
    ref_group_norm,
    lambda rng: [Sample((rn(rng, 2, 4, 3), 2, rn(rng, 4), rn(rng, 4)))],
)
row(
    "normalize",
    F.normalize,
    lambda x, p=2.0, dim=1: x / np.maximum(np.linalg.norm(x, axis=dim, keepdims=True), 1e-12),
    lambda rng: [Sample((rn(rng, 3, 4),))],
)
row(
    "dropout",
    F.dropout,
    None,
    lambda rng: [Sample((rn(rng, 4, 5), 0.4)), Sample((rn(rng, 2, 3, 2, 2), 0.5), desc="channels")],
    random=True,
)
row(
    "dropout_eval",
    lambda x: F.dropout(x, 0.5, training=False),
    lambda x: x,
    lambda rng: [Sample((rn(rng, 3, 4),))],
)
row(
    "embedding",
    F.embedding,
    lambda i, w, padding_idx=None: w[i],
    lambda rng: [
        Sample((rng.integers(0, 5, (2, 3)), rn(rng, 5, 4))),
    ],
)
# padding_idx: the padding row gets no gradient, so compare on outputs masked alike
# (the zero gradient itself is checked in tests/layers/test_functional.py)
row(
    "embedding_padding_idx",
    lambda i, w: F.embedding(i, w, padding_idx=2) * (i != 2).unsqueeze(-1).to(w.dtype),
    lambda i, w: w[i] * (i != 2)[..., None],
    lambda rng: [Sample((np.array([0, 2, 2, 4, 1]), rn(rng, 5, 3)))],
)


def ref_embedding_max_norm(i, w, max_norm, norm_type):
    """Rows named in ``i`` with a ``norm_type``-norm above ``max_norm`` scaled by
    ``max_norm / (norm + 1e-7)``, then looked up."""
    w = w.copy()
    for r in np.unique(i):
        n = np.linalg.norm(w[r], ord=norm_type)
        w[r] *= max_norm / (n + 1e-7) if n > max_norm else 1.0
    return w[i]


# max_norm renormalises the table in place under no_grad, so its gradient is not the
# derivative of the output (as torch): a forward-only row, on a detached copy of the table
# (gradient and in-place behaviour are checked in tests/autograd/test_embedding_maxnorm.py)
row(
    "embedding_max_norm",
    lambda i, w, **kw: F.embedding(i, w.detach().clone(), **kw),
    ref_embedding_max_norm,
    lambda rng: [
        Sample((rng.integers(0, 6, (2, 4)), rn(rng, 6, 3)), dict(max_norm=1.0, norm_type=p))
        for p in (1.0, 2.0, float("inf"), 3.0)
    ],
    differentiable=False,
)
row(
    "pad",
    F.pad,
    ref_pad,
    lambda rng: [
        Sample((rn(rng, 2, 3, 4), (1, 2)), desc="last"),
        Sample((rn(rng, 1, 2, 3, 4), (1, 0, 2, 1)), dict(value=0.5), desc="2d-value"),
        Sample((rn(rng, 1, 2, 3, 4), (2, 1, 1, 2)), dict(mode="reflect"), desc="reflect"),
        Sample((rn(rng, 1, 2, 3, 4), (2, 1, 1, 2)), dict(mode="replicate"), desc="replicate"),
        Sample((rn(rng, 2, 3, 4), (1, 3)), dict(mode="circular"), desc="circular"),
    ],
)
row(
    "pad_crop",
    lambda x: F.pad(x, (-1, 2, 1, -1)),
    lambda x: np.pad(x[..., :-1, 1:], [(0, 0), (1, 0), (0, 2)]),
    lambda rng: [Sample((rn(rng, 2, 3, 4),))],
)

# ------------------------------------------------------------------ attention
row(
    "scaled_dot_product_attention",
    F.scaled_dot_product_attention,
    ref_sdpa,
    lambda rng: [
        Sample((rn(rng, 2, 3, 4), rn(rng, 2, 5, 4), rn(rng, 2, 5, 3)), desc="plain"),
        Sample(
            (rn(rng, 1, 2, 3, 4), rn(rng, 1, 2, 3, 4), rn(rng, 1, 2, 3, 2)),
            dict(is_causal=True),
            desc="causal",
        ),
        Sample(
            (
                rn(rng, 2, 3, 4),
                rn(rng, 2, 4, 4),
                rn(rng, 2, 4, 2),
                np.array(
                    [
                        [True, False, True, True],
                        [True, True, False, True],
                        [False, True, True, True],
                    ]
                ),
            ),
            desc="bool-mask",
        ),
        Sample(
            (rn(rng, 2, 3, 4), rn(rng, 2, 4, 4), rn(rng, 2, 4, 2), rn(rng, 3, 4)),
            dict(scale=0.3),
            diff=(0, 1, 2),
            desc="float-mask-scale",
        ),
    ],
)

# --------------------------------------------------------------------- losses
_RED = ("mean", "sum", "none")


def _ce_samples(rng):
    return [
        Sample((rn(rng, 4, 5), np.array([1, 0, 4, 2])), desc="mean"),
        Sample(
            (rn(rng, 4, 5), np.array([1, -100, 4, 2]), rng.uniform(0.5, 2, 5)),
            dict(reduction="mean"),
            diff=(0,),
            desc="weight-ignore",
        ),
        Sample(
            (rn(rng, 3, 4), np.array([3, 0, 1])),
            dict(reduction="none", label_smoothing=0.2),
            desc="smooth",
        ),
        Sample(
            (rn(rng, 3, 4), np.array([3, 7, 1]), rng.uniform(0.5, 2, 4)),
            dict(ignore_index=7, label_smoothing=0.1),
            diff=(0,),
            desc="smooth-weight",
        ),
        Sample(
            (rn(rng, 2, 3, 2, 2), rng.integers(0, 3, (2, 2, 2))),
            dict(reduction="sum"),
            desc="spatial",
        ),
        Sample(
            (rn(rng, 3, 4), ref_softmax(rn(rng, 3, 4), 1)), dict(label_smoothing=0.1), desc="probs"
        ),
        Sample((rn(rng, 5), np.array(2)), desc="unbatched"),
    ]


row("cross_entropy", F.cross_entropy, ref_cross_entropy, _ce_samples)
row(
    "nll_loss",
    F.nll_loss,
    ref_nll,
    lambda rng: [
        Sample(
            (ref_log_softmax(rn(rng, 4, 3), 1), np.array([0, 2, -100, 1]), rng.uniform(0.5, 2, 3)),
            diff=(0,),
            desc="weight-ignore",
        ),
        Sample(
            (rn(rng, 2, 3, 4), rng.integers(0, 3, (2, 4))),
            dict(reduction="none"),
            desc="none-spatial",
        ),
    ],
)
for _name, _ref in (
    ("mse_loss", lambda x, y, reduction="mean": _reduce((x - y) ** 2, reduction)),
    ("l1_loss", lambda x, y, reduction="mean": _reduce(np.abs(x - y), reduction)),
):
    row(
        _name,
        getattr(F, _name),
        _ref,
        lambda rng: [
            Sample((away(rng, 3, 4), np.zeros((3, 4)) + 0.0), dict(reduction=r), desc=r)
            for r in _RED
        ],
    )


def _ref_huber(x, y, reduction="mean", delta=1.0):
    a = np.abs(x - y)
    return _reduce(np.where(a < delta, 0.5 * a * a, delta * (a - 0.5 * delta)), reduction)


def _ref_smooth_l1(x, y, reduction="mean", beta=1.0):
    a = np.abs(x - y)
    return _reduce(np.where(a < beta, 0.5 * a * a / beta, a - 0.5 * beta), reduction)


def _kinked(rng, *shape, at=1.0):
    """|x| kept away from 0 and from ``at`` (the quadratic/linear switch)."""
    x = distinct(rng, *shape, gap=0.15) * 1.3
    return np.where(np.abs(np.abs(x) - at) < 0.1, x * 1.3, x)


row(
    "huber_loss",
    F.huber_loss,
    _ref_huber,
    lambda rng: [
        Sample((_kinked(rng, 3, 4, at=0.7), np.zeros((3, 4))), dict(delta=0.7)),
        Sample(
            (_kinked(rng, 3, 4), rn(rng, 3, 4) * 0.01),
            dict(reduction="none"),
            diff=(0,),
            desc="none",
        ),
    ],
)
row(
    "smooth_l1_loss",
    F.smooth_l1_loss,
    _ref_smooth_l1,
    lambda rng: [Sample((_kinked(rng, 3, 4, at=0.5), np.zeros((3, 4))), dict(beta=0.5))],
)


def _ref_bce(x, y, weight=None, reduction="mean"):
    loss = -(y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log1p(-x), -100))
    return _reduce(loss * (1 if weight is None else weight), reduction)


def _ref_bce_logits(x, y, weight=None, reduction="mean", pos_weight=None):
    pw = 1 if pos_weight is None else pos_weight
    loss = -(pw * y * -np.logaddexp(0, -x) + (1 - y) * -np.logaddexp(0, x))
    return _reduce(loss * (1 if weight is None else weight), reduction)


row(
    "binary_cross_entropy",
    F.binary_cross_entropy,
    _ref_bce,
    lambda rng: [
        Sample((rng.uniform(0.05, 0.95, (3, 4)), rng.uniform(0, 1, (3, 4)))),
        Sample(
            (
                rng.uniform(0.05, 0.95, (3, 4)),
                rng.uniform(0, 1, (3, 4)),
                rng.uniform(0.5, 2, (3, 4)),
            ),
            dict(reduction="sum"),
            desc="weight",
        ),
        Sample(
            (
                rng.uniform(0.05, 0.95, (3, 4)),
                rng.uniform(0, 1, (3, 4)),
                rng.uniform(0.5, 2, (4,)),
                "none",
            ),
            diff=(0, 1),
            desc="none, broadcast weight",
        ),
    ],
)
row(
    "binary_cross_entropy_with_logits",
    F.binary_cross_entropy_with_logits,
    _ref_bce_logits,
    lambda rng: [
        Sample((rn(rng, 3, 4) * 3, rng.uniform(0, 1, (3, 4)))),
        Sample(
            (
                rn(rng, 3, 4),
                rng.uniform(0, 1, (3, 4)),
                rng.uniform(0.5, 2, (3, 4)),
                "none",
                np.array([1.0, 2.0, 0.5, 3.0]),
            ),
            diff=(0, 1),
            desc="weights",
        ),
    ],
)
row(
    "kl_div",
    F.kl_div,
    lambda x, t, reduction="mean": (
        _reduce(np.where(t > 0, t * np.log(np.where(t > 0, t, 1)), 0) - t * x, reduction)
        if reduction != "batchmean"
        else (t * (np.log(t) - x)).sum() / x.shape[0]
    ),
    lambda rng: [
        Sample(
            (ref_log_softmax(rn(rng, 3, 4), 1), ref_softmax(rn(rng, 3, 4), 1)),
            dict(reduction="batchmean"),
        ),
        Sample(
            (rn(rng, 3, 4), np.array([[0.0, 0.5, 0.5, 0.0]] * 3)),
            dict(reduction="sum"),
            diff=(0,),
            desc="zeros",
        ),
    ],
)

from tests.optable_rnn import OPS as _RNN_OPS  # noqa: E402  (the fused recurrent op)

OPS += _RNN_OPS

from tests.optable_attention import OPS as _ATTENTION_OPS  # noqa: E402  (multi-head form)

OPS += _ATTENTION_OPS
