"""RMSprop: gradients scaled by a running root mean square (Hinton, 2012)."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.factories import zeros_like
from nnkit.autograd.tensor import Tensor
from nnkit.backends.optim_kernels import rmsprop_step
from nnkit.optim.optimizer import Optimizer, ParamsT, mats

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    r"""Implements RMSprop, following PyTorch's documented algorithm.

    At step :math:`t`, for a parameter :math:`\theta` with gradient :math:`g_t`::

        g_t   <- -g_t                                     if maximize
        g_t   <- g_t + weight_decay * theta               if weight_decay != 0
        v_t    = alpha * v_{t-1} + (1 - alpha) * g_t**2
        a_t    = alpha * a_{t-1} + (1 - alpha) * g_t      if centered
        d_t    = sqrt(v_t - a_t**2) + eps  if centered, else  sqrt(v_t) + eps
        b_t    = momentum * b_{t-1} + g_t / d_t           if momentum > 0
        theta <- theta - lr * b_t   if momentum > 0, else  theta - lr * g_t / d_t

    with :math:`v_0 = a_0 = b_0 = 0`.

    Args:
        params: Tensors to optimize, or dicts defining parameter groups.
        lr: learning rate.
        alpha: smoothing constant of the running averages.
        eps: term added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum factor.
        centered: normalise by an estimate of the gradient's variance instead of its
            second moment.
        maximize: maximize the objective instead of minimizing it.

    Raises:
        ValueError: for a negative learning rate, alpha, eps, momentum or weight decay.

    Example:
        >>> model = nn.Linear(4, 2)
        >>> x, y = nnkit.randn(8, 4), nnkit.randn(8, 2)
        >>> opt = RMSprop(model.parameters(), lr=0.01, momentum=0.9, centered=True)
        >>> for step in range(3):
        ...     opt.zero_grad()
        ...     loss = F.mse_loss(model(x), y)
        ...     loss.backward()
        ...     opt.step()
        ...     print(round(loss.item(), 4))
        1.114
        0.9126
        0.6958
    """

    _state_names = ("square_avg", "momentum_buffer", "grad_avg")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        *,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        maximize: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "alpha": alpha,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "centered": centered,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = {"square_avg": zeros_like(p)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = zeros_like(p)
        return state

    def _foreach(
        self, params: list[Tensor], states: list[dict[str, Any]], group: dict[str, Any]
    ) -> None:
        rmsprop_step(
            mats(params),
            mats([p.grad for p in params]),
            mats([st["square_avg"] for st in states]),
            mats([st.get("grad_avg") for st in states]),
            mats([st.get("momentum_buffer") for st in states]),
            lr=group["lr"],
            alpha=group["alpha"],
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            momentum=group["momentum"],
            centered=group["centered"],
            maximize=group["maximize"],
        )
