"""Helpers for the data-parallel tests: a small classification problem and MLPs."""

from __future__ import annotations

import threading

import numpy as np

import nnkit
from nnkit.layers import Linear, Tanh


def problem(n: int = 48, features: int = 5, classes: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    y = rng.integers(0, classes, n).astype(np.int64)
    return x, y


_SEEDING = threading.Lock()  # ranks are threads sharing nnkit's global generator


def mlp(seed: int, features: int = 5, classes: int = 3, compiled: bool = True):
    with _SEEDING:
        nnkit.manual_seed(seed)
        model = nnkit.Sequential([Linear(features, 16), Tanh(), Linear(16, classes)])
    if compiled:
        model.compile("sgd", "cross_entropy", metrics=["accuracy"], lr=0.2)
    return model


def weights(model) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().copy() for p in model.parameters()]


def assert_same(a: list[np.ndarray], b: list[np.ndarray], atol: float = 0.0) -> None:
    assert len(a) == len(b)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=0, atol=atol)
