"""The LU family, the matrix exponential and ``householder_product``.

``linalg.lu_factor`` runs a partial-pivoting LU kernel (:mod:`nnkit.backends.lu_kernels`);
its backward is torch's ``linalg_lu_backward`` (square, wide and tall cases) in Tensor
ops. ``lu_unpack``, ``linalg.lu`` and ``linalg.lu_solve`` are composites of it
(``tril``/``triu``, triangular solves), so their gradients follow. ``matrix_exp`` uses
scaling and squaring with a Padé approximant; its backward is the block-matrix identity
``d exp(A)[G] = exp([[A^T, G], [0, A^T]])[:n, n:]`` (so it differentiates again).
``householder_product`` multiplies the reflectors out in Tensor ops.

Top-level (torch's older names): ``nnkit.lu``, ``nnkit.lu_solve``, ``nnkit.lu_unpack``,
``nnkit.matrix_exp``, ``nnkit.cholesky``; the ``linalg`` ones are re-exported by
:mod:`nnkit.linalg`.
"""

from __future__ import annotations

from typing import NamedTuple

from nnkit.autograd.factories import eye
from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops import decomp as _decomp
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.ops.linalg_more import solve_triangular
from nnkit.backends import lu_kernels as _k

__all__ = ["lu", "lu_solve", "lu_unpack", "matrix_exp", "cholesky"]
NOT_METHODS = {"lu_unpack"}


class LUFactorResult(NamedTuple):
    LU: object
    pivots: object


class LUFactorExResult(NamedTuple):
    LU: object
    pivots: object
    info: object


class PLUResult(NamedTuple):
    P: object
    L: object
    U: object


def _matrices(a, op, square=False):
    check_tensor(a, op, "A")
    if a.ndim < 2:
        raise ValueError(f"{op}: expects matrices (*, m, n), got shape {tuple(a.shape)}")
    if not a.dtype.is_floating_point:
        raise TypeError(f"{op}: expects a floating tensor, got {a.dtype}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"{op}: A must be batches of square matrices, but they are "
            f"{a.shape[-2]} by {a.shape[-1]} matrices"
        )
    return a


class _Permutation(Op):
    """The permutation matrix of LAPACK pivots (no gradient)."""

    @staticmethod
    def forward(ctx, piv, like, m):
        return _k.permutation(piv, m, like)


def _perm(piv, like, m):
    with no_grad():
        return _Permutation.apply(piv, like, m)


def _lu_backward(gl, gu, p, l_, u):
    """torch's ``linalg_lu_backward``: the gradient of ``A = P L U`` from those of the
    unit-lower ``L`` (``(*, m, k)``) and upper ``U`` (``(*, k, n)``); None = zero."""
    m, n = l_.shape[-2], u.shape[-1]
    k = min(m, n)
    if m == n:
        ga = None if gl is None else (l_.mT @ gl).tril(-1)
        if gu is not None:
            t = (gu @ u.mT).triu()
            ga = t if ga is None else ga + t
        ga = solve_triangular(u.mT, ga, upper=False, left=False)
        ga = solve_triangular(l_.mT, ga, upper=True, unitriangular=True)
    elif m < n:  # wide
        u1, u2 = u[..., :k], u[..., k:]
        ga = None if gl is None else l_.mT @ gl
        if gu is not None:
            t = gu.triu() @ u.mT
            ga = -t if ga is None else ga - t
        ga = solve_triangular(u1.mT, ga.tril(-1), upper=False, left=False)
        if gu is not None:
            ga = cat([ga + gu[..., :k].triu(), gu[..., k:]], -1)
        ga = solve_triangular(l_.mT, ga, upper=True, unitriangular=True)
        if gu is None:
            ga = cat([ga, u2.new_zeros(ga.shape[:-1] + (n - k,))], -1)
    else:  # tall
        l1, l2 = l_[..., :k, :], l_[..., k:, :]
        ga = None if gu is None else gu @ u.mT
        if gl is not None:
            t = l_.mT @ gl.tril(-1)
            ga = -t if ga is None else ga - t
        ga = solve_triangular(l1.mT, ga.triu(), upper=True, unitriangular=True)
        if gl is not None:
            ga = cat([ga + gl[..., :k, :].tril(-1), gl[..., k:, :]], -2)
        ga = solve_triangular(u.mT, ga, upper=False, left=False)
        if gl is None:
            ga = cat([ga, l2.new_zeros((*ga.shape[:-2], m - k, ga.shape[-1]))], -2)
    return p @ ga


def _unpack_lu(lu, k):
    m, n = lu.shape[-2:]
    l_ = lu[..., :, :k].tril(-1) + eye(m, k, dtype=lu.dtype, device=lu.device)
    return l_, lu[..., :k, :].triu()


class LUFactor(Op):
    @staticmethod
    def forward(ctx, a):
        lu, piv, info = _k.lu_factor(a)
        ctx.save_for_backward(lu, piv)
        return lu, piv, info

    @staticmethod
    def backward(ctx, glu, *_):
        lu, piv = ctx.saved_tensors
        m, n = lu.shape[-2:]
        k = min(m, n)
        l_, u = _unpack_lu(lu, k)
        gl, gu = glu[..., :, :k].tril(-1), glu[..., :k, :].triu()
        return _lu_backward(gl, gu, _perm(piv, lu, m), l_, u)


def _check_info(info, op):
    bad = (info != 0).nonzero()
    if bad.shape[0]:
        where = tuple(int(i) for i in bad[0])
        i = int(info[where])  # torch names U[info, info]
        batch = f"(Batch element {where[0] if len(where) == 1 else where}): " if where else ""
        raise RuntimeError(
            f"{op}: {batch}U[{i},{i}] is zero and using it on lu_solve would result in a "
            "division by zero. If you still want to perform the factorization, consider "
            "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
        )


def _factor(A, pivot, op):
    _matrices(A, op)
    if not pivot:
        raise NotImplementedError(f"{op}: LU without pivoting (pivot=False) is not supported")
    return LUFactor.apply(A)


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """The packed LU decomposition with partial pivoting, ``A = P L U``, and LAPACK's
    ``info``, without raising for singular matrices (unless ``check_errors``).

    Args:
        A: floating matrices ``(*, m, n)``; ``k = min(m, n)``.
        pivot: must be True (LU without pivoting is refused, as torch on the CPU).
        check_errors: raise a ``RuntimeError`` when some ``info`` is non-zero.

    Returns:
        A named tuple ``(LU, pivots, info)``: ``LU`` (``(*, m, n)``) holds ``L`` below the
        diagonal (unit diagonal implied) and ``U`` on and above it; ``pivots``
        (``(*, k)``, int32) are LAPACK's 1-based row swaps; ``info`` (``(*)``, int32) is
        0, or ``i`` when ``U[i-1, i-1]`` is zero.

    Gradient: torch's ``linalg_lu_backward`` through the packed factors.

    Example:
        >>> LU, pivots, info = nnkit.linalg.lu_factor_ex(nnkit.tensor([[1.0, 2.0], [2.0, 4.0]]))
        >>> LU
        tensor([[2.0000, 4.0000],
                [0.5000, 0.0000]])
        >>> pivots.tolist(), info.item()
        ([2, 2], 2)
    """
    lu, piv, info = _factor(A, pivot, "linalg.lu_factor_ex")
    if check_errors:
        _check_info(info, "linalg.lu_factor_ex")
    return LUFactorExResult(lu, piv, info)


def lu_factor(A, *, pivot=True):
    """The packed LU decomposition with partial pivoting, ``A = P L U`` (see
    :func:`lu_factor_ex`); singular matrices raise, as torch.

    Args:
        A: floating matrices ``(*, m, n)``.
        pivot: must be True.

    Returns:
        A named tuple ``(LU, pivots)``.

    Raises:
        RuntimeError: when some ``U[i, i]`` is zero (naming the batch element).

    Gradient: torch's ``linalg_lu_backward``.

    Example:
        >>> nnkit.linalg.lu_factor(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])).LU
        tensor([[3.0000, 4.0000],
                [0.3333, 0.6667]])
    """
    lu, piv, info = _factor(A, pivot, "linalg.lu_factor")
    _check_info(info, "torch.linalg.lu_factor")
    return LUFactorResult(lu, piv)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``P, L, U`` from a packed LU decomposition (:func:`nnkit.linalg.lu_factor`).

    Args:
        LU_data: the packed factors ``(*, m, n)``; ``k = min(m, n)``.
        LU_pivots: the 1-based pivots ``(*, k)`` (integer).
        unpack_data: compute ``L`` (``(*, m, k)``, unit lower) and ``U`` (``(*, k, n)``,
            upper); otherwise both are empty tensors.
        unpack_pivots: compute the permutation matrix ``P`` (``(*, m, m)``); otherwise it
            is an empty tensor.

    Returns:
        A named tuple ``(P, L, U)`` with ``A = P @ L @ U``.

    Gradient: ``L``'s strictly lower and ``U``'s upper triangle flow back to ``LU_data``.

    Example:
        >>> LU, piv = nnkit.linalg.lu_factor(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> nnkit.lu_unpack(LU, piv).P
        tensor([[0.0, 1.0],
                [1.0, 0.0]])
    """
    _matrices(LU_data, "lu_unpack")
    check_tensor(LU_pivots, "lu_unpack", "LU_pivots")
    if LU_pivots.dtype.is_floating_point or LU_pivots.dtype.name == "bool":
        raise TypeError(f"lu_unpack: LU_pivots must be an integer tensor, got {LU_pivots.dtype}")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if LU_pivots.shape != LU_data.shape[:-2] + (k,):
        raise ValueError(
            f"lu_unpack: LU_pivots of shape {tuple(LU_pivots.shape)} do not match "
            f"LU_data of shape {tuple(LU_data.shape)}"
        )
    empty = LU_data.new_zeros((0,))
    l_, u = _unpack_lu(LU_data, k) if unpack_data else (empty, empty)
    p = _perm(LU_pivots, LU_data, m) if unpack_pivots else empty
    return PLUResult(p, l_, u)


def linalg_lu(A, *, pivot=True):
    """The LU decomposition with partial pivoting, ``A = P L U``, of each matrix.

    Args:
        A: floating matrices ``(*, m, n)``; ``k = min(m, n)``.
        pivot: must be True.

    Returns:
        A named tuple ``(P, L, U)``: ``P`` (``(*, m, m)``) a permutation, ``L``
        (``(*, m, k)``) unit lower triangular, ``U`` (``(*, k, n)``) upper triangular.
        Singular matrices do not raise.

    Gradient: torch's ``linalg_lu_backward`` (square, wide and tall cases).

    Example:
        >>> nnkit.linalg.lu(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])).U
        tensor([[3.0000, 4.0000],
                [0.0000, 0.6667]])
    """
    lu, piv, _ = _factor(A, pivot, "linalg.lu")
    return lu_unpack(lu, piv)


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """The solution ``X`` of ``A X = B`` given ``A``'s packed LU decomposition.

    Args:
        LU, pivots: :func:`nnkit.linalg.lu_factor`'s result for square ``A`` (``(*, n, n)``).
        B: the right-hand sides ``(*, n, k)`` (``(*, k, n)`` with ``left=False``); batch
            dimensions broadcast with ``LU``'s.
        left: solve ``A X = B`` (True) or ``X A = B`` (False).
        adjoint: use ``A^T`` in place of ``A``.

    Returns:
        ``X``, of ``B``'s matrix shape over the broadcast batch.

    Gradient: through the triangular solves, for ``LU`` and ``B``.

    Example:
        >>> LU, piv = nnkit.linalg.lu_factor(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> nnkit.linalg.lu_solve(LU, piv, nnkit.tensor([[5.0], [11.0]]))
        tensor([[1.0],
                [2.0]])
    """
    op = "linalg.lu_solve"
    _matrices(LU, op, square=True)
    check_tensor(B, op, "B")
    n = LU.shape[-1]
    if B.ndim < 2 or B.shape[-2 if left else -1] != n:
        raise ValueError(
            f"{op}: B of shape {tuple(B.shape)} does not match LU of shape {tuple(LU.shape)} "
            f"(left={left})"
        )
    p = _perm(pivots, LU, n)
    if left and not adjoint:  # U^-1 L^-1 P^T B
        y = solve_triangular(LU, p.mT @ B, upper=False, unitriangular=True)
        return solve_triangular(LU, y, upper=True)
    if left:  # P L^-T U^-T B
        y = solve_triangular(LU.mT, B, upper=False)
        return p @ solve_triangular(LU.mT, y, upper=True, unitriangular=True)
    if not adjoint:  # B U^-1 L^-1 P^T
        y = solve_triangular(LU, B, upper=True, left=False)
        return solve_triangular(LU, y, upper=False, left=False, unitriangular=True) @ p.mT
    y = B @ p  # B P L^-T U^-T
    y = solve_triangular(LU.mT, y, upper=True, left=False, unitriangular=True)
    return solve_triangular(LU.mT, y, upper=False, left=False)


def lu(A, pivot=True, get_infos=False):
    """torch's older ``torch.lu``: the packed LU decomposition (no error for singular
    matrices), as :func:`nnkit.linalg.lu_factor_ex`.

    Args:
        A: floating matrices ``(*, m, n)``.
        pivot: must be True.
        get_infos: also return LAPACK's ``info`` tensor.

    Returns:
        ``(LU, pivots)``, or ``(LU, pivots, infos)`` with ``get_infos``.

    Example:
        >>> nnkit.lu(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]))[1]
        tensor([2, 2], dtype=nnkit.int32)
    """
    lu_, piv, info = _factor(A, pivot, "lu")
    return (lu_, piv, info) if get_infos else (lu_, piv)


def lu_solve(b, LU_data, LU_pivots):
    """torch's older ``torch.lu_solve(b, LU_data, LU_pivots)``: the solution of
    ``A X = b`` (:func:`nnkit.linalg.lu_solve` with the arguments reordered).

    Example:
        >>> LU, piv = nnkit.linalg.lu_factor(nnkit.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> nnkit.lu_solve(nnkit.tensor([[2.0], [2.0]]), LU, piv)
        tensor([[1.0000],
                [0.5000]])
    """
    return linalg_lu_solve(LU_data, LU_pivots, b)


class MatrixExp(Op):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _k.matrix_exp(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        at = a.mT.broadcast_to(g.shape)
        block = cat([cat([at, g], -1), cat([at.new_zeros(at.shape), at], -1)], -2)
        return matrix_exp(block)[..., :n, n:]


def matrix_exp(A):
    """The matrix exponential ``exp(A) = sum_k A^k / k!`` of each square matrix.

    Args:
        A: floating matrices ``(*, n, n)``.

    Returns:
        A tensor of ``A``'s shape and dtype (computed in float64 by scaling and squaring
        with the degree-13 Padé approximant).

    Gradient: ``exp([[A^T, G], [0, A^T]])[:n, n:]`` (differentiable again).

    Example:
        >>> nnkit.linalg.matrix_exp(nnkit.tensor([[0.0, 1.0], [0.0, 0.0]]))
        tensor([[1.0, 1.0],
                [0.0, 1.0]])
    """
    _matrices(A, "linalg.matrix_exp", square=True)
    return MatrixExp.apply(A)


def cholesky(input, upper=False):
    """torch's older ``torch.cholesky``: :func:`nnkit.linalg.cholesky` with ``upper``
    positional (lower ``L`` with ``A = L L^T`` by default, upper ``U = L^T`` if True).

    Example:
        >>> nnkit.cholesky(nnkit.tensor([[4.0, 2.0], [2.0, 2.0]]))
        tensor([[2.0, 0.0],
                [1.0, 1.0]])
    """
    return _decomp.cholesky(input, upper=upper)


def householder_product(A, tau):
    """The first ``n`` columns of the product ``H_1 ... H_k`` of Householder reflectors
    ``H_i = I - tau_i v_i v_i^T`` (LAPACK's ``orgqr``), ``v_i`` being column ``i`` of
    ``A`` below the diagonal with a 1 on it.

    Args:
        A: floating matrices ``(*, m, n)`` with ``m >= n``.
        tau: the scales ``(*, k)`` with ``k <= n``.

    Returns:
        A tensor ``(*, m, n)``.

    Gradient: through the products, for ``A`` and ``tau``.

    Example:
        >>> nnkit.linalg.householder_product(nnkit.tensor([[1.0], [1.0]]), nnkit.tensor([1.0]))
        tensor([[ 0.0],
                [-1.0]])
    """
    op = "linalg.householder_product"
    _matrices(A, op)
    check_tensor(tau, op, "tau")
    m, n = A.shape[-2:]
    if m < n:
        raise ValueError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.ndim != A.ndim - 1 or tau.shape[-1] > n:
        raise ValueError(
            f"{op}: tau of shape {tuple(tau.shape)} does not match input of shape "
            f"{tuple(A.shape)} (expected (*, k) with k <= {n})"
        )
    if tau.shape[:-1] != A.shape[:-2]:
        raise ValueError(f"{op}: the batch dimensions of tau and input must be equal")
    if tau.dtype != A.dtype:
        raise TypeError(f"{op}: tau ({tau.dtype}) must have input's dtype ({A.dtype})")
    ident = eye(m, dtype=A.dtype, device=A.device)
    q = ident[:, :n].broadcast_to(A.shape)
    below = ident.new_ones((m, m)).tril(-1)
    for i in reversed(range(tau.shape[-1])):
        v = (A[..., :, i] * below[:, i] + ident[:, i]).unsqueeze(-1)  # (*, m, 1)
        q = q - (tau[..., i, None, None] * v) @ (v.mT @ q)
    return q
