"""AdamW: Adam with decoupled weight decay (Loshchilov and Hutter, 2019)."""

from __future__ import annotations

from nnkit.optim.adam import Adam
from nnkit.optim.optimizer import ParamsT

__all__ = ["AdamW"]


class AdamW(Adam):
    r"""Implements AdamW, following PyTorch's documented algorithm.

    Weight decay shrinks the parameter directly instead of being added to the gradient,
    so it is not rescaled by the adaptive denominator. At step :math:`t`::

        g_t   <- -g_t                                 if maximize
        theta <- theta * (1 - lr * weight_decay)
        m_t    = beta1 * m_{t-1} + (1 - beta1) * g_t
        v_t    = beta2 * v_{t-1} + (1 - beta2) * g_t**2
        v_t   <- max(v_{t-1}^max, v_t)  (kept as v_t^max)  if amsgrad
        theta <- theta - lr / (1 - beta1**t) * m_t / (sqrt(v_t / (1 - beta2**t)) + eps)

    Args:
        params: Tensors to optimize, or dicts defining parameter groups.
        lr: learning rate.
        betas: decay rates of the first and second moment estimates, each in [0, 1).
        eps: term added to the denominator for numerical stability.
        weight_decay: decoupled weight decay coefficient.
        amsgrad: use the running maximum of the second moment.
        maximize: maximize the objective instead of minimizing it.

    Raises:
        ValueError: for a negative learning rate, eps or weight decay, or a beta outside
            [0, 1).

    Example:
        >>> model = nn.Linear(4, 2)
        >>> x, y = nnkit.randn(8, 4), nnkit.randn(8, 2)
        >>> opt = AdamW(model.parameters(), lr=0.1, weight_decay=0.1)
        >>> for step in range(3):
        ...     opt.zero_grad()
        ...     loss = F.mse_loss(model(x), y)
        ...     loss.backward()
        ...     opt.step()
        ...     print(round(loss.item(), 4))
        1.114
        0.9097
        0.7583
    """

    _decoupled_weight_decay = True

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        *,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        maximize: bool = False,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
        )
