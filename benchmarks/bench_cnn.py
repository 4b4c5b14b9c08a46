"""CNN training throughput: the classic MNIST-shaped ConvNet, one SGD step per batch.

Network (float32, batch 64, 1x28x28 inputs)::

    Conv(1->32, 3x3) - ReLU - MaxPool2 - Conv(32->64, 3x3) - ReLU - MaxPool2 - Flatten
    - Linear(1600->128) - ReLU - Linear(128->10) - cross-entropy, plain SGD

Three implementations, timed in alternation in one run (medians after warm-up):

* nnkit: ``nnkit.nn.functional`` ops on raw ``requires_grad`` parameters (the second
  convolution by Winograd F(4x4, 3x3), the first, of one input channel, by im2col +
  GEMM; see ``nnkit/autograd/ops/conv.py``);
* the NumPy floor: a hand-written channels-last im2col + GEMM forward, backward and
  SGD (``as_strided`` windows, one copy per im2col, col2im by kernel offsets);
* PyTorch CPU (when installed), with the same thread count as NumPy's BLAS.

The three share one process, so one malloc heap: glibc returns the top of the heap to
the system when a step frees more than twice its largest mmap'ed block, and the next
step page-faults it back in. That cost (on a 2-core VM up to ~3 000 faults and 10 ms
per step, different for each contender and from run to run) is part of what is
measured; with ``--keep-freed-memory`` (nnkit's
:func:`~nnkit.backends.host_memory.keep_freed_memory`, which ``nnkit train`` sets) or
``MALLOC_TRIM_THRESHOLD_=4000000000 MALLOC_MMAP_THRESHOLD_=4000000000`` it goes, for
every contender.

Run: ``python -m benchmarks.bench_cnn [--repeats 15] [--profile] [--keep-freed-memory]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from numpy.lib.stride_tricks import as_strided

import nnkit
import nnkit.nn.functional as F
from benchmarks._common import blas_threads, env_line, interleaved_medians, try_torch
from nnkit.backends.host_memory import keep_freed_memory

BATCH = 64
LR = 0.01
SHAPES = {
    "c1w": (32, 1, 3, 3),
    "c1b": (32,),
    "c2w": (64, 32, 3, 3),
    "c2b": (64,),
    "f1w": (128, 1600),
    "f1b": (128,),
    "f2w": (10, 128),
    "f2b": (10,),
}


def init_params(seed: int = 0) -> dict:
    """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) float32 arrays in torch layouts."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in SHAPES.items():
        w_shape = SHAPES[name[:-1] + "w"]
        bound = 1 / np.sqrt(np.prod(w_shape[1:]))
        params[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    return params


# ----------------------------------------------------------------------- nnkit
def train_step(F, no_grad, p: dict, x, y):
    """One SGD step of the network, written once for nnkit and for PyTorch.

    ``F`` is ``nnkit.nn.functional`` or ``torch.nn.functional``; ``no_grad`` the
    matching context manager.
    """
    h = F.max_pool2d(F.relu(F.conv2d(x, p["c1w"], p["c1b"])), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p["c2w"], p["c2b"])), 2)
    h = F.relu(F.linear(h.flatten(1), p["f1w"], p["f1b"]))
    loss = F.cross_entropy(F.linear(h, p["f2w"], p["f2b"]), y)
    loss.backward()
    with no_grad():
        for t in p.values():
            t.sub_(t.grad, alpha=LR)
            t.grad = None
    return loss


def nnkit_step(p: dict, x, y):
    return train_step(F, nnkit.no_grad, p, x, y)


# ------------------------------------------------------------------ NumPy floor
def _im2col(x, k):
    """Channels-last ``(N, H, W, C)`` -> ``(N*OH*OW, k*k*C)`` columns (one copy)."""
    n, h, w, c = x.shape
    oh, ow = h - k + 1, w - k + 1
    s = x.strides
    win = as_strided(x, (n, oh, ow, k, k, c), (s[0], s[1], s[2], s[1], s[2], s[3]))
    return win.reshape(n * oh * ow, k * k * c), oh, ow


def _col2im(cols, shape, k):
    n, h, w, c = shape
    oh, ow = h - k + 1, w - k + 1
    cols = cols.reshape(n, oh, ow, k, k, c)
    out = np.zeros(shape, cols.dtype)
    for i in range(k):
        for j in range(k):
            out[:, i : i + oh, j : j + ow] += cols[:, :, :, i, j]
    return out


def _pool(y):
    """2x2 max pool of channels-last ``y`` (odd sizes cropped) and the mask of maxima."""
    n, h, w, c = y.shape
    yc = y[:, : h // 2 * 2, : w // 2 * 2]
    blocks = yc.reshape(n, h // 2, 2, w // 2, 2, c)
    out = blocks.max(axis=(2, 4))
    mask = blocks == out[:, :, None, :, None]
    return out, mask


def _unpool(g, mask, shape):
    n, h, w, c = shape
    gx = np.zeros(shape, g.dtype)
    gx[:, : h // 2 * 2, : w // 2 * 2] = (mask * g[:, :, None, :, None]).reshape(
        n, h // 2 * 2, w // 2 * 2, c
    )
    return gx


def numpy_step(p: dict, x, y):
    """Forward, backward and SGD by hand, channels-last; ``p`` holds GEMM layouts."""
    n = x.shape[0]
    cols1, oh1, ow1 = _im2col(x, 3)
    a1 = np.maximum(cols1 @ p["c1w"] + p["c1b"], 0).reshape(n, oh1, ow1, 32)
    h1, m1 = _pool(a1)
    cols2, oh2, ow2 = _im2col(h1, 3)
    a2 = np.maximum(cols2 @ p["c2w"] + p["c2b"], 0).reshape(n, oh2, ow2, 64)
    h2, m2 = _pool(a2)
    f = h2.reshape(n, -1)
    z1 = np.maximum(f @ p["f1w"] + p["f1b"], 0)
    z2 = z1 @ p["f2w"] + p["f2b"]
    e = np.exp(z2 - z2.max(1, keepdims=True))
    g = e / e.sum(1, keepdims=True)
    g[np.arange(n), y] -= 1
    g /= n
    grads = {"f2w": z1.T @ g, "f2b": g.sum(0)}
    g = (g @ p["f2w"].T) * (z1 > 0)
    grads["f1w"], grads["f1b"] = f.T @ g, g.sum(0)
    g = _unpool((g @ p["f1w"].T).reshape(h2.shape), m2, a2.shape) * (a2 > 0)
    g = g.reshape(-1, 64)
    grads["c2w"], grads["c2b"] = cols2.T @ g, g.sum(0)
    g = _col2im(g @ p["c2w"].T, h1.shape, 3)
    g = (_unpool(g, m1, a1.shape) * (a1 > 0)).reshape(-1, 32)
    grads["c1w"], grads["c1b"] = cols1.T @ g, g.sum(0)
    for k, v in grads.items():
        p[k] -= LR * v


def numpy_params(params: dict) -> dict:
    """torch-layout weights -> the floor's GEMM layouts (kernel taps, then channels)."""
    out = {}
    for k, v in params.items():
        if k in ("c1w", "c2w"):
            out[k] = np.ascontiguousarray(v.transpose(2, 3, 1, 0).reshape(-1, v.shape[0]))
        elif k in ("f1w",):  # flatten order differs: (C, H, W) vs channels-last (H, W, C)
            out[k] = np.ascontiguousarray(
                v.reshape(128, 64, 5, 5).transpose(2, 3, 1, 0).reshape(1600, 128)
            )
        elif k == "f2w":
            out[k] = np.ascontiguousarray(v.T)
        else:
            out[k] = v.copy()
    return out


# ---------------------------------------------------------------------- torch
def torch_step(torch, p: dict, x, y):
    return train_step(torch.nn.functional, torch.no_grad, p, x, y)


# ----------------------------------------------------------------------- main
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--profile", action="store_true", help="cProfile 20 nnkit steps")
    ap.add_argument(
        "--keep-freed-memory", action="store_true", help="no page faults for freed memory"
    )
    args = ap.parse_args(argv)
    if args.keep_freed_memory:
        keep_freed_memory()
    threads = blas_threads()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, BATCH)
    params = init_params()

    nk = {k: nnkit.tensor(v, requires_grad=True) for k, v in params.items()}
    nx, ny = nnkit.tensor(x), nnkit.tensor(y)
    npp, x_nhwc = numpy_params(params), np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    if args.profile:
        import cProfile
        import pstats

        for _ in range(3):
            nnkit_step(nk, nx, ny)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            nnkit_step(nk, nx, ny)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    fns = {
        "numpy floor": lambda: numpy_step(npp, x_nhwc, y),
        "nnkit": lambda: nnkit_step(nk, nx, ny),
    }
    torch = try_torch(threads)
    if torch is not None:
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        fns["torch"] = lambda: torch_step(torch, tp, tx, ty)
    med = interleaved_medians(fns, repeats=args.repeats, warmup=3)
    floor = med["numpy floor"]
    print(f"CNN training step, batch {BATCH}, float32 ({env_line()})")
    print(f"{'implementation':<14} {'ms/step':>9} {'samples/s':>11} {'vs floor':>9}")
    for name, t in med.items():
        print(f"{name:<14} {t * 1e3:9.2f} {BATCH / t:11.0f} {floor / t:8.2f}x")


if __name__ == "__main__":
    main()
