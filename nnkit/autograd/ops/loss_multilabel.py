"""``F.multilabel_margin_loss``: the multi-class multi-label hinge loss, a composite of
differentiable ops with torch's formula (the hinge's gradient is 0 at its kink)."""

from __future__ import annotations

from nnkit.autograd.factories import arange
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.indexing import gather
from nnkit.autograd.ops.loss import _reduce

__all__ = ["multilabel_margin_loss"]


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """The multi-label hinge loss: for each sample ``x`` (``C`` classes) with target
    classes ``y[0], y[1], ...`` (read up to the first ``-1``),
    ``sum_j sum_{i not a target} max(0, 1 - (x[y[j]] - x[i])) / C``.

    Args:
        input: floating ``(C,)`` or ``(N, C)`` scores.
        target: int64 of ``input``'s shape: class indices, ended by ``-1`` (the rest of
            the row is ignored).
        size_average, reduce: torch's deprecated arguments; refused when set.
        reduction: ``"mean"`` (default) or ``"sum"`` over the samples, or ``"none"``
            (shape ``(N,)``, or 0-d for a 1-d input).

    Returns:
        The loss tensor.

    Gradient: ``-1/C`` for ``x[y[j]]`` and ``+1/C`` for ``x[i]`` per active hinge term.

    Raises:
        RuntimeError: for a target outside ``[-1, C)``.

    Example:
        >>> x = nnkit.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> F.multilabel_margin_loss(x, nnkit.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """
    op = "multilabel_margin_loss"
    if size_average is not None or reduce is not None:
        raise NotImplementedError(f"{op}: size_average/reduce are not supported; use reduction")
    check_tensor(input, op)
    check_tensor(target, op, "target")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{op}: input must be floating, got {input.dtype}")
    if target.dtype.is_floating_point or target.dtype.name == "bool":
        raise TypeError(f"{op}: target must be an integer tensor, got {target.dtype}")
    if input.ndim > 2 or target.shape != input.shape:
        raise ValueError(
            f"{op}: expected input (C,) or (N, C) and target of the same shape, got "
            f"{tuple(input.shape)} and {tuple(target.shape)}"
        )
    x = input.reshape(1, -1) if input.ndim < 2 else input
    n, c = x.shape
    with no_grad():
        y = target.reshape(n, c).long()
        if c and bool(((y < -1) | (y >= c)).any()):
            raise RuntimeError(f"{op}: argument #2 'target' is out of range")
        valid = (y >= 0).long().cumprod(1).bool()  # before the first -1
        yc = y.clamp_min(0)
        cols = arange(c, device=input.device).reshape(1, 1, c)
        is_target = ((yc.unsqueeze(2) == cols) & valid.unsqueeze(2)).any(1)  # (n, c)
        mask = (valid.unsqueeze(2) & ~is_target.unsqueeze(1)).to(x.dtype)  # (n, j, i)
    xy = gather(x, 1, yc)  # (n, j)
    z = (1 - xy.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0) * mask
    loss = z.sum((1, 2)) / c if c else z.sum((1, 2))
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction, op)
