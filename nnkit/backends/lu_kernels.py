"""LU factorisation with partial pivoting and the matrix exponential of a Mat (``xp``:
NumPy or CuPy), batched over leading dimensions, without SciPy.

* :func:`lu_factor`: a vectorised Doolittle elimination (one step per column over the
  whole batch), choosing LAPACK's pivot (the first entry of largest magnitude); returns
  the packed ``LU``, the 1-based ``pivots`` (int32, as LAPACK/torch) and ``info``
  (0, or the 1-based index of the first zero pivot, as ``getrf``);
* :func:`permutation`: the permutation matrix ``P`` of ``pivots`` (``A = P L U``);
* :func:`matrix_exp`: scaling and squaring with the degree-13 Padé approximant (Higham
  2005), computed in float64.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lu_factor", "permutation", "matrix_exp"]


def lu_factor(a):
    """``(LU, pivots, info)`` Mats of ``a`` (``(*, m, n)``, floating)."""
    xp = a.xp
    arr = a.array
    m, n = arr.shape[-2:]
    k = min(m, n)
    batch = arr.shape[:-2]
    nb = int(np.prod(batch, dtype=np.int64))
    w = xp.array(arr.reshape((nb, m, n)), dtype=arr.dtype, copy=True)
    piv = xp.zeros((nb, k), dtype=xp.int32)
    info = xp.zeros((nb,), dtype=xp.int32)
    rows = xp.arange(nb)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + xp.argmax(xp.abs(w[:, j:, j]), axis=1)
            piv[:, j] = p + 1
            top = w[rows, j].copy()
            w[rows, j] = w[rows, p]
            w[rows, p] = top
            d = w[:, j, j]
            zero = d == 0
            info = xp.where((info == 0) & zero, j + 1, info).astype(xp.int32)
            if j + 1 < m:
                col = xp.where(zero[:, None], w[:, j + 1 :, j], w[:, j + 1 :, j] / d[:, None])
                w[:, j + 1 :, j] = col
                if j + 1 < n:
                    w[:, j + 1 :, j + 1 :] -= col[:, :, None] * w[:, j, None, j + 1 :]
    return (
        a._new(w.reshape(arr.shape)),
        a._new(piv.reshape(batch + (k,))),
        a._new(info.reshape(batch)),
    )


def permutation(piv, m, like):
    """The ``(*, m, m)`` permutation matrix ``P`` (``like``'s dtype) of 1-based LAPACK
    ``pivots`` (``(*, k)``): row ``j`` was swapped with row ``pivots[j] - 1``."""
    xp = piv.xp
    p = piv.array.astype(xp.int64) - 1
    batch, k = p.shape[:-1], p.shape[-1]
    nb = int(np.prod(batch, dtype=np.int64))
    p = p.reshape((nb, k))
    perm = xp.broadcast_to(xp.arange(m), (nb, m)).copy()
    rows = xp.arange(nb)
    for j in range(k):
        tj = perm[:, j].copy()
        perm[:, j] = perm[rows, p[:, j]]
        perm[rows, p[:, j]] = tj
    # row i of P^T A is row perm[i] of A, so P[perm[i], i] = 1
    out = xp.zeros((nb, m, m), dtype=like.array.dtype)
    out[rows[:, None], perm, xp.arange(m)[None, :]] = 1
    return like._new(out.reshape(batch + (m, m)))


_PADE13 = (
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
)
_THETA13 = 5.371920351148152


def matrix_exp(a):
    """``exp(a)`` of each square matrix (``(*, n, n)``)."""
    xp = a.xp
    arr = a.array
    n = arr.shape[-1]
    if arr.size == 0:
        return a._new(arr.copy())
    x = arr.reshape((-1, n, n)).astype(xp.float64)
    with np.errstate(all="ignore"):
        norm1 = xp.abs(x).sum(axis=-2).max(axis=-1)
        s = xp.where(norm1 > _THETA13, xp.ceil(xp.log2(norm1 / _THETA13)), 0.0)
        s = xp.where(xp.isfinite(s), s, 0.0).astype(xp.int64)
        x = x / (2.0 ** s.astype(xp.float64))[:, None, None]
        b = _PADE13
        eye = xp.broadcast_to(xp.eye(n), x.shape)
        x2 = x @ x
        x4 = x2 @ x2
        x6 = x4 @ x2
        u = x @ (
            x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2)
            + b[7] * x6
            + b[5] * x4
            + b[3] * x2
            + b[1] * eye
        )
        v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2
        v = v + b[0] * eye
        r = xp.linalg.solve(v - u, v + u)
        for i in range(int(s.max()) if s.size else 0):
            sq = r @ r
            r = xp.where((s > i)[:, None, None], sq, r)
    return a._new(r.reshape(arr.shape).astype(arr.dtype))
