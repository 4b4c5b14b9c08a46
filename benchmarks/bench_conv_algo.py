"""3x3 convolutions: Winograd F(4x4, 3x3) against im2col + GEMM, by channel count.

One training step of a single ``conv2d`` (float32, padding 1): forward, then the
weight, bias and (unless it is a first layer) input gradients; both algorithms timed
in alternation, for a grid of (input channels, output channels). What
``WINOGRAD_MIN_CHANNELS`` in ``nnkit/autograd/ops/conv.py`` is chosen from: the
smallest channel count from which Winograd is not slower.

Run: ``python -m benchmarks.bench_conv_algo [--batch 32] [--size 14] [--repeats 5]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import nnkit
import nnkit.nn.functional as F
from benchmarks._common import env_line, interleaved_medians
from nnkit.autograd.ops import conv

#: (input channels, output channels)
GRID = [(c, o) for c in (1, 2, 4, 8, 16, 32, 64, 128) for o in (c, 4 * c)]


def _fn(x, w, b, g, winograd):
    def run():
        conv.WINOGRAD = winograd
        try:
            F.conv2d(x, w, b, padding=1).backward(g)
        finally:
            conv.WINOGRAD = True
        x.grad = w.grad = b.grad = None

    return run


def _speedup(rng, n, c, o, s, input_grad, repeats):
    x = nnkit.tensor(rng.standard_normal((n, c, s, s)).astype(np.float32))
    x.requires_grad_(input_grad)
    w = nnkit.tensor(
        (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32),
        requires_grad=True,
    )
    b = nnkit.zeros(o, requires_grad=True)
    g = nnkit.tensor(rng.standard_normal((n, o, s, s)).astype(np.float32))
    med = interleaved_medians(
        {"direct": _fn(x, w, b, g, False), "winograd": _fn(x, w, b, g, True)}, repeats=repeats
    )
    return med["direct"] * 1e3, med["winograd"] * 1e3


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--size", type=int, default=14)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    n, s = args.batch, args.size
    print(f"conv2d 3x3 padding 1, batch {n}, {s}x{s}, float32, one step ({env_line()})")
    print("ms per step, im2col / winograd (speed-up), with and without the input gradient")
    saved = conv.WINOGRAD_MIN_CHANNELS
    conv.WINOGRAD_MIN_CHANNELS = 1  # both algorithms for every channel count
    try:
        for c, o in GRID:
            cells = []
            for input_grad in (True, False):
                d, wg = _speedup(rng, n, c, o, s, input_grad, args.repeats)
                cells.append(f"{d:8.2f} /{wg:8.2f} ({d / wg:4.2f}x)")
            print(f"C_in {c:4d} C_out {o:4d}   " + "   ".join(cells))
    finally:
        conv.WINOGRAD_MIN_CHANNELS = saved


if __name__ == "__main__":
    main()
