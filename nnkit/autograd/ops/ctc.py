"""The connectionist temporal classification loss (``F.ctc_loss``), PyTorch's semantics.

:class:`CTC` is one Op whose forward runs the alpha recursion and whose backward the
beta recursion of :mod:`nnkit.backends.ctc_kernels`, with torch's gradient formula
(``log_probs`` are taken as given, not renormalised). Its backward is itself an Op
(:class:`CTCGrad`) that cannot be differentiated again, as in torch.
"""

from __future__ import annotations

import math

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.loss import _REDUCTIONS
from nnkit.autograd.ops.selection import where
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.backends.ctc_kernels import ctc_backward, ctc_forward, ctc_labels

__all__ = ["ctc_loss"]


class CTC(Op):
    """Per-sample CTC negative log-likelihoods ``(N,)`` of ``log_probs`` ``(T, N, C)``."""

    @staticmethod
    def forward(ctx, log_probs, labels, input_lengths, target_lengths, blank, zero_infinity):
        nll, st = ctc_forward(log_probs, labels, input_lengths, target_lengths, blank)
        ctx.st, ctx.zero_infinity = st, zero_infinity
        ctx.save_for_backward(log_probs)
        return log_probs._new(nll)

    @staticmethod
    def backward(ctx, grad_output):
        (log_probs,) = ctx.saved_tensors
        grad = CTCGrad.apply(grad_output, log_probs, ctx.st, ctx.zero_infinity)
        return grad, None, None, None, None, None


class CTCGrad(Op):
    """The gradient of :class:`CTC` wrt ``log_probs``; not differentiable (as torch's
    ``_ctc_loss_backward``)."""

    @staticmethod
    def forward(ctx, grad_output, log_probs, st, zero_infinity):
        return log_probs._new(ctc_backward(grad_output, log_probs, st, zero_infinity))

    @staticmethod
    def backward(ctx, grad_output):
        raise RuntimeError("ctc_loss: double backward is not supported (as in PyTorch)")


def _lengths(value, name, n):
    """``value`` (an integer tensor, a sequence of ints or an int) as a list of ``n``."""
    if isinstance(value, Tensor):
        if value.dtype.is_floating_point or value.dtype.np.kind == "b":
            raise TypeError(f"ctc_loss: {name} must be integral, got {value.dtype}")
        out = value.reshape(-1).tolist()
    elif isinstance(value, (list, tuple)):
        out = list(value)
    else:
        out = [value]
    for v in out:
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise TypeError(f"ctc_loss: {name} must hold ints, got {type(v).__name__}")
    if len(out) != n:
        raise ShapeError(f"ctc_loss: {name} must have {n} entries (the batch size), got {len(out)}")
    out = [int(v) for v in out]
    if any(v < 0 for v in out):
        raise ShapeError(f"ctc_loss: {name} must be at least 0, got {min(out)}")
    return out


def _check_targets(targets, tl, n):
    if targets.ndim == 1:
        if targets.shape[0] != sum(tl):
            raise ShapeError(
                f"ctc_loss: concatenated 1-d targets must have sum(target_lengths) = "
                f"{sum(tl)} entries, got {targets.shape[0]}"
            )
    elif targets.ndim == 2:
        if targets.shape[0] != n:
            raise ShapeError(
                f"ctc_loss: padded targets must have shape (N, S) with N = {n}, "
                f"got {tuple(targets.shape)}"
            )
        if max(tl, default=0) > targets.shape[1]:
            raise ShapeError(
                f"ctc_loss: target_lengths must be at most S = {targets.shape[1]} "
                f"(targets.shape[1]), got {max(tl)}"
            )
    else:
        raise ShapeError(
            f"ctc_loss: targets must be (N, S) or 1-d (concatenated), got {targets.ndim}-d"
        )


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The connectionist temporal classification loss: ``-log p(target | log_probs)``
    summed over every alignment (blanks and repeats) of the target to the input.

    Args:
        log_probs: ``(T, N, C)`` (or unbatched ``(T, C)``) float32/float64
            log-probabilities, e.g. ``log_softmax`` over ``C`` classes (blank included).
        targets: integer labels, padded ``(N, S)`` or concatenated 1-d
            (``sum(target_lengths)`` entries); no label may be ``blank``.
        input_lengths: ``(N,)`` integer tensor or sequence, each in ``[0, T]``.
        target_lengths: ``(N,)`` integer tensor or sequence (at most ``S`` if padded).
        blank: the blank class index, in ``[0, C)`` (default 0).
        reduction: ``'mean'`` (each loss divided by its target length, at least 1, then
            averaged over the batch; the default), ``'sum'`` or ``'none'`` (``(N,)``, or
            0-d when unbatched).
        zero_infinity: give 0 (and a zero gradient) for impossible alignments, whose loss
            is otherwise ``inf``.

    Returns:
        The loss, 0-d unless ``reduction='none'``; ``log_probs``' dtype.

    Gradient: torch's, ``exp(lp) - exp(log_alpha_beta + nll - lp)``, taking
    ``log_probs`` as given (not renormalised); 0 past each input length; NaN for an
    impossible alignment without ``zero_infinity``. Not twice differentiable (as torch).

    Example:
        >>> lp = nnkit.tensor([[0.5, 0.5], [0.5, 0.5]]).log()
        >>> F.ctc_loss(lp, nnkit.tensor([1]), [2], [1], reduction="sum")
        tensor(0.2877)
    """
    check_tensor(log_probs, "ctc_loss", "log_probs")
    check_tensor(targets, "ctc_loss", "targets")
    if log_probs.dtype not in (_dt.float32, _dt.float64):
        raise TypeError(f"ctc_loss: log_probs must be float32 or float64, got {log_probs.dtype}")
    if targets.dtype.is_floating_point or targets.dtype.np.kind == "b":
        raise TypeError(f"ctc_loss: targets must be an integer tensor, got {targets.dtype}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"ctc_loss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if log_probs.ndim not in (2, 3):
        raise ShapeError(
            f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {tuple(log_probs.shape)}"
        )
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    steps, n, classes = lp.shape
    if lp.numel() == 0:
        raise ShapeError(f"ctc_loss: log_probs must not be empty, got shape {tuple(lp.shape)}")
    if isinstance(blank, bool) or not hasattr(blank, "__index__") or not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank must be in [0, {classes}) (C), got {blank!r}")
    il = _lengths(input_lengths, "input_lengths", n)
    tl = _lengths(target_lengths, "target_lengths", n)
    if max(il) > steps:
        raise ShapeError(
            f"ctc_loss: input_lengths must be at most T = {steps} (log_probs.shape[0]), "
            f"got {max(il)}"
        )
    _check_targets(targets, tl, n)
    if targets.device != lp.device:
        targets = targets.to(lp.device)
    labels = ctc_labels(targets._impl.data, tl, int(blank), classes)
    nll = CTC.apply(lp, labels, il, tl, int(blank), bool(zero_infinity))
    if zero_infinity:
        nll = where(nll == math.inf, 0.0, nll)
    if reduction == "mean":
        return (nll / nll.new_tensor([max(v, 1) for v in tl])).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.reshape(())
