"""Keras 3's ``AdamW``: Adam with decoupled weight decay (Loshchilov and Hutter, 2019)."""

from __future__ import annotations

from typing import Any

from nnkit.optimizers.adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """AdamW, following ``keras/src/optimizers/adamw.py``: :class:`Adam` whose
    ``weight_decay`` defaults to 0.004 and must be set. Before each update the base class
    applies ``w <- w - w * weight_decay * learning_rate``, then Adam's step.

    :class:`nnkit.optim.AdamW` (PyTorch) differs: ``weight_decay`` defaults to 0.01,
    ``w <- w * (1 - lr * weight_decay)``, ``eps`` 1e-8 after the bias correction.

    Args:
        learning_rate, beta_1, beta_2, epsilon, amsgrad: see :class:`Adam`.
        weight_decay: the decoupled weight-decay rate (not None).

    The other arguments (``clipnorm``, ``clipvalue``, ``global_clipnorm``,
    ``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency``, ``loss_scale_factor``,
    ``gradient_accumulation_steps``, ``name``) are the base class's: see
    :class:`~nnkit.optimizers.Optimizer`.

    Raises:
        ValueError: if ``weight_decay`` is None.

    Example:
        >>> opt = nnkit.optimizers.AdamW(learning_rate=0.1, weight_decay=0.05)
        >>> w = nnkit.tensor([1.0, -2.0])
        >>> opt.apply_gradients([(nnkit.tensor([0.5, 0.5]), w)])
        1
        >>> w
        tensor([ 0.8950, -2.0900])
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        weight_decay: float | None = 0.004,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-7,
        amsgrad: bool = False,
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
            beta_1=beta_1,
            beta_2=beta_2,
            epsilon=epsilon,
            amsgrad=amsgrad,
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
        if self.weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. Received: weight_decay=None")
