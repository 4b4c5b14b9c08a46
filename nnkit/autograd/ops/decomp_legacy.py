"""torch's older top-level factorizations, ``nnkit.svd``, ``nnkit.qr`` and
``nnkit.pinverse``, with their own signatures, written over ``nnkit.linalg``'s
(:mod:`nnkit.autograd.ops.decomp_more`)."""

from __future__ import annotations

from typing import NamedTuple

from nnkit.autograd.ops import decomp_more as _dm

__all__ = ["svd", "qr", "pinverse"]


class SVDLegacy(NamedTuple):
    U: object
    S: object
    V: object


def svd(input, some=True, compute_uv=True):
    """The SVD ``input = U diag(S) V^T`` in torch's older form (``V``, not ``Vh``).

    Args:
        input: floating matrices ``(*, m, n)``; ``k = min(m, n)``.
        some: reduced ``U (*, m, k)`` and ``V (*, n, k)`` if True (the default), else
            square ``U (*, m, m)`` and ``V (*, n, n)``.
        compute_uv: if False, ``U`` and ``V`` are zero-filled ``(*, m, m)`` and
            ``(*, n, n)`` matrices and only ``S`` is computed (as torch).

    Returns:
        A named tuple ``(U, S, V)``; gradients as :func:`nnkit.linalg.svd`.

    Example:
        >>> nnkit.svd(nnkit.tensor([[3.0, 0.0], [0.0, -4.0]])).S
        tensor([4.0, 3.0])
    """
    if not compute_uv:
        u, s, vh = _dm.svd(input, full_matrices=False)
        m, n = input.shape[-2:]
        batch = input.shape[:-2]
        return SVDLegacy(input.new_zeros(batch + (m, m)), s, input.new_zeros(batch + (n, n)))
    u, s, vh = _dm.svd(input, full_matrices=not some)
    return SVDLegacy(u, s, vh.mT)


def qr(input, some=True):
    """The QR decomposition in torch's older form: :func:`nnkit.linalg.qr` with mode
    ``"reduced"`` if ``some`` (the default) else ``"complete"``.

    Returns:
        A named tuple ``(Q, R)``.

    Example:
        >>> nnkit.qr(nnkit.tensor([[3.0, 1.0], [4.0, 2.0]])).R
        tensor([[-5.0000, -2.2000],
                [ 0.0000,  0.4000]])
    """
    return _dm.qr(input, "reduced" if some else "complete")


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse, :func:`nnkit.linalg.pinv` with ``rtol=rcond``.

    Args:
        input: floating matrices ``(*, m, n)``.
        rcond: singular values at or below ``rcond`` times the largest count as zero.

    Example:
        >>> nnkit.pinverse(nnkit.tensor([[2.0, 0.0], [0.0, 0.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.0000]])
    """
    return _dm.pinv(input, rtol=rcond)
