"""``nnkit.linalg``'s norms and composite routines (norms, ``cond``, ``matrix_rank``,
``cross``, ``vecdot``, ``multi_dot``, ``matrix_power``, ``vander``, the tensor and
triangular solves, the ``*_ex`` variants) and the top-level ``logdet``, ``cholesky``,
``cholesky_solve``, ``cholesky_inverse`` and ``triangular_solve``.

All are compositions of :mod:`nnkit.autograd.ops.decomp` and elementwise ops, so their
gradients are those ops' (the composites of a Cholesky factor match torch's gradients,
which treat the factor as a full matrix).
"""

from __future__ import annotations

import math

from nnkit.autograd.factories import zeros
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.arrange import broadcast_tensors
from nnkit.autograd.ops.decomp import Solve, cholesky, eigvalsh, inv, slogdet, solve, svdvals
from nnkit.autograd.ops.distance import _pnorm
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.ops.selection import where
from nnkit.backends import dtypes as _dt

__all__ = ["logdet", "cholesky_solve", "cholesky_inverse", "triangular_solve"]

# The functions of nnkit.linalg defined here (decomp's are added by nnkit.linalg).
LINALG = [
    "vector_norm",
    "matrix_norm",
    "norm",
    "cond",
    "matrix_rank",
    "cross",
    "diagonal",
    "vecdot",
    "multi_dot",
    "matrix_power",
    "vander",
    "tensorinv",
    "tensorsolve",
    "solve_triangular",
    "inv_ex",
    "solve_ex",
    "cholesky_ex",
]


_EPS = {"float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52}


def _cast(x, dtype):
    return x if dtype is None else x.to(dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of ``x`` over ``dim`` (an int, a tuple, or None for all):
    ``(sum |x|**ord) ** (1/ord)``; ``inf``/``-inf`` give the largest/smallest ``|x|``,
    0 the number of non-zeros. Gradient 0 where the norm is 0, as torch.

    Example:
        >>> nnkit.linalg.vector_norm(nnkit.tensor([3.0, -4.0]))
        tensor(5.0)
    """
    check_tensor(x, "linalg.vector_norm", "x")
    x = _cast(x, dtype)
    if not x.dtype.is_floating_point:
        raise TypeError(f"linalg.vector_norm: expects a floating tensor, got {x.dtype}")
    if isinstance(dim, list):
        dim = tuple(dim)
    if x.ndim == 0 and dim is not None:
        dim = None
    out = _pnorm(x, float(ord), dim, keepdim)
    if keepdim and dim is None and x.ndim:
        out = out.reshape((1,) * x.ndim)
    return out


def _matrix_last(a, dim, op):
    d0, d1 = (d % a.ndim for d in dim)
    if d0 == d1:
        raise ValueError(f"{op}: dim must name two different dimensions, got {dim}")
    return a.movedim((d0, d1), (-2, -1)), (d0, d1)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """A matrix norm over the two dimensions ``dim``: ``'fro'`` (Frobenius), ``'nuc'``
    (sum of singular values), ``inf``/``-inf`` (max/min row sum of ``|A|``), ``1``/``-1``
    (max/min column sum), ``2``/``-2`` (largest/smallest singular value).

    Example:
        >>> nnkit.linalg.matrix_norm(nnkit.tensor([[1.0, -2.0], [3.0, 4.0]]), ord=1)
        tensor(6.0)
    """
    check_tensor(A, "linalg.matrix_norm", "A")
    A = _cast(A, dtype)
    if A.ndim < 2:
        raise ValueError(f"linalg.matrix_norm: expects matrices, got shape {A.shape}")
    a, (d0, d1) = _matrix_last(A, dim, "linalg.matrix_norm")
    if ord == "fro":
        out = _pnorm(a, 2.0, (-2, -1))
    elif ord == "nuc":
        out = svdvals(a).sum(-1)
    elif ord in (2, -2):
        s = svdvals(a)
        out = s.amax(-1) if ord == 2 else s.amin(-1)
    elif ord in (math.inf, -math.inf, 1, -1):
        sums = a.abs().sum(-1 if abs(ord) == math.inf else -2)
        out = sums.amax(-1) if ord > 0 else sums.amin(-1)
    else:
        raise ValueError(f"linalg.matrix_norm: unsupported ord {ord!r}")
    if keepdim:
        for d in sorted((d0, d1)):
            out = out.unsqueeze(d)
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (``dim`` an int, or 1-D ``A``, or ``ord`` None with no ``dim``: the
    2-norm of all elements) or a matrix norm (``dim`` a pair, or 2-D ``A``).

    Example:
        >>> nnkit.linalg.norm(nnkit.tensor([[3.0, 0.0], [0.0, 4.0]]))
        tensor(5.0)
    """
    check_tensor(A, "linalg.norm", "A")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
        if A.ndim != 1:
            raise ValueError(f"linalg.norm: ord={ord!r} needs a 1-D or 2-D input or a dim")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cond(A, p=None):
    """The condition number of each matrix in ``A`` in the norm ``p`` (None or 2: the
    ratio of the largest to the smallest singular value; -2 its inverse; otherwise
    ``norm(A, p) * norm(inv(A), p)`` for square invertible matrices).

    Example:
        >>> nnkit.linalg.cond(nnkit.tensor([[2.0, 0.0], [0.0, 0.5]]))
        tensor(4.0)
    """
    check_tensor(A, "linalg.cond", "A")
    if p is None or p in (2, -2):
        s = svdvals(A)
        lo, hi = s.narrow(-1, s.shape[-1] - 1, 1), s.narrow(-1, 0, 1)
        return (hi / lo if p != -2 else lo / hi).squeeze(-1)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):
    """The numerical rank of each matrix: the number of singular values above
    ``max(atol, rtol * largest)`` (``rtol`` defaults to ``eps * max(m, n)`` when both
    are None). An int64 tensor, no gradient.

    Example:
        >>> nnkit.linalg.matrix_rank(nnkit.tensor([[1.0, 2.0], [2.0, 4.0]]))
        tensor(1)
    """
    check_tensor(A, "linalg.matrix_rank", "A")
    if tol is not None:
        atol, rtol = tol, 0.0
    with no_grad():
        s = eigvalsh(A).abs() if hermitian else svdvals(A)
        if s.numel() == 0:
            return zeros(*s.shape[:-1], dtype=_dt.int64, device=A.device)
        if hasattr(atol, "unsqueeze"):
            atol = atol.unsqueeze(-1)
        if hasattr(rtol, "unsqueeze"):
            rtol = rtol.unsqueeze(-1)
        if rtol is None:  # torch: eps * max(m, n), or 0 where atol > 0
            rtol = _EPS.get(A.dtype.name, _EPS["float32"]) * max(A.shape[-2:])
            if atol is not None:
                rtol = (
                    where(atol > 0, 0.0, rtol)
                    if hasattr(atol, "shape")
                    else (0.0 if atol > 0 else rtol)
                )
        tol = s.amax(-1, keepdim=True) * rtol
        if atol is not None:
            tol = tol.maximum(tol * 0 + atol)
        return (s > tol).sum(-1)


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim`` (inputs broadcast).

    Example:
        >>> nnkit.linalg.cross(nnkit.tensor([1.0, 0.0, 0.0]), nnkit.tensor([0.0, 1.0, 0.0]))
        tensor([0.0, 0.0, 1.0])
    """
    check_tensor(input, "linalg.cross")
    check_tensor(other, "linalg.cross", "other")
    a, b = broadcast_tensors(input, other)
    if a.shape[dim] != 3:
        raise ValueError(f"linalg.cross: dimension {dim} must have size 3, got {a.shape}")

    def c(t, i):
        return t.narrow(dim, i, 1)

    return cat(
        [
            c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1),
            c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
            c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0),
        ],
        dim,
    )


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """``A.diagonal(offset, dim1, dim2)``, with the last two dimensions by default.

    Example:
        >>> nnkit.linalg.diagonal(nnkit.tensor([[1, 2], [3, 4]]))
        tensor([1, 4])
    """
    return check_tensor(A, "linalg.diagonal", "A").diagonal(offset, dim1, dim2)


def vecdot(x, y, *, dim=-1):
    """The dot product of vectors along ``dim`` (inputs broadcast).

    Example:
        >>> nnkit.linalg.vecdot(nnkit.tensor([1.0, 2.0]), nnkit.tensor([3.0, 4.0]))
        tensor(11.0)
    """
    check_tensor(x, "linalg.vecdot", "x")
    check_tensor(y, "linalg.vecdot", "y")
    return (x * y).sum(dim)


def multi_dot(tensors):
    """The product of a chain of matrices; the first may be a 1-D row vector and the
    last a 1-D column vector (their dimension is dropped from the result).

    Example:
        >>> v, w = nnkit.tensor([1.0, 2.0]), nnkit.tensor([3.0, 4.0])
        >>> nnkit.linalg.multi_dot([v, nnkit.eye(2), w])
        tensor(11.0)
    """
    ts = [check_tensor(t, "linalg.multi_dot", f"tensors[{k}]") for k, t in enumerate(tensors)]
    if len(ts) < 2:
        raise ValueError("linalg.multi_dot: expects at least two tensors")
    first, last = ts[0].ndim == 1, ts[-1].ndim == 1
    ts[0] = ts[0].unsqueeze(0) if first else ts[0]
    ts[-1] = ts[-1].unsqueeze(-1) if last else ts[-1]
    if any(t.ndim != 2 for t in ts):
        raise ValueError("linalg.multi_dot: the tensors must be 2-D (the ends may be 1-D)")
    out = ts[0]
    for t in ts[1:]:
        out = out @ t
    if last:
        out = out.squeeze(-1)
    return out.squeeze(0) if first else out


def matrix_power(A, n):
    """``A`` to the integer power ``n`` (matrix products; ``n = 0`` gives the identity,
    ``n < 0`` powers of the inverse).

    Example:
        >>> nnkit.linalg.matrix_power(nnkit.tensor([[1, 1], [0, 1]]), 3)
        tensor([[1, 3],
                [0, 1]])
    """
    check_tensor(A, "linalg.matrix_power", "A")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"linalg.matrix_power: expects square matrices, got {A.shape}")
    if n == 0:
        eye = A.new_ones((A.shape[-1],)).diag_embed()
        return eye.expand(*A.shape).clone() + A * 0
    base = inv(A) if n < 0 else A
    out, n = None, abs(n)
    while n:
        if n & 1:
            out = base if out is None else out @ base
        n >>= 1
        if n:
            base = base @ base
    return out


def vander(x, *, N=None):
    """The Vandermonde matrix of the last dimension of ``x``: columns ``x**0, x**1, ...,
    x**(N-1)`` (increasing; ``N > 1``, by default ``x.shape[-1]``; a 0-d ``x`` counts as
    one point).

    Example:
        >>> nnkit.linalg.vander(nnkit.tensor([2, 3]))
        tensor([[1, 2],
                [1, 3]])
    """
    check_tensor(x, "linalg.vander", "x")
    x = x.reshape(1) if x.ndim == 0 else x
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise ValueError(f"linalg.vander: N must be greater than 1, got {n}")
    cols = x.unsqueeze(-1).expand(*x.shape, n - 1)
    return cat([x.new_ones((*x.shape, 1)), cols], -1).cumprod(-1)


def tensorinv(A, ind=2):
    """The inverse of ``A`` seen as a linear map from its last ``A.ndim - ind`` to its
    first ``ind`` dimensions: shape ``A.shape[ind:] + A.shape[:ind]``.

    Example:
        >>> nnkit.linalg.tensorinv(nnkit.eye(4).reshape(4, 2, 2), ind=1).shape
        (2, 2, 4)
    """
    check_tensor(A, "linalg.tensorinv", "A")
    rows, cols = A.shape[:ind], A.shape[ind:]
    if ind <= 0 or math.prod(rows) != math.prod(cols):
        raise ValueError(f"linalg.tensorinv: shape {A.shape} with ind={ind} is not square")
    return inv(A.reshape(math.prod(rows), -1)).reshape(*cols, *rows)


def tensorsolve(A, B, dims=None):
    """The ``X`` with ``tensordot(A, X, X.ndim) = B``; ``dims`` are moved to the end of
    ``A`` first. Shape ``A.shape[B.ndim:]``.

    Example:
        >>> nnkit.linalg.tensorsolve(nnkit.eye(4).reshape(2, 2, 4), nnkit.ones(2, 2)).shape
        (4,)
    """
    check_tensor(A, "linalg.tensorsolve", "A")
    check_tensor(B, "linalg.tensorsolve", "B")
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    xshape = A.shape[B.ndim :]
    x = solve(A.reshape(B.numel(), -1), B.reshape(-1))
    return x.reshape(*xshape)


def _triangle(A, upper, unitriangular):
    t = A.triu() if upper else A.tril()
    if unitriangular:
        eye = A.new_ones((A.shape[-1],)).diag_embed() > 0
        t = t.masked_fill(eye, 1.0)
    return t


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """The solution of ``A X = B`` (``X A = B`` with ``left=False``) reading only the
    upper or lower triangle of ``A`` (its diagonal taken as ones with
    ``unitriangular``); ``B`` is ``(*, n, k)``. The gradient of ``A`` is triangular too.

    Example:
        >>> A = nnkit.tensor([[2.0, 1.0], [9.0, 1.0]])
        >>> nnkit.linalg.solve_triangular(A, nnkit.tensor([[3.0], [1.0]]), upper=True)
        tensor([[1.0],
                [1.0]])
    """
    check_tensor(A, "linalg.solve_triangular", "A")
    check_tensor(B, "linalg.solve_triangular", "B")
    if B.ndim < 2:
        raise ValueError(f"linalg.solve_triangular: B must be a matrix, got {B.shape}")
    t = _triangle(A, upper, unitriangular)
    if left:
        return Solve.apply(t, B)
    return Solve.apply(t.mT, B.mT).mT


def _info(A):
    return zeros(*A.shape[:-2], dtype=_dt.int32, device=A.device)


def inv_ex(A, *, check_errors=False):
    """``(inv(A), info)`` with ``info`` zeros (int32, per matrix); a singular matrix
    raises instead of reporting ``info > 0``.

    Example:
        >>> nnkit.linalg.inv_ex(nnkit.eye(2))[1]
        tensor(0, dtype=nnkit.int32)
    """
    return inv(A), _info(A)


def solve_ex(A, B, *, left=True, check_errors=False):
    """``(solve(A, B, left=left), info)`` (see :func:`inv_ex`).

    Example:
        >>> nnkit.linalg.solve_ex(nnkit.eye(2), nnkit.ones(2))[0]
        tensor([1.0, 1.0])
    """
    return solve(A, B, left=left), _info(A)


def cholesky_ex(A, *, upper=False, check_errors=False):
    """``(cholesky(A, upper=upper), info)`` (see :func:`inv_ex`).

    Example:
        >>> nnkit.linalg.cholesky_ex(nnkit.eye(2))[0]
        tensor([[1.0, 0.0],
                [0.0, 1.0]])
    """
    return cholesky(A, upper=upper), _info(A)


def logdet(input):
    """The log-determinant of each square matrix: NaN where the determinant is
    negative, ``-inf`` where it is 0. Gradient ``g * A^-T``.

    Example:
        >>> nnkit.logdet(nnkit.tensor([[2.0, 0.0], [0.0, 3.0]]))
        tensor(1.7918)
    """
    sign, lad = slogdet(input)
    return where(sign < 0, math.nan, where(sign == 0, -math.inf, lad))


def _from_factor(L, upper):
    return L.mT @ L if upper else L @ L.mT


def cholesky_solve(B, L, upper=False):
    """The solution of ``A X = B`` given the Cholesky factor ``L`` of ``A``
    (``A = L L^T``, or ``U^T U`` with ``upper``); batch dimensions broadcast.

    Example:
        >>> L = nnkit.tensor([[1.0, 0.0], [0.0, 2.0]])
        >>> nnkit.cholesky_solve(nnkit.tensor([[2.0], [4.0]]), L)
        tensor([[2.0],
                [1.0]])
    """
    check_tensor(B, "cholesky_solve", "B")
    check_tensor(L, "cholesky_solve", "L")
    return Solve.apply(_from_factor(L, upper), B)


def cholesky_inverse(L, upper=False):
    """The inverse of ``A`` given its Cholesky factor ``L`` (``A = L L^T``, or
    ``U^T U`` with ``upper``).

    Example:
        >>> nnkit.cholesky_inverse(nnkit.tensor([[2.0, 0.0], [0.0, 1.0]]))
        tensor([[0.2500, 0.0000],
                [0.0000, 1.0000]])
    """
    check_tensor(L, "cholesky_inverse", "L")
    return inv(_from_factor(L, upper))


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """``(X, A.clone())`` with ``X`` solving ``op(A) X = b`` for the upper (or lower)
    triangle of ``A`` (``op`` transposes with ``transpose``), as ``torch.triangular_solve``.

    Example:
        >>> A = nnkit.tensor([[2.0, 1.0], [0.0, 1.0]])
        >>> nnkit.triangular_solve(nnkit.tensor([[3.0], [1.0]]), A)[0]
        tensor([[1.0],
                [1.0]])
    """
    check_tensor(b, "triangular_solve", "b")
    check_tensor(A, "triangular_solve", "A")
    t = _triangle(A, upper, unitriangular)
    return Solve.apply(t.mT if transpose else t, b), A.clone()
