"""Dense linear-algebra kernels of a Mat (``xp.linalg``: NumPy or CuPy): inverse,
determinants, solve, Cholesky, symmetric eigendecomposition, singular values.

Each takes and returns Mats (batched over leading dimensions, as ``xp.linalg``). A
failed factorisation (a singular or non-positive-definite matrix) raises
``LinAlgFailure`` (a ``RuntimeError``) naming the op, as torch does.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "LinAlgFailure",
    "inv",
    "det",
    "slogdet",
    "solve",
    "cholesky",
    "eigh",
    "svd",
    "svd_full",
    "qr",
    "pinv",
]


class LinAlgFailure(RuntimeError):
    """A factorisation that does not exist for the given matrix."""


def _call(op, fn, *arrays):
    try:
        with np.errstate(all="ignore"):
            return fn(*arrays)
    except Exception as exc:
        if type(exc).__name__ == "LinAlgError":
            msg = f"{op}: {exc} (the input is singular or not positive-definite)"
            raise LinAlgFailure(msg) from None
        raise


def inv(a):
    return a._new(_call("linalg.inv", a.xp.linalg.inv, a.array))


def det(a):
    return a._new(a.xp.asarray(_call("linalg.det", a.xp.linalg.det, a.array)))


def slogdet(a):
    sign, logabs = _call("linalg.slogdet", a.xp.linalg.slogdet, a.array)
    xp = a.xp
    return a._new(xp.asarray(sign, dtype=a.array.dtype)), a._new(xp.asarray(logabs))


def solve(a, b):
    """``a^-1 b`` for matrices ``b`` (batch dimensions broadcast)."""
    xp = a.xp
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    aa = xp.broadcast_to(a.array, shape + a.shape[-2:])
    bb = xp.broadcast_to(b.array, shape + b.shape[-2:])
    return a._new(_call("linalg.solve", xp.linalg.solve, aa, bb))


def cholesky(a):
    """The lower Cholesky factor."""
    return a._new(_call("linalg.cholesky", a.xp.linalg.cholesky, a.array))


def eigh(a, uplo="L"):
    w, v = _call("linalg.eigh", lambda m: a.xp.linalg.eigh(m, UPLO=uplo), a.array)
    return a._new(w), a._new(v)


def svd(a):
    """``U, S, Vh`` of the reduced SVD."""
    u, s, vh = _call("linalg.svd", lambda m: a.xp.linalg.svd(m, full_matrices=False), a.array)
    return a._new(u), a._new(s), a._new(vh)


def svd_full(a):
    """``U, S, Vh`` of the full SVD (square ``U`` and ``Vh``)."""
    u, s, vh = _call("linalg.svd", lambda m: a.xp.linalg.svd(m, full_matrices=True), a.array)
    return a._new(u), a._new(s), a._new(vh)


def qr(a, mode="reduced"):
    """``Q, R`` of the QR decomposition (``mode``: ``"reduced"`` or ``"complete"``)."""
    q, r = _call("linalg.qr", lambda m: a.xp.linalg.qr(m, mode=mode), a.array)
    return a._new(q), a._new(r)


def pinv(a, atol, rtol, hermitian):
    """Pseudo-inverse; singular values at or below ``max(atol, rtol * smax)`` count as 0
    (``atol`` and ``rtol`` are floats or Mats that broadcast over the batch)."""
    xp = a.xp
    arr = a.array
    at = 0.0 if atol is None else (atol.array if hasattr(atol, "array") else atol)
    rt = rtol.array if hasattr(rtol, "array") else rtol
    if hermitian:
        w, v = _call("linalg.pinv", xp.linalg.eigh, arr)
        s, u, vt = xp.abs(w), v * xp.sign(w)[..., None, :], xp.swapaxes(v, -1, -2)
    else:
        u, s, vt = _call("linalg.pinv", lambda m: xp.linalg.svd(m, full_matrices=False), arr)
    smax = s.max(axis=-1) if s.shape[-1] else xp.zeros(s.shape[:-1], dtype=s.dtype)
    cut = xp.maximum(xp.asarray(at, dtype=s.dtype), xp.asarray(rt, dtype=s.dtype) * smax)
    keep = s > cut[..., None]
    sinv = xp.where(keep, 1.0 / xp.where(keep, s, 1.0), 0.0).astype(s.dtype)
    out = xp.swapaxes(vt, -1, -2) @ (sinv[..., :, None] * xp.swapaxes(u, -1, -2))
    return a._new(out.astype(arr.dtype))
