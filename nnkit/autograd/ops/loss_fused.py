"""The fused cross-entropy Op: one ``log_softmax`` kernel and a gather forward, one
backward kernel (``g * (softmax * S - q)``, see :mod:`nnkit.backends.loss_kernels`).

:func:`~nnkit.autograd.ops.loss.cross_entropy` uses it whenever neither ``target`` nor
``weight`` requires grad; it is equal to the composite ``log_softmax`` + ``nll_loss``
path in value (bitwise: the same operations) and in gradient up to float rounding. With
``create_graph`` the backward is written with differentiable Tensor ops
(``softmax(x) * S - q``, ``q`` and ``S`` constants), so double backward works.
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.ops.activation import softmax
from nnkit.autograd.tensor import Tensor
from nnkit.backends.loss_kernels import ce_backward, ce_forward, ce_target_dist

__all__ = ["CrossEntropy"]


class CrossEntropy(Op):
    """Cross-entropy of logits ``x`` and a class-index or class-probability ``target``
    (``weight`` a ``(C,)`` Mat or None), reduced as ``reduction`` says."""

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, smoothing, reduction, cd):
        loss, st = ce_forward(x, target, weight, ignore_index, smoothing, reduction, cd)
        ctx.st, ctx.weight, ctx.reduction = st, weight, reduction
        ctx.save_for_backward(x)
        return x._new(loss)

    @staticmethod
    def backward(ctx, grad_output):  # recorded (create_graph): differentiable Tensor ops
        st, weight, reduction = ctx.st, ctx.weight, ctx.reduction
        (x,) = ctx.saved_tensors
        q, s = ce_target_dist(st, weight)
        mat = x._impl.data
        g = grad_output
        if reduction == "mean":
            g = g / Tensor._from_mat(mat._new(st.xp.asarray(st.den)))
        elif reduction == "none":
            g = g.unsqueeze(st.cd)
        p = softmax(x, st.cd)
        grad = (p * Tensor._from_mat(mat._new(s)) - Tensor._from_mat(mat._new(q))) * g
        return grad, None, None, None, None, None, None

    @staticmethod
    def backward_mat(ctx, g):  # not recorded: the one backward kernel
        grad = g._new(ce_backward(g, ctx.st, ctx.weight, ctx.reduction))
        return grad, None, None, None, None, None, None
