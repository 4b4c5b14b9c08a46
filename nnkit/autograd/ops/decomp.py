"""Matrix inverses, determinants, solves and factorizations (``nnkit.linalg``'s core):
``inv``, ``det``, ``slogdet``, ``solve``, ``cholesky``, ``eigh`` and ``svdvals``.

Forward runs one ``xp.linalg`` kernel (:mod:`nnkit.backends.linalg_kernels`), batched
over leading dimensions; backward is written in Tensor ops with torch's formulas (so
double backward works):

* ``inv``: ``gA = -X^T G X^T``; ``det``: ``gA = g det(A) A^-T``; ``slogdet``:
  ``gA = g A^-T`` (the sign carries no gradient);
* ``solve`` (``A X = B``): ``gB = A^-T G``, ``gA = -gB X^T``;
* ``cholesky`` (``A = L L^T``): ``gA = L^-T Phi(L^T G) L^-1`` with ``Phi`` the lower
  triangle, its diagonal halved, symmetrised as torch;
* ``eigh`` (``A = V diag(w) V^T``): ``gA = V (diag(gw) + skew(V^T gV) / E) V^T`` with
  ``E_ij = w_j - w_i`` off the diagonal and ``skew(M) = (M - M^T) / 2`` (torch's
  formula: defined for distinct eigenvalues);
* ``svdvals``: ``gA = U diag(g) V^T``, itself differentiated through torch's full SVD
  backward (``U``, ``V`` and their skew parts over ``E_ij = s_j**2 - s_i**2``).
"""

from __future__ import annotations

from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.shape import sum_to
from nnkit.backends import linalg_kernels as _k

__all__ = ["inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "svdvals"]


def _square(a, op):
    check_tensor(a, op, "A")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{op}: expects square matrices (*, n, n), got shape {a.shape}")
    if not a.dtype.is_floating_point:
        raise TypeError(f"{op}: expects a floating tensor, got {a.dtype}")
    return a


def _given(g):
    """``g``, or None for the zeros the engine fills in for an output nothing used (so
    that the simpler formula applies, as torch's undefined gradients)."""
    if g is None or bool((g != 0).any()):
        return g
    return None


class Inv(Op):
    @staticmethod
    def forward(ctx, a):
        out = _k.inv(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        xt = x.mT
        return -(xt @ g @ xt)


def inv(A):
    """The inverse of each square matrix in ``A`` (``(*, n, n)``).

    Raises:
        RuntimeError: if a matrix is singular.

    Example:
        >>> nnkit.linalg.inv(nnkit.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    return Inv.apply(_square(A, "linalg.inv"))


class Det(Op):
    @staticmethod
    def forward(ctx, a):
        out = _k.det(a)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, d = ctx.saved_tensors
        return (g * d).unsqueeze(-1).unsqueeze(-1) * inv(a).mT


def det(A):
    """The determinant of each square matrix in ``A``: shape ``A.shape[:-2]``.

    Gradient: ``g * det(A) * A^-T`` (needs an invertible ``A``).

    Example:
        >>> nnkit.linalg.det(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor(-2.0)
    """
    return Det.apply(_square(A, "linalg.det"))


class LogAbsDet(Op):
    @staticmethod
    def forward(ctx, a):
        _sign, out = _k.slogdet(a)
        ctx.save_for_backward(a)
        return out

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g.unsqueeze(-1).unsqueeze(-1) * inv(a).mT


class _Sign(Op):
    @staticmethod
    def forward(ctx, a):
        return _k.slogdet(a)[0]

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("the sign of a determinant is not differentiable")


def slogdet(A):
    """``(sign, logabsdet)``: the sign of each determinant (-1, 0 or 1) and the log of
    its absolute value, computed without overflow.

    Gradient: ``g * A^-T`` for ``logabsdet``; ``sign`` carries none.

    Example:
        >>> nnkit.linalg.slogdet(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]))
        (tensor(-1.0), tensor(0.6931))
    """
    _square(A, "linalg.slogdet")
    with no_grad():
        sign = _Sign.apply(A)
    return sign, LogAbsDet.apply(A)


class Solve(Op):
    @staticmethod
    def forward(ctx, a, b):
        out = _k.solve(a, b)
        ctx.shapes = (a.shape, b.shape)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        sa, sb = ctx.shapes
        n = ctx.needs_input_grad
        gb = solve(a.mT, g)
        ga = sum_to(-(gb @ x.mT), sa) if n[0] else None
        return ga, (sum_to(gb, sb) if n[1] else None)


def solve(A, B, *, left=True):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``).

    Args:
        A: square matrices ``(*, n, n)``.
        B: ``(*, n, k)``, or a batch of vectors ``(*, n)`` when ``B`` is 1-D or has
            the shape of ``A`` without its last dimension (as torch); batch
            dimensions broadcast.

    Raises:
        RuntimeError: if a matrix is singular.

    Example:
        >>> nnkit.linalg.solve(nnkit.tensor([[2.0, 0.0], [0.0, 4.0]]), nnkit.tensor([1.0, 1.0]))
        tensor([0.5000, 0.2500])
    """
    _square(A, "linalg.solve")
    check_tensor(B, "linalg.solve", "B")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    if not left:
        if vector:
            raise ValueError("linalg.solve: left=False needs B to be a matrix")
        return solve(A.mT, B.mT).mT
    if vector:
        return Solve.apply(A, B.unsqueeze(-1)).squeeze(-1)
    if B.shape[-2] != A.shape[-1]:
        raise ValueError(f"linalg.solve: A {A.shape} and B {B.shape} do not match")
    return Solve.apply(A, B)


class Cholesky(Op):
    @staticmethod
    def forward(ctx, a):
        out = _k.cholesky(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (lo,) = ctx.saved_tensors
        p = (lo.mT @ g).tril()
        p = 0.5 * (p + p.tril(-1).mT)
        ga = solve(lo.mT, p)  # L^-T P
        return solve(lo.mT, ga.mT).mT  # (L^-T P) L^-1


def cholesky(A, *, upper=False):
    """The Cholesky factor of each symmetric positive-definite matrix in ``A``: lower
    ``L`` with ``A = L L^T`` (upper ``U = L^T`` with ``upper=True``). Only the lower
    triangle of ``A`` is read.

    Raises:
        RuntimeError: if a matrix is not positive-definite.

    Example:
        >>> nnkit.linalg.cholesky(nnkit.tensor([[4.0, 2.0], [2.0, 2.0]]))
        tensor([[2.0, 0.0],
                [1.0, 1.0]])
    """
    lo = Cholesky.apply(_square(A, "linalg.cholesky"))
    return lo.mT if upper else lo


class Eigh(Op):
    @staticmethod
    def forward(ctx, a, uplo):
        w, v = _k.eigh(a, uplo)
        ctx.save_for_backward(w, v)
        return w, v

    @staticmethod
    def backward(ctx, gw, gv):
        w, v = ctx.saved_tensors
        gv = _given(gv)
        if gv is None:
            inner = gw.diag_embed()
        else:
            e = w.unsqueeze(-2) - w.unsqueeze(-1)
            n = w.shape[-1]
            eye = w.new_ones((n,)).diag_embed() > 0
            vgv = v.mT @ gv
            inner = 0.5 * (vgv - vgv.mT) / e.masked_fill(eye, 1.0)
            inner = inner.masked_fill(eye, 0.0)
            if gw is not None:
                inner = inner + gw.diag_embed()
        return v @ inner @ v.mT, None


def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of each symmetric
    matrix in ``A``, reading its lower (``UPLO="L"``) or upper triangle.

    Returns:
        ``(eigenvalues (*, n), eigenvectors (*, n, n))``; each eigenvector's sign is
        arbitrary (as in torch).

    Gradient: torch's formula, defined for distinct eigenvalues (a gradient through the
    eigenvectors of repeated eigenvalues is not).

    Example:
        >>> nnkit.linalg.eigh(nnkit.tensor([[2.0, 0.0], [0.0, 1.0]]))[0]
        tensor([1.0, 2.0])
    """
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return Eigh.apply(_square(A, "linalg.eigh"), UPLO)


def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of each symmetric matrix in ``A`` (see :func:`eigh`).

    Example:
        >>> nnkit.linalg.eigvalsh(nnkit.tensor([[2.0, 1.0], [1.0, 2.0]]))
        tensor([1.0, 3.0])
    """
    return eigh(A, UPLO)[0]


class Svd(Op):
    @staticmethod
    def forward(ctx, a):
        u, s, vh = _k.svd(a)
        ctx.save_for_backward(u, s, vh)
        return u, s, vh

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        u, s, vh = ctx.saved_tensors
        gu, gvh = _given(gu), _given(gvh)
        if gu is None and gvh is None:
            return (u * gs.unsqueeze(-2)) @ vh
        m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
        gu = u.new_zeros(u.shape) if gu is None else gu
        gv = (vh.new_zeros(vh.shape) if gvh is None else gvh).mT
        uhgu = u.mT @ gu
        vhgv = vh @ gv
        uhgu, vhgv = uhgu - uhgu.mT, vhgv - vhgv.mT
        s2 = s * s
        eye = s.new_ones((k,)).diag_embed() > 0
        e = (s2.unsqueeze(-2) - s2.unsqueeze(-1)).masked_fill(eye, 1.0)
        inner = (uhgu * s.unsqueeze(-2) + s.unsqueeze(-1) * vhgv) / e
        if gs is not None:
            inner = inner + gs.diag_embed()
        if m > k:
            gus = gu / s.unsqueeze(-2)
            return (u @ inner + gus - u @ (u.mT @ gus)) @ vh
        if n > k:
            sgv = gv.mT / s.unsqueeze(-1)
            return u @ (inner @ vh + sgv - (sgv @ vh.mT) @ vh)
        return u @ inner @ vh


def svdvals(A):
    """The singular values of each matrix in ``A`` (``(*, m, n)``), descending: shape
    ``(*, min(m, n))``.

    Gradient: ``U diag(g) V^T`` (defined for distinct, non-zero singular values); its
    own derivative goes through torch's SVD backward.

    Example:
        >>> nnkit.linalg.svdvals(nnkit.tensor([[3.0, 0.0], [0.0, -4.0]]))
        tensor([4.0, 3.0])
    """
    check_tensor(A, "linalg.svdvals", "A")
    if A.ndim < 2:
        raise ValueError(f"linalg.svdvals: expects matrices (*, m, n), got shape {A.shape}")
    if not A.dtype.is_floating_point:
        raise TypeError(f"linalg.svdvals: expects a floating tensor, got {A.dtype}")
    return Svd.apply(A)[1]
