"""``F.ctc_loss`` / ``nn.CTCLoss`` against PyTorch (values and gradients: float64 and
float32, every reduction, padded and concatenated targets, unbatched inputs,
``zero_infinity``, impossible alignments, random sizes), against a brute-force sum over
every alignment, gradcheck, and the argument errors.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F
from nnkit.autograd import gradcheck

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

TOL = {np.float64: dict(rtol=1e-9, atol=1e-10), np.float32: dict(rtol=2e-4, atol=2e-5)}


def _labels(rng, size, n_classes, blank):
    """Labels in ``[0, C)`` other than ``blank`` (small C: repeats are common)."""
    choices = [c for c in range(n_classes) if c != blank]
    return rng.choice(choices, size=size)


def _targets(rng, tl, s, n_classes, blank, layout):
    if layout == "concat":
        return _labels(rng, sum(tl), n_classes, blank)
    padded = _labels(rng, (len(tl), s), n_classes, blank)
    for i, k in enumerate(tl):  # padding past the length is never read (torch's neither)
        padded[i, k:] = -7
    return padded


def _lengths(values, kind, framework):
    if kind == "list":
        return list(values)
    return (torch.tensor if framework == "torch" else nnkit.tensor)(list(values))


def _compare(
    x,
    targets,
    il,
    tl,
    *,
    blank=0,
    reduction="mean",
    zero_infinity=False,
    kind="tensor",
    device="cpu",
    seed=0,
):
    """Run torch and nnkit on the same inputs; compare the losses and the gradients of
    a random cotangent (NaN and inf where torch has them)."""
    tol = TOL[x.dtype.type]
    kw = dict(blank=blank, reduction=reduction, zero_infinity=zero_infinity)
    tx = torch.tensor(x, requires_grad=True)
    tt = torch.tensor(targets)
    want = TF.ctc_loss(tx, tt, _lengths(il, kind, "torch"), _lengths(tl, kind, "torch"), **kw)
    cot = np.random.default_rng(seed).standard_normal(want.shape).astype(x.dtype)
    want.backward(torch.tensor(cot))
    nx = nnkit.tensor(x, device=device, requires_grad=True)
    nt = nnkit.tensor(targets, device=device)
    got = F.ctc_loss(nx, nt, _lengths(il, kind, "nnkit"), _lengths(tl, kind, "nnkit"), **kw)
    assert got.dtype == nx.dtype and tuple(got.shape) == tuple(want.shape)
    got.backward(nnkit.tensor(cot, device=device))
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), **tol)
    np.testing.assert_allclose(nx.grad.cpu().numpy(), tx.grad.numpy(), **tol)
    return got, nx.grad


def _log_probs(rng, t, n, c, dtype=np.float64, normalise=True, scale=1.0):
    x = rng.standard_normal((t, n, c)) * scale
    if normalise:
        x = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return x.astype(dtype)


@pytest.mark.parametrize(
    "dtype,reduction,zero_infinity,layout,kind",
    list(
        itertools.product(
            [np.float64, np.float32],
            ["mean", "sum", "none"],
            [False, True],
            ["padded", "concat"],
            ["tensor", "list"],
        )
    ),
)
def test_matches_torch(dtype, reduction, zero_infinity, layout, kind):
    rng = np.random.default_rng(3)
    il, tl = [7, 5, 7, 6], [3, 1, 4, 0]
    x = _log_probs(rng, 7, 4, 5, dtype)
    targets = _targets(rng, tl, 4, 5, 0, layout)
    _compare(
        x, targets, il, tl, reduction=reduction, zero_infinity=zero_infinity, kind=kind, seed=1
    )


def test_random_sizes_match_torch():
    """Random shapes, lengths (zero and impossible ones included), blanks, unnormalised
    log-probabilities (torch's gradient takes them as given) and repeated labels."""
    for seed in range(40):
        rng = np.random.default_rng(seed)
        t, n, c, s = (int(rng.integers(lo, hi)) for lo, hi in ((1, 10), (1, 5), (2, 6), (0, 5)))
        blank = int(rng.integers(0, c))
        il = [int(v) for v in rng.integers(0, t + 1, n)]
        tl = [int(v) for v in rng.integers(0, s + 1, n)]
        dtype = np.float64 if seed % 2 else np.float32
        x = _log_probs(rng, t, n, c, dtype, normalise=seed % 3 != 0)
        layout = "concat" if seed % 4 < 2 else "padded"
        targets = _targets(rng, tl, s, c, blank, layout)
        reduction = ("none", "sum", "mean")[seed % 3]
        zi = seed % 5 == 0
        _compare(x, targets, il, tl, blank=blank, reduction=reduction, zero_infinity=zi, seed=seed)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kind", ["tensor", "list", "zero-d"])
def test_unbatched(reduction, kind):
    rng = np.random.default_rng(5)
    x = _log_probs(rng, 6, 1, 4)[:, 0]
    targets = np.array([1, 3, 3])
    if kind == "zero-d":
        tx = torch.tensor(x, requires_grad=True)
        want = TF.ctc_loss(tx, torch.tensor(targets), torch.tensor(6), torch.tensor(3))
        nx = nnkit.tensor(x, requires_grad=True)
        got = F.ctc_loss(nx, nnkit.tensor(targets), nnkit.tensor(6), nnkit.tensor(3))
        want.backward()
        got.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
        np.testing.assert_allclose(nx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
        return
    got, _ = _compare(x, targets, [6], [3], reduction=reduction, kind=kind)
    assert got.ndim == 0


def test_impossible_alignments():
    """A target that needs more frames than given: inf loss and torch's NaN gradient;
    with zero_infinity a zero loss and exactly zero gradient for that sample."""
    rng = np.random.default_rng(7)
    x = _log_probs(rng, 3, 2, 4)
    targets = np.array([[2, 2], [1, 3]])  # "2 2" needs 3 frames: 2, blank, 2
    for il, impossible in (([2, 3], True), ([3, 3], False)):
        got, grad = _compare(x, targets, il, [2, 2], reduction="none")
        assert math.isinf(got[0].item()) == impossible
        assert np.isnan(grad.numpy()[:2, 0]).all() == impossible
    got, grad = _compare(x, targets, [2, 3], [2, 2], reduction="none", zero_infinity=True)
    assert got[0].item() == 0.0 and (grad.numpy()[:, 0] == 0).all()
    assert np.isfinite(grad.numpy()).all()
    got, _ = _compare(x, targets, [2, 3], [2, 2], reduction="mean")
    assert math.isinf(got.item())
    got, _ = _compare(x, targets, [2, 3], [2, 2], reduction="mean", zero_infinity=True)
    assert math.isfinite(got.item())


def test_zero_lengths():
    rng = np.random.default_rng(8)
    x = _log_probs(rng, 4, 4, 3)
    targets = np.array([[1, 2], [1, 2], [1, 2], [1, 2]])
    il, tl = [0, 0, 4, 2], [0, 1, 0, 2]
    got, grad = _compare(x, targets, il, tl, reduction="none")
    out = got.detach().numpy()
    assert out[0] == 0.0 and math.isinf(out[1])
    np.testing.assert_allclose(out[2], -x[:, 2, 0].sum())  # blanks only
    assert (grad.numpy()[:, :2] == 0).all()  # no frames: no gradient
    for reduction in ("mean", "sum"):
        _compare(x, targets, il, tl, reduction=reduction, zero_infinity=True)


def test_minus_inf_log_probs():
    """log(0) entries (a masked class, used by a target or not): torch's values, NaN
    gradients included, where a class is impossible at a time step."""
    rng = np.random.default_rng(16)
    x = _log_probs(rng, 5, 2, 5)
    x[:, :, 4] = -np.inf  # a class no target uses
    x[1, 0, 2] = -np.inf  # a label of sample 0, impossible at t = 1
    targets = np.array([[1, 2], [3, 3]])
    for reduction in ("none", "sum"):
        _, grad = _compare(x, targets, [5, 5], [2, 2], reduction=reduction)
        assert np.isnan(grad.numpy()).any()


def test_large_negative_log_probs():
    """Forced alignments through very unlikely classes (log-probabilities near -100) in
    float32: each class's log-sum keeps its own maximum, as torch's sequential log-add."""
    rng = np.random.default_rng(9)
    x = _log_probs(rng, 5, 3, 6, np.float32, scale=40.0)
    targets = np.array([[1, 2, 1], [3, 3, 4], [5, 4, 3]])
    for reduction in ("none", "mean"):
        _compare(x, targets, [5, 5, 5], [3, 2, 3], reduction=reduction)


def test_non_contiguous_log_probs(device):
    """Batch-first activations transposed to (T, N, C), as models usually produce them."""
    rng = np.random.default_rng(10)
    logits = rng.standard_normal((3, 6, 5))
    tg = np.array([[1, 2, 2], [4, 1, 0], [3, 3, 3]])
    tx = torch.tensor(logits, requires_grad=True)
    want = TF.ctc_loss(tx.transpose(0, 1).log_softmax(2), torch.tensor(tg), [6, 5, 6], [3, 2, 2])
    want.backward()
    nx = nnkit.tensor(logits, device=device, requires_grad=True)
    lp = nx.transpose(0, 1).log_softmax(2)
    assert not lp.is_contiguous()
    got = F.ctc_loss(lp, nnkit.tensor(tg, device=device), [6, 5, 6], [3, 2, 2])
    got.backward()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    np.testing.assert_allclose(nx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_device(device):
    rng = np.random.default_rng(11)
    x = _log_probs(rng, 6, 3, 4)
    targets = np.array([1, 2, 3, 3, 2])
    for reduction in ("none", "mean"):
        _compare(x, targets, [6, 4, 5], [2, 1, 2], reduction=reduction, device=device)
        _compare(x, targets, [6, 2, 5], [2, 1, 2], zero_infinity=True, device=device)


def _brute_force(lp, target, blank):
    """``-log`` of the summed probability of every path that collapses to ``target``."""
    total = 0.0
    for path in itertools.product(range(lp.shape[1]), repeat=lp.shape[0]):
        collapsed = [c for k, c in enumerate(path) if c != blank and (k == 0 or c != path[k - 1])]
        if collapsed == list(target):
            total += math.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -math.log(total) if total else math.inf


def test_matches_brute_force():
    """An oracle independent of torch: the sum over all alignments, by enumeration."""
    rng = np.random.default_rng(12)
    for target, il, blank in (([1, 1], 4, 0), ([2, 1, 2], 5, 0), ([0, 2], 4, 1), ([], 3, 2)):
        x = _log_probs(rng, 5, 1, 3)
        got = F.ctc_loss(
            nnkit.tensor(x), nnkit.tensor(target, dtype=nnkit.int64), [il], [len(target)],
            blank=blank, reduction="sum",
        )  # fmt: skip
        np.testing.assert_allclose(got.item(), _brute_force(x[:il, 0], target, blank), rtol=1e-12)


@pytest.mark.parametrize("layout", ["padded", "concat"])
def test_gradcheck(layout):
    """The gradient is the derivative of the loss of log_softmax(x) (torch's formula
    assumes normalised log-probabilities, which log_softmax's backward makes exact)."""
    rng = np.random.default_rng(13)
    x = nnkit.tensor(rng.standard_normal((5, 3, 4)), requires_grad=True)
    tl = [2, 1, 3]
    targets = nnkit.tensor(_targets(rng, tl, 3, 4, 0, layout))
    for reduction in ("mean", "none"):

        def fn(a, reduction=reduction):
            return F.ctc_loss(a.log_softmax(2), targets, [5, 4, 5], tl, reduction=reduction)

        assert gradcheck(fn, (x,))


def test_double_backward_is_refused():
    x = nnkit.tensor(_log_probs(np.random.default_rng(14), 4, 1, 3), requires_grad=True)
    loss = F.ctc_loss(x, nnkit.tensor([[1, 2]]), [4], [2])
    (g,) = nnkit.autograd.grad(loss, x, create_graph=True)
    with pytest.raises(RuntimeError, match="ctc_loss: double backward"):
        nnkit.autograd.grad(g.sum(), x)


def test_module():
    rng = np.random.default_rng(15)
    x = nnkit.tensor(_log_probs(rng, 5, 2, 4))
    tg, il, tl = nnkit.tensor([[1, 2], [3, 0]]), [5, 4], [2, 1]
    for kw in ({}, dict(blank=0, reduction="sum"), dict(reduction="none", zero_infinity=True)):
        got = nn.CTCLoss(**kw)(x, tg, il, tl)
        np.testing.assert_array_equal(got.numpy(), F.ctc_loss(x, tg, il, tl, **kw).numpy())
    assert repr(nn.CTCLoss()) == "CTCLoss()"
    assert repr(nn.CTCLoss(blank=2, zero_infinity=True)) == "CTCLoss(blank=2, zero_infinity=True)"
    with pytest.raises(ValueError, match="reduction"):
        nn.CTCLoss(reduction="avg")


_X = np.log(np.full((5, 2, 4), 0.25))
_GOOD = dict(targets=np.array([[1, 2], [3, 1]]), il=[5, 4], tl=[2, 1])


@pytest.mark.parametrize(
    "change,exc,match",
    [
        (dict(x=_X.astype(np.int64)), TypeError, "log_probs must be float"),
        (dict(x=_X.astype(np.float16)), TypeError, "log_probs must be float"),
        (dict(x=_X[None]), ValueError, "log_probs must be"),
        (dict(x=_X[:, :0]), ValueError, "log_probs must not be empty"),
        (dict(targets=np.array([[1.0, 2.0], [3.0, 1.0]])), TypeError, "targets must be an int"),
        (dict(targets=np.zeros((1, 2, 2), np.int64)), ValueError, "targets must be"),
        (dict(targets=np.array([[1, 2]])), ValueError, "padded targets must have shape"),
        (
            dict(targets=np.array([1, 2, 3, 1])),
            ValueError,
            "concatenated 1-d targets must have sum\\(target_lengths\\) = 3",
        ),
        (dict(tl=[3, 1]), ValueError, "target_lengths must be at most S = 2"),
        (dict(il=[6, 4]), ValueError, "input_lengths must be at most T = 5"),
        (dict(il=[5, -1]), ValueError, "input_lengths must be at least 0"),
        (dict(il=[5, 4, 3]), ValueError, "input_lengths must have 2 entries"),
        (dict(tl=[1]), ValueError, "target_lengths must have 2 entries"),
        (dict(il="tensor-float"), TypeError, "input_lengths must be integral"),
        (dict(il=[5.0, 4.0]), TypeError, "input_lengths must hold ints"),
        (dict(blank=4), ValueError, "blank must be in \\[0, 4\\)"),
        (dict(blank=-1), ValueError, "blank must be in"),
        (dict(targets=np.array([[1, 4], [3, 1]])), IndexError, "target label 4 is out of range"),
        (
            dict(targets=np.array([[1, 0], [3, 1]])),
            ValueError,
            "targets must not contain the blank",
        ),
        (dict(reduction="avg"), ValueError, "reduction must be one of"),
    ],
)
def test_errors(change, exc, match):
    args = dict(x=_X, blank=0, reduction="mean", **_GOOD)
    args.update(change)
    il = nnkit.tensor([5.0, 4.0]) if args["il"] == "tensor-float" else args["il"]
    with pytest.raises(exc, match="ctc_loss: " + match):
        F.ctc_loss(
            nnkit.tensor(args["x"]), nnkit.tensor(args["targets"]), il, args["tl"],
            blank=args["blank"], reduction=args["reduction"],
        )  # fmt: skip
