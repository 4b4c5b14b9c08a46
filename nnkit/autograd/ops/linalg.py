"""Matrix products: ``matmul`` with batching and broadcasting (``@``), ``mm``, ``bmm``."""

from __future__ import annotations

from nnkit.autograd.function import NO_GRAPH, Op, ShapeError
from nnkit.autograd.ops._util import check_same_dtype, check_tensor
from nnkit.autograd.ops.shape import SumTo, sum_to

__all__ = ["matmul", "mm", "bmm", "dot", "outer"]


class MatMul(Op):
    """``op(a) @ op(b)`` for tensors with at least 2 dimensions (batch dims broadcast),
    where ``op`` transposes the last two dimensions when ``ta`` (``tb``) is set.

    The flags (keywords, so ``next_functions`` lists the two tensors only) let the
    backward, ``dA = G @ B^T`` and ``dB = A^T @ G``, read the transposes as strided
    views in one op each, with no transpose op in the graph.
    With ``A' = op(a)``, ``B' = op(b)`` and ``C = A' @ B'``:

    ======  ======  ==========================  ==========================
    ta      tb      grad of a                   grad of b
    ======  ======  ==========================  ==========================
    False   False   ``G @ b^T``                 ``a^T @ G``
    False   True    ``G @ b``                   ``G^T @ a``
    True    False   ``b @ G^T``                 ``a @ G``
    True    True    ``b^T @ G^T``               ``G^T @ a^T``
    ======  ======  ==========================  ==========================
    """

    @staticmethod
    def forward(ctx, a, b, ta=False, tb=False):
        ctx.save_for_backward(a, b)
        ctx.ta, ctx.tb = ta, tb
        return a.matmul(b, ta, tb)

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        n = ctx.needs_input_grad
        ta, tb = ctx.ta, ctx.tb
        g = grad_output
        ga = gb = None
        if n[0]:
            if ta:
                ga = MatMul.apply(b, g, ta=tb, tb=True)
            else:
                ga = MatMul.apply(g, b, tb=not tb)
            ga = sum_to(ga, a.shape)
        if n[1]:
            if tb:
                gb = MatMul.apply(g, a, ta=True, tb=ta)
            else:
                gb = MatMul.apply(a, g, ta=not ta)
            gb = sum_to(gb, b.shape)
        return ga, gb

    @staticmethod
    def backward_mat(ctx, g):
        a, b = ctx.saved_mats
        n = ctx.needs_input_grad
        ta, tb = ctx.ta, ctx.tb
        ga = gb = None
        if n[0]:
            ga = b.matmul(g, tb, True) if ta else g.matmul(b, False, not tb)
            if ga.shape != a.shape:
                ga = SumTo.forward(NO_GRAPH, ga, a.shape)
        if n[1]:
            gb = g.matmul(a, True, ta) if tb else a.matmul(g, not ta, False)
            if gb.shape != b.shape:
                gb = SumTo.forward(NO_GRAPH, gb, b.shape)
        return ga, gb


def matmul(input, other):
    """Matrix product with NumPy/PyTorch semantics (the ``@`` operator).

    Two 1-d operands give their dot product; a 1-d operand is otherwise promoted to a
    row (left) or a column (right) and the added dimension removed from the result;
    leading (batch) dimensions broadcast.

    Args:
        input: a tensor with at least 1 dimension.
        other: a tensor with at least 1 dimension and ``input``'s dtype.

    Returns:
        ``(*batch, n, p)`` for ``(*, n, m) @ (*, m, p)``, less any promoted dimension.

    Gradient: ``G @ other^T`` and ``input^T @ G``, summed over broadcast batch
    dimensions.

    Raises:
        ShapeError: if the inner dimensions differ (the message shows both shapes).
        RuntimeError: if the dtypes differ (as PyTorch; the message names both).

    Example:
        >>> a = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> a @ nnkit.tensor([1.0, 1.0])
        tensor([3.0, 7.0])
        >>> nnkit.matmul(nnkit.ones(5, 2, 3), nnkit.ones(3, 4)).shape
        (5, 2, 4)
    """
    ma = check_tensor(input, "matmul")._impl.data
    mb = check_tensor(other, "matmul", "other")._impl.data
    sa, sb = ma.shape, mb.shape
    na, nb = len(sa), len(sb)
    if na == 0 or nb == 0:
        raise ShapeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {sa} and {sb}"
        )
    check_same_dtype("matmul", input, other)
    k2 = sb[-2] if nb > 1 else sb[0]
    if sa[-1] != k2:
        raise ShapeError(f"matmul: shapes {sa} and {sb} are not aligned ({sa[-1]} != {k2})")
    if na > 1 and nb > 1:  # the common case
        return MatMul.apply(input, other)
    a = input.unsqueeze(0) if na == 1 else input
    b = other.unsqueeze(-1) if nb == 1 else other
    out = MatMul.apply(a, b)
    if nb == 1:
        out = out.squeeze(-1)
    if na == 1:  # the row added to a 1-d input is now the last or second-last dim
        out = out.squeeze(-1 if nb == 1 else -2)
    return out


def mm(input, mat2):
    """Product of two matrices (2-d only; see :func:`matmul` for batches and vectors).

    Args:
        input: ``(n, m)``.
        mat2: ``(m, p)`` with ``input``'s dtype.

    Returns:
        ``(n, p)``.

    Gradient: ``G @ mat2^T`` and ``input^T @ G``.

    Raises:
        ShapeError: if either is not 2-d, or the inner dimensions differ.
        RuntimeError: if the dtypes differ (as PyTorch).

    Example:
        >>> nnkit.mm(nnkit.tensor([[1.0, 2.0]]), nnkit.tensor([[3.0], [4.0]]))
        tensor([[11.0]])
    """
    if input.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(
            f"mm: expected 2-d tensors, got shapes {tuple(input.shape)} and {tuple(mat2.shape)}"
        )
    check_same_dtype("mm", input, mat2, "mat2")
    return matmul(input, mat2)


def bmm(input, mat2):
    """Batched matrix product of two 3-d tensors: ``out[b] = input[b] @ mat2[b]``.

    Args:
        input: ``(B, n, m)``.
        mat2: ``(B, m, p)``, the same batch size ``B`` (no broadcasting).

    Returns:
        ``(B, n, p)``.

    Gradient: as :func:`mm`'s, per batch.

    Raises:
        ShapeError: if either is not 3-d, the batch sizes differ, or the inner
            dimensions differ.
        RuntimeError: if the dtypes differ (as PyTorch).

    Example:
        >>> nnkit.bmm(nnkit.ones(2, 3, 4), nnkit.ones(2, 4, 5)).shape
        (2, 3, 5)
    """
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ShapeError(
            f"bmm: expected 3-d tensors with equal batch sizes, got shapes "
            f"{tuple(input.shape)} and {tuple(mat2.shape)}"
        )
    check_same_dtype("bmm", input, mat2, "mat2")
    return matmul(input, mat2)


def dot(input, other):
    """Inner product of two 1-d tensors: ``sum(input * other)``.

    Args:
        input: ``(n,)``.
        other: ``(n,)`` with ``input``'s dtype.

    Returns:
        A 0-d tensor.

    Gradient: ``G * other`` and ``G * input``.

    Raises:
        ShapeError: if either is not 1-d, or the sizes differ.
        RuntimeError: if the dtypes differ (as PyTorch).

    Example:
        >>> nnkit.dot(nnkit.tensor([1.0, 2.0, 3.0]), nnkit.tensor([4.0, 5.0, 6.0]))
        tensor(32.0)
    """
    if input.ndim != 1 or other.ndim != 1:
        raise ShapeError(
            f"dot: expected 1-d tensors, got shapes {tuple(input.shape)} and {tuple(other.shape)}"
        )
    check_same_dtype("dot", input, other)
    return matmul(input, other)


def outer(input, vec2):
    """Outer product of two 1-d tensors: ``out[i, j] = input[i] * vec2[j]``.

    Args:
        input: ``(n,)``.
        vec2: ``(m,)``.

    Returns:
        ``(n, m)``, with the promoted dtype of the two.

    Gradient: ``G @ vec2`` and ``G^T @ input``.

    Example:
        >>> nnkit.outer(nnkit.tensor([1.0, 2.0]), nnkit.tensor([1.0, 10.0, 100.0]))
        tensor([[  1.0,  10.0, 100.0],
                [  2.0,  20.0, 200.0]])
    """
    return input.unsqueeze(1) * vec2.unsqueeze(0)
