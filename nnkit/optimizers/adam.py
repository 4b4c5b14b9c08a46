"""Keras 3's ``Adam`` (Kingma and Ba, 2015), with optional AMSGrad."""

from __future__ import annotations

import math
from typing import Any

from nnkit.autograd.ops import maximum
from nnkit.autograd.tensor import Tensor
from nnkit.backends.optim_kernels import keras_adam_step
from nnkit.optimizers.base_optimizer import Optimizer

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam, following ``keras/src/optimizers/adam.py``.

    With ``t = iterations + 1`` (the number of this update) and a gradient ``g`` (after
    the base class's clipping and weight decay)::

        alpha <- learning_rate * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        m     <- m + (g - m) * (1 - beta_1)
        v     <- v + (g**2 - v) * (1 - beta_2)
        v_hat <- max(v_hat, v);  v <- v_hat                    if amsgrad
        w     <- w - (m * alpha) / (sqrt(v) + epsilon)

    so ``epsilon`` (default 1e-7) is added to ``sqrt(v)`` before the bias correction,
    Kingma and Ba's "epsilon hat", where :class:`nnkit.optim.Adam` (PyTorch) adds its
    1e-8 to ``sqrt(v / (1 - beta_2**t))``.

    Args:
        learning_rate: a float or a schedule (see :class:`~nnkit.optimizers.Optimizer`).
        beta_1: decay rate of the first-moment estimate.
        beta_2: decay rate of the second-moment estimate.
        epsilon: the constant added to ``sqrt(v)``.
        amsgrad: use the running maximum of ``v`` (Reddi et al., 2018).

    The other arguments (``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``,
    ``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency``, ``loss_scale_factor``,
    ``gradient_accumulation_steps``, ``name``) are the base class's: see
    :class:`~nnkit.optimizers.Optimizer`.

    Example:
        >>> opt = nnkit.optimizers.Adam(learning_rate=1e-3, amsgrad=True)
        >>> opt.build(list(nn.Linear(4, 2).parameters()))   # or the first apply_gradients
        >>> opt
        Adam(name='adam...', learning_rate=0.001, iterations=0, built=True)
        >>> len(opt.variables)     # iterations, learning rate, 3 slots x 2 parameters
        8
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        use_ema: bool = False,
        ema_momentum: float = 0.99,
        ema_overwrite_frequency: int | None = None,
        loss_scale_factor: float | None = None,
        gradient_accumulation_steps: int | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            learning_rate=learning_rate,
            name=name,
            weight_decay=weight_decay,
            clipnorm=clipnorm,
            clipvalue=clipvalue,
            global_clipnorm=global_clipnorm,
            use_ema=use_ema,
            ema_momentum=ema_momentum,
            ema_overwrite_frequency=ema_overwrite_frequency,
            loss_scale_factor=loss_scale_factor,
            gradient_accumulation_steps=gradient_accumulation_steps,
            **kwargs,
        )
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = amsgrad

    def build_slots(self, variables: list[Tensor]) -> None:
        self._momentums, self._velocities = self.add_optimizer_variables(
            variables, ["momentum", "velocity"]
        )
        if self.amsgrad:
            self._velocity_hats = self.add_optimizer_variables(variables, "velocity_hat")

    def _step_size(self, learning_rate: float) -> float:
        """``learning_rate * sqrt(1 - beta_2**t) / (1 - beta_1**t)`` for this update."""
        local_step = self.iterations + 1
        beta_1_power = self.beta_1**local_step
        beta_2_power = self.beta_2**local_step
        return learning_rate * math.sqrt(1 - beta_2_power) / (1 - beta_1_power)

    def _update_fused(self, params, grads, slot, learning_rate) -> None:
        """:meth:`update_step` for every variable in one in-place kernel
        (:func:`~nnkit.backends.optim_kernels.keras_adam_step`; see
        :meth:`Optimizer._update_all`)."""
        keras_adam_step(
            params,
            grads,
            slot(self._momentums),
            slot(self._velocities),
            slot(self._velocity_hats) if self.amsgrad else None,
            alpha=self._step_size(learning_rate),
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
        )

    def update_step(self, gradient: Tensor, variable: Tensor, learning_rate: float) -> None:
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        alpha = self._step_size(learning_rate)
        m.add_((gradient - m) * (1 - self.beta_1))
        v.add_((gradient * gradient - v) * (1 - self.beta_2))
        if self.amsgrad:
            v_hat = self._velocity_hats[index]
            v_hat.copy_(maximum(v_hat, v))
            v = v_hat
        variable.sub_((m * alpha) / (v.sqrt() + self.epsilon))

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "amsgrad": self.amsgrad,
            }
        )
        return config
