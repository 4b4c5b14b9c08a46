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
from nnkit.autograd.grad_mode import is_grad_enabled
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
    def backward(ctx, grad_output):
        st, weight, reduction = ctx.st, ctx.weight, ctx.reduction
        if is_grad_enabled():  # create_graph: differentiable in x and grad_output
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
        else:
            grad = CrossEntropyGrad.apply(grad_output, st, weight, reduction)
        return grad, None, None, None, None, None, None


class CrossEntropyGrad(Op):
    """The logits' gradient of :class:`CrossEntropy` (run only without ``create_graph``,
    so it is never recorded)."""

    @staticmethod
    def forward(ctx, g, st, weight, reduction):
        return g._new(ce_backward(g, st, weight, reduction))

    @staticmethod
    def backward(ctx, grad_output):  # pragma: no cover - never recorded
        raise RuntimeError("CrossEntropyGrad is differentiated through CrossEntropy")
