"""Peak memory of a deep MLP's training step with and without activation checkpointing.

A stack of ``blocks`` MLP blocks (``a = h @ W + b; h = h + a * sigmoid(a)``: a linear
layer, a SiLU gate and a residual; width ``width``, batch ``batch``, float32) runs
forward and backward three ways: plain; every block checkpointed; and ``segments``
checkpointed groups of blocks. Memory is measured with ``tracemalloc`` (NumPy reports
its array buffers to it), relative to the moment the weights, their (preallocated, so
accumulated in place) gradients and the input exist, so the figures are the
activations and temporaries of one step:

* ``kept after fwd``: what the graph holds between forward and backward;
* ``peak``: the highest point during forward + backward;
* ``time``: wall time of the step (checkpointing recomputes each forward once).

Run: ``python benchmarks/bench_checkpoint_memory.py [--blocks 16 --width 1024 --batch 256]``
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import nnkit
from nnkit.autograd import checkpoint, checkpoint_sequential


def _block(w, b):
    def run(h):
        a = h @ w + b
        return h + a * a.sigmoid()

    return run


def _step(blocks, x, mode, segments):
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    if mode == "plain":
        h = x
        for f in blocks:
            h = f(h)
    elif mode == "per-block":  # every block checkpointed
        h = x
        for f in blocks:
            h = checkpoint(f, h)
    else:  # "segments": groups of consecutive blocks
        h = checkpoint_sequential(blocks, segments, x)
    loss = h.mean()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - base
    loss.backward()
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] - base
    return kept, peak, elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=16)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--segments", type=int, default=4)
    args = p.parse_args()

    nnkit.manual_seed(0)
    scale = (2.0 / args.width) ** 0.5
    params = []
    for _ in range(args.blocks):
        w = (nnkit.randn(args.width, args.width) * scale).requires_grad_()
        b = nnkit.zeros(args.width, requires_grad=True)
        params.append((w, b))
    blocks = [_block(w, b) for w, b in params]
    x = nnkit.randn(args.batch, args.width)
    mib = 2.0**20
    act = args.batch * args.width * 4 / mib
    print(
        f"{args.blocks} blocks, width {args.width}, batch {args.batch}, float32: "
        f"one activation = {act:.1f} MiB, weights = "
        f"{args.blocks * (args.width + 1) * args.width * 4 / mib:.1f} MiB "
        f"(their grads as much again, preallocated)"
    )
    tracemalloc.start()
    try:
        modes = ("warm-up", "plain", "per-block", f"{args.segments} segments")
        for mode in modes:
            for w, b in params:
                w.grad, b.grad = nnkit.zeros_like(w), nnkit.zeros_like(b)
            gc.collect()
            kind = "plain" if mode == "warm-up" else mode.split()[-1]
            kept, peak, elapsed = _step(blocks, x, kind, args.segments)
            if mode == "warm-up":
                continue
            print(
                f"  {mode:<12} kept after fwd {kept / mib:8.1f} MiB   "
                f"peak {peak / mib:8.1f} MiB   time {elapsed:6.2f} s"
            )
    finally:
        tracemalloc.stop()


if __name__ == "__main__":
    main()
