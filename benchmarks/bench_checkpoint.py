"""Checkpoint save and load of a ~100 MB model: time and peak memory, and the checksums' cost.

Each measurement runs in a fresh child process (so peak RSS is its own): the model
(four 2560x2560 float32 Linear layers with biases, ~105 MB) is built, then one of

- ``nnkit save``: ``nnkit.io.save_checkpoint`` (atomic temp file + fsync + rename, a
  CRC-32 per dataset computed on the arrays as they are written),
- ``nnkit load``: ``nnkit.io.load_checkpoint`` into the model (every checksum verified),
- ``h5py save`` / ``h5py load``: the floor, the same arrays written (with the same fsync)
  and read by plain h5py with no checksum, no atomic rename, no structure,
- ``crc32``: the checksum alone over the same bytes,

is timed. Peak memory is the child's peak RSS above its RSS once the model exists.

    python -m benchmarks.bench_checkpoint [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, resource, sys, time, zlib
import numpy as np, h5py, nnkit
from nnkit import layers as L

mode, path = sys.argv[1], sys.argv[2]
nnkit.manual_seed(0)
model = nnkit.Sequential(*[L.Linear(2560, 2560) for _ in range(4)])
arrays = {k: v.numpy() for k, v in model.state_dict().items()}
nbytes = sum(a.nbytes for a in arrays.values())
if mode.endswith("load") and not os.path.exists(path):
    raise SystemExit("save first")

def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

base = rss()
t0 = time.perf_counter()
if mode == "nnkit save":
    nnkit.io.save_checkpoint(path, model=model)
elif mode == "nnkit load":
    nnkit.io.load_checkpoint(path, model=model)
elif mode == "h5py save":
    with h5py.File(path, "w") as f:
        for k, a in arrays.items():
            f[k] = a
    fd = os.open(path, os.O_RDONLY); os.fsync(fd); os.close(fd)
elif mode == "h5py load":
    with h5py.File(path, "r") as f:
        for k, a in arrays.items():
            a[...] = f[k][...]
elif mode == "crc32":
    for a in arrays.values():
        zlib.crc32(memoryview(a.reshape(-1).view(np.uint8)))
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "peak": rss() - base, "bytes": nbytes}))
"""

MODES = ["nnkit save", "h5py save", "crc32", "nnkit load", "h5py load"]


def run(mode: str, path: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, path], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[dict]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        nnkit_file, h5py_file = f"{tmp}/nnkit.h5", f"{tmp}/plain.h5"
        for _ in range(args.rounds):  # the modes alternate round by round
            for mode in MODES:
                results[mode].append(
                    run(mode, h5py_file if mode.startswith("h5py") else nnkit_file)
                )
    size = results["nnkit save"][0]["bytes"] / 2**20
    print(f"model: {size:.1f} MiB of float32 weights; medians of {args.rounds} rounds")
    medians = {m: statistics.median(r["seconds"] for r in rs) for m, rs in results.items()}
    for mode in MODES:
        peak = statistics.median(r["peak"] for r in results[mode]) / 2**20
        floor = medians["h5py save" if "save" in mode else "h5py load"]
        ratio = "" if mode == "crc32" else f"  ({medians[mode] / floor:.2f}x h5py)"
        print(
            f"{mode:>11}: {medians[mode] * 1000:7.1f} ms, {size / medians[mode]:7.0f} MiB/s, "
            f"peak +{peak:6.1f} MiB{ratio}"
        )
    share = medians["crc32"] / medians["nnkit save"]
    print(f"checksums: {share:.0%} of the nnkit save time")


if __name__ == "__main__":
    main()
