"""Cumulative scans along one dimension: ``cumsum``, ``cumprod``, ``cummax``,
``cummin`` and ``logcumsumexp``, with torch's signatures and dtype rules.

``cummax``/``cummin`` compute their indices without a graph and take the values with
``gather`` (the gradient goes to the selected index); they match torch exactly: the
last index among ties, and NaN propagating from its first occurrence.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import is_grad_enabled, no_grad
from nnkit.autograd.ops._util import float_mat
from nnkit.autograd.ops.elementwise import exp, log
from nnkit.autograd.ops.indexing import Gather
from nnkit.autograd.ops.ordering import _along, _back0, _indices
from nnkit.autograd.ops.reduction import sum
from nnkit.autograd.ops.selection import where
from nnkit.backends import dtypes as _dt

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]

# Named (values, indices) pairs like torch.return_types.*.
CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])


def _cast_for_scan(input, dtype):
    """torch's dtype rule for cumsum/cumprod: integers and bools accumulate in int64."""
    if dtype is not None:
        return input.to(dtype)
    if not input.dtype.is_floating_point and input.dtype != _dt.to_dtype("int64"):
        return input.to("int64")
    return input


class CumSum(Op):
    """The inclusive cumulative sum along ``dim``; ``reverse`` sums from the end. Each
    direction's backward is the other one."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        return x.cumulative("sum", dim, reverse)

    @staticmethod
    def backward(ctx, grad_output):
        return CumSum.apply(grad_output, ctx.dim, not ctx.reverse), None, None


def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along ``dim``: ``out[i] = input[0] + ... + input[i]``.

    Args:
        input: the input tensor (a 0-d tensor is treated as one element).
        dim: the dimension to scan along (negative counts from the end).
        dtype: cast ``input`` to this dtype first. By default integers and bools
            accumulate in int64, as in PyTorch; floats keep their dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: the reverse cumulative sum of the incoming gradient.

    Example:
        >>> nnkit.cumsum(nnkit.tensor([1.0, 2.0, 3.0]), 0)
        tensor([1.0, 3.0, 6.0])
        >>> nnkit.tensor([[1, 2], [3, 4]]).cumsum(dim=1)
        tensor([[1, 3],
                [3, 7]])
    """
    x, d, z = _along(input, dim, "cumsum")
    return _back0(CumSum.apply(_cast_for_scan(x, dtype), d, False), z)


class CumProd(Op):
    """The inclusive cumulative product along ``dim`` (``reverse``: from the end), with
    torch's gradient where the input has zeros."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        out = x.cumulative("prod", dim, reverse)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        return _cumprod_grad(x, out, grad_output, ctx.dim, ctx.reverse), None, None


def _cumprod_grad(x, out, g, d, rev):
    """d/dx_k of sum_j g_j * prod_{i<=j} x_i. Before the first zero of a slice it is
    ``reverse_cumsum(g * out) / x``; at the first zero, the products that skip it; after
    it, ``x_first`` (0) times the same gradient with ``x_first`` set to 1, so that the
    double backward is exact too (as torch's)."""
    with no_grad():
        zero = x == 0
        nzeros = CumSum.apply(zero.to("int64"), d, rev)
        before = nzeros == 0
    gx = where(before, CumSum.apply(g * out, d, not rev) / where(before, x, 1.0), 0.0)
    if not bool(zero.any()):
        return gx
    with no_grad():
        first = zero & (nzeros == 1)
        after = nzeros > 0
    y = where(first, 1.0, x)  # the first zero replaced by 1
    out_y = CumProd.apply(y, d, rev)
    at_first = sum(where(before, 0.0, g * out_y), d, keepdim=True)
    gx = gx + where(first, at_first, 0.0)
    if is_grad_enabled():  # after the first zero: x_first * d/dy (0, but not its gradient)
        x_first = sum(where(first, x, 0.0), d, keepdim=True)
        gx = gx + where(after & ~first, x_first * _cumprod_grad(y, out_y, g, d, rev), 0.0)
    return gx


def cumprod(input, dim, *, dtype=None):
    """Cumulative product along ``dim``: ``out[i] = input[0] * ... * input[i]``.

    Args:
        input: the input tensor (a 0-d tensor is treated as one element).
        dim: the dimension to scan along (negative counts from the end).
        dtype: cast ``input`` to this dtype first. By default integers and bools
            multiply in int64, as in PyTorch; floats keep their dtype.

    Returns:
        A tensor of ``input``'s shape.

    Gradient: exact where the input has zeros (products that skip the first zero of a
    slice), as PyTorch's, double backward included; no division by zero.

    Example:
        >>> nnkit.cumprod(nnkit.tensor([1.0, 2.0, 3.0, 4.0]), 0)
        tensor([ 1.0,  2.0,  6.0, 24.0])
        >>> x = nnkit.tensor([2.0, 0.0, 3.0], requires_grad=True)
        >>> x.cumprod(0).sum().backward()
        >>> x.grad
        tensor([1.0, 8.0, 0.0])
    """
    x, d, z = _along(input, dim, "cumprod")
    return _back0(CumProd.apply(_cast_for_scan(x, dtype), d, False), z)


def _cum_extreme(input, dim, is_max):
    op = "cummax" if is_max else "cummin"
    x, d, z = _along(input, dim, op)
    idx = _indices(x, "cumextreme_indices", d, is_max)
    res = CummaxResult if is_max else CumminResult
    return res(_back0(Gather.apply(x, d, idx), z), _back0(idx, z))


def cummax(input, dim):
    """Running maximum along ``dim``: ``values[i] = max(input[0], ..., input[i])``.

    Args:
        input: the input tensor (a 0-d tensor is treated as one element).
        dim: the dimension to scan along (negative counts from the end).

    Returns:
        A named tuple ``(values, indices)`` of ``input``'s shape; ``indices`` (int64) is
        the position of each running maximum, the last one among equal values, as in
        PyTorch. After a NaN the values are NaN and the index stays at that NaN.

    Gradient: flows to the element at ``indices`` only.

    Example:
        >>> values, indices = nnkit.cummax(nnkit.tensor([1.0, 3.0, 2.0, 3.0]), 0)
        >>> values
        tensor([1.0, 3.0, 3.0, 3.0])
        >>> indices
        tensor([0, 1, 1, 3])
    """
    return _cum_extreme(input, dim, True)


def cummin(input, dim):
    """Running minimum along ``dim``: ``values[i] = min(input[0], ..., input[i])``.

    Args:
        input: the input tensor (a 0-d tensor is treated as one element).
        dim: the dimension to scan along (negative counts from the end).

    Returns:
        A named tuple ``(values, indices)`` of ``input``'s shape; ``indices`` (int64) is
        the position of each running minimum, the last one among equal values, as in
        PyTorch. After a NaN the values are NaN and the index stays at that NaN.

    Gradient: flows to the element at ``indices`` only.

    Example:
        >>> nnkit.cummin(nnkit.tensor([3.0, 1.0, 2.0, 1.0]), 0)
        cummin(values=tensor([3.0, 1.0, 1.0, 1.0]), indices=tensor([0, 1, 1, 3]))
    """
    return _cum_extreme(input, dim, False)


def _lowest(dtype):
    """torch's stand-in for log(0) in logcumsumexp's backward: its dtype's lowest value,
    quartered here so that sums of two such terms (double backward) stay finite."""
    return float(np.finfo(dtype.np).min) / 4


class LogCumSumExp(Op):
    """``log(cumsum(exp(x)))`` along ``dim`` without overflow (``reverse``: from the end);
    the backward is torch's: positive and negative parts of the gradient in log space."""

    @staticmethod
    def forward(ctx, x, dim, reverse):
        x = float_mat(x)
        ctx.dim, ctx.reverse = dim, reverse
        out = x.cumulative("logaddexp", dim, reverse)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        g, d, rev = grad_output, ctx.dim, not ctx.reverse
        if g.numel() == 0:
            return g, None, None
        low = _lowest(g.dtype)
        with no_grad():
            pos, neg = g > 0, g < 0
        log_abs = log(where(pos | neg, g.abs(), 1.0))
        gp = exp(LogCumSumExp.apply(where(pos, log_abs, low) - out, d, rev) + x)
        gn = exp(LogCumSumExp.apply(where(neg, log_abs, low) - out, d, rev) + x)
        return gp - gn, None, None


def logcumsumexp(input, dim):
    """Cumulative log-sum-exp along ``dim``: ``out[i] = log(exp(x[0]) + ... + exp(x[i]))``,
    computed without overflow.

    Args:
        input: a floating-point tensor (integers raise ``RuntimeError``, as in
            PyTorch); ``-inf`` entries contribute nothing.
        dim: the dimension to scan along (negative counts from the end).

    Returns:
        A tensor of ``input``'s shape and dtype.

    Gradient: ``out_grad`` weighted by ``softmax`` of each prefix (PyTorch's formula,
    finite where the input holds ``-inf``).

    Example:
        >>> nnkit.logcumsumexp(nnkit.tensor([0.0, 0.0, 1000.0]), 0)
        tensor([   0.0000,    0.6931, 1000.0000])
    """
    if not input.dtype.is_floating_point:  # as torch: not implemented for integers
        raise RuntimeError(f"logcumsumexp: expected a floating point input, got {input.dtype}")
    x, d, z = _along(input, dim, "logcumsumexp")
    return _back0(LogCumSumExp.apply(x, d, False), z)
