"""ONNX export: export time, and ONNX Runtime inference next to nnkit's ``predict``.

For three models (the digits MLP 64-128-10, a CNN with BatchNorm on 3x32x32 images and
a TransformerEncoderLayer d_model=128 on sequences of 32) it times
``nnkit.onnx.export`` and then the inference of one batch of 256 samples by
``model.predict`` (nnkit, eval mode, no grad) and by an ONNX Runtime CPU session with
the same thread count, timed in alternation; the ratio is ONNX Runtime's throughput
over nnkit's. Needs ``pip install 'nnkit[onnx]'``.
Run: ``python -m benchmarks.bench_onnx``.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

import nnkit
from benchmarks._common import blas_threads, env_line, interleaved_medians
from nnkit import nn

BATCH = 256


def _models() -> dict:
    mlp = nnkit.Sequential([nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1), nn.Linear(128, 10)])
    cnn = nnkit.Sequential(
        [
            nn.Conv2d(3, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(64, 10),
        ]
    )
    transformer = nnkit.Sequential(
        [nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, batch_first=True)]
    )
    return {
        "MLP 64-128-10": (mlp, (64,)),
        "CNN 3x32x32": (cnn, (3, 32, 32)),
        "Transformer 32x128": (transformer, (32, 128)),
    }


def _bench(ort, options, tmp, name, model, shape, rng) -> None:
    x = rng.standard_normal((BATCH,) + shape).astype(np.float32)
    example = nnkit.tensor(x[:8])
    model(example)  # builds the model
    path = os.path.join(tmp, "model.onnx")
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        nnkit.onnx.export(model, example, path)
        times.append(time.perf_counter() - t0)
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x}
    err = float(
        np.abs(model.predict(x, batch_size=BATCH, verbose=0) - session.run(None, feed)[0]).max()
    )
    res = interleaved_medians(
        {
            "nnkit": lambda: model.predict(x, batch_size=BATCH, verbose=0),
            "onnxruntime": lambda: session.run(None, feed),
        },
        repeats=15,
        warmup=3,
    )
    print(
        f"  {name:20s} export {1000 * sorted(times)[2]:7.1f} ms   "
        f"({os.path.getsize(path) / 1024:.0f} KiB, max |diff| {err:.1e})"
    )
    for who, t in res.items():
        print(f"    {who:12s} {BATCH / t:10.0f} samples/s")
    print(f"    onnxruntime / nnkit throughput: {res['nnkit'] / res['onnxruntime']:.2f}x")


def main() -> None:
    import onnxruntime as ort

    nnkit.manual_seed(0)
    rng = np.random.default_rng(0)
    options = ort.SessionOptions()
    options.intra_op_num_threads = blas_threads()
    options.inter_op_num_threads = 1
    print(
        f"ONNX export and inference, batch {BATCH}, float32, onnxruntime "
        f"{ort.__version__} ({env_line()})"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, shape) in _models().items():
            _bench(ort, options, tmp, name, model, shape, rng)


if __name__ == "__main__":
    main()
