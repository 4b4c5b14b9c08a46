"""Keras-style ``fit`` per optimizer: nnkit eager and compiled, a PyTorch loop, the floor.

The model is the digits example's MLP (64-128-10, ReLU, cross-entropy on logits) on the
1 437 training images of :func:`nnkit.data.load_digits`, batch 32 shuffled each epoch
(45 steps, the last of 29 samples). One timed call is one epoch; the figure is
microseconds per training step. Contenders, timed in alternation in one run (medians):

* ``eager``: ``model.fit(..., epochs=1)`` after ``model.compile(optimizer,
  "cross_entropy", jit_compile=False)``, where ``optimizer`` is a Keras-style
  :mod:`nnkit.optimizers` instance (what ``compile("adam")`` makes);
* ``compiled``: the same with ``jit_compile=True`` (``train_step`` replayed, see
  ``docs/guides/compile.rst``);
* ``torch``: a hand-written PyTorch loop of the same model and batches with
  ``torch.optim``'s optimizer of the same name (its own update rule: PyTorch's
  epsilon placement and momentum form; the cost per step is what is compared);
* ``floor``: a hand-written NumPy forward, backward and Keras update rule (in-place
  ufuncs), the batches drawn the same way.

Optimizers: ``sgd``, ``sgd_momentum`` (0.9, Nesterov), ``rmsprop``, ``adagrad``, ``adam``.
Run: ``python -m benchmarks.bench_fit [--repeats 7] [--only sgd,adam]``.
"""

from __future__ import annotations

import argparse
import functools

import numpy as np

import nnkit
from benchmarks._common import blas_threads, env_line, interleaved_medians, try_torch
from nnkit import nn
from nnkit.data import load_digits

BATCH = 32
HIDDEN = 128
OPTIMIZERS = {  # name: (nnkit.optimizers class, its kwargs, torch.optim class name, kwargs)
    "sgd": ("SGD", {"learning_rate": 0.01}, "SGD", {"lr": 0.01}),
    "sgd_momentum": (
        "SGD",
        {"learning_rate": 0.01, "momentum": 0.9, "nesterov": True},
        "SGD",
        {"lr": 0.01, "momentum": 0.9, "nesterov": True},
    ),
    "rmsprop": ("RMSprop", {"learning_rate": 0.001}, "RMSprop", {"lr": 0.001, "alpha": 0.9}),
    "adagrad": ("Adagrad", {"learning_rate": 0.01}, "Adagrad", {"lr": 0.01}),
    "adam": ("Adam", {"learning_rate": 0.001}, "Adam", {"lr": 0.001}),
}


def _data():
    d = load_digits(test_size=0.2, seed=0, flatten=True)
    return np.asarray(d.x_train, np.float32), np.asarray(d.y_train, np.int64)


def _nnkit_fit(name: str, jit: bool, x, y):
    cls, kwargs, _, _ = OPTIMIZERS[name]
    nnkit.manual_seed(0)
    model = nnkit.Sequential(nn.Dense(HIDDEN, activation="relu"), nn.Dense(10))
    model.compile(
        optimizer=getattr(nnkit.optimizers, cls)(**kwargs), loss="cross_entropy",
        jit_compile=jit,
    )  # fmt: skip
    return lambda: model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)


def _torch_loop(torch, name: str, x, y):
    _, _, cls, kwargs = OPTIMIZERS[name]
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 10)
    )
    opt = getattr(torch.optim, cls)(model.parameters(), **kwargs)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def epoch():
        perm = torch.randperm(len(tx))
        for i in range(0, len(tx), BATCH):
            idx = perm[i : i + BATCH]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(tx[idx]), ty[idx])
            loss.backward()
            opt.step()

    return epoch


class _Floor:
    """The NumPy floor: forward, backward and the Keras update rule of ``name``."""

    def __init__(self, name: str, n_in: int) -> None:
        rng = np.random.default_rng(0)
        self.params = []
        for fan_in, fan_out in ((n_in, HIDDEN), (HIDDEN, 10)):
            bound = 1 / np.sqrt(fan_in)
            self.params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
            self.params.append(np.zeros(fan_out, np.float32))
        self.name, self.kwargs = name, OPTIMIZERS[name][1]
        self.slots = [[np.zeros_like(p) for p in self.params] for _ in range(2)]
        if name == "adagrad":
            for s in self.slots[0]:
                s.fill(0.1)
        self.t = 0
        self.rng = np.random.default_rng(0)

    def _update(self, grads) -> None:
        kw, f32 = self.kwargs, np.float32
        lr = f32(kw["learning_rate"])
        self.t += 1
        for p, g, a, b in zip(self.params, grads, *self.slots):
            if self.name == "sgd":
                p -= lr * g
            elif self.name == "sgd_momentum":
                mom = f32(kw["momentum"])
                a *= mom
                a -= lr * g
                p += a * mom - lr * g
            elif self.name == "rmsprop":
                a *= f32(0.9)
                a += g * g * f32(0.1)
                p -= lr * g / np.sqrt(a + f32(1e-7))
            elif self.name == "adagrad":
                a += g * g
                p -= lr * g / np.sqrt(a + f32(1e-7))
            else:  # adam
                a += (g - a) * f32(0.1)
                b += (g * g - b) * f32(0.001)
                alpha = lr * np.sqrt(1 - 0.999**self.t) / (1 - 0.9**self.t)
                p -= a * f32(alpha) / (np.sqrt(b) + f32(1e-7))

    def epoch(self, x, y) -> None:
        w1, b1, w2, b2 = self.params
        perm = self.rng.permutation(len(x))
        for i in range(0, len(x), BATCH):
            idx = perm[i : i + BATCH]
            xb, yb = x[idx], y[idx]
            h = xb @ w1 + b1
            np.maximum(h, 0, out=h)
            z = h @ w2 + b2
            z -= z.max(1, keepdims=True)
            np.exp(z, out=z)
            z /= z.sum(1, keepdims=True)
            z[np.arange(len(yb)), yb] -= 1
            z /= len(yb)
            gw2, gb2 = h.T @ z, z.sum(0)
            gh = z @ w2.T
            gh *= h > 0
            self._update([xb.T @ gh, gh.sum(0), gw2, gb2])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--only", default=",".join(OPTIMIZERS), help="optimizers, comma-separated")
    args = ap.parse_args(argv)
    torch = try_torch(blas_threads())
    x, y = _data()
    steps = -(-len(x) // BATCH)
    print(f"fit per optimizer, MLP 64-{HIDDEN}-10, batch {BATCH}, us/step ({env_line()})")
    print(
        f"{'optimizer':<13} {'eager':>7} {'compiled':>9} {'torch':>7} {'floor':>7} "
        f"{'compiled/torch':>15} {'compiled/floor':>15}"
    )
    for name in args.only.split(","):
        floor = _Floor(name, x.shape[1])
        fns = {
            "eager": _nnkit_fit(name, False, x, y),
            "compiled": _nnkit_fit(name, True, x, y),
            "floor": functools.partial(floor.epoch, x, y),
        }
        if torch is not None:
            fns["torch"] = _torch_loop(torch, name, x, y)
        med = interleaved_medians(fns, repeats=args.repeats)
        res = {k: t / steps * 1e6 for k, t in med.items()}
        tor = res.get("torch", float("nan"))
        print(
            f"{name:<13} {res['eager']:7.0f} {res['compiled']:9.0f} {tor:7.0f} "
            f"{res['floor']:7.0f} {tor / res['compiled']:14.2f}x "
            f"{res['floor'] / res['compiled']:14.2f}x"
        )


if __name__ == "__main__":
    main()
