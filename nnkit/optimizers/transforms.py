"""``GradientTransforms``: what Keras's optimizers do around ``update_step`` (gradient
clipping, decoupled weight decay, the moving average of the variables, loss scaling),
a mixin of :class:`nnkit.optimizers.Optimizer`, which sets the attributes it reads."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.optimizers.utils import clip_by_global_norm

__all__ = ["GradientTransforms"]


class GradientTransforms:
    """Clipping (``clipnorm``, ``global_clipnorm``, ``clipvalue``), weight decay, EMA
    (``use_ema``, ``ema_momentum``) and ``loss_scale_factor`` of an optimizer."""

    clipnorm: float | None
    global_clipnorm: float | None
    clipvalue: float | None
    weight_decay: float | None
    use_ema: bool
    ema_momentum: float
    loss_scale_factor: float | None
    _exclude_from_weight_decay: set
    _model_variables_moving_average: list[Tensor]

    # --------------------------------------------------------------- clipping
    def _clip_gradients(self, grads: list[Tensor]) -> list[Tensor]:
        if self.clipnorm and self.clipnorm > 0:
            return [self._clip_by_norm(g) for g in grads]
        if self.global_clipnorm and self.global_clipnorm > 0:
            return clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue and self.clipvalue > 0:
            v = self.clipvalue
            return [g.clamp(-v, v) for g in grads]
        return grads

    def _clip_by_norm(self, values: Tensor) -> Tensor:
        """``values * clipnorm / max(||values||_2, clipnorm)`` (Keras's ``_clip_by_norm``)."""
        l2norm = (values * values).sum().sqrt()
        return (values * self.clipnorm) / l2norm.clamp(min=self.clipnorm)

    # ----------------------------------------------------------- weight decay
    def exclude_from_weight_decay(
        self, var_list: Iterable[Tensor] | None = None, var_names: Iterable[str] | None = None
    ) -> None:
        """Exempt variables from weight decay (Keras's ``exclude_from_weight_decay``).

        Args:
            var_list: the Tensors to exempt.
            var_names: not supported: nnkit Tensors carry no names.

        Raises:
            NotImplementedError: if ``var_names`` is given.
        """
        if var_names:
            raise NotImplementedError(
                "exclude_from_weight_decay(var_names=...) is not supported: nnkit Tensors "
                "have no names. Pass the Tensors instead, e.g. var_list=[p for n, p in "
                "model.named_parameters() if 'bias' in n]"
            )
        self._exclude_from_weight_decay = set(var_list or ())

    def _use_weight_decay(self, variable: Tensor) -> bool:
        return variable not in self._exclude_from_weight_decay

    def _apply_weight_decay(self, variables: list[Tensor], learning_rate: float) -> None:
        if self.weight_decay is None:
            return
        for variable in variables:
            if self._use_weight_decay(variable):
                variable.sub_(variable * self.weight_decay * learning_rate)

    # -------------------------------------------------------------------- EMA
    def _update_model_variables_moving_average(self, variables: list[Tensor]) -> None:
        momentum = self.ema_momentum if self.iterations != 0 else 0.0
        for var, average in zip(variables, self._model_variables_moving_average):
            average.copy_(average * momentum + var * (1 - momentum))

    def _overwrite_model_variables_with_average_value(self, variables: list[Tensor]) -> None:
        if len(variables) != len(self._model_variables_moving_average):
            raise ValueError(
                f"The length of model variables ({len(variables)}) to override does not match "
                "the length of model variables stored in the optimizer "
                f"({len(self._model_variables_moving_average)}). Please check if the "
                "optimizer was called on your model."
            )
        with no_grad():
            for var, average in zip(variables, self._model_variables_moving_average):
                var.copy_(average)

    def finalize_variable_values(self, var_list: Sequence[Tensor]) -> None:
        """With ``use_ema``, overwrite the variables with their moving averages (Keras's
        ``fit`` calls this at the end of training).

        Args:
            var_list: the model's variables, in the order the optimizer was built with.
        """
        if self.use_ema:
            self._overwrite_model_variables_with_average_value(list(var_list))

    def scale_loss(self, loss: Any) -> Any:
        """The loss times ``loss_scale_factor`` (unchanged if it is None).

        Args:
            loss: the loss (a Tensor or a number).

        Returns:
            The scaled loss.
        """
        return loss if self.loss_scale_factor is None else loss * self.loss_scale_factor
