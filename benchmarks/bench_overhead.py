"""Per-op overhead: a 200-op chain of elementwise ops on 64-element float32 tensors.

Forward + backward (and forward alone under no_grad), microseconds per op, for
nnkit and, where installed, PyTorch, timed in alternation in one run.
Run: ``python -m benchmarks.bench_overhead``.
"""

from __future__ import annotations

import numpy as np

import nnkit
from benchmarks._common import blas_threads, env_line, interleaved_medians, try_torch

N_OPS = 200


def chain(x, w):
    """200 ops: (mul, add scalar, tanh, sub) × 50, then a sum."""
    y = x
    for _ in range(N_OPS // 4):
        y = y * w
        y = y + 1.0
        y = y.tanh()
        y = y - x
    return y.sum()


def _contenders(xv, wv):
    x = nnkit.tensor(xv, requires_grad=True)
    w = nnkit.tensor(wv, requires_grad=True)

    def nnkit_fwd():
        with nnkit.no_grad():
            chain(x, w)

    fns = {"nnkit fwd+bwd": lambda: chain(x, w).backward(), "nnkit fwd (no_grad)": nnkit_fwd}
    torch = try_torch(blas_threads())
    if torch is not None:
        tx = torch.tensor(xv, requires_grad=True)
        tw = torch.tensor(wv, requires_grad=True)

        def torch_fwd():
            with torch.no_grad():
                chain(tx, tw)

        fns.update(
            {"torch fwd+bwd": lambda: chain(tx, tw).backward(), "torch fwd (no_grad)": torch_fwd}
        )
    return fns


def main() -> None:
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(64).astype(np.float32)
    wv = (rng.standard_normal(64) * 0.5).astype(np.float32)
    res = interleaved_medians(_contenders(xv, wv), repeats=31, number=3)
    print(f"per-op overhead, {N_OPS}-op chain on 64 float32 ({env_line()})")
    for name, t in res.items():
        print(f"  {name:22s} {t / N_OPS * 1e6:8.2f} us/op")
    if "torch fwd+bwd" in res:
        print(
            f"  ratio nnkit/torch fwd+bwd: {res['nnkit fwd+bwd'] / res['torch fwd+bwd']:.2f}x, "
            f"fwd: {res['nnkit fwd (no_grad)'] / res['torch fwd (no_grad)']:.2f}x"
        )


if __name__ == "__main__":
    main()
