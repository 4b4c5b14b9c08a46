"""DataLoader throughput against the NumPy floor.

Iterates a 60 000 x 784 float32 array dataset (plus int64 labels) in shuffled batches
of 128 and reports batches/s for ``nnkit.data.DataLoader`` next to plain NumPy fancy
indexing of the same batches (``x[perm[i:i + 128]], y[perm[i:i + 128]]``), as medians
over repeated epochs, interleaved so both see the same machine state.

Run:
    OPENBLAS_CORETYPE=Haswell PYTHONPATH=. python benchmarks/bench_dataloader.py [--repeats 7]

(``PYTHONPATH=.`` is only needed when nnkit is not installed with ``pip install -e .``.)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from nnkit.data import DataLoader, TensorDataset


def numpy_floor_epoch(x: np.ndarray, y: np.ndarray, batch_size: int, epoch: int) -> int:
    """One shuffled epoch by direct fancy indexing; returns the number of batches."""
    perm = np.random.default_rng([0, epoch]).permutation(len(x))
    batches = 0
    for i in range(0, len(x), batch_size):
        idx = perm[i : i + batch_size]
        xb, yb = x[idx], y[idx]
        batches += 1
    del xb, yb
    return batches


def loader_epoch(loader: DataLoader) -> int:
    """One epoch of ``loader``; returns the number of batches."""
    batches = 0
    for _xb, _yb in loader:
        batches += 1
    return batches


def timed(fn, *args) -> float:
    """Batches per second of one call of ``fn(*args)``."""
    start = time.perf_counter()
    batches = fn(*args)
    return batches / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=60_000)
    parser.add_argument("--features", type=int, default=784)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=7, help="epochs timed per variant")
    parser.add_argument("--workers", type=int, nargs="*", default=[0, 2])
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.samples, args.features), dtype=np.float32)
    y = rng.integers(0, 10, size=args.samples, dtype=np.int64)
    loaders = {
        w: DataLoader(
            TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, seed=0, num_workers=w
        )
        for w in args.workers
    }
    rates: dict[str, list[float]] = {"numpy floor": []} | {f"DataLoader w={w}": [] for w in loaders}
    for epoch in range(args.repeats + 1):  # epoch 0 warms caches and is not counted
        floor = timed(numpy_floor_epoch, x, y, args.batch_size, epoch)
        loader_rates = {f"DataLoader w={w}": timed(loader_epoch, ld) for w, ld in loaders.items()}
        if epoch:
            rates["numpy floor"].append(floor)
            for name, rate in loader_rates.items():
                rates[name].append(rate)

    print(
        f"{args.samples} x {args.features} float32 + int64 labels, batch {args.batch_size}, "
        f"shuffled; median of {args.repeats} epochs"
    )
    base = statistics.median(rates["numpy floor"])
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"  {name:16s} {median:9.0f} batches/s   {median / base:5.2f}x floor")


if __name__ == "__main__":
    main()
