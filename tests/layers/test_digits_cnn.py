"""End to end: a small CNN learns scikit-learn's 8×8 digits to ≥ 95 % test accuracy."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn


def _digits():
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x = (digits.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    split = int(0.75 * len(x))
    return x[order[:split]], y[order[:split]], x[order[split:]], y[order[split:]]


def _model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 16 × 4 × 4
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 32 × 2 × 2
        nn.Flatten(),
        nn.Linear(128, 10),
    )


def _accuracy(model, x, y):
    model.eval()
    with nnkit.no_grad():
        pred = model(x).argmax(1).cpu().numpy()
    model.train()
    return float((pred == y).mean())


def test_cnn_learns_digits(device):
    x_train, y_train, x_test, y_test = _digits()
    nnkit.manual_seed(0)
    model = _model().to(device)
    loss_fn = nn.CrossEntropyLoss()
    params = list(model.parameters())
    velocity = [nnkit.zeros_like(p) for p in params]
    xt, yt = nnkit.tensor(x_train, device=device), nnkit.tensor(y_train, device=device)
    rng = np.random.default_rng(0)
    epochs, batch, momentum = 6, 32, 0.9
    steps = epochs * -(-len(x_train) // batch)
    step = 0
    for _ in range(epochs):
        order = rng.permutation(len(x_train))
        for start in range(0, len(x_train), batch):
            lr = 0.05 * (1 - step / steps) + 0.002  # linear decay
            idx = nnkit.tensor(order[start : start + batch], device=device)
            loss = loss_fn(model(xt[idx]), yt[idx])
            model.zero_grad()
            loss.backward()
            with nnkit.no_grad():  # SGD with momentum, by hand
                for p, v in zip(params, velocity):
                    v.mul_(momentum).add_(p.grad)
                    p.sub_(v, alpha=lr)
            step += 1
    accuracy = _accuracy(model, nnkit.tensor(x_test, device=device), y_test)
    print(f"digits CNN test accuracy: {accuracy:.4f}")
    assert accuracy >= 0.95, f"test accuracy {accuracy:.3f}"
