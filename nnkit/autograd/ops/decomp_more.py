"""More factorizations of ``nnkit.linalg``: ``qr``, ``svd``, ``pinv`` and ``lstsq``.

Forward runs an ``xp.linalg`` kernel (:mod:`nnkit.backends.linalg_kernels`), batched
over leading dimensions; backward follows torch's formulas, in Tensor ops:

* ``qr`` (``A = Q R``, ``m >= n``): ``gA = [gQ + Q syminv(triu(gR R^T - Q^T gQ))] R^-T``
  with ``syminv(X) = X + X^T - diag(X)``; a wide ``A = [X | Y]`` is ``X = Q R1``
  (square) and ``R2 = Q^T Y``, differentiated through those two steps;
* ``svd``: the reduced SVD's backward (shared with ``svdvals``); with
  ``full_matrices=True`` the extra columns of ``U`` / rows of ``Vh`` carry no gradient
  (torch narrows them away);
* ``pinv`` (``P = A^+``, constant rank): ``gA = -P^T G P^T + (I - A P) G^T P P^T +
  P^T P G^T (I - P A)``;
* ``lstsq``: the solution is ``pinv(A) B``, differentiated as such.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.decomp import Svd, _given, solve
from nnkit.autograd.ops.joining import cat
from nnkit.backends import linalg_kernels as _k

__all__ = ["qr", "svd", "pinv", "lstsq"]


class QRResult(NamedTuple):
    Q: object
    R: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class LstsqResult(NamedTuple):
    solution: object
    residuals: object
    rank: object
    singular_values: object


def _matrices(a, op):
    check_tensor(a, op, "A")
    if a.ndim < 2:
        raise ValueError(f"{op}: expects matrices (*, m, n), got shape {a.shape}")
    if not a.dtype.is_floating_point:
        raise TypeError(f"{op}: expects a floating tensor, got {a.dtype}")
    return a


class Qr(Op):
    @staticmethod
    def forward(ctx, a, mode):
        q, r = _k.qr(a, mode)
        ctx.tall_complete = mode == "complete" and a.shape[-2] > a.shape[-1]
        ctx.save_for_backward(q, r)
        return q, r

    @staticmethod
    def backward(ctx, gq, gr):
        if ctx.tall_complete:
            raise RuntimeError(
                "linalg.qr: the QR decomposition is not differentiable when "
                "mode='complete' and nrows > ncols"
            )
        q, r = ctx.saved_tensors
        gq, gr = _given(gq), _given(gr)
        n = r.shape[-1]
        m = r.new_zeros(r.shape[:-2] + (n, n)) if gr is None else gr @ r.mT
        if gq is not None:
            m = m - q.mT @ gq
        t = m.triu()
        ga = q @ (t + t.mT - t.diagonal(0, -2, -1).diag_embed())
        if gq is not None:
            ga = ga + gq
        return solve(r, ga.mT).mT, None  # ga R^-T


def qr(A, mode="reduced"):
    """The QR decomposition ``A = Q R`` of each matrix in ``A`` (``(*, m, n)``): ``Q``
    with orthonormal columns, ``R`` upper triangular.

    Args:
        A: floating matrices ``(*, m, n)``.
        mode: ``"reduced"`` (``Q (*, m, k)``, ``R (*, k, n)``, ``k = min(m, n)``),
            ``"complete"`` (``Q (*, m, m)``, ``R (*, m, n)``) or ``"r"`` (``R`` only;
            ``Q`` is an empty tensor).

    Returns:
        A named tuple ``(Q, R)``; signs of the columns of ``Q`` / rows of ``R`` follow
        LAPACK, as torch on CPU.

    Gradient: torch's formula; not defined for ``mode="complete"`` with ``m > n``.

    Example:
        >>> nnkit.linalg.qr(nnkit.tensor([[3.0, 1.0], [4.0, 2.0]])).R
        tensor([[-5.0000, -2.2000],
                [ 0.0000,  0.4000]])
    """
    _matrices(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    m, n = A.shape[-2:]
    kmode = "complete" if mode == "complete" else "reduced"
    if m <= n:
        q, r1 = Qr.apply(A[..., :m] if m < n else A, kmode)
        r = cat([r1, q.mT @ A[..., m:]], -1) if m < n else r1
    else:
        q, r = Qr.apply(A, kmode)
    if mode == "r":
        q = A.new_zeros((0,))
    return QRResult(q, r)


def svd(A, full_matrices=True):
    """The singular value decomposition ``A = U diag(S) Vh`` of each matrix in ``A``.

    Args:
        A: floating matrices ``(*, m, n)``; ``k = min(m, n)``.
        full_matrices: square ``U (*, m, m)`` and ``Vh (*, n, n)`` if True (the default,
            as torch), else ``U (*, m, k)`` and ``Vh (*, k, n)``.

    Returns:
        A named tuple ``(U, S, Vh)``, ``S (*, k)`` descending; singular vectors are
        unique only up to sign (as in torch).

    Gradient: torch's formula, defined for distinct non-zero singular values and for
    losses that do not depend on the sign of the singular vectors; with
    ``full_matrices=True`` the extra columns of ``U`` and rows of ``Vh`` get none.

    Example:
        >>> nnkit.linalg.svd(nnkit.tensor([[3.0, 0.0], [0.0, -4.0]])).S
        tensor([4.0, 3.0])
    """
    _matrices(A, "linalg.svd")
    u, s, vh = Svd.apply(A)
    m, n = A.shape[-2:]
    if full_matrices and m != n:
        with no_grad():
            uf, _, vhf = _SvdFull.apply(A)
        if m > n:
            u = cat([u, uf[..., n:]], -1)
        else:
            vh = cat([vh, vhf[..., m:, :]], -2)
    return SVDResult(u, s, vh)


class _SvdFull(Op):
    @staticmethod
    def forward(ctx, a):
        return _k.svd_full(a)

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        raise RuntimeError("linalg.svd: internal full SVD is not differentiable")


class Pinv(Op):
    @staticmethod
    def forward(ctx, a, atol, rtol, hermitian):
        out = _k.pinv(a, atol, rtol, hermitian)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, p = ctx.saved_tensors
        pt = p.mT
        ga = -(pt @ g @ pt)
        ga = ga + (g.mT - a @ (p @ g.mT)) @ (p @ pt)
        ga = ga + (pt @ p) @ (g.mT - (g.mT @ p) @ a)
        return ga, None, None, None


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse of each matrix in ``A`` (``(*, m, n)`` gives
    ``(*, n, m)``), computed from its SVD (its eigendecomposition if ``hermitian``).

    Args:
        A: floating matrices ``(*, m, n)``.
        atol: absolute tolerance (float or tensor broadcasting over the batch);
            default 0.
        rtol: relative tolerance, times the largest singular value; default
            ``eps * max(m, n)`` when ``atol`` is None too, else 0. Singular values at
            or below ``max(atol, rtol * smax)`` are treated as zero.
        hermitian: whether ``A`` is symmetric (only its lower triangle is read).

    Gradient: torch's formula, valid where the rank does not change.

    Example:
        >>> nnkit.linalg.pinv(nnkit.tensor([[2.0, 0.0], [0.0, 0.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.0000]])
    """
    _matrices(A, "linalg.pinv")
    if rtol is None:
        eps = float(np.finfo(A.dtype.np).eps) if atol is None else 0.0
        rtol = eps * max(A.shape[-2:])
    return Pinv.apply(A, atol, rtol, bool(hermitian))


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution ``X`` minimising ``||A X - B||`` (the minimum-norm one
    when ``A`` is rank-deficient), with torch's CPU outputs for each LAPACK ``driver``.

    Args:
        A: floating matrices ``(*, m, n)``.
        B: right-hand sides ``(*, m, k)``; batch dimensions broadcast with ``A``'s.
        rcond: singular values at or below ``rcond * smax`` count as zero; default
            ``eps * max(m, n)``.
        driver: ``"gelsy"`` (default), ``"gels"`` (assumes full rank), ``"gelsd"`` or
            ``"gelss"``; it only selects which extra outputs are filled, as in torch.

    Returns:
        A named tuple ``(solution, residuals, rank, singular_values)``: ``solution``
        ``(*, n, k)``; ``residuals`` the squared residual norms ``(*, k)`` when
        ``m > n``, every matrix has full rank and the driver is not ``gelsy``, else
        empty; ``rank`` (int64, ``(*)``; empty for ``gels``); ``singular_values``
        ``(*, min(m, n))`` for ``gelsd``/``gelss``, else empty.

    Gradient: through ``solution = pinv(A) B`` (constant rank) and ``residuals =
    ||A X - B||**2``; ``rank`` and ``singular_values`` have none, as in torch.

    Example:
        >>> A = nnkit.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> nnkit.linalg.lstsq(A, nnkit.tensor([[1.0], [2.0], [3.0]])).solution
        tensor([[1.0],
                [2.0]])
    """
    _matrices(A, "linalg.lstsq")
    check_tensor(B, "linalg.lstsq", "B")
    if B.ndim < 2 or B.shape[-2] != A.shape[-2]:
        raise ValueError(f"linalg.lstsq: A {A.shape} and B {B.shape} do not match")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise ValueError(f"linalg.lstsq: driver must be one of {_DRIVERS}, got {driver!r}")
    m, n = A.shape[-2:]
    if rcond is None or rcond < 0:
        rcond = float(np.finfo(A.dtype.np).eps) * max(m, n)
    solution = pinv(A, atol=0.0, rtol=rcond) @ B
    with no_grad():
        s = Svd.apply(A)[1]
        rank = (s > rcond * s[..., :1]).sum(-1)
        empty = A.new_zeros((0,))
        sv = s if driver in ("gelsd", "gelss") else empty
        full = m > n and driver != "gelsy" and bool((rank == n).all())
        if driver == "gels":
            rank = rank.new_zeros((0,))
    residuals = ((A @ solution - B) ** 2).sum(-2) if full else empty
    return LstsqResult(solution, residuals, rank, sv)
