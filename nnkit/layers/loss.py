"""Loss layers: Modules over the functional losses, with PyTorch's constructor arguments.

Every loss takes ``reduction`` (``'mean'``, ``'sum'`` or ``'none'``) and is called as
``loss_fn(input, target)``.
"""

from __future__ import annotations

from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers.module import Module

__all__ = [
    "CrossEntropyLoss",
    "NLLLoss",
    "MSELoss",
    "L1Loss",
    "HuberLoss",
    "SmoothL1Loss",
    "BCELoss",
    "BCEWithLogitsLoss",
]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(
                f"{type(self).__name__}: reduction must be one of {_REDUCTIONS}. "
                f"Received: reduction={reduction!r}"
            )
        self.reduction = reduction

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy between logits ``(N, C, ...)`` and class indices or probabilities.

    loss_n = −w_{y_n} log softmax(x_n)_{y_n}; ``'mean'`` divides by the summed weights of
    the non-ignored targets.

    Args:
        weight: per-class weights, shape ``(C,)``.
        ignore_index: a target value that contributes nothing.
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.
        label_smoothing: mixes the target with the uniform distribution, in [0, 1].

    Example:
        >>> logits = nnkit.tensor([[2.0, 0.5, 0.1], [0.1, 0.2, 3.0]])
        >>> CrossEntropyLoss()(logits, nnkit.tensor([0, 2]))
        tensor(0.2132)
        >>> CrossEntropyLoss(reduction="none", label_smoothing=0.1)(logits, nnkit.tensor([0, 2]))
        tensor([0.4301, 0.2996])
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(
                f"CrossEntropyLoss: label_smoothing must be in [0, 1]. Received: "
                f"label_smoothing={label_smoothing!r}"
            )
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities ``(N, C, ...)`` at class indices.

    Args:
        weight: per-class weights, shape ``(C,)``.
        ignore_index: a target value that contributes nothing.
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> log_probs = F.log_softmax(nnkit.tensor([[2.0, 0.5, 0.1], [0.1, 0.2, 3.0]]), -1)
        >>> NLLLoss()(log_probs, nnkit.tensor([0, 2]))
        tensor(0.2132)
    """

    def __init__(
        self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean"
    ) -> None:
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(
            input,
            target,
            weight=self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


class MSELoss(_Loss):
    """Mean squared error: (xₙ − yₙ)², reduced.

    Args:
        reduction: ``'mean'``, ``'sum'`` or ``'none'`` (one value per element).

    Example:
        >>> x, y = nnkit.tensor([0.5, 2.0, -1.0]), nnkit.tensor([0.0, 0.0, 0.0])
        >>> MSELoss()(x, y)
        tensor(1.7500)
        >>> MSELoss(reduction='none')(x, y)
        tensor([0.2500, 4.0000, 1.0000])
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error: ``|xₙ − yₙ|``, reduced.

    Args:
        reduction: ``'mean'``, ``'sum'`` or ``'none'`` (one value per element).

    Example:
        >>> x, y = nnkit.tensor([0.5, 2.0, -1.0]), nnkit.tensor([0.0, 0.0, 0.0])
        >>> L1Loss()(x, y)
        tensor(1.1667)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class HuberLoss(_Loss):
    """``½(x − y)²`` where ``|x − y| < delta``, ``delta·(|x − y| − ½ delta)`` elsewhere.

    Args:
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.
        delta: where the loss turns from quadratic to linear (> 0).

    Example:
        >>> x, y = nnkit.tensor([0.5, 2.0, -1.0]), nnkit.tensor([0.0, 0.0, 0.0])
        >>> HuberLoss(delta=1.0)(x, y)
        tensor(0.7083)
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SmoothL1Loss(_Loss):
    """``½(x − y)²/beta`` where ``|x − y| < beta``, ``|x − y| − ½ beta`` elsewhere (Huber / beta).

    Args:
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.
        beta: where the loss turns from quadratic to linear (≥ 0).

    Example:
        >>> x, y = nnkit.tensor([0.5, 2.0, -1.0]), nnkit.tensor([0.0, 0.0, 0.0])
        >>> SmoothL1Loss(beta=0.5)(x, y)
        tensor(0.9167)
    """

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities: −w (y log x + (1 − y) log(1 − x)).

    Args:
        weight: a rescaling weight broadcast against the input.
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> BCELoss()(nnkit.tensor([0.9, 0.2]), nnkit.tensor([1.0, 0.0]))
        tensor(0.1643)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross entropy of logits, computed stably: BCE(σ(x), y).

    Args:
        weight: a rescaling weight broadcast against the input.
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.
        pos_weight: weight of positive examples, per class.

    Example:
        >>> logits, target = nnkit.tensor([2.0, -1.0]), nnkit.tensor([1.0, 0.0])
        >>> BCEWithLogitsLoss()(logits, target)
        tensor(0.2201)
        >>> BCEWithLogitsLoss(pos_weight=nnkit.tensor([3.0]))(logits, target)
        tensor(0.3470)
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(weight, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, weight=self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )
