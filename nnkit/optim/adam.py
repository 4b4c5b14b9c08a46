"""Adam: adaptive moment estimation (Kingma and Ba, 2015)."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.factories import zeros_like
from nnkit.autograd.tensor import Tensor
from nnkit.backends.optim_kernels import adam_step
from nnkit.optim.optimizer import Optimizer, ParamsT, mats

__all__ = ["Adam"]


class Adam(Optimizer):
    r"""Implements Adam, following PyTorch's documented algorithm.

    At step :math:`t`, for a parameter :math:`\theta` with gradient :math:`g_t`::

        g_t   <- -g_t                                 if maximize
        g_t   <- g_t + weight_decay * theta           if weight_decay != 0
        m_t    = beta1 * m_{t-1} + (1 - beta1) * g_t
        v_t    = beta2 * v_{t-1} + (1 - beta2) * g_t**2
        v_t   <- max(v_{t-1}^max, v_t)  (kept as v_t^max)  if amsgrad
        theta <- theta - lr / (1 - beta1**t) * m_t / (sqrt(v_t / (1 - beta2**t)) + eps)

    with :math:`m_0 = v_0 = 0`.

    Args:
        params: Tensors to optimize, or dicts defining parameter groups.
        lr: learning rate.
        betas: decay rates of the first and second moment estimates, each in [0, 1).
        eps: term added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient (see :class:`AdamW` for decoupled
            decay).
        amsgrad: use the running maximum of the second moment (Reddi et al., 2018).
        maximize: maximize the objective instead of minimizing it.

    Raises:
        ValueError: for a negative learning rate, eps or weight decay, or a beta outside
            [0, 1).

    Example:
        >>> model = nn.Linear(4, 2)
        >>> x, y = nnkit.randn(8, 4), nnkit.randn(8, 2)
        >>> opt = Adam(model.parameters(), lr=0.1, betas=(0.9, 0.98))
        >>> for step in range(3):
        ...     opt.zero_grad()
        ...     loss = F.mse_loss(model(x), y)
        ...     loss.backward()
        ...     opt.step()
        ...     print(round(loss.item(), 4))
        1.114
        0.9135
        0.7629
    """

    _state_names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        *,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        names = self._state_names if group["amsgrad"] else self._state_names[:2]
        return {name: zeros_like(p) for name in names}

    def _foreach(
        self, params: list[Tensor], states: list[dict[str, Any]], group: dict[str, Any]
    ) -> None:
        amsgrad = group["amsgrad"]
        adam_step(
            mats(params),
            mats([p.grad for p in params]),
            mats([st["exp_avg"] for st in states]),
            mats([st["exp_avg_sq"] for st in states]),
            mats([st["max_exp_avg_sq"] for st in states]) if amsgrad else None,
            [st["step"] for st in states],
            lr=group["lr"],
            betas=group["betas"],
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            amsgrad=amsgrad,
            maximize=group["maximize"],
            decoupled=self._decoupled_weight_decay,
        )
