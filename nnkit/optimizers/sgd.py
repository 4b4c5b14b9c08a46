"""Keras 3's ``SGD``: gradient descent with optional (Nesterov) momentum."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.backends.optim_kernels import keras_sgd_step
from nnkit.optimizers.base_optimizer import Optimizer
from nnkit.optimizers.utils import is_real

__all__ = ["SGD"]


class SGD(Optimizer):
    """Gradient descent (with momentum), following ``keras/src/optimizers/sgd.py``.

    For a variable ``w`` with gradient ``g`` (after the base class's clipping and weight
    decay)::

        momentum == 0:   w <- w - learning_rate * g
        momentum > 0:    m <- momentum * m - learning_rate * g       (m_0 = 0)
                         w <- w + m
        nesterov:        w <- w + momentum * m - learning_rate * g   (with the new m)

    Unlike :class:`nnkit.optim.SGD` (PyTorch's ``b = momentum * b + g``,
    ``w -= lr * b``), the learning rate is folded into the velocity, so changing it
    mid-run only affects new gradients.

    Args:
        learning_rate: a float or a schedule (see :class:`~nnkit.optimizers.Optimizer`).
        momentum: a number in [0, 1]; 0 is plain gradient descent (no state kept).
        nesterov: use Nesterov momentum.

    The other arguments (``weight_decay``, ``clipnorm``, ``clipvalue``, ``global_clipnorm``,
    ``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency``, ``loss_scale_factor``,
    ``gradient_accumulation_steps``, ``name``) are the base class's: see
    :class:`~nnkit.optimizers.Optimizer`.

    Raises:
        ValueError: if ``momentum`` is not a number in [0, 1].

    Example:
        >>> opt = nnkit.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True)
        >>> w = nnkit.tensor([1.0, -2.0])
        >>> opt.apply_gradients([(nnkit.tensor([0.5, 0.5]), w)])
        1
        >>> w
        tensor([ 0.9050, -2.0950])
    """

    def __init__(
        self,
        learning_rate: Any = 0.01,
        momentum: float = 0.0,
        nesterov: bool = False,
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
        if not is_real(momentum) or momentum < 0 or momentum > 1:
            raise ValueError("`momentum` must be a float between [0, 1].")
        self.momentum = momentum
        self.nesterov = nesterov

    def build_slots(self, variables: list[Tensor]) -> None:
        self.momentums: list[Tensor] = []
        if self.momentum != 0:
            self.momentums = self.add_optimizer_variables(variables, "momentum")

    def _update_fused(self, params, grads, slot, learning_rate) -> None:
        """:meth:`update_step` for every variable in one in-place kernel
        (:func:`~nnkit.backends.optim_kernels.keras_sgd_step`; see
        :meth:`Optimizer._update_all`)."""
        keras_sgd_step(
            params,
            grads,
            slot(self.momentums) if self.momentum != 0 else None,
            learning_rate=learning_rate,
            momentum=self.momentum,
            nesterov=self.nesterov,
        )

    def update_step(self, gradient: Tensor, variable: Tensor, learning_rate: float) -> None:
        if self.momentum != 0:
            m = self.momentums[self._get_variable_index(variable)]
            m.copy_(m * self.momentum - gradient * learning_rate)
            if self.nesterov:
                variable.add_(m * self.momentum - gradient * learning_rate)
            else:
                variable.add_(m)
        else:
            variable.sub_(gradient * learning_rate)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"momentum": self.momentum, "nesterov": self.nesterov})
        return config
