"""Adagrad: per-coordinate learning rates from accumulated squared gradients."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import nnkit
from nnkit.optim.optimizer import Optimizer, ParamsT

if TYPE_CHECKING:
    from nnkit import Tensor

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    r"""Implements Adagrad (Duchi et al., 2011), following PyTorch's documented algorithm.

    At step :math:`t`, for a parameter :math:`\theta` with gradient :math:`g_t`::

        g_t   <- -g_t                                 if maximize
        g_t   <- g_t + weight_decay * theta           if weight_decay != 0
        lr_t   = lr / (1 + (t - 1) * lr_decay)
        s_t    = s_{t-1} + g_t**2
        theta <- theta - lr_t * g_t / (sqrt(s_t) + eps)

    with :math:`s_0` = ``initial_accumulator_value`` everywhere.

    Args:
        params: Tensors to optimize, or dicts defining parameter groups.
        lr: learning rate.
        lr_decay: learning-rate decay per step.
        weight_decay: L2 penalty added to the gradient.
        initial_accumulator_value: starting value of the sum of squared gradients.
        eps: term added to the denominator for numerical stability.
        maximize: maximize the objective instead of minimizing it.

    Raises:
        ValueError: for a negative learning rate, lr_decay, weight decay,
            initial_accumulator_value or eps.

    Example:
        >>> opt = Adagrad(model.parameters(), lr=0.1, lr_decay=1e-4)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    _state_names = ("sum",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        *,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        maximize: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "eps": eps,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        accumulator = nnkit.zeros_like(p)
        accumulator.fill_(group["initial_accumulator_value"])
        return {"sum": accumulator}

    def _update(
        self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]
    ) -> None:
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"].addcmul_(grad, grad, value=1)
        std = state["sum"].sqrt() + group["eps"]
        p.addcdiv_(grad, std, value=-clr)
