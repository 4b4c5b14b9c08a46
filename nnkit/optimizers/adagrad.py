"""Keras 3's ``Adagrad`` (Duchi et al., 2011)."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.backends.optim_kernels import keras_adagrad_step
from nnkit.optimizers.base_optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, following ``keras/src/optimizers/adagrad.py``.

    For a gradient ``g`` (after the base class's clipping and weight decay)::

        s <- s + g**2                        (s_0 = initial_accumulator_value)
        w <- w - learning_rate * g / sqrt(s + epsilon)

    ``epsilon`` (default 1e-7) is added inside the square root and the accumulator starts
    at 0.1, where :class:`nnkit.optim.Adagrad` (PyTorch) uses ``sqrt(s) + 1e-10`` and 0.

    Args:
        learning_rate: a float or a schedule (see :class:`~nnkit.optimizers.Optimizer`).
        initial_accumulator_value: the accumulators' starting value (non-negative).
        epsilon: the constant added to the accumulator inside the square root.

    The other arguments (``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``,
    ``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency``, ``loss_scale_factor``,
    ``gradient_accumulation_steps``, ``name``) are the base class's: see
    :class:`~nnkit.optimizers.Optimizer`.

    Example:
        >>> opt = nnkit.optimizers.Adagrad(learning_rate=0.1)
        >>> w = nnkit.tensor([1.0, -2.0])
        >>> opt.apply_gradients([(nnkit.tensor([0.5, 0.5]), w)])
        1
        >>> w
        tensor([ 0.9155, -2.0845])
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        initial_accumulator_value: float = 0.1,
        epsilon: float = 1e-7,
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
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def build_slots(self, variables: list[Tensor]) -> None:
        self._accumulators = self.add_optimizer_variables(
            variables, "accumulator", initializer=self.initial_accumulator_value
        )

    def _update_fused(self, params, grads, slot, learning_rate) -> None:
        """:meth:`update_step` for every variable in one in-place kernel
        (:func:`~nnkit.backends.optim_kernels.keras_adagrad_step`; see
        :meth:`Optimizer._update_all`)."""
        keras_adagrad_step(
            params,
            grads,
            slot(self._accumulators),
            learning_rate=learning_rate,
            epsilon=self.epsilon,
        )

    def update_step(self, gradient: Tensor, variable: Tensor, learning_rate: float) -> None:
        accumulator = self._accumulators[self._get_variable_index(variable)]
        accumulator.add_(gradient * gradient)
        variable.sub_((gradient * learning_rate) / (accumulator + self.epsilon).sqrt())

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {"initial_accumulator_value": self.initial_accumulator_value, "epsilon": self.epsilon}
        )
        return config
