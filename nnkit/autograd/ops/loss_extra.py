"""More losses of ``torch.nn.functional``: margin and ranking losses, the embedding
losses, Poisson and Gaussian negative log-likelihoods and the multi-label soft margin.

Each is a composition of existing differentiable ops written with torch's own formula
(so gradients, including torch's conventions at clamps and masks, follow). ``reduction``
is ``"mean"`` (default), ``"sum"`` or ``"none"``.
"""

from __future__ import annotations

import math

from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.activation import logsigmoid
from nnkit.autograd.ops.distance import pairwise_distance
from nnkit.autograd.ops.indexing import gather
from nnkit.autograd.ops.loss import _reduce
from nnkit.autograd.ops.selection import where

__all__ = [
    "soft_margin_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "cosine_embedding_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _floats(op, **tensors):
    for name, t in tensors.items():
        check_tensor(t, op, name)
        if not t.dtype.is_floating_point:
            raise TypeError(f"{op}: '{name}' must be floating, got {t.dtype}")


def soft_margin_loss(input, target, reduction="mean"):
    """``log(1 + exp(-target * input))`` (targets are +1/-1), reduced.

    Example:
        >>> F.soft_margin_loss(nnkit.tensor([0.0, 2.0]), nnkit.tensor([1.0, -1.0]))
        tensor(1.4100)
    """
    _floats("soft_margin_loss", input=input, target=target)
    return _reduce((-input * target).exp().log1p(), reduction, "soft_margin_loss")


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)`` (target +1: ``input1`` should
    rank higher), broadcasting, reduced. Gradient 1 at the clamp's boundary (torch's).

    Example:
        >>> F.margin_ranking_loss(nnkit.tensor([1.0, 0.0]), nnkit.tensor([0.0, 1.0]),
        ...                       nnkit.tensor([1.0, 1.0]))
        tensor(0.5000)
    """
    _floats("margin_ranking_loss", input1=input1, input2=input2, target=target)
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, reduction="mean"):
    """``input`` where ``target != -1`` plus ``max(0, margin - input)`` where
    ``target != 1`` (targets are +1/-1), reduced.

    Example:
        >>> F.hinge_embedding_loss(nnkit.tensor([0.3, 0.3]), nnkit.tensor([1.0, -1.0]))
        tensor(0.5000)
    """
    check_tensor(input, "hinge_embedding_loss")
    check_tensor(target, "hinge_embedding_loss", "target")
    margin_part = where(target != 1, (margin - input).clamp_min(0), 0.0)
    loss = margin_part + where(target != -1, input, 0.0)
    return _reduce(loss, reduction, "hinge_embedding_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1`` (``cos`` over the last dimension, with 1e-12 added to each squared
    norm, as torch); inputs ``(N, D)`` with target ``(N,)``, or ``(D,)`` with a 0-d one.

    Example:
        >>> F.cosine_embedding_loss(nnkit.tensor([[1.0, 0.0]]), nnkit.tensor([[1.0, 1.0]]),
        ...                         nnkit.tensor([1.0]))
        tensor(0.2929)
    """
    _floats("cosine_embedding_loss", input1=input1, input2=input2)
    check_tensor(target, "cosine_embedding_loss", "target")
    d = target.ndim
    if d > 1 or input1.ndim != d + 1 or input2.ndim != d + 1:
        raise ValueError(
            "cosine_embedding_loss: expects 2-D inputs with a 1-D target or 1-D inputs "
            f"with a 0-d target, got {input1.shape}, {input2.shape}, {target.shape}"
        )
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + 1e-12
    mag2 = (input2 * input2).sum(d) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    pos = where(target == 1, 1 - cos, 0.0)
    neg = where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(pos + neg, reduction, "cosine_embedding_loss")


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """The Poisson negative log-likelihood: ``exp(input) - target * input`` with
    ``log_input``, else ``input - target * log(input + eps)``; ``full`` adds Stirling's
    term ``target*log(target) - target + log(2*pi*target)/2`` where ``target > 1``.
    ``size_average``/``reduce`` (deprecated in torch) are refused when set.

    Example:
        >>> F.poisson_nll_loss(nnkit.tensor([0.0, 1.0]), nnkit.tensor([1.0, 2.0]))
        tensor(0.8591)
    """
    if size_average is not None or reduce is not None:
        raise NotImplementedError("poisson_nll_loss: size_average/reduce are not supported")
    _floats("poisson_nll_loss", input=input, target=target)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + where(target <= 1, 0.0, stirling)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The Gaussian negative log-likelihood ``(log(var) + (input - target)**2 / var) / 2``
    (plus ``log(2*pi)/2`` with ``full``). ``var`` has ``input``'s shape, or lacks (or has
    size 1 in) its last dimension, or is a number; it is clamped to ``eps`` without
    stopping its gradient, as torch.

    Example:
        >>> F.gaussian_nll_loss(nnkit.tensor([1.0]), nnkit.tensor([0.0]), nnkit.tensor([1.0]))
        tensor(0.5000)
    """
    _floats("gaussian_nll_loss", input=input, target=target)
    if not hasattr(var, "shape"):
        var = input.new_full((), float(var))
    check_tensor(var, "gaussian_nll_loss", "var")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.shape[:-1] == var.shape[:-1] and var.shape[-1:] == (1,)) and var.ndim:
            raise ValueError(
                f"gaussian_nll_loss: var of shape {var.shape} does not fit input {input.shape}"
            )
    if bool((var < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entries")
    var = var + (var.detach().clamp_min(eps) - var.detach())
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def multilabel_soft_margin_loss(input, target, weight=None, reduction="mean"):
    """The multi-label logistic loss ``-(y log s(x) + (1 - y) log s(-x))`` (``s`` the
    sigmoid) times ``weight``, averaged over the classes (last dimension), reduced.

    Example:
        >>> F.multilabel_soft_margin_loss(nnkit.tensor([[0.0, 0.0]]), nnkit.tensor([[1.0, 0.0]]))
        tensor(0.6931)
    """
    _floats("multilabel_soft_margin_loss", input=input, target=target)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    cd = max(input.ndim - 1, 0)
    c = input.shape[cd] if input.ndim else 1
    return _reduce(loss.sum(cd) / c, reduction, "multilabel_soft_margin_loss")


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """The multi-class hinge loss: for each sample, ``sum_{j != y} max(0, margin -
    x[y] + x[j]) ** p / C`` (times ``weight[y]``); input ``(N, C)``, ``(C,)`` or 0-d,
    integer target ``(N,)`` or 0-d; ``p`` is 1 or 2.

    Example:
        >>> F.multi_margin_loss(nnkit.tensor([[0.1, 0.2, 0.4]]), nnkit.tensor([2]))
        tensor(0.5000)
    """
    if size_average is not None or reduce is not None:
        raise NotImplementedError("multi_margin_loss: size_average/reduce are not supported")
    _floats("multi_margin_loss", input=input)
    check_tensor(target, "multi_margin_loss", "target")
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p = 1 and p = 2 are supported, got {p}")
    if target.dtype.is_floating_point:
        raise TypeError(f"multi_margin_loss: target must be an integer tensor, got {target.dtype}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    y = target.reshape(-1, 1)
    xy = gather(x, 1, y)
    z = (margin - xy + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[target.reshape(-1)].unsqueeze(1)
    cols = y.new_tensor(list(range(x.shape[1]))).reshape(1, -1)
    z = where(cols == y, 0.0, z)
    loss = z.sum(1) / x.shape[1]
    if input.ndim < 2:
        loss = loss.reshape(target.shape)
    return _reduce(loss, reduction, "multi_margin_loss")


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2.0,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with ``d`` the
    :func:`pairwise_distance` (``p``, ``eps``); ``swap`` uses the smaller of
    ``d(anchor, negative)`` and ``d(positive, negative)``.

    Example:
        >>> a, q = nnkit.tensor([[0.0, 0.0]]), nnkit.tensor([[0.0, 1.0]])
        >>> n = nnkit.tensor([[0.0, 1.5]])
        >>> F.triplet_margin_loss(a, q, n)
        tensor(0.5000)
    """
    if size_average is not None or reduce is not None:
        raise NotImplementedError("triplet_margin_loss: size_average/reduce are not supported")
    _floats("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ValueError(
            "triplet_margin_loss: anchor, positive and negative must have the same number "
            f"of dimensions, got {anchor.ndim}, {positive.ndim}, {negative.ndim}"
        )

    def dist(a, b):
        return pairwise_distance(a, b, p, eps)

    return _triplet(
        anchor, positive, negative, dist, margin, swap, reduction, "triplet_margin_loss"
    )


def _triplet(anchor, positive, negative, dist, margin, swap, reduction, op):
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction, op)


def triplet_margin_with_distance_loss(
    anchor,
    positive,
    negative,
    *,
    distance_function=None,
    margin=1.0,
    swap=False,
    reduction="mean",
):
    """:func:`triplet_margin_loss` with a given ``distance_function(a, b)`` (default:
    :func:`pairwise_distance`).

    Example:
        >>> a, q = nnkit.tensor([[0.0, 0.0]]), nnkit.tensor([[0.0, 1.0]])
        >>> n = nnkit.tensor([[0.0, 3.0]])
        >>> F.triplet_margin_with_distance_loss(a, q, n, distance_function=nnkit.cdist)
        tensor(0.0)
    """
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        check_tensor(t, "triplet_margin_with_distance_loss", name)
    dist = distance_function if distance_function is not None else pairwise_distance
    op = "triplet_margin_with_distance_loss"
    return _triplet(anchor, positive, negative, dist, margin, swap, reduction, op)
