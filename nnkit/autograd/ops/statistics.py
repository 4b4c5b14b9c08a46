"""Statistics: ``var``/``std`` (and the ``*_mean`` pairs), vector ``norm``, ``prod``,
the NaN-ignoring ``nansum``/``nanmean`` and ``quantile``/``nanquantile``, with torch's
signatures, dtype rules and gradient conventions.
"""

from __future__ import annotations

import builtins
import math

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import (
    check_floating,
    float_mat,
    is_scalar,
    reduce_dims,
    scalar_mat,
    wrap_dim,
)
from nnkit.autograd.ops.decomp import svdvals
from nnkit.autograd.ops.discrete import sign
from nnkit.autograd.ops.elementwise import abs as _abs
from nnkit.autograd.ops.indexing import Gather
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.ops.ordering import sort
from nnkit.autograd.ops.reduction import _drop, _keep_shape, mean, sum
from nnkit.autograd.ops.scan import CumProd, _cast_for_scan
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.shape import reshape
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt

__all__ = [
    "var",
    "std",
    "var_mean",
    "std_mean",
    "norm",
    "prod",
    "nansum",
    "nanmean",
    "quantile",
    "nanquantile",
]

# Functions of __all__ that are not Tensor methods (their first argument is not a tensor).
NOT_METHODS: set[str] = {"std_mean", "var_mean"}  # torch has no such Tensor methods


def _correction(op, dim, unbiased, correction):
    """torch's three spellings: ``var(dim, *, correction)``, ``var(dim, unbiased)`` and
    ``var(unbiased)`` (a bool in ``dim``'s place); None means the default, 1."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise TypeError(f"{op}: got unbiased twice (positionally as {dim} and as {unbiased})")
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{op}: pass either unbiased or correction, not both")
        correction = 1 if unbiased else 0
    return dim, 1 if correction is None else correction


def var(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """Variance over ``dim``: ``sum((x - mean(x))**2) / max(N - correction, 0)``.

    Args:
        input: a floating-point tensor.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        unbiased: the older spelling of ``correction`` (``True`` is 1, ``False`` 0); it
            may also be passed alone in ``dim``'s place, as ``var(x, False)``.
        keepdim: keep the reduced dimensions as size 1.
        correction: the number subtracted from the element count ``N`` (default 1,
            Bessel's correction, as PyTorch; 0 gives the population statistic).

    Returns:
        A tensor with the reduced dimensions removed (or of size 1). When
        ``N <= correction`` the result is NaN (or inf), as in PyTorch.

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
        >>> x.var(dim=1)
        tensor([1.6667, 0.0000])
        >>> nnkit.var(x, correction=0)
        tensor(0.6875)
    """
    dim, correction = _correction("var", dim, unbiased, correction)
    check_floating(input, "var")
    dims = reduce_dims(dim, input.ndim, "var")
    n = input.numel() if dims is None else math.prod(input.shape[d] for d in dims)
    centered = input - mean(input, dims, keepdim=True)
    return sum(centered * centered, dims, keepdim) / builtins.max(n - correction, 0)


def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """Standard deviation over ``dim``: ``sqrt(var(input, dim, correction=correction))``.

    Args:
        input: a floating-point tensor.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        unbiased: the older spelling of ``correction`` (``True`` is 1, ``False`` 0); it
            may also be passed alone in ``dim``'s place, as ``var(x, False)``.
        keepdim: keep the reduced dimensions as size 1.
        correction: the number subtracted from the element count ``N`` (default 1,
            Bessel's correction, as PyTorch; 0 gives the population statistic).

    Returns:
        A tensor with the reduced dimensions removed (or of size 1); NaN when
        ``N <= correction``.

    Gradient: ``(x - mean) / ((N - correction) * std)``; where the std is 0 (a constant
    slice) the gradient is 0, not NaN, as in PyTorch.

    Example:
        >>> nnkit.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]]).std(dim=1)
        tensor([1.2910, 0.0000])
    """
    dim, correction = _correction("std", dim, unbiased, correction)
    check_floating(input, "std")
    return StdSqrt.apply(var(input, dim, keepdim=keepdim, correction=correction))


class StdSqrt(Op):
    """``sqrt`` whose gradient is 0 where the result is 0 (torch's std: a constant slice
    gets no gradient rather than NaN)."""

    @staticmethod
    def forward(ctx, v):
        out = v.sqrt()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        (out,) = ctx.saved_tensors
        return grad_output / (where(out == 0, math.inf, out) * 2)


class Norm(Op):
    """The vector p-norm over ``dims`` (None: all), with torch's gradient conventions:
    0 where the norm is 0 (p >= 1), ties of the inf-norms share it, none for p = 0."""

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        x = float_mat(x)
        if p == 2:
            out = x.mul(x).sum(dims, keepdims=True).sqrt()
        elif p == 0:
            out = x.ne(scalar_mat(0, x, "norm")).sum(dims, keepdims=True, dtype=x.dtype)
        elif p == 1:
            out = x.abs().sum(dims, keepdims=True)
        elif p == math.inf:
            out = x.abs().amax(dims, keepdims=True)
        elif p == -math.inf:
            out = x.abs().amin(dims, keepdims=True)
        else:
            out = x.abs().pow(scalar_mat(p, x, "norm")).sum(dims, keepdims=True)
            out = out.pow(scalar_mat(1.0 / p, x, "norm"))
        if not keepdim:
            out = out.reshape(_drop(x.shape, dims))
        ctx.save_for_backward(x, out)  # the output itself: double backward sees it
        ctx.p, ctx.in_shape, ctx.dims, ctx.keepdim = p, x.shape, dims, keepdim
        return out

    @staticmethod
    def backward(ctx, grad_output):
        p = ctx.p
        if p == 0:  # piecewise constant: no gradient (None, as torch)
            return None, None, None, None
        x, out = ctx.saved_tensors
        g = grad_output
        if not ctx.keepdim:
            keep = _keep_shape(ctx.in_shape, ctx.dims)
            g, out = reshape(g, keep), reshape(out, keep)
        if p == 1:
            gx = sign(x) * g
        elif p == 2:  # x / norm, 0 where the norm is 0 (there x is 0 too)
            gx = g * x / where(out == 0, 1.0, out)
        elif math.isinf(p):
            a = _abs(x)
            with no_grad():
                mask = ((a == out) | a.isnan()).to(x.dtype)
                count = sum(mask, ctx.dims, keepdim=True)
            gx = sign(x) * mask * (g / count)
        elif p < 1:  # |x|**(p-1) is inf at 0: those entries get 0
            a = where(x == 0, 1.0, _abs(x))
            gx = sign(x) * a ** (p - 1) * g * out ** (1 - p)
        else:
            gx = sign(x) * _abs(x) ** (p - 1) * g / where(out == 0, 1.0, out) ** (p - 1)
        return gx, None, None, None


def _nuclear_norm(input, dim, keepdim, dtype):
    check_floating(input, "norm")
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        if input.ndim != 2:
            raise ValueError(f"norm: p='nuc' needs a 2-D input or a pair dim, got {input.shape}")
        dim = (0, 1)
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ValueError(f"norm: p='nuc' needs dim to be a pair of dimensions, got {dim!r}")
    d0, d1 = (wrap_dim(d, input.ndim, "norm") for d in dim)
    out = svdvals(input.movedim((d0, d1), (-2, -1))).sum(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def norm(input, p=2, dim=None, keepdim: bool = False, dtype=None):
    """The vector p-norm over ``dim``: ``sum(|x|**p) ** (1/p)``.

    Args:
        input: a floating-point tensor (an integer or bool one raises ``RuntimeError``,
            as in PyTorch, even with ``dtype``).
        p: a number, ``inf`` (``max |x|``), ``-inf`` (``min |x|``), ``0`` (the count of
            non-zero elements) or ``'fro'`` (the 2-norm of the elements); default 2.
            ``'nuc'`` (the nuclear norm: the sum of the singular values of a 2-D input,
            or of the matrices over a pair ``dim``); another string raises ``ValueError``.
        dim: an int or a tuple of ints; None (default) takes the norm of all elements.
        keepdim: keep the reduced dimensions as size 1.
        dtype: a floating dtype to cast ``input`` to first.

    Returns:
        A tensor with the reduced dimensions removed (or of size 1).

    Gradient (PyTorch's conventions): 0 where the norm is 0 (for ``p >= 1``), 0 at zero
    entries for ``p < 1``; the ``inf``-norms share it evenly between tied extremes; none
    for ``p = 0``.

    Example:
        >>> x = nnkit.tensor([[3.0, -4.0], [0.0, 1.0]])
        >>> nnkit.norm(x)
        tensor(5.0990)
        >>> x.norm(p=1, dim=1)
        tensor([7.0, 1.0])
        >>> x.norm(p=float("inf"))
        tensor(4.0)
    """
    if isinstance(p, str):
        if p == "nuc":
            return _nuclear_norm(input, dim, keepdim, dtype)
        if p != "fro":
            raise ValueError(f"norm: p must be a number, 'fro' or 'nuc', got {p!r}")
        p = 2
    check_floating(input, "norm")
    if dtype is not None:
        if not _dt.to_dtype(dtype).is_floating_point:
            raise RuntimeError(
                f"norm: dtype must be a floating point dtype, got {_dt.to_dtype(dtype)}"
            )
        input = input.to(dtype)
    dims = reduce_dims(dim, input.ndim, "norm")
    p = float(p)
    if math.isinf(p) and (
        input.numel() == 0 if dims is None else builtins.any(input.shape[d] == 0 for d in dims)
    ):
        raise RuntimeError(
            f"norm: the {p} norm of an empty slice is undefined (input shape "
            f"{tuple(input.shape)}, dim {dim})"
        )
    return Norm.apply(input, p, dims, keepdim)


class _NaNToZero(Op):
    """NaN entries as 0; the gradient is the incoming one times the not-NaN mask
    (torch's nansum backward: a NaN or inf incoming gradient stays NaN at NaN entries)."""

    @staticmethod
    def forward(ctx, x):
        nan = x.isnan()
        keep = nan.logical_not().astype(x.dtype)
        ctx.save_for_backward(keep)
        return nan.where(type(x).scalar(0.0, x.dtype), x)

    @staticmethod
    def backward(ctx, grad_output):
        (keep,) = ctx.saved_tensors
        return grad_output * keep


def nansum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """:func:`sum` treating NaN as zero.

    Args:
        input: the input tensor.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.
        dtype: the result's dtype (default: as :func:`sum`, integers in int64).

    Returns:
        A tensor with the reduced dimensions removed (or of size 1).

    Gradient: the incoming gradient at non-NaN entries, 0 at NaN entries.

    Example:
        >>> nnkit.nansum(nnkit.tensor([1.0, float("nan"), 2.0]))
        tensor(3.0)
    """
    if input.dtype.is_floating_point:
        input = _NaNToZero.apply(input)
    return sum(input, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """The mean of the non-NaN elements over ``dim``: ``nansum(x) / count(not NaN)``.

    Args:
        input: a floating-point tensor (integers raise ``RuntimeError``, as in PyTorch,
            unless ``dtype`` makes them float).
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        keepdim: keep the reduced dimensions as size 1.
        dtype: cast ``input`` to this dtype first.

    Returns:
        A tensor with the reduced dimensions removed (or of size 1); NaN where a slice
        has no non-NaN element.

    Gradient: ``1 / count`` at non-NaN entries, 0 at NaN entries.

    Example:
        >>> nan = float("nan")
        >>> nnkit.tensor([[1.0, nan, 3.0], [nan, nan, nan]]).nanmean(dim=1)
        tensor([2.0, nan])
    """
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"nanmean: expected input to have a floating point dtype, got {input.dtype}"
        )
    with no_grad():
        count = sum(input.isnan().logical_not(), dim, keepdim).to(input.dtype)
        count = where(count == 0, math.nan, count)  # all NaN: NaN, without 0/0's warning
    return nansum(input, dim, keepdim) / count


class Prod(Op):
    """The product over ``dim`` (None: all), with torch's gradient at zeros: the product
    of the others for a single zero, 0 where a slice has several."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.dim, ctx.keepdim, ctx.in_shape = dim, keepdim, x.shape
        out = x.prod(axis=dim, keepdims=keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x, out = ctx.saved_tensors
        dim, shape = ctx.dim, ctx.in_shape
        g = grad_output
        keep = tuple(1 if dim is None or k == dim else n for k, n in enumerate(shape))
        if not ctx.keepdim:
            g, out = reshape(g, keep), reshape(out, keep)
        if x.numel() == 0:
            return g.expand(shape) * 0, None, None
        if not bool((x == 0).any()):
            return g * out / x, None, None
        flat, d = (reshape(x, (-1,)), 0) if dim is None else (x, dim)
        n = flat.shape[d]
        head = (slice(None),) * d
        ones = flat[head + (slice(0, 1),)].detach() * 0 + 1
        left = CumProd.apply(cat([ones, flat[head + (slice(0, n - 1),)]], d), d, False)
        right = CumProd.apply(cat([flat[head + (slice(1, n),)], ones], d), d, True)
        return g * reshape(left * right, shape), None, None


def prod(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Product of the elements: of all of them, or over one dimension ``dim``.

    Args:
        input: the input tensor.
        dim: a single dimension to reduce; None (default) multiplies all elements.
        keepdim: with ``dim``, keep it as a dimension of size 1.
        dtype: cast ``input`` to this dtype first. By default integers and bools
            multiply in int64, as in PyTorch.

    Returns:
        A 0-d tensor, or ``input`` with ``dim`` removed (or of size 1).

    Gradient: ``prod / x`` where no factor is zero; for a slice with a single zero,
    the product of the other elements at the zero (0 elsewhere); 0 for a slice with
    several zeros, as in PyTorch.

    Example:
        >>> nnkit.prod(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor(24.0)
        >>> x = nnkit.tensor([2.0, 0.0, 3.0], requires_grad=True)
        >>> x.prod().backward()
        >>> x.grad
        tensor([0.0, 6.0, 0.0])
    """
    input = _cast_for_scan(input, dtype)
    if dim is None:
        return Prod.apply(input, None, False)
    d = wrap_dim(dim, input.ndim, "prod")
    if input.ndim == 0:
        return Prod.apply(input, None, False)
    return Prod.apply(input, d, keepdim)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}: input must be a float or double tensor, got {input.dtype}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(
            f"{op}: interpolation must be one of {', '.join(_INTERPOLATIONS)}, "
            f"got {interpolation!r}"
        )
    if input.numel() == 0:
        raise RuntimeError(f"{op}: input tensor must be non-empty")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(
                f"{op}: q must be a scalar or a 1-d tensor, got shape {tuple(q.shape)}"
            )
        if q.dtype != input.dtype:
            raise RuntimeError(f"{op}: q ({q.dtype}) must have the dtype of input ({input.dtype})")
        qs = q.detach().tolist()
        scalar_q = q.ndim == 0
    elif is_scalar(q):
        qs, scalar_q = float(q), True
    else:
        raise TypeError(f"{op}: argument 'q' must be a float or a Tensor, got {type(q).__name__}")
    if builtins.any(not 0 <= v <= 1 for v in (qs if isinstance(qs, list) else [qs])):
        raise RuntimeError(f"{op}: q values must be in the range [0, 1], got {qs}")
    if dim is None:
        x, d = reshape(input, (-1,)), 0
        out_shape = (1,) * input.ndim if keepdim else ()
    else:
        d = wrap_dim(dim, input.ndim, op)
        x = reshape(input, (1,)) if input.ndim == 0 else input
        out_shape = (
            tuple(1 if k == d else s for k, s in enumerate(input.shape))
            if keepdim
            else tuple(s for k, s in enumerate(input.shape) if k != d)
        )
    x = _last(x, d)
    srt = sort(x, -1).values  # NaN last
    n = srt.shape[-1]
    qt = q.reshape(-1) if isinstance(q, Tensor) else None
    qv = qt if qt is not None else srt.new_tensor([qs])
    with no_grad():
        nan = srt.isnan()
        valid = sum(nan.logical_not(), -1, keepdim=True).to(srt.dtype)
    shape_q = (-1,) + (1,) * srt.ndim  # q leads: (nq, *batch, 1)
    qv = reshape(qv, shape_q)
    if ignore_nan:
        ranks = (qv * (valid - 1)).clamp(min=0)
    else:
        ranks = where(nan.any(-1, keepdim=True), float(n - 1), qv * (n - 1))
    with no_grad():
        rk = ranks.detach()
        if interpolation == "lower":
            rk = rk.floor()
        elif interpolation == "higher":
            rk = rk.ceil()
        elif interpolation == "nearest":
            rk = rk.round()
        below = rk.floor().to("int64")
        above = rk.ceil().to("int64")
    batch = tuple(srt.shape[:-1])
    src = srt.unsqueeze(0).expand((qv.shape[0],) + batch + (n,))
    full = (qv.shape[0],) + batch + (1,)
    lo = Gather.apply(src, srt.ndim, below.expand(full).contiguous())
    if interpolation in ("linear", "midpoint"):
        hi = Gather.apply(src, srt.ndim, above.expand(full).contiguous())
        w = ranks - below.to(ranks.dtype) if interpolation == "linear" else 0.5
        with no_grad():
            nan_slice = lo.isnan()  # NaN (and only NaN) there: keep NaN out of w's gradient
        lo = lo + where(nan_slice, 0.0, hi - lo) * w
    res = lo.squeeze(-1)  # (nq, *batch)
    res = reshape(res, (res.shape[0],) + out_shape)
    return reshape(res, out_shape) if scalar_q else res


def _last(x, d):
    perm = [k for k in range(x.ndim) if k != d] + [d]
    return x.permute(*perm)


def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
    """The ``q``-th quantiles of ``input`` over ``dim``.

    With the values of a slice sorted, quantile ``q`` sits at rank ``q * (N - 1)``;
    between two ranks ``interpolation`` decides: ``'linear'`` (default) interpolates,
    ``'lower'``/``'higher'`` take the neighbour below/above, ``'midpoint'`` their mean
    and ``'nearest'`` the closer one (ties to even, as in PyTorch).

    Args:
        input: a non-empty float32 or float64 tensor.
        q: a float in ``[0, 1]``, or a 0-d or 1-d tensor of them with ``input``'s dtype.
        dim: the dimension to reduce; None (default) uses all elements.
        keepdim: keep the reduced dimension(s) as size 1.
        interpolation: one of the five methods above.

    Returns:
        A tensor with ``dim`` reduced; a 1-d ``q`` adds a leading dimension of size
        ``len(q)``. A slice that holds NaN gives NaN.

    Gradient: flows to the one or two elements the result interpolates between (and
    to ``q`` when it is a tensor that requires grad).

    Example:
        >>> x = nnkit.tensor([1.0, 2.0, 3.0, 4.0])
        >>> nnkit.quantile(x, 0.5)
        tensor(2.5000)
        >>> x.quantile(nnkit.tensor([0.25, 0.75]), interpolation="lower")
        tensor([1.0, 3.0])
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
    """:func:`quantile` ignoring NaN: the quantiles of the non-NaN values of each slice.

    Args:
        input: a non-empty float32 or float64 tensor.
        q: a float in ``[0, 1]``, or a 0-d or 1-d tensor of them with ``input``'s dtype.
        dim: the dimension to reduce; None (default) uses all elements.
        keepdim: keep the reduced dimension(s) as size 1.
        interpolation: ``'linear'`` (default), ``'lower'``, ``'higher'``,
            ``'midpoint'`` or ``'nearest'``, as in :func:`quantile`.

    Returns:
        As :func:`quantile`; NaN only where a slice is all NaN.

    Example:
        >>> nnkit.nanquantile(nnkit.tensor([1.0, float("nan"), 3.0]), 0.5)
        tensor(2.0)
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` of ``input`` over ``dim`` in one call (a function only, as in PyTorch).

    Args:
        input: a floating-point tensor.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        unbiased: the older spelling of ``correction`` (``True`` is 1, ``False`` 0); it
            may also be passed alone in ``dim``'s place, as ``var(x, False)``.
        keepdim: keep the reduced dimensions as size 1.
        correction: the number subtracted from the element count ``N`` (default 1,
            Bessel's correction, as PyTorch; 0 gives the population statistic).

    Returns:
        A tuple ``(var, mean)``; see :func:`var` and :func:`mean`.

    Example:
        >>> nnkit.var_mean(nnkit.tensor([1.0, 2.0, 3.0, 4.0]))
        (tensor(1.6667), tensor(2.5000))
    """
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    check_floating(input, "var_mean")
    return (var(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` of ``input`` over ``dim`` in one call (a function only, as in PyTorch).

    Args:
        input: a floating-point tensor.
        dim: an int or a tuple of ints to reduce; None (default) reduces all elements.
        unbiased: the older spelling of ``correction`` (``True`` is 1, ``False`` 0); it
            may also be passed alone in ``dim``'s place, as ``var(x, False)``.
        keepdim: keep the reduced dimensions as size 1.
        correction: the number subtracted from the element count ``N`` (default 1,
            Bessel's correction, as PyTorch; 0 gives the population statistic).

    Returns:
        A tuple ``(std, mean)``; see :func:`std` and :func:`mean`.

    Example:
        >>> nnkit.std_mean(nnkit.tensor([1.0, 2.0, 3.0, 4.0]), correction=0)
        (tensor(1.1180), tensor(2.5000))
    """
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    check_floating(input, "std_mean")
    return (std(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim))
