"""Winograd F(4x4, 3x3) convolutions (``nnkit/backends/winograd_kernels.py``): values and
gradients against PyTorch and against the im2col path, second derivatives, and which
path each convolution takes.

``conv.WINOGRAD_MIN_CHANNELS`` is lowered to 1 where small shapes must take the Winograd
path (``winograd`` fixture), and ``conv.WINOGRAD`` switched off for the direct path.
"""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F
from nnkit.autograd import gradcheck, gradgradcheck
from nnkit.autograd.ops import conv
from nnkit.backends.mat import ArrayMat

torch = pytest.importorskip("torch")

#: float32 Winograd error bound, relative to the largest magnitude of the exact result
#: (measured: 3e-6 to 1.4e-5 for the output and gradients at 16..128 channels; the
#: im2col path's is 2e-7 to 4e-7).
F32_TOL = 5e-5
F64_TOL = 1e-12


@pytest.fixture
def winograd(monkeypatch):
    """Every 3x3 stride-1 convolution takes the Winograd path, whatever its channels."""
    monkeypatch.setattr(conv, "WINOGRAD", True)
    monkeypatch.setattr(conv, "WINOGRAD_MIN_CHANNELS", 1)


@pytest.fixture
def calls(monkeypatch):
    """Counts the calls of the Winograd and im2col kernels."""
    counts = {"wino_input": 0, "wino_output": 0, "wino_output_adjoint": 0, "conv_im2col": 0}
    for name in counts:
        orig = getattr(ArrayMat, name)

        def spy(self, *a, _orig=orig, _name=name, **k):
            counts[_name] += 1
            return _orig(self, *a, **k)

        monkeypatch.setattr(ArrayMat, name, spy)
    return counts


def _close(got, want, tol):
    want = np.asarray(want, dtype=np.float64)
    err = np.abs(np.asarray(got, dtype=np.float64) - want).max() / max(np.abs(want).max(), 1e-300)
    assert err <= tol, f"relative error {err:.3g} > {tol:g}"


def _check_vs_torch(x, w, b, padding, dtype, device="cpu", x_view=None):
    """Forward and every gradient of nnkit's conv2d vs torch's, in ``dtype``."""
    rng = np.random.default_rng(7)
    tol = F32_TOL if dtype == np.float32 else F64_TOL
    nx = nnkit.tensor(x.astype(dtype), requires_grad=True, device=device)
    nw = nnkit.tensor(w.astype(dtype), requires_grad=True, device=device)
    nb = None if b is None else nnkit.tensor(b.astype(dtype), requires_grad=True, device=device)
    xin = nx if x_view is None else x_view(nx)
    y = F.conv2d(xin, nw, nb, padding=padding)
    gy = rng.standard_normal(tuple(y.shape))
    y.backward(nnkit.tensor(gy.astype(dtype), device=device))
    # the reference: torch in float64
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = None if b is None else torch.tensor(b, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx if x_view is None else x_view(tx), tw, tb, padding=padding)
    ty.backward(torch.tensor(gy))
    assert y.dtype == (nnkit.float32 if dtype == np.float32 else nnkit.float64)
    _close(y.detach().cpu().numpy(), ty.detach().numpy(), tol)
    _close(nx.grad.cpu().numpy(), tx.grad.numpy(), tol)
    _close(nw.grad.cpu().numpy(), tw.grad.numpy(), tol)
    if b is not None:
        _close(nb.grad.cpu().numpy(), tb.grad.numpy(), tol)


SHAPES = [
    # (N, C, O, H, W, padding): odd and even outputs, partial and whole tiles
    (2, 3, 5, 13, 13, 0),  # 11x11 output: a partial last tile
    (1, 4, 2, 8, 8, 1),  # batch 1, 8x8: whole tiles
    (3, 2, 3, 7, 9, 2),  # padding 2, 9x11 output
    (2, 3, 4, 3, 3, 0),  # a 1x1 output
    (1, 1, 1, 5, 6, 1),  # one channel in and out
    (2, 16, 32, 6, 5, 1),
    (2, 64, 16, 5, 7, 0),
    (1, 32, 64, 10, 10, 1),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_matches_torch(shape, dtype, winograd, calls, rng):
    n, c, o, h, w, p = shape
    x = rng.standard_normal((n, c, h, w))
    k = rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)
    b = rng.standard_normal(o)
    _check_vs_torch(x, k, b, p, dtype)
    assert calls["wino_input"] == 1 and calls["wino_output_adjoint"] == 1
    assert calls["conv_im2col"] == 0


@pytest.mark.parametrize("padding", [0, 1, (2, 0), "same"])
def test_matches_torch_padding_variants_no_bias(padding, winograd, rng):
    x = rng.standard_normal((2, 5, 9, 8))
    k = rng.standard_normal((6, 5, 3, 3))
    _check_vs_torch(x, k, None, padding, np.float64)


@pytest.mark.parametrize(
    "view",
    [
        lambda t: t.transpose(2, 3),  # spatially transposed
        lambda t: t[:, :, 1:, ::2],  # strided
        lambda t: t.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),  # channels-last
    ],
    ids=["transposed", "strided", "channels-last"],
)
def test_non_contiguous_input(view, winograd, calls, rng):
    x = rng.standard_normal((2, 4, 10, 12))
    k = rng.standard_normal((3, 4, 3, 3))
    _check_vs_torch(x, k, rng.standard_normal(3), 1, np.float64, x_view=view)
    assert calls["wino_input"] == 1


def test_float32_realistic_error_and_agrees_with_direct(monkeypatch, rng):
    """The benchmark's conv2 (relu'd input, He-initialised kernel) in float32, by both
    paths, against float64: Winograd is within F32_TOL, im2col within 1e-6."""
    x = np.maximum(rng.standard_normal((16, 32, 13, 13)), 0)
    k = rng.standard_normal((64, 32, 3, 3)) * np.sqrt(2 / (9 * 32))
    b = 0.1 * rng.standard_normal(64)
    gy = 1e-2 * rng.standard_normal((16, 64, 11, 11))

    def run(dtype, wino):
        monkeypatch.setattr(conv, "WINOGRAD", wino)
        ts = [nnkit.tensor(a.astype(dtype), requires_grad=True) for a in (x, k, b)]
        y = F.conv2d(*ts)
        y.backward(nnkit.tensor(gy.astype(dtype)))
        return [y.detach().numpy()] + [t.grad.numpy() for t in ts]

    exact = run(np.float64, False)
    for got, want in zip(run(np.float64, True), exact):
        _close(got, want, F64_TOL)
    for got, want in zip(run(np.float32, True), exact):
        _close(got, want, F32_TOL)
    for got, want in zip(run(np.float32, False), exact):
        _close(got, want, 1e-6)


def test_gradcheck_and_double_backward(winograd, calls, rng):
    x = nnkit.tensor(rng.standard_normal((2, 2, 6, 5)), requires_grad=True)
    w = nnkit.tensor(rng.standard_normal((3, 2, 3, 3)), requires_grad=True)
    b = nnkit.tensor(rng.standard_normal(3), requires_grad=True)
    assert gradcheck(lambda *a: F.conv2d(*a, padding=1), (x, w, b))
    assert gradgradcheck(lambda *a: F.conv2d(*a, padding=1), (x, w, b))
    assert calls["conv_im2col"] == 0 and calls["wino_input"] > 0


def test_double_backward_matches_torch(winograd, rng):
    x0, w0 = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 3))
    x, w = (nnkit.tensor(a, requires_grad=True) for a in (x0, w0))
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x0, w0))
    (gx,) = nnkit.autograd.grad(F.conv2d(x, w, padding=1).pow(2).sum(), [x], create_graph=True)
    (tgx,) = torch.autograd.grad(
        torch.nn.functional.conv2d(tx, tw, padding=1).pow(2).sum(), [tx], create_graph=True
    )
    (gx * gx).sum().backward()
    (tgx * tgx).sum().backward()
    _close(x.grad.numpy(), tx.grad.numpy(), F64_TOL)
    _close(w.grad.numpy(), tw.grad.numpy(), F64_TOL)


def test_retain_graph_second_backward_uses_its_own_gradient(winograd, rng):
    """The output gradient's transform is shared by the two gradients of one backward
    only: a second backward (another gradient) must not reuse the first one's."""
    x = nnkit.tensor(rng.standard_normal((1, 3, 6, 6)), requires_grad=True)
    w = nnkit.tensor(rng.standard_normal((2, 3, 3, 3)), requires_grad=True)
    y = F.conv2d(x, w)
    g1, g2 = rng.standard_normal((2,) + tuple(y.shape))
    y.backward(nnkit.tensor(g1), retain_graph=True)
    gx1, gw1 = x.grad.numpy().copy(), w.grad.numpy().copy()
    x.grad = w.grad = None
    y.backward(nnkit.tensor(g2))
    tx, tw = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, w))
    torch.nn.functional.conv2d(tx, tw).backward(torch.tensor(g2))
    _close(x.grad.numpy(), tx.grad.numpy(), F64_TOL)
    _close(w.grad.numpy(), tw.grad.numpy(), F64_TOL)
    assert not np.allclose(gx1, x.grad.numpy()) and not np.allclose(gw1, w.grad.numpy())


def test_only_one_gradient_needed(winograd, rng):
    x0, w0 = rng.standard_normal((2, 3, 6, 7)), rng.standard_normal((2, 3, 3, 3))
    tx, tw = (torch.tensor(a, requires_grad=True) for a in (x0, w0))
    torch.nn.functional.conv2d(tx, tw).sum().backward()
    x = nnkit.tensor(x0)
    w = nnkit.tensor(w0, requires_grad=True)
    F.conv2d(x, w).sum().backward()
    _close(w.grad.numpy(), tw.grad.numpy(), F64_TOL)
    x = nnkit.tensor(x0, requires_grad=True)
    F.conv2d(x, nnkit.tensor(w0)).sum().backward()
    _close(x.grad.numpy(), tx.grad.numpy(), F64_TOL)


def test_conv_transpose2d(winograd, calls, rng):
    x0 = rng.standard_normal((2, 4, 5, 6))
    w0 = rng.standard_normal((4, 3, 3, 3))
    b0 = rng.standard_normal(3)
    ts = [nnkit.tensor(a, requires_grad=True) for a in (x0, w0, b0)]
    tts = [torch.tensor(a, requires_grad=True) for a in (x0, w0, b0)]
    y = F.conv_transpose2d(*ts, padding=1)
    ty = torch.nn.functional.conv_transpose2d(*tts, padding=1)
    _close(y.detach().numpy(), ty.detach().numpy(), F64_TOL)
    g = rng.standard_normal(tuple(y.shape))
    y.backward(nnkit.tensor(g))
    ty.backward(torch.tensor(g))
    for t, tt in zip(ts, tts):
        _close(t.grad.numpy(), tt.grad.numpy(), F64_TOL)
    assert calls["wino_output_adjoint"] >= 1 and calls["conv_im2col"] == 0


def test_device(device, winograd, rng):
    x = rng.standard_normal((2, 3, 7, 8))
    k = rng.standard_normal((4, 3, 3, 3))
    _check_vs_torch(x, k, rng.standard_normal(4), 1, np.float64, device=device)


# ------------------------------------------------------------------ which path
def _geom(x_shape, w_shape, dtype=nnkit.float32, **kw):
    x = nnkit.zeros(*x_shape, dtype=dtype)
    w = nnkit.zeros(*w_shape, dtype=dtype)
    return conv._geometry(
        x,
        w,
        None,
        kw.get("stride", 1),
        kw.get("padding", 0),
        kw.get("dilation", 1),
        kw.get("groups", 1),
        len(x_shape) - 2,
        "conv",
        x_shape,
    )


def test_benchmark_conv2_takes_winograd_and_conv1_im2col(calls):
    """bench_cnn's network: conv2 (32 -> 64 channels) by Winograd, conv1 (one input
    channel) by im2col + GEMM."""
    assert conv.WINOGRAD and conv.WINOGRAD_MIN_CHANNELS <= 32
    assert _geom((64, 32, 13, 13), (64, 32, 3, 3)).winograd
    assert not _geom((64, 1, 28, 28), (32, 1, 3, 3)).winograd
    x = nnkit.randn(4, 32, 13, 13, requires_grad=True)
    w = nnkit.randn(64, 32, 3, 3, requires_grad=True)
    F.conv2d(x, w).sum().backward()
    assert calls == {
        "wino_input": 1,
        "wino_output": 1,
        "wino_output_adjoint": 1,
        "conv_im2col": 0,
    }
    F.conv2d(nnkit.randn(4, 1, 28, 28), nnkit.randn(32, 1, 3, 3, requires_grad=True))
    assert calls["conv_im2col"] == 1 and calls["wino_input"] == 1


@pytest.mark.parametrize(
    "x_shape,w_shape,kw",
    [
        ((2, 32, 9, 9), (32, 32, 3, 3), dict(stride=2)),
        ((2, 32, 9, 9), (32, 32, 3, 3), dict(dilation=2)),
        ((2, 32, 9, 9), (32, 16, 3, 3), dict(groups=2)),
        ((2, 32, 9, 9), (32, 32, 5, 5), {}),
        ((2, 32, 9, 9), (32, 32, 3, 2), {}),
        ((2, 3, 9, 9), (32, 3, 3, 3), {}),  # too few input channels
        ((2, 32, 9, 9), (3, 32, 3, 3), {}),  # too few output channels
        ((2, 32, 9), (32, 32, 3), {}),  # conv1d
        ((2, 32, 5, 5, 5), (32, 32, 3, 3, 3), {}),  # conv3d
    ],
)
def test_direct_path_where_winograd_does_not_apply(x_shape, w_shape, kw):
    assert not _geom(x_shape, w_shape, **kw).winograd
    assert _geom((2, 32, 9, 9), (32, 32, 3, 3)).winograd  # the same, plain: Winograd


def test_float16_and_switch_take_the_direct_path(monkeypatch):
    assert not _geom((2, 32, 9, 9), (32, 32, 3, 3), dtype=nnkit.float16).winograd
    monkeypatch.setattr(conv, "WINOGRAD", False)
    assert not _geom((2, 32, 9, 9), (32, 32, 3, 3)).winograd


def test_direct_switch_runs_im2col(monkeypatch, calls, rng):
    monkeypatch.setattr(conv, "WINOGRAD", False)
    x = nnkit.tensor(rng.standard_normal((2, 32, 6, 6)), requires_grad=True)
    w = nnkit.tensor(rng.standard_normal((32, 32, 3, 3)), requires_grad=True)
    F.conv2d(x, w).sum().backward()
    assert calls["wino_input"] == 0 and calls["conv_im2col"] == 1


def test_empty_batch(winograd, calls):
    x = nnkit.randn(0, 8, 6, 6, requires_grad=True)
    w = nnkit.randn(8, 8, 3, 3, requires_grad=True)
    b = nnkit.randn(8, requires_grad=True)
    y = F.conv2d(x, w, b, padding=1)
    assert y.shape == (0, 8, 6, 6)
    y.sum().backward()
    assert x.grad.shape == (0, 8, 6, 6)
    assert not w.grad.numpy().any() and not b.grad.numpy().any()
    assert calls["wino_input"] == 1
