"""Stochastic gradient descent with optional (Nesterov) momentum."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.backends.optim_kernels import sgd_step
from nnkit.optim.optimizer import Optimizer, ParamsT, mats

__all__ = ["SGD"]


class SGD(Optimizer):
    r"""Implements stochastic gradient descent, following PyTorch's documented algorithm.

    At step :math:`t`, for a parameter :math:`\theta` with gradient :math:`g_t`::

        g_t   <- -g_t                                     if maximize
        g_t   <- g_t + weight_decay * theta               if weight_decay != 0
        b_t    = g_t                                      if t == 1
        b_t    = momentum * b_{t-1} + (1 - dampening) * g_t   otherwise
        g_t   <- g_t + momentum * b_t    if nesterov, else  b_t   (if momentum != 0)
        theta <- theta - lr * g_t

    Args:
        params: Tensors to optimize, or dicts defining parameter groups.
        lr: learning rate.
        momentum: momentum factor (0 disables momentum and its buffer).
        dampening: dampening for momentum.
        nesterov: use Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
        weight_decay: L2 penalty added to the gradient.
        maximize: maximize the objective instead of minimizing it.

    Raises:
        ValueError: for a negative learning rate, momentum or weight decay, or Nesterov
            momentum without momentum or with dampening.

    Example:
        >>> model = nn.Linear(4, 2)
        >>> x, y = nnkit.randn(8, 4), nnkit.randn(8, 2)
        >>> opt = SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
        >>> for step in range(3):
        ...     opt.zero_grad()
        ...     loss = F.mse_loss(model(x), y)
        ...     loss.backward()
        ...     opt.step()
        ...     print(round(loss.item(), 4))
        1.114
        0.958
        0.8153
    """

    _state_names = ("momentum_buffer",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        *,
        momentum: float = 0,
        dampening: float = 0,
        nesterov: bool = False,
        weight_decay: float = 0,
        maximize: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "nesterov": nesterov,
            "weight_decay": weight_decay,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _validate(self, group: dict[str, Any]) -> None:
        super()._validate(group)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")

    def _foreach(
        self, params: list[Tensor], states: list[dict[str, Any]], group: dict[str, Any]
    ) -> None:
        bufs = mats([st.get("momentum_buffer") for st in states])
        sgd_step(
            mats(params),
            mats([p.grad for p in params]),
            bufs,
            lr=group["lr"],
            momentum=group["momentum"],
            dampening=group["dampening"],
            nesterov=group["nesterov"],
            weight_decay=group["weight_decay"],
            maximize=group["maximize"],
        )
        if group["momentum"] != 0:
            for st, b in zip(states, bufs):
                if "momentum_buffer" not in st:  # allocated by this first step
                    st["momentum_buffer"] = Tensor._from_mat(b)
