"""Losses: cross-entropy, NLL, regression losses, binary cross-entropy, KL divergence.

Every loss is composed from ops that already have backward passes (STYLE §6):
``cross_entropy`` is the fused :func:`log_softmax` followed by :func:`nll_loss`, which
picks the target log-probabilities with a gather (a one-hot product would turn a
masked ``-inf`` logit of another class into ``0 * -inf = NaN``). ``binary_cross_entropy``
is the exception, an Op: PyTorch's gradient at ``x = 0`` or ``1`` is not the derivative
of its clamped forward. ``cross_entropy`` runs as one fused Op
(:mod:`~nnkit.autograd.ops.loss_fused`: a log-softmax kernel and a gather forward, one
backward kernel) unless ``target`` or ``weight`` needs a gradient; the composition above
is its reference (equal values, gradients equal up to float rounding) and its fallback.
Each takes ``reduction`` in
``'mean' | 'sum' | 'none'`` with torch's semantics.
"""

from __future__ import annotations

import math
import warnings

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_floating, check_tensor
from nnkit.autograd.ops.activation import log_softmax
from nnkit.autograd.ops.dim_index import index_select
from nnkit.autograd.ops.elementwise import Softplus, abs, exp, log
from nnkit.autograd.ops.indexing import Gather
from nnkit.autograd.ops.loss_fused import CrossEntropy
from nnkit.autograd.ops.selection import clamp, where
from nnkit.autograd.ops.shape import broadcast_shapes
from nnkit.autograd.ops.special import logit

__all__ = [
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "huber_loss",
    "smooth_l1_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
]

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _safe_div(num, den):
    """``num / den`` that gives NaN (not a 0/0 warning) when ``den`` is 0, as torch."""
    with no_grad():
        den = where(den == 0, math.nan, den)
    return num / den


# ------------------------------------------------------------- classification
def _class_dim(input):
    return 1 if input.ndim >= 2 else 0


def _check_index_target(input, target, op):
    want = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.ndim >= 2 else ()
    if tuple(target.shape) != want:
        raise ShapeError(
            f"{op}: expected target of shape {want} for input of shape "
            f"{tuple(input.shape)}, got {tuple(target.shape)}"
        )


def _valid_targets(target, n_classes, ignore_index, op):
    """``(valid mask, targets with ignored entries set to 0)``; checks the class range."""
    with no_grad():
        valid = target != ignore_index
        safe = where(valid, target, 0)
        if safe.numel():
            lo, hi = int(safe.min().item()), int(safe.max().item())
            if lo < 0 or hi >= n_classes:
                bad = lo if lo < 0 else hi
                raise IndexError(f"{op}: target class {bad} out of range for {n_classes} classes")
    return valid, safe


def _target_weights(weight, safe, valid, dtype):
    """Per-target weights ``weight[target]`` (1 without ``weight``), 0 where ignored."""
    with no_grad():
        mask = valid.to(dtype)
        if weight is None:
            return mask
        return index_select(weight, 0, safe.reshape(-1)).reshape(safe.shape) * mask


def _check_weight(weight, n_classes, op):
    if weight is not None and tuple(weight.shape) != (n_classes,):
        raise ShapeError(f"{op}: weight must have shape ({n_classes},), got {tuple(weight.shape)}")


def _nll(input, target, weight, ignore_index, reduction, op):
    check_tensor(input, op)
    check_tensor(target, op, "target")
    if target.dtype.is_floating_point:
        raise TypeError(f"{op}: expected integer class indices as target, got {target.dtype}")
    _check_index_target(input, target, op)
    cd = _class_dim(input)
    n_classes = input.shape[cd]
    _check_weight(weight, n_classes, op)
    valid, safe = _valid_targets(target, n_classes, ignore_index, op)
    w = _target_weights(weight, safe, valid, input.dtype)
    # a gather, not a one-hot product: 0 * -inf (a masked logit) would be NaN; the
    # Op itself, as _valid_targets has already checked the class range
    picked = Gather.apply(input, cd, safe.unsqueeze(cd)).squeeze(cd)
    loss = -picked * w
    if reduction == "mean":
        return _safe_div(loss.sum(), w.sum()), valid, safe
    return _reduce(loss, reduction, op), valid, safe


def nll_loss(input, target, weight=None, ignore_index: int = -100, reduction: str = "mean"):
    """Negative log-likelihood of class indices under log-probabilities ``input``.

    ``loss_i = -weight[t_i] * input[i, t_i]`` (0 where ``t_i == ignore_index``);
    ``'mean'`` divides the sum by the total weight of the non-ignored targets (NaN when
    that is 0, as in PyTorch).

    Args:
        input: log-probabilities ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
        target: integer class indices ``(N,)``, ``(N, d1, ...)`` or ``()``.
        weight: optional ``(C,)`` class weights.
        ignore_index: targets equal to it contribute nothing (default -100).
        reduction: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element loss).

    Returns:
        A 0-d tensor, or with ``'none'`` the loss of ``target``'s shape.

    Gradient: ``-weight[t_i]`` (over the total weight for ``'mean'``) at ``input[i, t_i]``,
    0 elsewhere and for ignored targets.

    Raises:
        ShapeError: if the target shape does not fit the input.
        IndexError: for a target class outside ``[0, C)``.

    Example:
        >>> logp = nnkit.tensor([[-0.5, -1.0, -2.0], [-3.0, -0.1, -2.5]])
        >>> F.nll_loss(logp, nnkit.tensor([0, 1]))
        tensor(0.3000)
        >>> F.nll_loss(logp, nnkit.tensor([0, -100]), reduction="none")
        tensor([0.5000, 0.0000])
    """
    return _nll(input, target, weight, ignore_index, reduction, "nll_loss")[0]


def cross_entropy(
    input,
    target,
    weight=None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
):
    """Cross-entropy between logits and class indices or class probabilities.

    With class indices: ``nll_loss(log_softmax(input, 1), target, ...)``; with
    ``label_smoothing = e`` the target becomes ``(1 - e) one_hot + e / C``, i.e.
    ``(1 - e) nll + e / C * sum_c(-weight_c log p_c)`` (PyTorch's formula and
    normalisation). With probabilities (a float ``target`` shaped like ``input``):
    ``-sum_c weight_c target_c log p_c``, ``'mean'`` averaging over the samples.

    Args:
        input: logits ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
        target: integer indices ``(N,)`` / ``(N, d1, ...)`` / ``()``, or probabilities
            shaped like ``input``.
        weight: optional ``(C,)`` class weights.
        ignore_index: targets equal to it contribute nothing (indices only; default -100).
        reduction: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element loss).
        label_smoothing: in ``[0, 1]`` (default 0).

    Returns:
        A 0-d tensor, or with ``'none'`` one loss per sample (``input`` without ``C``).

    Gradient: ``softmax(input) - target`` per sample (weighted, and scaled by the
    reduction); computed from ``log_softmax``, so large logits stay finite.

    Raises:
        ShapeError: if the target shape fits neither form.
        IndexError: for a class index outside ``[0, C)``.

    Example:
        >>> logits = nnkit.tensor([[2.0, 0.5, -1.0], [0.0, 0.0, 3.0]])
        >>> F.cross_entropy(logits, nnkit.tensor([0, 2]))
        tensor(0.1681)
        >>> F.cross_entropy(logits, nnkit.tensor([0, 2]), label_smoothing=0.1)
        tensor(0.3431)
        >>> F.cross_entropy(logits, nnkit.tensor([[1.0, 0.0, 0.0], [0.5, 0.0, 0.5]]))
        tensor(0.9181)
    """
    op = "cross_entropy"
    check_tensor(input, op)
    check_tensor(target, op, "target")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if input.ndim == 0:
        raise ShapeError(f"{op}: expected input of shape (N, C) or (C,), got a 0-d tensor")
    if not input.dtype.is_floating_point:
        raise TypeError(
            f"{op}: expected floating-point logits, got {input.dtype} (cast them with .float())"
        )
    cd = _class_dim(input)
    n_classes = input.shape[cd]
    if _fusable(input, target, weight):
        if not target.dtype.is_floating_point:
            _check_index_target(input, target, op)
        _check_weight(weight, n_classes, op)
        args = (ignore_index, float(label_smoothing), reduction, cd)
        return CrossEntropy.apply(input, target, weight, *args)
    logp = log_softmax(input, cd)
    if target.dtype.is_floating_point:
        return _soft_cross_entropy(logp, target, weight, reduction, label_smoothing, cd)
    nll, valid, safe = _nll(logp, target, weight, ignore_index, reduction, op)
    if label_smoothing == 0.0:
        return nll
    wl = logp if weight is None else logp * _class_view(weight, logp.ndim, cd)
    smooth = -wl.sum(cd) * valid.to(logp.dtype)
    if reduction == "mean":
        smooth = _safe_div(smooth.sum(), _target_weights(weight, safe, valid, logp.dtype).sum())
    else:
        smooth = _reduce(smooth, reduction, op)
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _fusable(input, target, weight):
    """Whether the fused Op computes this cross-entropy: it gives no gradient to
    ``target`` or ``weight`` (the composite path does), and a probability target must
    have the input's shape (else the composite path raises)."""
    if target.requires_grad or (weight is not None and weight.requires_grad):
        return False
    return not target.dtype.is_floating_point or tuple(target.shape) == tuple(input.shape)


def _class_view(weight, ndim, cd):
    shape = [1] * ndim
    shape[cd] = -1
    return weight.reshape(shape)


def _soft_cross_entropy(logp, target, weight, reduction, label_smoothing, cd):
    op = "cross_entropy"
    if tuple(target.shape) != tuple(logp.shape):
        raise ShapeError(
            f"{op}: class-probability target must have the input's shape "
            f"{tuple(logp.shape)}, got {tuple(target.shape)}"
        )
    n_classes = logp.shape[cd]
    _check_weight(weight, n_classes, op)
    if label_smoothing > 0.0:
        target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        prod = prod * _class_view(weight, logp.ndim, cd)
    loss = -prod.sum(cd)
    if reduction == "mean":
        return loss.sum() / max(logp.numel() // n_classes, 1)
    return _reduce(loss, reduction, op)


# PyTorch's EPSILON of the BCE backward: 1e-12 as a float32 constant (it shows in float64)
_BCE_EPS = 9.999999960041972e-13


class BinaryCrossEntropy(Op):
    """The unweighted, unreduced binary cross-entropy of probabilities ``x`` and targets
    ``t``, with PyTorch's forward (each log floored at ``-100``) and backward (the
    input's gradient divides by ``max(x (1 - x), 1e-12)``; the target's is ``-logit(x)``).
    """

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        return x.binary_cross_entropy(t)

    @staticmethod
    def backward(ctx, grad_output):
        x, t = ctx.saved_tensors
        n = ctx.needs_input_grad
        gx = grad_output * (x - t) / clamp((1.0 - x) * x, min=_BCE_EPS) if n[0] else None
        gt = -grad_output * logit(x) if n[1] else None
        return gx, gt


def binary_cross_entropy(input, target, weight=None, reduction: str = "mean"):
    """Binary cross-entropy of probabilities: ``-w (t log x + (1 - t) log(1 - x))``.

    Each log is clamped at ``-100`` (as PyTorch), so ``x = 0`` or ``1`` gives a finite
    loss. Prefer :func:`binary_cross_entropy_with_logits` on logits: it is stable.

    Args:
        input: floating-point probabilities in ``[0, 1]``.
        target: targets in ``[0, 1]`` of ``input``'s shape (cast to ``input``'s dtype).
        weight: optional rescaling ``w``, broadcast to ``input``'s shape.
        reduction: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element loss).

    Returns:
        A 0-d tensor, or with ``'none'`` the loss of ``input``'s shape.

    Gradient (PyTorch's): ``w (x - t) / max(x (1 - x), 1e-12)`` for ``input``, so at
    ``x = 0`` or ``1`` exactly it is ``0`` or ``±w 1e12`` (for ``t = 1``: -1e12 at
    ``x = 0``, 0 at ``x = 1``); ``-w logit(x)`` for ``target`` (``±inf`` at 0 and 1).

    Raises:
        ShapeError: if ``target`` has another shape, or ``weight`` does not broadcast
            to it.
        RuntimeError: if ``input`` is not floating point, or a value of ``input`` or
            ``target`` lies outside ``[0, 1]`` (NaN included), as in PyTorch.

    Example:
        >>> F.binary_cross_entropy(nnkit.tensor([0.9, 0.2]), nnkit.tensor([1.0, 0.0]))
        tensor(0.1643)
    """
    op = "binary_cross_entropy"
    _check_same_shape(input, target, op, strict=True)
    check_floating(input, op)
    target = _float_target(target, input)
    with no_grad():
        for name, x in (("input", input), ("target", target)):
            if x.numel() and not ((x >= 0) & (x <= 1)).all().item():
                raise RuntimeError(f"{op}: all elements of {name} should be between 0 and 1")
    loss = BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        check_tensor(weight, op, "weight")
        if broadcast_shapes(weight.shape, input.shape) != tuple(input.shape):
            raise ShapeError(
                f"{op}: weight of shape {tuple(weight.shape)} does not broadcast to the "
                f"input shape {tuple(input.shape)}"
            )
        loss = loss * _float_target(weight, input)
    return _reduce(loss, reduction, op)


def binary_cross_entropy_with_logits(
    input, target, weight=None, reduction: str = "mean", pos_weight=None
):
    """Binary cross-entropy on logits, stable for any logit size.

    ``loss = (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)``, which equals
    ``-w [pos_weight t log s(x) + (1 - t) log(1 - s(x))]`` (``s`` the sigmoid) without
    overflow.

    Args:
        input: logits.
        target: targets of ``input``'s shape, values in ``[0, 1]``.
        weight: optional rescaling ``w``, broadcast against the loss.
        reduction: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element loss).
        pos_weight: optional weight of positive examples, broadcast along the last
            (class) dimension.

    Returns:
        A 0-d tensor, or with ``'none'`` the loss of ``input``'s shape.

    Gradient: ``w ((1 + (pos_weight - 1) t) s(x) - pos_weight t)``; with no
    ``pos_weight`` that is ``w (s(x) - t)``.

    Example:
        >>> F.binary_cross_entropy_with_logits(nnkit.tensor([100.0]), nnkit.tensor([0.0]))
        tensor(100.0)
        >>> F.binary_cross_entropy_with_logits(nnkit.tensor([0.0, 2.0]), nnkit.tensor([1.0, 1.0]))
        tensor(0.4100)
    """
    op = "binary_cross_entropy_with_logits"
    _check_same_shape(input, target, op, strict=True)
    target = _float_target(target, input)
    sp = Softplus.apply(-input)  # no threshold: exact for large |x|
    if pos_weight is not None:
        sp = sp * ((pos_weight - 1.0) * target + 1.0)
    loss = (1.0 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, op)


# ------------------------------------------------------------------ regression
def _check_same_shape(input, target, op, strict=False):
    check_tensor(input, op)
    check_tensor(target, op, "target")
    if tuple(input.shape) == tuple(target.shape):
        return
    if strict:
        raise ShapeError(
            f"{op}: target shape {tuple(target.shape)} must equal input shape {tuple(input.shape)}"
        )
    warnings.warn(
        f"{op}: using a target size {tuple(target.shape)} that is different to the "
        f"input size {tuple(input.shape)}; this will likely lead to incorrect "
        "results due to broadcasting",
        UserWarning,
        stacklevel=3,
    )


def _float_target(target, input):
    return target if target.dtype == input.dtype else target.to(input.dtype)


def _diff(input, target, op):
    _check_same_shape(input, target, op)
    return input - _float_target(target, input)


def mse_loss(input, target, reduction: str = "mean"):
    """Mean squared error: ``(x - y)**2``, reduced.

    Args:
        input: the predictions.
        target: the targets, of ``input``'s shape (another, broadcastable shape warns,
            as in PyTorch); integer targets are cast to ``input``'s dtype.
        reduction: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element loss).

    Returns:
        A 0-d tensor, or with ``'none'`` the loss of ``input``'s shape.

    Gradient: ``2 (x - y)`` (over the element count for ``'mean'``).

    Example:
        >>> F.mse_loss(nnkit.tensor([1.0, 2.0, 4.0]), nnkit.tensor([1.0, 0.0, 1.0]))
        tensor(4.3333)
    """
    d = _diff(input, target, "mse_loss")
    return _reduce(d * d, reduction, "mse_loss")


def l1_loss(input, target, reduction: str = "mean"):
    """Mean absolute error: ``|x - y|``, reduced.

    Args:
        input: the predictions.
        target: the targets, of ``input``'s shape (another, broadcastable shape warns,
            as in PyTorch); integer targets are cast to ``input``'s dtype.
        reduction: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element loss).

    Returns:
        A 0-d tensor, or with ``'none'`` the loss of ``input``'s shape.

    Gradient: ``sign(x - y)``, 0 where ``x == y`` (as PyTorch).

    Example:
        >>> F.l1_loss(nnkit.tensor([1.0, 2.0, 4.0]), nnkit.tensor([1.0, 0.0, 1.0]), reduction="sum")
        tensor(5.0)
    """
    return _reduce(abs(_diff(input, target, "l1_loss")), reduction, "l1_loss")


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0):
    """Huber loss: ``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``,
    with ``d = x - y``.

    Args:
        input: the predictions.
        target: the targets, of ``input``'s shape (another, broadcastable shape warns,
            as in PyTorch); integer targets are cast to ``input``'s dtype.
        reduction: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element loss).
        delta: the positive threshold between the quadratic and linear parts (default 1).

    Returns:
        A 0-d tensor, or with ``'none'`` the loss of ``input``'s shape.

    Gradient: ``d`` inside, ``delta * sign(d)`` outside (continuous at ``|d| = delta``).

    Raises:
        ValueError: for ``delta <= 0``.

    Example:
        >>> F.huber_loss(nnkit.tensor([0.5, 3.0]), nnkit.tensor([0.0, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = _diff(input, target, "huber_loss")
    a = abs(d)
    loss = where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    return _reduce(loss, reduction, "huber_loss")


def smooth_l1_loss(input, target, reduction: str = "mean", beta: float = 1.0):
    """Smooth L1 loss: ``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``,
    with ``d = x - y`` (Huber loss divided by ``beta``).

    Args:
        input: the predictions.
        target: the targets, of ``input``'s shape (another, broadcastable shape warns,
            as in PyTorch); integer targets are cast to ``input``'s dtype.
        reduction: ``'mean'`` (default), ``'sum'`` or ``'none'`` (the per-element loss).
        beta: the non-negative threshold (default 1); ``beta = 0`` is the L1 loss.

    Returns:
        A 0-d tensor, or with ``'none'`` the loss of ``input``'s shape.

    Gradient: ``d / beta`` inside, ``sign(d)`` outside.

    Raises:
        ValueError: for ``beta < 0``.

    Example:
        >>> F.smooth_l1_loss(nnkit.tensor([0.5, 3.0]), nnkit.tensor([0.0, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = _diff(input, target, "smooth_l1_loss")
    a = abs(d)
    if beta == 0:
        return _reduce(a, reduction, "smooth_l1_loss")
    loss = where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def kl_div(input, target, reduction: str = "mean", log_target: bool = False):
    """Kullback-Leibler divergence ``target * (log(target) - input)``, with ``input`` given
    as log-probabilities; 0 where ``target`` is 0.

    Args:
        input: log-probabilities.
        target: probabilities (or log-probabilities with ``log_target``), of ``input``'s
            shape (another shape warns).
        reduction: ``'mean'`` (default: the mean over all elements, as PyTorch, which is
            not the KL divergence), ``'batchmean'`` (the sum divided by the batch size,
            the true KL), ``'sum'`` or ``'none'``.
        log_target: ``target`` is given as log-probabilities:
            ``exp(target) * (target - input)``.

    Returns:
        A 0-d tensor, or with ``'none'`` the pointwise terms.

    Gradient: ``-target`` with respect to ``input`` (scaled by the reduction).

    Example:
        >>> p = nnkit.tensor([[0.5, 0.5]])
        >>> F.kl_div(nnkit.tensor([[0.9, 0.1]]).log(), p, reduction="batchmean")
        tensor(0.5108)
    """
    op = "kl_div"
    _check_same_shape(input, target, op)
    target = _float_target(target, input)
    if log_target:
        loss = exp(target) * (target - input)
    else:
        with no_grad():
            pos = target > 0
        safe = where(pos, target, 1.0)
        loss = where(pos, target * log(safe), 0.0) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction, op)
