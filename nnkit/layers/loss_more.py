"""More loss layers: Modules over the functional losses, with PyTorch's arguments (without
the deprecated ``size_average``/``reduce``).

Every loss takes ``reduction`` (``'mean'``, ``'sum'`` or ``'none'``; ``KLDivLoss`` also
``'batchmean'``).
"""

from __future__ import annotations

from nnkit.autograd.ops import loss_extra as L
from nnkit.autograd.ops.ctc import ctc_loss
from nnkit.autograd.ops.loss import kl_div
from nnkit.autograd.ops.loss_multilabel import multilabel_margin_loss
from nnkit.autograd.tensor import Tensor
from nnkit.layers.loss import _Loss, _WeightedLoss
from nnkit.layers.shape_more import PairwiseDistance

__all__ = [
    "KLDivLoss",
    "SoftMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiLabelMarginLoss",
    "MultiMarginLoss",
    "CosineEmbeddingLoss",
    "MarginRankingLoss",
    "HingeEmbeddingLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
    "PoissonNLLLoss",
    "GaussianNLLLoss",
    "CTCLoss",
]


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence ``target · (log target − input)``, input as log-probabilities.

    Args:
        reduction: ``'mean'``, ``'batchmean'`` (sum / batch size, the true KL), ``'sum'``
            or ``'none'``.
        log_target: the target is given as log-probabilities too (default False).

    Example:
        >>> log_q = nnkit.tensor([[0.5, 0.5]]).log()
        >>> KLDivLoss(reduction="batchmean")(log_q, nnkit.tensor([[0.25, 0.75]]))
        tensor(0.1308)
    """

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        if reduction == "batchmean":
            super().__init__()
            self.reduction = reduction
        else:
            super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(−y·x))`` for targets ``y`` in {−1, 1}.

    Args:
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> SoftMarginLoss()(nnkit.tensor([0.0, 2.0]), nnkit.tensor([1.0, -1.0]))
        tensor(1.4100)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return L.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss of logits ``(N, C)`` and 0/1 targets.

    Args:
        weight: per-class weights, shape ``(C,)`` (default None).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> MultiLabelSoftMarginLoss()(nnkit.tensor([[0.0, 0.0]]), nnkit.tensor([[1.0, 0.0]]))
        tensor(0.6931)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return L.multilabel_soft_margin_loss(
            input, target, weight=self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss of scores ``(N, C)`` and class-index targets ended by
    ``-1`` (:func:`nnkit.nn.functional.multilabel_margin_loss`).

    Args:
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> x = nnkit.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> MultiLabelMarginLoss()(x, nnkit.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss ``Σ_{i≠y} max(0, margin − x_y + x_i)**p / C``.

    Args:
        p: 1 or 2 (default 1).
        margin: the margin (default 1.0).
        weight: per-class weights, shape ``(C,)`` (default None).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> MultiMarginLoss()(nnkit.tensor([[0.1, 0.2, 0.4, 0.8]]), nnkit.tensor([3]))
        tensor(0.3250)
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: p must be 1 or 2. Received: p={p!r}")
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return L.multi_margin_loss(
            input, target, self.p, self.margin, weight=self.weight, reduction=self.reduction
        )


class CosineEmbeddingLoss(_Loss):
    """``1 − cos(x1, x2)`` for ``y = 1`` and ``max(0, cos(x1, x2) − margin)`` for ``y = −1``.

    Args:
        margin: the margin, in [−1, 1] (default 0).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> x1, x2 = nnkit.tensor([[1.0, 0.0]]), nnkit.tensor([[1.0, 1.0]])
        >>> CosineEmbeddingLoss()(x1, x2, nnkit.tensor([1.0]))
        tensor(0.2929)
    """

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return L.cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)


class MarginRankingLoss(_Loss):
    """Ranking loss ``max(0, −y·(x1 − x2) + margin)`` for ``y`` in {−1, 1}.

    Args:
        margin: the margin (default 0).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> x1, x2 = nnkit.tensor([1.0, 2.0]), nnkit.tensor([2.0, 1.0])
        >>> MarginRankingLoss(margin=0.5)(x1, x2, nnkit.tensor([1.0, 1.0]))
        tensor(0.7500)
    """

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return L.margin_ranking_loss(input1, input2, target, self.margin, self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` where ``y = 1`` and ``max(0, margin − x)`` where ``y = −1``.

    Args:
        margin: the margin (default 1.0).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> HingeEmbeddingLoss()(nnkit.tensor([0.3, 0.4]), nnkit.tensor([1.0, -1.0]))
        tensor(0.4500)
    """

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return L.hinge_embedding_loss(input, target, self.margin, self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss ``max(d(a, p) − d(a, n) + margin, 0)`` with the p-norm distance.

    Args:
        margin: the margin (default 1.0).
        p: the norm degree of the pairwise distance (default 2).
        eps: added to differences for stability (default 1e-6).
        swap: use the smaller of ``d(a, n)`` and ``d(p, n)`` (default False).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> a, p = nnkit.tensor([[0.0, 0.0]]), nnkit.tensor([[0.0, 1.0]])
        >>> n = nnkit.tensor([[1.0, 1.0]])
        >>> TripletMarginLoss()(a, p, n)
        tensor(0.5858)
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return L.triplet_margin_loss(
            anchor,
            positive,
            negative,
            margin=self.margin,
            p=self.p,
            eps=self.eps,
            swap=self.swap,
            reduction=self.reduction,
        )


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss ``max(d(a, p) − d(a, n) + margin, 0)`` with any distance function.

    Args:
        distance_function: maps two tensors to distances (default None: a
            :class:`PairwiseDistance` submodule, the Euclidean distance).
        margin: the margin (default 1.0).
        swap: use the smaller of ``d(a, n)`` and ``d(p, n)`` (default False).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> a, p = nnkit.tensor([[0.0, 0.0]]), nnkit.tensor([[0.0, 1.0]])
        >>> n = nnkit.tensor([[1.0, 1.0]])
        >>> l1 = lambda x, y: (x - y).abs().sum(-1)
        >>> TripletMarginWithDistanceLoss(distance_function=l1)(a, p, n)
        tensor(0.0)
    """

    def __init__(
        self,
        *,
        distance_function=None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        self.distance_function = (
            distance_function if distance_function is not None else PairwiseDistance()
        )
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return L.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class PoissonNLLLoss(_Loss):
    """Poisson negative log likelihood: ``exp(x) − y·x`` (``log_input``) or ``x − y·log(x + eps)``.

    Args:
        log_input: the input is the log of the rate (default True).
        full: add the Stirling term ``y·log y − y + ½·log(2πy)`` (default False).
        eps: keeps ``log`` finite when ``log_input`` is False (default 1e-8).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> PoissonNLLLoss()(nnkit.tensor([0.0, 1.0]), nnkit.tensor([1.0, 2.0]))
        tensor(0.8591)
    """

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        eps: float = 1e-8,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return L.poisson_nll_loss(
            log_input,
            target,
            log_input=self.log_input,
            full=self.full,
            eps=self.eps,
            reduction=self.reduction,
        )


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood ``½·(log var + (x − y)**2 / var)``.

    Args:
        full: add the constant ``½·log(2π)`` (default False).
        eps: the lower clamp of ``var`` (default 1e-6).
        reduction: ``'mean'``, ``'sum'`` or ``'none'``.

    Example:
        >>> GaussianNLLLoss()(nnkit.tensor([1.0, 2.0]), nnkit.tensor([1.0, 0.0]), nnkit.ones(2))
        tensor(1.0)
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:
        return L.gaussian_nll_loss(
            input, target, var, full=self.full, eps=self.eps, reduction=self.reduction
        )


class CTCLoss(_Loss):
    """Connectionist temporal classification loss of ``(T, N, C)`` log-probabilities and
    unaligned label sequences (see :func:`nnkit.nn.functional.ctc_loss`).

    Args:
        blank: the blank class index (default 0).
        reduction: ``'mean'`` (each loss divided by its target length, then averaged
            over the batch), ``'sum'`` or ``'none'``.
        zero_infinity: give 0 (and a zero gradient) for impossible alignments instead
            of ``inf`` (default False).

    Called as ``loss(log_probs, targets, input_lengths, target_lengths)``.

    Example:
        >>> lp = nnkit.tensor([[[0.5, 0.5]], [[0.5, 0.5]]]).log()
        >>> CTCLoss()(lp, nnkit.tensor([[1]]), [2], [1])
        tensor(0.2877)
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths, target_lengths):
        return ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            blank=self.blank,
            reduction=self.reduction,
            zero_infinity=self.zero_infinity,
        )

    def extra_repr(self) -> str:
        parts = [] if self.blank == 0 else [f"blank={self.blank}"]
        if self.reduction != "mean":
            parts.append(f"reduction={self.reduction!r}")
        if self.zero_infinity:
            parts.append("zero_infinity=True")
        return ", ".join(parts)
