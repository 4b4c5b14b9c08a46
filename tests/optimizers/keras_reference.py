"""A NumPy (float64) transcription of Keras 3's optimizers, the reference of the tests.

Written from ``keras/src/optimizers/base_optimizer.py`` (``apply``,
``_backend_apply_gradients``, ``_clip_gradients``, ``_apply_weight_decay``, the EMA) and
``sgd.py``, ``adam.py``, ``adamw.py``, ``rmsprop.py``, ``adagrad.py`` (``update_step``),
independently of ``nnkit.optimizers``.
"""

from __future__ import annotations

import math

import numpy as np

DEFAULTS = {
    "SGD": {"learning_rate": 0.01, "momentum": 0.0, "nesterov": False},
    "Adam": {
        "learning_rate": 0.001,
        "beta_1": 0.9,
        "beta_2": 0.999,
        "epsilon": 1e-7,
        "amsgrad": False,
    },
    "AdamW": {
        "learning_rate": 0.001,
        "weight_decay": 0.004,
        "beta_1": 0.9,
        "beta_2": 0.999,
        "epsilon": 1e-7,
        "amsgrad": False,
    },
    "RMSprop": {
        "learning_rate": 0.001,
        "rho": 0.9,
        "momentum": 0.0,
        "epsilon": 1e-7,
        "centered": False,
    },
    "Adagrad": {"learning_rate": 0.001, "initial_accumulator_value": 0.1, "epsilon": 1e-7},
}
BASE = {
    "weight_decay": None,
    "clipnorm": None,
    "clipvalue": None,
    "global_clipnorm": None,
    "use_ema": False,
    "ema_momentum": 0.99,
    "ema_overwrite_frequency": None,
    "loss_scale_factor": None,
    "gradient_accumulation_steps": None,
}


class KerasReference:
    """Keras 3's optimizer ``kind`` over NumPy copies of ``variables``."""

    def __init__(self, kind: str, variables, **kwargs) -> None:
        self.kind = kind
        self.hp = {**BASE, **DEFAULTS[kind], **kwargs}
        self.vars = [np.array(v, dtype=np.float64) for v in variables]
        self._iterations = 0
        zeros = [np.zeros_like(v) for v in self.vars]
        self.acc = [z.copy() for z in zeros]  # gradient accumulators
        self.average = [z.copy() for z in zeros]  # EMA
        self.m = [z.copy() for z in zeros]  # momentum / first moment
        self.v = [z.copy() for z in zeros]  # velocity / second moment
        self.v_hat = [z.copy() for z in zeros]
        self.avg_grad = [z.copy() for z in zeros]
        self.accumulator = [z + self.hp.get("initial_accumulator_value", 0.0) for z in zeros]

    @property
    def iterations(self) -> int:
        n = self.hp["gradient_accumulation_steps"]
        return self._iterations // n if n else self._iterations

    def learning_rate(self) -> float:
        lr = self.hp["learning_rate"]
        return float(lr(self._iterations)) if callable(lr) else lr

    def apply(self, grads) -> None:
        grads = [np.array(g, dtype=np.float64) for g in grads]
        if self.hp["loss_scale_factor"] is not None:
            grads = [g / self.hp["loss_scale_factor"] for g in grads]
        n = self.hp["gradient_accumulation_steps"]
        if n:
            if (self._iterations + 1) % n == 0:
                grads = [(g + a) / n for g, a in zip(grads, self.acc)]
                self._update(grads)
                self.acc = [np.zeros_like(a) for a in self.acc]
            else:
                self.acc = [g + a for g, a in zip(grads, self.acc)]
        else:
            self._update(grads)
        if self.hp["use_ema"]:
            momentum = self.hp["ema_momentum"] if self.iterations != 0 else 0.0
            self.average = [
                momentum * a + (1 - momentum) * v for a, v in zip(self.average, self.vars)
            ]
            freq = self.hp["ema_overwrite_frequency"]
            if freq and (self.iterations + 1) % freq == 0:
                self.vars = [a.copy() for a in self.average]
        self._iterations += 1

    def _update(self, grads) -> None:
        lr = self.learning_rate()
        hp = self.hp
        if hp["clipnorm"] and hp["clipnorm"] > 0:
            c = hp["clipnorm"]
            grads = [g * c / max(math.sqrt(np.sum(g * g)), c) for g in grads]
        elif hp["global_clipnorm"] and hp["global_clipnorm"] > 0:
            c = hp["global_clipnorm"]
            norm = math.sqrt(np.sum(np.stack([np.sum(g * g) for g in grads])))
            scale = c * min(1.0 / norm, 1.0 / c) + (norm - norm)
            grads = [g * scale for g in grads]
        elif hp["clipvalue"] and hp["clipvalue"] > 0:
            grads = [np.clip(g, -hp["clipvalue"], hp["clipvalue"]) for g in grads]
        if hp["weight_decay"] is not None:
            self.vars = [v - v * hp["weight_decay"] * lr for v in self.vars]
        rule = getattr(self, "_" + self.kind.lower().replace("adamw", "adam"))
        for i, g in enumerate(grads):
            rule(i, g, lr)

    def _sgd(self, i, g, lr) -> None:
        mu = self.hp["momentum"]
        if mu == 0:
            self.vars[i] = self.vars[i] - g * lr
            return
        self.m[i] = self.m[i] * mu - g * lr
        if self.hp["nesterov"]:
            self.vars[i] = self.vars[i] + (self.m[i] * mu - g * lr)
        else:
            self.vars[i] = self.vars[i] + self.m[i]

    def _adam(self, i, g, lr) -> None:
        b1, b2 = self.hp["beta_1"], self.hp["beta_2"]
        t = self.iterations + 1
        alpha = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
        self.m[i] = self.m[i] + (g - self.m[i]) * (1 - b1)
        self.v[i] = self.v[i] + (g * g - self.v[i]) * (1 - b2)
        v = self.v[i]
        if self.hp["amsgrad"]:
            self.v_hat[i] = np.maximum(self.v_hat[i], v)
            v = self.v_hat[i]
        self.vars[i] = self.vars[i] - (self.m[i] * alpha) / (np.sqrt(v) + self.hp["epsilon"])

    def _rmsprop(self, i, g, lr) -> None:
        rho, eps = self.hp["rho"], self.hp["epsilon"]
        self.v[i] = rho * self.v[i] + (1 - rho) * (g * g)
        if self.hp["centered"]:
            self.avg_grad[i] = rho * self.avg_grad[i] + (1 - rho) * g
            denominator = self.v[i] - self.avg_grad[i] * self.avg_grad[i] + eps
        else:
            denominator = self.v[i] + eps
        increment = lr * g / np.sqrt(denominator)
        if self.hp["momentum"] > 0:
            self.m[i] = self.hp["momentum"] * self.m[i] + increment
            self.vars[i] = self.vars[i] - self.m[i]
        else:
            self.vars[i] = self.vars[i] - increment

    def _adagrad(self, i, g, lr) -> None:
        self.accumulator[i] = self.accumulator[i] + g * g
        self.vars[i] = self.vars[i] - lr * g / np.sqrt(self.accumulator[i] + self.hp["epsilon"])
