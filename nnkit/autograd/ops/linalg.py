"""Matrix products: ``matmul`` with batching and broadcasting (``@``), ``mm``, ``bmm``."""

from __future__ import annotations

from nnkit.autograd.function import Op, ShapeError
from nnkit.autograd.ops.shape import sum_to

__all__ = ["matmul", "mm", "bmm", "dot", "outer"]


class MatMul(Op):
    """Product of two tensors with at least 2 dimensions each (batch dims broadcast)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.matmul(b)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        n = ctx.needs_input_grad
        ga = sum_to(matmul(grad_output, b.mT), a.shape) if n[0] else None
        gb = sum_to(matmul(a.mT, grad_output), b.shape) if n[1] else None
        return ga, gb


def matmul(input, other):
    """Matrix product with NumPy/PyTorch semantics.

    1-d operands are promoted to a row (left) or a column (right) and the added
    dimension removed from the result; leading (batch) dimensions broadcast.

    Raises:
        ShapeError: if the inner dimensions differ (the message shows both shapes).
        TypeError: if the dtypes differ.

    Example:
        >>> (nnkit.ones(2, 3) @ nnkit.ones(3, 4)).shape
        (2, 4)
    """
    if input.ndim == 0 or other.ndim == 0:
        raise ShapeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                         f"{tuple(input.shape)} and {tuple(other.shape)}")
    if input.dtype != other.dtype:
        raise TypeError(f"matmul: expected both tensors to have the same dtype, got "
                        f"{input.dtype} and {other.dtype}")
    k1 = input.shape[-1]
    k2 = other.shape[-2] if other.ndim > 1 else other.shape[0]
    if k1 != k2:
        raise ShapeError(f"matmul: shapes {tuple(input.shape)} and {tuple(other.shape)} are not "
                         f"aligned ({k1} != {k2})")
    a = input.unsqueeze(0) if input.ndim == 1 else input
    b = other.unsqueeze(-1) if other.ndim == 1 else other
    out = MatMul.apply(a, b)
    if other.ndim == 1:
        out = out.squeeze(-1)
    if input.ndim == 1:  # the row added to a 1-d input is now the last or second-last dim
        out = out.squeeze(-1 if other.ndim == 1 else -2)
    return out


def mm(input, mat2):
    """Product of two matrices (2-d only)."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(f"mm: expected 2-d tensors, got shapes {tuple(input.shape)} and "
                         f"{tuple(mat2.shape)}")
    return matmul(input, mat2)


def bmm(input, mat2):
    """Batched product of two 3-d tensors with equal batch sizes."""
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ShapeError(f"bmm: expected 3-d tensors with equal batch sizes, got shapes "
                         f"{tuple(input.shape)} and {tuple(mat2.shape)}")
    return matmul(input, mat2)


def dot(input, other):
    """Inner product of two 1-d tensors."""
    if input.ndim != 1 or other.ndim != 1:
        raise ShapeError(f"dot: expected 1-d tensors, got shapes {tuple(input.shape)} and "
                         f"{tuple(other.shape)}")
    return matmul(input, other)


def outer(input, vec2):
    """Outer product of two 1-d tensors."""
    return input.unsqueeze(1) * vec2.unsqueeze(0)
