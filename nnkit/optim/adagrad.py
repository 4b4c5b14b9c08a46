"""Adagrad: per-coordinate learning rates from accumulated squared gradients."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.factories import zeros_like
from nnkit.autograd.tensor import Tensor
from nnkit.backends.optim_kernels import adagrad_step
from nnkit.optim.optimizer import Optimizer, ParamsT, mats

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
        >>> model = nn.Linear(4, 2)
        >>> x, y = nnkit.randn(8, 4), nnkit.randn(8, 2)
        >>> opt = Adagrad(model.parameters(), lr=0.1, lr_decay=1e-4)
        >>> for step in range(3):
        ...     opt.zero_grad()
        ...     loss = F.mse_loss(model(x), y)
        ...     loss.backward()
        ...     opt.step()
        ...     print(round(loss.item(), 4))
        1.114
        0.9135
        0.8135
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
        accumulator = zeros_like(p)
        accumulator.fill_(group["initial_accumulator_value"])
        return {"sum": accumulator}

    def _foreach(
        self, params: list[Tensor], states: list[dict[str, Any]], group: dict[str, Any]
    ) -> None:
        adagrad_step(
            mats(params),
            mats([p.grad for p in params]),
            mats([st["sum"] for st in states]),
            [st["step"] for st in states],
            lr=group["lr"],
            lr_decay=group["lr_decay"],
            weight_decay=group["weight_decay"],
            eps=group["eps"],
            maximize=group["maximize"],
        )
