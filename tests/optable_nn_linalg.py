"""Op-table rows of the LU family, ``matrix_exp``, ``householder_product``, the spatial
transformer ops (``grid_sample``, ``affine_grid``), fractional max pooling, the alpha
dropouts and ``multilabel_margin_loss`` (appended to ``tests/optable_extra.py``'s
table). Values are compared with torch's in ``tests/autograd/test_opinfo.py`` and
``tests/autograd/test_nn_linalg_extra_torch.py``; these rows add gradcheck and
gradgradcheck on contiguous, non-contiguous and broadcast float64 inputs. Random ops
reseed nnkit's generator inside ``fn`` so that every evaluation draws the same mask.
"""

from __future__ import annotations

import numpy as np

import nnkit
import nnkit.nn.functional as F
from tests.opspec import OpSpec, Sample
from tests.optable_core import distinct, rn

OPS: list[OpSpec] = []
L = nnkit.linalg


def row(name, fn, samples, ref=None, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


def one(*gens, **kwargs):
    def samples(rng):
        args = tuple(g[0](rng, *g[1:]) if isinstance(g, tuple) else g for g in gens)
        return [Sample(args, kwargs)]

    return samples


def spd(a):
    return a @ a.mT + 3 * nnkit.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def seeded(fn):
    def run(*args):
        nnkit.manual_seed(0)
        return fn(*args)

    return run


# ------------------------------------------------------------------- LU family
row("linalg.lu_factor", lambda a: L.lu_factor(a).LU, one((rn, 2, 3, 3)))
row("linalg.lu_factor_ex_wide", lambda a: L.lu_factor_ex(a).LU, one((rn, 3, 5)))
row("linalg.lu_L_tall", lambda a: L.lu(a).L, one((rn, 5, 3)))
row("linalg.lu_U_tall", lambda a: L.lu(a).U, one((rn, 5, 3)))
row("linalg.lu_L_wide", lambda a: L.lu(a).L, one((rn, 2, 3, 4)))
row("linalg.lu_U_wide", lambda a: L.lu(a).U, one((rn, 3, 4)))
row("linalg.lu_solve", lambda a, b: L.lu_solve(*L.lu_factor(a), b), one((rn, 3, 3), (rn, 2, 3, 2)))
row(
    "linalg.lu_solve_adjoint_right",
    lambda a, b: L.lu_solve(*L.lu_factor(a), b, left=False, adjoint=True),
    one((rn, 3, 3), (rn, 2, 3)),
)
row("lu_solve", lambda b, a: nnkit.lu_solve(b, *nnkit.lu(a)), one((rn, 3, 1), (rn, 3, 3)))
row("lu_unpack", lambda a: nnkit.lu_unpack(*L.lu_factor(a)).L, one((rn, 4, 3)))
row("matrix_exp", nnkit.matrix_exp, one((rn, 2, 3, 3)))
row("linalg.matrix_exp", L.matrix_exp, one((rn, 4, 4)))
row("linalg.householder_product", L.householder_product, one((rn, 4, 3), (rn, 2)))
row("cholesky", lambda a: nnkit.cholesky(spd(a)), one((rn, 3, 3)))
row("cholesky_upper", lambda a: nnkit.cholesky(spd(a), True), one((rn, 2, 3, 3)))

# ---------------------------------------------------------- spatial transformers
for _mode, _pad, _ac in (
    ("bilinear", "zeros", False),
    ("bilinear", "border", True),
    ("bilinear", "reflection", False),
    ("bicubic", "zeros", True),
    ("bicubic", "reflection", False),
    ("nearest", "border", False),
):
    row(
        f"grid_sample_{_mode}_{_pad}",
        lambda x, g, m=_mode, p=_pad, ac=_ac: F.grid_sample(x, g, m, p, ac),
        one((rn, 2, 2, 3, 4), (rn, 2, 3, 2, 2)),
    )
row(
    "grid_sample_3d",
    lambda x, g: F.grid_sample(x, g, padding_mode="reflection", align_corners=True),
    one((rn, 1, 2, 3, 2, 3), (rn, 1, 2, 2, 1, 3)),
)
row("affine_grid", lambda t: F.affine_grid(t, (2, 1, 3, 4)), one((rn, 2, 2, 3)))
row("affine_grid_3d", lambda t: F.affine_grid(t, (1, 1, 2, 3, 2), True), one((rn, 1, 3, 4)))

# -------------------------------------------------------- pooling, dropout, loss
_S2 = np.array([[[0.3, 0.7], [0.9, 0.1]]])
_S3 = np.array([[[0.3, 0.7, 0.5]]])
row(
    "fractional_max_pool2d",
    lambda a: F.fractional_max_pool2d(
        a, 2, output_size=(3, 2), _random_samples=nnkit.tensor(_S2, dtype=a.dtype)
    ),
    one((distinct, 1, 2, 5, 4)),
)
row(
    "fractional_max_pool3d",
    lambda a: F.fractional_max_pool3d(
        a, (2, 1, 2), output_size=2, _random_samples=nnkit.tensor(_S3, dtype=a.dtype)
    ),
    one((distinct, 1, 1, 3, 3, 4)),
)
row("alpha_dropout", seeded(lambda a: F.alpha_dropout(a, 0.4, True)), one((rn, 3, 4)))
row(
    "feature_alpha_dropout",
    seeded(lambda a: F.feature_alpha_dropout(a, 0.5, True)),
    one((rn, 3, 4, 2)),
)
row("dropout3d", seeded(lambda a: F.dropout3d(a, 0.5)), one((rn, 2, 3, 1, 2, 2)))
row(
    "multilabel_margin_loss",
    F.multilabel_margin_loss,
    one((rn, 2, 4), np.array([[3, 0, -1, 1], [1, -1, 0, 0]], dtype=np.int64)),
)
