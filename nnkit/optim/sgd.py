"""Stochastic gradient descent with optional (Nesterov) momentum."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nnkit.optim.optimizer import Optimizer, ParamsT

if TYPE_CHECKING:
    from nnkit import Tensor

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
        >>> opt = SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
        >>> opt.zero_grad(); loss.backward(); opt.step()
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

    def _update(
        self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]
    ) -> None:
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                # First step, or momentum switched on mid-run (e.g. by OneCycleLR).
                buf = state["momentum_buffer"] = grad.clone()
            else:
                buf.mul_(momentum)
                buf.add_(grad, alpha=1 - group["dampening"])
            grad = grad + buf * momentum if group["nesterov"] else buf
        p.add_(grad, alpha=-group["lr"])
