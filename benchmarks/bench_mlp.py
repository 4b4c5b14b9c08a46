"""MLP training throughput: 784-512-512-10, ReLU, cross-entropy, plain SGD, batch 128.

nnkit (raw Tensor ops, cross-entropy composed from logsumexp and gather) next to a
hand-written NumPy forward+backward+SGD of the same network (the floor) and PyTorch
CPU where installed; same thread count, timed in alternation in one run.

``--sweep 16,64,128,512,1024`` repeats the measurement for each batch size and prints
one row per batch: floor / torch / nnkit samples/s and nnkit's ratios to both (small
batches show the per-op overhead, large ones the GEMMs).

Run: ``python -m benchmarks.bench_mlp [--sweep 16,64,128,512,1024] [--repeats 25]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import nnkit
from benchmarks._common import blas_threads, env_line, interleaved_medians, try_torch

SIZES = (784, 512, 512, 10)
BATCH = 128
LR = 0.01


def _init(rng):
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


def nnkit_step(params, x, y):
    h = x
    for k in range(0, len(params), 2):
        h = h @ params[k] + params[k + 1]
        if k + 2 < len(params):
            h = h.relu()
    logp = h - h.logsumexp(1, keepdim=True)
    loss = -logp.gather(1, y.unsqueeze(1)).mean()
    loss.backward()
    with nnkit.no_grad():
        for p in params:
            p.sub_(p.grad, alpha=LR)
            p.grad = None
    return loss


def numpy_step(params, x, y):
    """The floor: forward, backward and SGD written by hand with NumPy."""
    acts = [x]
    h = x
    n_layers = len(params) // 2
    for k in range(n_layers):
        h = h @ params[2 * k] + params[2 * k + 1]
        if k < n_layers - 1:
            h = np.maximum(h, 0)
        acts.append(h)
    m = h.max(1, keepdims=True)
    e = np.exp(h - m)
    prob = e / e.sum(1, keepdims=True)
    g = prob
    g[np.arange(len(y)), y] -= 1
    g /= len(y)
    for k in reversed(range(n_layers)):
        a = acts[k]
        gw = a.T @ g
        gb = g.sum(0)
        if k > 0:
            g = (g @ params[2 * k].T) * (acts[k] > 0)
        params[2 * k] -= LR * gw
        params[2 * k + 1] -= LR * gb


def torch_step(torch, params, x, y):
    h = x
    for k in range(0, len(params), 2):
        h = h @ params[k] + params[k + 1]
        if k + 2 < len(params):
            h = h.relu()
    loss = torch.nn.functional.cross_entropy(h, y)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p.sub_(p.grad, alpha=LR)
            p.grad = None


def measure(batch: int, repeats: int) -> dict:
    """Median seconds per training step of each contender at ``batch``."""
    rng = np.random.default_rng(0)
    init = _init(rng)
    xv = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    yv = rng.integers(0, SIZES[-1], batch)
    nk = [nnkit.tensor(p, requires_grad=True) for p in init]
    x, y = nnkit.tensor(xv), nnkit.tensor(yv)
    npp = [p.copy() for p in init]
    fns = {"numpy floor": lambda: numpy_step(npp, xv, yv), "nnkit": lambda: nnkit_step(nk, x, y)}
    torch = try_torch(blas_threads())
    if torch is not None:
        tp = [torch.tensor(p, requires_grad=True) for p in init]
        tx, ty = torch.tensor(xv), torch.tensor(yv)
        fns["torch"] = lambda: torch_step(torch, tp, tx, ty)
    return interleaved_medians(fns, repeats=repeats, warmup=3)


def sweep(batches, repeats: int) -> None:
    print(f"MLP {'-'.join(map(str, SIZES))} train step, float32 ({env_line()}); samples/s")
    print(
        f"{'batch':>6} {'floor':>9} {'torch':>9} {'nnkit':>9} {'nnkit/floor':>12} "
        f"{'nnkit/torch':>12}"
    )
    for batch in batches:
        res = measure(batch, repeats)
        floor, nk = batch / res["numpy floor"], batch / res["nnkit"]
        tor = batch / res["torch"] if "torch" in res else float("nan")
        print(f"{batch:6d} {floor:9.0f} {tor:9.0f} {nk:9.0f} {nk / floor:11.2f}x {nk / tor:11.2f}x")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--sweep", help="comma-separated batch sizes, e.g. 16,64,128,512,1024")
    args = ap.parse_args(argv)
    if args.sweep:
        sweep([int(b) for b in args.sweep.split(",")], args.repeats)
        return
    res = measure(BATCH, args.repeats)
    print(f"MLP {'-'.join(map(str, SIZES))} train step, batch {BATCH}, float32 ({env_line()})")
    floor = res["numpy floor"]
    for name, t in res.items():
        print(f"  {name:12s} {BATCH / t:10.0f} samples/s   {floor / t:5.2f}x floor")


if __name__ == "__main__":
    main()
