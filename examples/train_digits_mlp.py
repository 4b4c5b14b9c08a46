"""Train a small MLP on the 8×8 digits data with raw nnkit Tensor ops.

The main job a newcomer runs first (see README): a 64-128-10 network, ReLU,
cross-entropy composed from ``logsumexp`` and ``gather``, SGD with momentum written
with in-place tensor ops, shuffled mini-batches from ``nnkit.data.DataLoader``.
Prints the loss per epoch and the final test accuracy.

Run: ``python examples/train_digits_mlp.py [--epochs N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import math

import nnkit
from nnkit.data import DataLoader, TensorDataset
from nnkit.data.datasets import load_digits


def init_params(sizes):
    """Weights drawn U(±1/√fan_in) (PyTorch's Linear default), zero biases."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / math.sqrt(fan_in)
        params.append((nnkit.rand(fan_in, fan_out) * 2 - 1).mul_(bound).requires_grad_())
        params.append(nnkit.zeros(fan_out, requires_grad=True))
    return params


def forward(params, x):
    h = x
    for k in range(0, len(params), 2):
        h = h @ params[k] + params[k + 1]
        if k + 2 < len(params):
            h = h.relu()
    return h


def cross_entropy(logits, target):
    log_probs = logits - logits.logsumexp(1, keepdim=True)
    return -log_probs.gather(1, target.unsqueeze(1)).mean()


def train(
    epochs: int = 30,
    seed: int = 0,
    lr: float = 0.1,
    momentum: float = 0.9,
    batch_size: int = 32,
    verbose: bool = True,
) -> float:
    """Train and return the test accuracy (a fraction)."""
    nnkit.manual_seed(seed)
    data = load_digits(test_size=0.2, seed=seed)
    loader = DataLoader(
        TensorDataset(data.x_train, data.y_train), batch_size=batch_size, shuffle=True, seed=seed
    )
    params = init_params((64, 128, 10))
    velocity = [nnkit.zeros_like(p) for p in params]
    for epoch in range(epochs):
        total, count = 0.0, 0
        for xb, yb in loader:
            x, y = nnkit.tensor(xb), nnkit.tensor(yb)
            loss = cross_entropy(forward(params, x), y)
            loss.backward()
            with nnkit.no_grad():
                for p, v in zip(params, velocity):
                    v.mul_(momentum).add_(p.grad)
                    p.sub_(v, alpha=lr)
                    p.grad = None
            total += loss.item() * len(yb)
            count += len(yb)
        if verbose and (epoch + 1) % 5 == 0:
            print(f"epoch {epoch + 1:3d}  loss {total / count:.4f}")
    with nnkit.no_grad():
        pred = forward(params, nnkit.tensor(data.x_test)).argmax(1)
    accuracy = (pred == nnkit.tensor(data.y_test)).float().mean().item()
    if verbose:
        print(f"test accuracy: {accuracy:.4f} ({len(data.y_test)} images)")
    return accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    train(epochs=args.epochs, seed=args.seed)


if __name__ == "__main__":
    main()
