"""Keras 3's ``RMSprop`` (Hinton, 2012)."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.backends.optim_kernels import keras_rmsprop_step
from nnkit.optimizers.base_optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, following ``keras/src/optimizers/rmsprop.py``.

    For a gradient ``g`` (after the base class's clipping and weight decay)::

        v     <- rho * v + (1 - rho) * g**2
        a     <- rho * a + (1 - rho) * g                          if centered
        d     <- v - a**2 + epsilon   if centered, else   v + epsilon
        inc   <- learning_rate * g / sqrt(d)
        p     <- momentum * p + inc;  w <- w - p                  if momentum > 0
        w     <- w - inc                                          otherwise

    ``epsilon`` (default 1e-7) is added *inside* the square root, where
    :class:`nnkit.optim.RMSprop` (PyTorch) adds its 1e-8 to ``sqrt(v)``; ``rho`` is
    PyTorch's ``alpha`` (defaults 0.9 here, 0.99 there); the learning rate enters before
    the momentum.

    Args:
        learning_rate: a float or a schedule (see :class:`~nnkit.optimizers.Optimizer`).
        rho: discounting factor of the running averages.
        momentum: momentum factor (0: no momentum state).
        epsilon: the constant added to the denominator inside the square root.
        centered: normalise by an estimate of the gradient's variance.

    The other arguments (``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``,
    ``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency``, ``loss_scale_factor``,
    ``gradient_accumulation_steps``, ``name``) are the base class's: see
    :class:`~nnkit.optimizers.Optimizer`.

    Example:
        >>> opt = nnkit.optimizers.RMSprop(learning_rate=0.1, centered=True)
        >>> w = nnkit.tensor([1.0, -2.0])
        >>> opt.apply_gradients([(nnkit.tensor([0.5, 0.5]), w)])
        1
        >>> w
        tensor([ 0.6667, -2.3333])
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        rho: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-7,
        centered: bool = False,
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
            weight_decay=weight_decay,
            clipnorm=clipnorm,
            clipvalue=clipvalue,
            global_clipnorm=global_clipnorm,
            use_ema=use_ema,
            ema_momentum=ema_momentum,
            ema_overwrite_frequency=ema_overwrite_frequency,
            loss_scale_factor=loss_scale_factor,
            gradient_accumulation_steps=gradient_accumulation_steps,
            name=name,
            **kwargs,
        )
        self.rho = rho
        self.momentum = momentum
        self.epsilon = epsilon
        self.centered = centered

    def build_slots(self, variables: list[Tensor]) -> None:
        self._velocities = self.add_optimizer_variables(variables, "velocity")
        self._momentums: list[Tensor] = []
        if self.momentum > 0:
            self._momentums = self.add_optimizer_variables(variables, "momentum")
        self._average_gradients: list[Tensor] = []
        if self.centered:
            self._average_gradients = self.add_optimizer_variables(variables, "average_gradient")

    def _update_fused(self, params, grads, slot, learning_rate) -> None:
        """:meth:`update_step` for every variable in one in-place kernel
        (:func:`~nnkit.backends.optim_kernels.keras_rmsprop_step`; see
        :meth:`Optimizer._update_all`)."""
        keras_rmsprop_step(
            params,
            grads,
            slot(self._velocities),
            slot(self._average_gradients) if self.centered else None,
            slot(self._momentums) if self.momentum > 0 else None,
            learning_rate=learning_rate,
            rho=self.rho,
            momentum=self.momentum,
            epsilon=self.epsilon,
        )

    def update_step(self, gradient: Tensor, variable: Tensor, learning_rate: float) -> None:
        index = self._get_variable_index(variable)
        velocity = self._velocities[index]
        rho = self.rho
        velocity.copy_(velocity * rho + gradient * gradient * (1 - rho))
        if self.centered:
            average_grad = self._average_gradients[index]
            average_grad.copy_(average_grad * rho + gradient * (1 - rho))
            denominator = velocity - average_grad * average_grad + self.epsilon
        else:
            denominator = velocity + self.epsilon
        increment = (gradient * learning_rate) / denominator.sqrt()
        if self.momentum > 0:
            momentum = self._momentums[index]
            momentum.copy_(momentum * self.momentum + increment)
            variable.sub_(momentum)
        else:
            variable.sub_(increment)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "rho": self.rho,
                "momentum": self.momentum,
                "epsilon": self.epsilon,
                "centered": self.centered,
            }
        )
        return config
