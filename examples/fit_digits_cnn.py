"""Keras-style training: a small CNN on the 8×8 digits with ``compile``/``fit``.

Shows ``nnkit.Sequential`` with lazily built layers, ``compile`` by name, ``fit`` with
a validation split and callbacks, then ``evaluate`` on the held-out test images.

Run: ``python examples/fit_digits_cnn.py [--epochs N]``.
"""

from __future__ import annotations

import argparse

import nnkit
from nnkit import nn
from nnkit.callbacks import EarlyStopping
from nnkit.data.datasets import load_digits


def build_model() -> nnkit.Sequential:
    return nnkit.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dense(64, activation="relu"),
        nn.Dropout(0.1),
        nn.Dense(10),
    )


def main(epochs: int = 10, seed: int = 0, verbose: int = 1) -> dict:
    """Train, then return the test metrics (``{'loss': ..., 'accuracy': ...}``)."""
    nnkit.manual_seed(seed)
    data = load_digits(test_size=0.2, seed=seed, flatten=False)
    model = build_model()
    model.compile(optimizer="adam", loss="cross_entropy", metrics=["accuracy"])
    model.fit(
        data.x_train,
        data.y_train,
        batch_size=32,
        epochs=epochs,
        validation_split=0.1,
        callbacks=[EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True)],
        verbose=verbose,
        seed=seed,
    )
    result = model.evaluate(data.x_test, data.y_test, verbose=0, return_dict=True)
    if verbose:
        model.summary()
        print(f"test accuracy: {result['accuracy']:.4f}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    main(epochs=parser.parse_args().epochs)
