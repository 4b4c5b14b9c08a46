"""Op-table rows of the tensor-level ops of issue 13 (``ops/strided.py``,
``ops/tensor_extra.py``): ``as_strided`` and its copy/scatter, ``Tensor.unfold``,
``diagonal_scatter``, ``combinations``, ``gradient``, ``renorm``, ``sum_to_size``,
``constant_pad_nd``, ``index_reduce`` (appended to ``tests/optable_extra.py``'s table).
Values are compared with torch's in ``tests/autograd/test_opinfo.py`` and
``tests/autograd/test_tensor_extra_torch.py``; these rows add NumPy forward checks,
gradcheck and gradgradcheck on contiguous, non-contiguous and broadcast float64 inputs.
"""

from __future__ import annotations

import itertools

import numpy as np

import nnkit
from tests.opspec import OpSpec, Sample
from tests.optable_core import distinct, pos, rn

OPS: list[OpSpec] = []


def row(name, fn, samples, ref=None, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


def one(*gens, **kwargs):
    def samples(rng):
        args = tuple(g[0](rng, *g[1:]) if isinstance(g, tuple) else g for g in gens)
        return [Sample(args, kwargs)]

    return samples


def _np_as_strided(a, size, stride, off):
    flat = np.ascontiguousarray(a).reshape(-1)
    return np.lib.stride_tricks.as_strided(
        flat[off:], size, tuple(s * flat.itemsize for s in stride)
    ).copy()


def _np_unfold(a, dim, size, step):
    w = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    return np.take(w, np.arange(0, w.shape[dim], step), axis=dim)


# ------------------------------------------------------------------- strided.py
# (as_strided and as_strided_scatter follow the memory layout: the rows take a contiguous copy)
row(
    "as_strided_overlapping",
    lambda a: nnkit.as_strided(a.contiguous(), (3, 3), (2, 1), 1),
    one((rn, 3, 4)),
    ref=lambda a: _np_as_strided(a, (3, 3), (2, 1), 1),
)
row(
    "as_strided_copy",
    lambda a: nnkit.as_strided_copy(a.contiguous(), (2, 2), (1, 3)),
    one((rn, 2, 3)),
    ref=lambda a: _np_as_strided(a, (2, 2), (1, 3), 0),
)
row(
    "as_strided_scatter",
    lambda a, s: nnkit.as_strided_scatter(a.contiguous(), s, (2, 2), (3, 1), 1),
    one((rn, 2, 3), (rn, 2, 2)),
)
row(
    "unfold_overlapping",
    lambda a: a.unfold(1, 3, 1),
    one((rn, 2, 5)),
    ref=lambda a: _np_unfold(a, 1, 3, 1),
)
row(
    "unfold_step",
    lambda a: a.unfold(0, 2, 3),
    one((rn, 8, 2)),
    ref=lambda a: _np_unfold(a, 0, 2, 3),
)
row("unfold_copy", lambda a: nnkit.unfold_copy(a, -1, 2, 2), one((rn, 3, 4)))
row(
    "diagonal_scatter",
    lambda a, s: nnkit.diagonal_scatter(a, s, 1),
    one((rn, 3, 4), (rn, 3)),
)

# --------------------------------------------------------------- tensor_extra.py
row(
    "combinations",
    lambda a: nnkit.combinations(a, 3, with_replacement=True),
    one((rn, 4)),
    ref=lambda a: np.asarray(list(itertools.combinations_with_replacement(a, 3))),
)
row(
    "gradient",
    lambda a: nnkit.gradient(a, spacing=[2.0, 0.5], edge_order=2),
    one((rn, 4, 5)),
    ref=lambda a: tuple(np.gradient(a, 2.0, 0.5, edge_order=2)),
)
row(
    "gradient_coordinates",
    lambda a: nnkit.gradient(
        a, spacing=(nnkit.tensor([0.0, 0.5, 2.0, 2.5], device=a.device),), dim=0
    ),
    one((rn, 4, 2)),
    ref=lambda a: (np.gradient(a, np.array([0.0, 0.5, 2.0, 2.5]), axis=0),),
)
row(
    "renorm",
    lambda a: nnkit.renorm(a, 2, 0, 1.0),
    one((rn, 3, 4)),
    ref=lambda a: (
        a * np.where((n := np.linalg.norm(a, axis=1, keepdims=True)) > 1.0, 1.0 / (n + 1e-7), 1.0)
    ),
)
row(
    "renorm_inf",
    lambda a: nnkit.renorm(a, float("inf"), 1, 0.5),
    one((distinct, 3, 4)),
)
row(
    "sum_to_size",
    lambda a: a.sum_to_size(1, 3),
    one((rn, 2, 3)),
    ref=lambda a: a.sum(0, keepdims=True),
)
row(
    "constant_pad_nd",
    lambda a: nnkit.constant_pad_nd(a, (1, -1, 2, 0), 0.5),
    one((rn, 2, 3)),
    ref=lambda a: np.pad(a[:, :-1], ((2, 0), (1, 0)), constant_values=0.5),
)
for _r in ("prod", "mean", "amax", "amin"):
    row(
        f"index_reduce_{_r}",
        lambda a, s, r=_r: nnkit.index_reduce(a, 0, nnkit.tensor([1, 0, 1], device=a.device), s, r),
        one((distinct, 2, 3), (distinct, 3, 3)),
        gradgrad=_r != "prod",  # refused (NotImplementedError), as scatter_reduce's
    )
row(
    "index_reduce_exclude_self",
    lambda a, s: nnkit.index_reduce(
        a, 1, nnkit.tensor([2, 2], device=a.device), s, "mean", include_self=False
    ),
    one((pos, 2, 3), (pos, 2, 2)),
)
