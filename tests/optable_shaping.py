"""Op-table rows for nnkit/autograd/ops/shaping.py and ops/products.py (see tests/opspec.py).

Views, joins, diagonals and grids first, then the products (mv, addmm, ..., einsum).
"""

from __future__ import annotations

import numpy as np

import nnkit
from tests.opspec import OpSpec, Sample
from tests.optable_core import rn

OPS: list[OpSpec] = []


def row(name, fn, ref, samples, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


def _s(*samples):
    """A samples function returning ``samples`` built from ``rng``."""

    def samples_fn(rng):
        return [f(rng) for f in samples]

    return samples_fn


# ---------------------------------------------------------------------- views
row(
    "t",
    lambda x: x.t(),
    lambda x: x.T,
    _s(
        lambda r: Sample((rn(r, 2, 3),), desc="2d"),
        lambda r: Sample((rn(r, 4),), desc="1d"),
        lambda r: Sample((rn(r),), desc="0d"),
    ),
)
row(
    "view_as",
    lambda x, y: x.view_as(y),
    lambda x, y: x.reshape(y.shape),
    _s(
        lambda r: Sample((rn(r, 2, 3), rn(r, 3, 2)), diff=(0,), noncontig=False),
        lambda r: Sample((rn(r, 4), rn(r, 2, 2)), diff=(0,), noncontig=False),
    ),
)
row(
    "reshape_as",
    lambda x, y: x.reshape_as(y),
    lambda x, y: x.reshape(y.shape),
    _s(
        lambda r: Sample((rn(r, 2, 3), rn(r, 6)), diff=(0,)),
        lambda r: Sample((rn(r, 2, 3), rn(r, 3, 1, 2)), diff=(0,)),
    ),
)
row(
    "narrow",
    lambda x, d, s, n: x.narrow(d, s, n),
    lambda x, d, s, n: np.take(x, range(s % x.shape[d], s % x.shape[d] + n), axis=d),
    _s(
        lambda r: Sample((rn(r, 4, 3), 0, 1, 2)),
        lambda r: Sample((rn(r, 2, 5), -1, -3, 2)),
        lambda r: Sample((rn(r, 3, 4), 1, 4, 0), desc="empty"),
    ),
)
row(
    "select",
    lambda x, d, i: x.select(d, i),
    lambda x, d, i: np.take(x, i, axis=d),
    _s(
        lambda r: Sample((rn(r, 3, 4), 0, 1)),
        lambda r: Sample((rn(r, 2, 3, 4), -1, -2)),
        lambda r: Sample((rn(r, 4), 0, 3), desc="1d"),
    ),
)
row(
    "tensor_split",
    lambda x, s, dim=0: x.tensor_split(s, dim),
    lambda x, s, dim=0: np.array_split(x, s, axis=dim),
    _s(
        lambda r: Sample((rn(r, 7, 2), 3)),
        lambda r: Sample((rn(r, 2, 5), 3), {"dim": 1}),
        lambda r: Sample((rn(r, 6, 2), [1, 4])),
        lambda r: Sample((rn(r, 6), [2, 9]), desc="far"),
        lambda r: Sample((rn(r, 2, 2), 3), desc="more-sections"),
    ),
)


def _pair_list(shapes):
    return lambda r: Sample(tuple(rn(r, *s) for s in shapes), desc="x".join(map(str, shapes)))


row(
    "hstack",
    lambda *xs: nnkit.hstack(xs),
    lambda *xs: np.hstack(xs),
    _s(_pair_list([(2, 3), (2, 1)]), _pair_list([(3,), (2,)]), _pair_list([(), ()])),
)
row(
    "vstack",
    lambda *xs: nnkit.vstack(xs),
    lambda *xs: np.vstack(xs),
    _s(_pair_list([(2, 3), (1, 3)]), _pair_list([(3,), (3,)]), _pair_list([(), ()])),
)
row(
    "dstack",
    lambda *xs: nnkit.dstack(xs),
    lambda *xs: np.dstack(xs),
    _s(_pair_list([(2, 3), (2, 3)]), _pair_list([(3,), (3,)]), _pair_list([(2, 1, 2), (2, 1, 1)])),
)
row(
    "moveaxis",
    lambda x, s, d: x.moveaxis(s, d),
    lambda x, s, d: np.moveaxis(x, s, d),
    _s(
        lambda r: Sample((rn(r, 2, 3, 4), 0, -1)),
        lambda r: Sample((rn(r, 2, 3, 4), [0, 1], [2, 0])),
    ),
)

# --------------------------------------------------------------------- copies
row(
    "roll",
    lambda x, s, dims=None: x.roll(s, dims),
    lambda x, s, dims=None: np.roll(x, s, dims),
    _s(
        lambda r: Sample((rn(r, 3, 4), 1), {"dims": 0}),
        lambda r: Sample((rn(r, 3, 4), (-1, 5)), {"dims": (1, 0)}),
        lambda r: Sample((rn(r, 2, 3), 4), desc="flat"),
        lambda r: Sample((rn(r), 2), desc="0d"),
    ),
)
row(
    "tile",
    lambda x, d: x.tile(d),
    np.tile,
    _s(
        lambda r: Sample((rn(r, 2, 3), (2,))),
        lambda r: Sample((rn(r, 3), (2, 2))),
        lambda r: Sample((rn(r, 2, 1), (1, 3))),
    ),
)
row(
    "rot90",
    lambda x, k=1, dims=(0, 1): x.rot90(k, dims),
    lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims),
    _s(
        lambda r: Sample((rn(r, 2, 3),)),
        lambda r: Sample((rn(r, 2, 3), 2)),
        lambda r: Sample((rn(r, 2, 3, 4), -1, (2, 0))),
        lambda r: Sample((rn(r, 2, 3), 4)),
    ),
)


# ------------------------------------------------------------------ diagonals
def _diag_embed_ref(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    i = np.arange(x.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


row(
    "diagonal",
    lambda x, *a: x.diagonal(*a),
    lambda x, *a: np.diagonal(x, *a),
    _s(
        lambda r: Sample((rn(r, 3, 4),)),
        lambda r: Sample((rn(r, 3, 4), 1)),
        lambda r: Sample((rn(r, 4, 3), -2)),
        lambda r: Sample((rn(r, 2, 3, 4), 1, -1, 0)),
        lambda r: Sample((rn(r, 3, 3), 5), desc="empty"),
    ),
)
row(
    "diag_embed",
    lambda x, *a: x.diag_embed(*a),
    _diag_embed_ref,
    _s(
        lambda r: Sample((rn(r, 3),)),
        lambda r: Sample((rn(r, 2, 3), 1)),
        lambda r: Sample((rn(r, 2, 3), -1, 0, 2)),
    ),
)
row(
    "diag",
    lambda x, d=0: x.diag(d),
    np.diag,
    _s(
        lambda r: Sample((rn(r, 3),)),
        lambda r: Sample((rn(r, 3), -1)),
        lambda r: Sample((rn(r, 3, 4), 1)),
        lambda r: Sample((rn(r, 3, 4),)),
    ),
)
row(
    "trace",
    lambda x: x.trace(),
    np.trace,
    _s(lambda r: Sample((rn(r, 3, 4),)), lambda r: Sample((rn(r, 2, 2),))),
)


def _tri_ref(fn):
    def ref(row_, col, offset=0):
        return np.stack(fn(row_, offset, col))

    return ref


row(
    "tril_indices",
    nnkit.tril_indices,
    _tri_ref(np.tril_indices),
    _s(lambda r: Sample((3, 4)), lambda r: Sample((4, 3, -1)), lambda r: Sample((0, 3))),
    differentiable=False,
)
row(
    "triu_indices",
    nnkit.triu_indices,
    _tri_ref(np.triu_indices),
    _s(lambda r: Sample((3, 4)), lambda r: Sample((4, 3, 2))),
    differentiable=False,
)
row(
    "meshgrid",
    lambda *xs, indexing="ij": nnkit.meshgrid(*xs, indexing=indexing),
    lambda *xs, indexing="ij": np.meshgrid(*xs, indexing=indexing),
    _s(
        lambda r: Sample((rn(r, 3), rn(r, 2))),
        lambda r: Sample((rn(r, 3), rn(r, 2), rn(r)), {"indexing": "xy"}),
    ),
)

# ------------------------------------------------------------------- products
row("mv", lambda a, v: a.mv(v), np.matmul, _s(lambda r: Sample((rn(r, 2, 3), rn(r, 3)))))
row(
    "addmm",
    lambda c, a, b, **kw: c.addmm(a, b, **kw),
    lambda c, a, b, beta=1, alpha=1: beta * c + alpha * a @ b,
    _s(
        lambda r: Sample((rn(r, 2, 4), rn(r, 2, 3), rn(r, 3, 4))),
        lambda r: Sample((rn(r, 4), rn(r, 2, 3), rn(r, 3, 4)), {"beta": 0.5, "alpha": 2.0}),
    ),
)
row(
    "addmv",
    lambda c, a, v, **kw: c.addmv(a, v, **kw),
    lambda c, a, v, beta=1, alpha=1: beta * c + alpha * a @ v,
    _s(
        lambda r: Sample((rn(r, 2), rn(r, 2, 3), rn(r, 3)), {"beta": -1.0, "alpha": 0.5}),
        lambda r: Sample((rn(r), rn(r, 2, 3), rn(r, 3))),
    ),
)
row(
    "baddbmm",
    lambda c, a, b, **kw: c.baddbmm(a, b, **kw),
    lambda c, a, b, beta=1, alpha=1: beta * c + alpha * a @ b,
    _s(
        lambda r: Sample((rn(r, 2, 3, 2), rn(r, 2, 3, 4), rn(r, 2, 4, 2))),
        lambda r: Sample((rn(r, 1, 2), rn(r, 2, 3, 4), rn(r, 2, 4, 2)), {"alpha": 3.0}),
    ),
)
row("vdot", lambda a, b: a.vdot(b), np.vdot, _s(lambda r: Sample((rn(r, 4), rn(r, 4)))))
row(
    "tensordot",
    lambda a, b, dims=2: nnkit.tensordot(a, b, dims),
    lambda a, b, dims=2: np.tensordot(a, b, dims),
    _s(
        lambda r: Sample((rn(r, 2, 3, 4), rn(r, 3, 4, 2))),
        lambda r: Sample((rn(r, 2, 3, 4), rn(r, 4, 2)), {"dims": ([2, 0], [0, 1])}),
        lambda r: Sample((rn(r, 2, 3), rn(r, 4)), {"dims": 0}),
    ),
)
row(
    "kron",
    lambda a, b: a.kron(b),
    np.kron,
    _s(
        lambda r: Sample((rn(r, 2, 3), rn(r, 2, 2))),
        lambda r: Sample((rn(r, 3), rn(r, 2, 2))),
        lambda r: Sample((rn(r), rn(r, 2))),
    ),
)
row(
    "cross",
    lambda a, b, dim=None: a.cross(b, dim=dim),
    lambda a, b, dim=None: np.cross(a, b, axis=-1 if dim is None else dim),
    _s(
        lambda r: Sample((rn(r, 4, 3), rn(r, 4, 3)), {"dim": 1}),
        lambda r: Sample((rn(r, 3, 2), rn(r, 3, 1)), {"dim": 0}),
        lambda r: Sample((rn(r, 2, 3), rn(r, 3))),
    ),
)


def _einsum_row(name, eq, *shapes):
    row(
        f"einsum_{name}",
        lambda *xs: nnkit.einsum(eq, *xs),
        lambda *xs: np.einsum(eq, *xs),
        _s(lambda r: Sample(tuple(rn(r, *s) for s in shapes))),
    )


_einsum_row("mm", "ij,jk->ik", (2, 3), (3, 4))
_einsum_row("bmm", "bij,bjk->bik", (2, 2, 3), (2, 3, 4))
_einsum_row("implicit", "ij,jk", (2, 3), (3, 4))
_einsum_row("trace", "ii", (3, 3))
_einsum_row("diag", "ii->i", (3, 3))
_einsum_row("sum", "ij->", (2, 3))
_einsum_row("transpose", "ijk->kji", (2, 3, 4))
_einsum_row("outer", "i,j->ij", (3,), (2,))
_einsum_row("three", "ij,jk,kl->il", (2, 3), (3, 4), (4, 2))
_einsum_row("ellipsis", "...ij,...jk->...ik", (2, 2, 3), (3, 4))
_einsum_row("bcast", "bi,bi->b", (2, 3), (1, 3))
_einsum_row("scalar", ",i->i", (), (3,))
_einsum_row("batch_diag", "bii->bi", (2, 3, 3))
