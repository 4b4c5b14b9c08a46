"""Regression tests for what the OpInfo differential test (test_opinfo.py) found: each
case failed (wrong, obscure error or needless refusal) before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F

torch = pytest.importorskip("torch")


def _t(a, grad=False):
    return nnkit.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def test_atleast_nd_take_lists_and_several_tensors():
    a, b = np.float64(2.0), np.arange(3.0)
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        ours = getattr(nnkit, name)([_t(a), _t(b)])
        theirs = getattr(torch, name)([torch.tensor(a), torch.tensor(b)])
        assert [o.shape for o in ours] == [tuple(t.shape) for t in theirs]
        ours = getattr(nnkit, name)(_t(a), _t(b))
        assert isinstance(ours, tuple) and len(ours) == 2
        assert getattr(nnkit, name)(_t(b)).shape == tuple(
            getattr(torch, name)(torch.tensor(b)).shape
        )


def test_amax_amin_over_a_nonempty_dim_of_an_empty_tensor():
    x = nnkit.zeros(5, 0, 4, requires_grad=True)
    assert x.amax(0).shape == (0, 4) and x.amin(2).shape == (5, 0)
    lo, hi = nnkit.aminmax(x, dim=0)
    assert lo.shape == hi.shape == (0, 4)
    (hi.sum() + lo.sum()).backward()
    assert x.grad.shape == (5, 0, 4)
    with pytest.raises(RuntimeError, match="empty"):
        x.amax(1)


@pytest.mark.parametrize("mode", ["circular", "reflect", "replicate"])
@pytest.mark.parametrize("pads", [(-1, 1), (2, -1), (-1, -2), (-3, 2), (1, -1, -1, 2)])
def test_pad_with_negative_amounts_crops_as_torch(mode, pads):
    if mode == "circular" and pads == (-3, 2):
        # wider than what is left after cropping: torch copies overlapping memory
        # (it even errors for a single channel); nnkit refuses
        with pytest.raises(ValueError, match="circular"):
            F.pad(nnkit.zeros(1, 2, 4), pads, mode=mode)
        return
    xs = np.random.default_rng(0).standard_normal((1, 2, 4, 4)[: len(pads) // 2 + 2])
    tx = torch.tensor(xs, requires_grad=True)
    try:
        want = torch.nn.functional.pad(tx.clone(), pads, mode=mode)
    except RuntimeError:
        with pytest.raises(ValueError):
            F.pad(_t(xs), pads, mode=mode)
        return
    x = _t(xs, grad=True)
    got = F.pad(x, pads, mode=mode)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
    g = np.random.default_rng(1).standard_normal(got.shape)
    got.backward(_t(g))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_casts_take_memory_format_and_refuse_channels_last():
    x = nnkit.tensor([[1.5, -2.0]])
    assert x.double(memory_format="contiguous_format").dtype == nnkit.float64
    assert x.to(nnkit.int64, memory_format="preserve_format").tolist() == [[1, -2]]
    with pytest.raises(NotImplementedError, match="channels_last"):
        x.float(memory_format="channels_last")


def test_to_reads_positional_non_blocking_and_copy_as_torch():
    x, other = nnkit.tensor([1.0, 2.0]), nnkit.tensor([0.0], dtype=nnkit.float64)
    same = x.to(nnkit.float32, False, False)
    assert same is x
    copy = x.to(nnkit.float32, False, True)
    assert copy is not x and copy.tolist() == x.tolist()
    assert x.to(other, False, False).dtype == nnkit.float64


def test_scatter_reduce_prod_refuses_a_second_derivative():
    x = _t([1.0, 2.0], grad=True)
    s = _t([3.0, 0.0, 4.0], grad=True)
    out = nnkit.scatter_reduce(x, 0, nnkit.tensor([0, 0, 1]), s, "prod")
    assert out.tolist() == [0.0, 8.0]
    (gx, gs) = nnkit.autograd.grad(out.sum(), [x, s])
    assert gx.tolist() == [0.0, 4.0] and gs.tolist() == [0.0, 3.0, 2.0]
    for weights in (nnkit.ones(2), x * x):  # constant and differentiable cotangents
        out = nnkit.scatter_reduce(x, 0, nnkit.tensor([0, 0, 1]), s, "prod")
        (gx,) = nnkit.autograd.grad((out * weights).sum(), [x], create_graph=True)
        with pytest.raises(NotImplementedError, match="second derivative"):
            nnkit.autograd.grad(gx.sum(), [x])


def test_eigh_and_svdvals_gradients_match_torch():
    a = np.random.default_rng(3).standard_normal((3, 4, 4))
    x, tx = _t(a, grad=True), torch.tensor(a, requires_grad=True)
    w, v = nnkit.linalg.eigh(x + x.mT)
    tw, tv = torch.linalg.eigh(tx + tx.mT)
    s, ts = nnkit.linalg.svdvals(x), torch.linalg.svdvals(tx)
    loss = (w * w).sum() + v.abs().sum() + s.sum() ** 2
    tloss = (tw * tw).sum() + tv.abs().sum() + ts.sum() ** 2
    (g,) = nnkit.autograd.grad(loss, x, create_graph=True)
    (tg,) = torch.autograd.grad(tloss, tx, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-8, atol=1e-10)
    (gg,) = nnkit.autograd.grad((g * g).sum(), x)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-6, atol=1e-8)


def test_norm_nuc_matches_torch():
    a = np.random.default_rng(4).standard_normal((2, 3, 4))
    x, tx = _t(a, grad=True), torch.tensor(a, requires_grad=True)
    got = nnkit.norm(x, "nuc", dim=(0, 2), keepdim=True)
    want = torch.norm(tx, "nuc", dim=(0, 2), keepdim=True)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="nuc"):
        nnkit.norm(x, "nuc")


def test_repeat_interleave_checks_output_size():
    x = nnkit.tensor([1, 2])
    assert x.repeat_interleave(2, output_size=4).tolist() == [1, 1, 2, 2]
    with pytest.raises(ValueError, match="output_size"):
        x.repeat_interleave(2, output_size=3)


def test_adjoint_properties_of_real_tensors():
    x = nnkit.arange(6.0).reshape(2, 3)
    assert x.H.tolist() == x.T.tolist() and x.mH.shape == (3, 2)
    assert nnkit.zeros(4, 2, 3).mH.shape == (4, 3, 2)
    with pytest.raises(ValueError, match="H"):
        _ = nnkit.zeros(4, 2, 3).H
    with pytest.raises(ValueError, match="mH"):
        _ = nnkit.zeros(3).mH


def test_pool3d_reports_a_wrong_rank_clearly():
    with pytest.raises(nnkit.ShapeError, match=r"\(N, C, D, H, W\)"):
        F.max_pool3d(nnkit.zeros(2, 3), 2)


def test_diff_of_order_zero_is_the_input():
    x = nnkit.tensor([1.0, 4.0])
    assert nnkit.diff(x, 0, append=nnkit.tensor([9.0])).tolist() == [1.0, 4.0]
    assert nnkit.diff(x, 1, prepend=nnkit.tensor([0.0])).tolist() == [1.0, 3.0]


def test_conv_transpose_with_output_padding_beyond_stride_matches_torch():
    # output_padding may reach max(stride, dilation) - 1: the last positions then lie
    # beyond every window (torch gives them the bias only)
    rng = np.random.default_rng(5)
    xs, ws, bs = rng.standard_normal((2, 2, 4, 4)), rng.standard_normal((2, 2, 2, 3)), [1.0] * 4
    kw = dict(stride=(3, 2), padding=(0, 1), output_padding=(2, 3), groups=2, dilation=(4, 4))
    x, w = _t(xs, grad=True), _t(ws, grad=True)
    tx, tw = torch.tensor(xs, requires_grad=True), torch.tensor(ws, requires_grad=True)
    got = F.conv_transpose2d(x, w, _t(bs), **kw)
    want = torch.nn.functional.conv_transpose2d(tx, tw, torch.tensor(bs, dtype=torch.float64), **kw)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    g = rng.standard_normal(got.shape)
    got.backward(_t(g))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10)


def test_adaptive_max_pool_indices_follow_torch_with_ties_and_nan():
    xs = np.asarray([[[1.0, 3.0, 3.0, np.nan, 0.0, np.nan, 2.0]]])
    got, gi = F.adaptive_max_pool1d(_t(xs), 3, return_indices=True)
    want, wi = torch.nn.functional.adaptive_max_pool1d(torch.tensor(xs), 3, return_indices=True)
    np.testing.assert_array_equal(gi.numpy(), wi.numpy())
    np.testing.assert_allclose(got.numpy(), want.numpy())
