"""Shared data and models for the training-API tests."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit.callbacks import Callback
from nnkit.layers import Dense, Dropout


@pytest.fixture(scope="session")
def digits():
    from nnkit.data import load_digits

    return load_digits(test_size=0.2, seed=0)


@pytest.fixture
def regression():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.1).astype(np.float32)
    return x, y


def mlp(
    hidden: int = 32,
    classes: int = 10,
    *,
    dropout: float = 0.0,
    seed: int = 0,
    compile_args: tuple = ("adam", "cross_entropy"),
    **compile_kwargs,
):
    """A lazily built Dense classifier, seeded and compiled."""
    nnkit.manual_seed(seed)
    layers = [Dense(hidden, activation="relu")]
    layers += [Dropout(dropout)] if dropout else []
    model = nnkit.Sequential(layers + [Dense(classes)])
    model.compile(*compile_args, **{"metrics": ["accuracy"], **compile_kwargs})
    return model


def weights(model) -> dict:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


class ScriptedLogs(Callback):
    """Overwrites logs[key] at each epoch end with a scripted value (runs first)."""

    def __init__(self, key: str, values) -> None:
        super().__init__()
        self.key, self.values = key, list(values)

    def on_epoch_end(self, epoch, logs=None):
        logs[self.key] = float(self.values[epoch])


class Snapshots(Callback):
    """Records the weights at each epoch end."""

    def __init__(self) -> None:
        super().__init__()
        self.by_epoch: dict[int, dict] = {}

    def on_epoch_end(self, epoch, logs=None):
        self.by_epoch[epoch] = weights(self.model)
