"""Distances, similarities and small numeric routines under torch's names: ``cdist``,
``pdist``, ``pairwise_distance``, ``cosine_similarity``, ``dist``, ``inner``, ``addr``,
``addbmm``, ``diff``, the trapezoid rules, ``cov`` and ``corrcoef``.

All are compositions of existing differentiable ops. The p-norms follow torch's
gradient convention at zero distance (a zero gradient, never NaN): the norm is taken of
a masked copy, so neither its value nor its gradient sees the ``0 ** (1/p - 1)`` pole.
"""

from __future__ import annotations

import math

from nnkit.autograd.factories import tensor as _tensor
from nnkit.autograd.ops._util import check_same_dtype, check_tensor, is_scalar, wrap_dim
from nnkit.autograd.ops.dim_index import index_select
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.shape import broadcast_shapes

__all__ = [
    "cdist",
    "pdist",
    "pairwise_distance",
    "cosine_similarity",
    "dist",
    "inner",
    "addr",
    "addbmm",
    "diff",
    "trapezoid",
    "trapz",
    "cumulative_trapezoid",
    "cov",
    "corrcoef",
]

NOT_METHODS: set[str] = {"cdist", "pdist", "pairwise_distance", "cosine_similarity"}
NOT_METHODS |= {"trapezoid", "trapz", "cumulative_trapezoid"}


def _pnorm(d, p, dim, keepdim=False):
    """The ``p``-norm of ``d`` over ``dim`` (an int or None for all), zero-safe."""
    if p == 0:
        return (d != 0).to(d.dtype).sum(dim, keepdim=keepdim).detach()
    a = d.abs()
    if math.isinf(p):
        return a.amax(dim, keepdim=keepdim) if p > 0 else a.amin(dim, keepdim=keepdim)
    if p == 1:
        return a.sum(dim, keepdim=keepdim)
    if p < 0:  # a zero element makes the norm 0, with a zero gradient (as torch)
        hit = (a == 0).any(dim, keepdim=keepdim) if dim is not None else (a == 0).any()
        s = where(a == 0, 1.0, a) ** p
        return where(hit, 0.0, s.sum(dim, keepdim=keepdim) ** (1.0 / p))
    s = (a * a if p == 2 else a**p).sum(dim, keepdim=keepdim)
    zero = s == 0
    safe = where(zero, 1.0, s)
    return where(zero, 0.0, safe.sqrt() if p == 2 else safe ** (1.0 / p))


def _float_tensor(x, op, name="input"):
    check_tensor(x, op, name)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expects a floating {name}, got {x.dtype}")
    return x


def cdist(x1, x2, p=2.0, compute_mode=None):
    """The ``p``-norm distance between each row of ``x1`` and each row of ``x2``.

    Args:
        x1: ``(*, P, M)``; x2: ``(*, R, M)`` (batch dimensions broadcast).
        p: the norm, ``p >= 0`` (0 counts differing coordinates, ``inf`` the largest).
        compute_mode: accepted for torch compatibility; nnkit always computes the
            differences directly (torch may use a matrix product for ``p = 2``).

    Returns:
        ``(*, P, R)``. Gradient: 0 at zero distance, as torch.

    Example:
        >>> nnkit.cdist(nnkit.tensor([[0.0, 0.0]]), nnkit.tensor([[3.0, 4.0], [0.0, 1.0]]))
        tensor([[5.0, 1.0]])
    """
    _float_tensor(x1, "cdist", "x1")
    _float_tensor(x2, "cdist", "x2")
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ValueError(
            f"cdist: expects x1 (*, P, M) and x2 (*, R, M), got {x1.shape} and {x2.shape}"
        )
    if p < 0:
        raise ValueError(f"cdist: p must be non-negative, got {p}")
    return _pnorm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


def pdist(input, p=2.0):
    """The ``p``-norm distances between the rows of an ``(N, M)`` input, for each pair
    ``i < j`` in row-major order: shape ``(N * (N - 1) / 2,)``. Gradient 0 at zero
    distance.

    Example:
        >>> nnkit.nn.functional.pdist(nnkit.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
        tensor([5.0000, 1.0000, 4.2426])
    """
    x = _float_tensor(input, "pdist")
    if x.ndim != 2:
        raise ValueError(f"pdist: expects a 2-D input, got shape {x.shape}")
    if p < 0:
        raise ValueError(f"pdist: p must be non-negative, got {p}")
    n = x.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return x.new_zeros((0,))
    a = index_select(x, 0, _tensor(rows, device=x.device))
    b = index_select(x, 0, _tensor(cols, device=x.device))
    return _pnorm(a - b, p, -1)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``norm(x1 - x2 + eps, p)`` over the last dimension (inputs broadcast; 1-D
    inputs give a 0-d result), as ``torch.nn.functional.pairwise_distance``.

    Example:
        >>> nnkit.nn.functional.pairwise_distance(nnkit.tensor([[3.0, 4.0]]),
        ...                                       nnkit.tensor([[0.0, 0.0]]), eps=0.0)
        tensor([5.0])
    """
    _float_tensor(x1, "pairwise_distance", "x1")
    _float_tensor(x2, "pairwise_distance", "x2")
    d = x1 - x2 + eps
    if d.ndim == 0:
        return _pnorm(d, p, None)
    return _pnorm(d, p, max(x1.ndim, x2.ndim) - 1, keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 * x2, dim) / (max(|x1|, eps) * max(|x2|, eps))`` with ``x1`` and ``x2``
    broadcast first, as ``torch.nn.functional.cosine_similarity`` (each norm clamped to
    ``eps``).

    Example:
        >>> nnkit.nn.functional.cosine_similarity(nnkit.tensor([[1.0, 0.0]]),
        ...                                       nnkit.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """
    _float_tensor(x1, "cosine_similarity", "x1")
    _float_tensor(x2, "cosine_similarity", "x2")
    shape = broadcast_shapes(x1.shape, x2.shape)
    if not shape:
        x1, x2, dim = x1.reshape(1), x2.reshape(1), 0
    else:
        x1, x2 = x1.expand(*shape), x2.expand(*shape)
        dim = wrap_dim(dim, len(shape), "cosine_similarity")
    n1 = _pnorm(x1, 2, dim, True).clamp_min(eps)
    n2 = _pnorm(x2, 2, dim, True).clamp_min(eps)
    out = ((x1 / n1) * (x2 / n2)).sum(dim)
    return out.reshape(()) if not shape else out


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast) over all elements, a 0-d tensor.

    Example:
        >>> nnkit.dist(nnkit.tensor([3.0, 4.0]), nnkit.tensor([0.0, 0.0]))
        tensor(5.0)
    """
    _float_tensor(input, "dist")
    _float_tensor(other, "dist", "other")
    return _pnorm(input - other, float(p), None)


def inner(input, other):
    """The inner product over the last dimension: shape ``input.shape[:-1] +
    other.shape[:-1]``; a 0-d operand multiplies elementwise.

    Example:
        >>> nnkit.inner(nnkit.tensor([[1.0, 2.0]]), nnkit.tensor([[3.0, 4.0], [1.0, 0.0]]))
        tensor([[11.0,  1.0]])
    """
    check_tensor(input, "inner")
    check_tensor(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    check_same_dtype("inner", input, other)
    k = input.shape[-1]
    if other.shape[-1] != k:
        raise ValueError(f"inner: last dimensions differ: {input.shape} and {other.shape}")
    out = input.reshape(-1, k) @ other.reshape(-1, k).transpose(0, 1)
    return out.reshape(*input.shape[:-1], *other.shape[:-1])


def _scaled(t, s):
    return t if s == 1 else t * s


def addr(input, vec1, vec2, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)`` (``input`` broadcast to ``(n, m)``;
    with ``beta = 0`` it is ignored, NaNs included).

    Example:
        >>> nnkit.addr(nnkit.zeros(2, 2), nnkit.tensor([1.0, 2.0]), nnkit.tensor([3.0, 4.0]))
        tensor([[3.0, 4.0],
                [6.0, 8.0]])
    """
    check_tensor(input, "addr")
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if check_tensor(v, "addr", name).ndim != 1:
            raise ValueError(f"addr: {name} must be 1-D, got shape {v.shape}")
    prod = _scaled(vec1.unsqueeze(1) * vec2.unsqueeze(0), alpha)
    if beta == 0:
        return prod
    return _scaled(input, beta) + prod


def addbmm(input, batch1, batch2, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])`` (``input`` broadcast to
    ``(n, p)``; ignored, NaNs included, when ``beta = 0``).

    Example:
        >>> nnkit.addbmm(nnkit.zeros(1, 1), nnkit.ones(3, 1, 2), nnkit.ones(3, 2, 1))
        tensor([[6.0]])
    """
    check_tensor(input, "addbmm")
    if check_tensor(batch1, "addbmm", "batch1").ndim != 3 or batch2.ndim != 3:
        raise ValueError(f"addbmm: expects 3-D batches, got {batch1.shape} and {batch2.shape}")
    prod = _scaled((batch1 @ batch2).sum(0), alpha)
    if beta == 0:
        return prod
    return _scaled(input, beta) + prod


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``out[i] = x[i+1] - x[i]``,
    repeated), after concatenating ``prepend`` / ``append`` there (``n = 0`` gives
    ``input`` unchanged, as torch).

    Example:
        >>> nnkit.diff(nnkit.tensor([1, 4, 9, 16]))
        tensor([3, 5, 7])
    """
    x = check_tensor(input, "diff")
    if x.ndim == 0:
        raise ValueError("diff: expects a tensor with at least 1 dimension")
    if x.dtype.name == "bool":
        raise TypeError("diff: bool tensors are not supported")
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    if n == 0:  # torch: the input itself, prepend/append ignored
        return x
    dim = wrap_dim(dim, x.ndim, "diff")
    parts = [t for t in (prepend, x, append) if t is not None]
    if len(parts) > 1:
        x = cat([t.expand(*x.shape[:dim], t.shape[dim], *x.shape[dim + 1 :]) for t in parts], dim)
    for _ in range(n):
        size = x.shape[dim]
        if size == 0:
            break
        x = x.narrow(dim, 1, size - 1) - x.narrow(dim, 0, size - 1)
    return x


def _trap_terms(y, x, dx, dim, op):
    check_tensor(y, op, "y")
    dim = wrap_dim(dim, y.ndim, op)
    n = y.shape[dim]
    mid = y.narrow(dim, 1, max(n - 1, 0)) + y.narrow(dim, 0, max(n - 1, 0))
    if x is None or is_scalar(x):
        step = 1.0 if x is None and dx is None else (x if dx is None else dx)
        return mid * (0.5 * step), dim
    check_tensor(x, op, "x")
    if x.ndim == 1:
        if x.shape[0] != n:
            raise ValueError(f"{op}: x has {x.shape[0]} points, y has {n} along dim {dim}")
        step = diff(x).reshape(*([1] * dim), n - 1, *([1] * (y.ndim - dim - 1)))
    else:
        step = diff(x, dim=dim - y.ndim if x.ndim < y.ndim else dim)
    return step * mid * 0.5, dim


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim``: spacing from the sample points ``x`` (1-D,
    or broadcastable to ``y``), else ``dx`` (default 1).

    Example:
        >>> nnkit.trapezoid(nnkit.tensor([1.0, 2.0, 3.0]))
        tensor(4.0)
    """
    terms, dim = _trap_terms(y, x, dx, dim, "trapezoid")
    return terms.sum(dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """:func:`trapezoid` (torch's older name).

    Example:
        >>> nnkit.trapz(nnkit.tensor([1.0, 2.0, 3.0]), dx=2.0)
        tensor(8.0)
    """
    terms, dim = _trap_terms(y, x, dx, dim, "trapz")
    return terms.sum(dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along ``dim`` (one element fewer than ``y`` there).

    Example:
        >>> nnkit.cumulative_trapezoid(nnkit.tensor([1.0, 2.0, 3.0]))
        tensor([1.5000, 4.0000])
    """
    terms, dim = _trap_terms(y, x, dx, dim, "cumulative_trapezoid")
    return terms.cumsum(dim)


def cov(input, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations
    in columns; a 1-D input is one variable, giving a 0-d result), as ``torch.cov``.

    Args:
        correction: subtracted from the (weighted) number of observations (1: Bessel).
        fweights: integer frequency weights, one per observation.
        aweights: floating observation weights, one per observation.

    Example:
        >>> nnkit.cov(nnkit.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        tensor([[ 1.0, -1.0],
                [-1.0,  1.0]])
    """
    x = check_tensor(input, "cov")
    if x.ndim > 2:
        raise ValueError(f"cov: expects a 1-D or 2-D input, got shape {x.shape}")
    x = x.reshape(1, -1) if x.ndim < 2 else x
    if not x.dtype.is_floating_point:
        x = x.float()
    w = None
    if fweights is not None:
        w = check_tensor(fweights, "cov", "fweights")
    if aweights is not None:
        check_tensor(aweights, "cov", "aweights")
        w = aweights if w is None else w * aweights
    w_sum = w.sum() if w is not None else float(x.shape[1])
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if float(norm) <= 0:
        norm = norm * 0
    xm = x - avg.unsqueeze(1)
    c = xm @ (xm * w if w is not None else xm).transpose(0, 1)
    return (c / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input``
    (``cov`` normalised by the standard deviations, clipped to ``[-1, 1]``).

    Example:
        >>> nnkit.corrcoef(nnkit.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.5]]))
        tensor([[ 1.0000, -0.9820],
                [-0.9820,  1.0000]])
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    s = c.diagonal().sqrt()
    c = c / s.reshape(-1, 1)
    c = c / s.reshape(1, -1)
    return c.clamp(-1, 1)
