"""``nnkit.linalg``: linear algebra under ``torch.linalg``'s names.

Decompositions and solves live with their Ops in ``nnkit/autograd/ops/decomp.py`` (``qr``,
``svd``, ``pinv`` and ``lstsq`` in ``decomp_more.py``), the
norms and composite routines in ``nnkit/autograd/ops/linalg_more.py``; this module only
re-exports them. ``matmul`` is the same as ``nnkit.matmul``.
"""

from __future__ import annotations

from nnkit.autograd.ops.decomp import (
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    slogdet,
    solve,
    svdvals,
)
from nnkit.autograd.ops.decomp_more import lstsq, pinv, qr, svd
from nnkit.autograd.ops.linalg import matmul
from nnkit.autograd.ops.linalg_more import (
    cholesky_ex,
    cond,
    cross,
    diagonal,
    inv_ex,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    norm,
    solve_ex,
    solve_triangular,
    tensorinv,
    tensorsolve,
    vander,
    vecdot,
    vector_norm,
)
from nnkit.autograd.ops.lu import householder_product, lu_factor, lu_factor_ex, matrix_exp
from nnkit.autograd.ops.lu import linalg_lu as lu
from nnkit.autograd.ops.lu import linalg_lu_solve as lu_solve
from nnkit.autograd.ops.out_variants import install as _install_out_variants

__all__ = [
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "householder_product",
    "inv_ex",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]

_install_out_variants(globals(), "linalg")  # out= where PyTorch has it
