"""Time from SIGINT to exit of ``nnkit train`` whose training step takes about a second.

A real ``nnkit train`` subprocess trains a wide MLP (three 2048-unit layers, batch 2048:
about a second a step on 2 cores); once it is training, SIGINT is sent at a random
moment and the time until the process has exited (after finishing the step in progress
and writing the resumable checkpoint: ~100 MB of weights and Adam state) is measured.
The reference is the step time, measured in process: the wait for the step in
progress is at most one step, half of one on average.

    python -m benchmarks.bench_interrupt [--trials 3]
"""

from __future__ import annotations

import argparse
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

CONFIG = {
    "seed": 0,
    "data": {"name": "moons", "n_samples": 40000, "batch_size": 2048, "test_size": 0.1},
    "model": {
        "layers": [
            {"type": "Dense", "units": 2048, "activation": "relu"},
            {"type": "Dense", "units": 2048, "activation": "relu"},
            {"type": "Dense", "units": 2048, "activation": "relu"},
            {"type": "Dense", "units": 2},
        ]
    },
    "optimizer": {"name": "adam", "lr": 1e-4},
    "train": {"epochs": 50, "verbose": 0},
    "output": {"dir": "run", "keep": 1},
}


def step_time() -> float:
    """Median seconds of one training step of CONFIG's model, in this process."""
    import numpy as np

    import nnkit
    from nnkit import nn

    nnkit.manual_seed(0)
    model = nnkit.Sequential(
        [
            nn.Dense(2048, activation="relu"),
            nn.Dense(2048, activation="relu"),
            nn.Dense(2048, activation="relu"),
            nn.Dense(2),
        ]
    )
    x = np.random.default_rng(0).normal(size=(2048, 2)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model.compile("adam", "cross_entropy", lr=1e-4)
    model.fit(x, y, batch_size=2048, epochs=1, verbose=0)  # build, warm up
    batch = (nnkit.tensor(x), nnkit.tensor(y))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        model.train_step(batch)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def trial(directory: Path, delay: float) -> tuple[float, int, str]:
    """(seconds from SIGINT to exit, exit status, the line printed)."""
    command = [sys.executable, "-m", "nnkit.cli", "train", "cfg.yaml"]
    process = subprocess.Popen(
        command, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    while not (directory / "run" / "config.yaml").exists():  # fit starts right after
        if process.poll() is not None:
            raise RuntimeError(process.stderr.read())
        time.sleep(0.01)
    time.sleep(delay)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    return time.monotonic() - sent, process.returncode, err.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    step = step_time()
    rng = random.Random(0)
    results = []
    for _ in range(args.trials):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "cfg.yaml").write_text(yaml.safe_dump(CONFIG))
            results.append(trial(Path(tmp), 2.0 + rng.uniform(0.0, step)))
    exits = statistics.median(r[0] for r in results)
    print(f"training step: median {step:.2f} s (in process, batch 2048, 3x2048 MLP, Adam)")
    print(
        f"SIGINT -> exit: median {exits:.2f} s ({exits / step:.2f} steps); "
        f"each: {', '.join(f'{r[0]:.2f} s' for r in results)}; "
        f"exit statuses {sorted({r[1] for r in results})}"
    )
    print(f"last line: {results[-1][2]}")


if __name__ == "__main__":
    main()
