"""Op-table rows for the ops added against PyTorch's OpInfo database (see tests/opspec.py):
``ops/pointwise.py``, ``arrange.py``, ``distance.py``, ``loss_extra.py``, ``nn_extra.py``,
``decomp.py``, ``linalg_more.py``, ``index_write.py``, ``special_more.py``, ``pool3d.py``,
``interpolate.py``, ``conv_transpose.py``, ``adaptive_max.py``, ``pool_more.py``,
``decomp_more.py``, ``fold.py``, ``embedding_bag.py``, ``ctc.py``.

Each row gets gradcheck (and gradgradcheck) on float64 samples kept away from kinks,
ties and singular matrices; values are compared with torch's on its own samples in
``tests/autograd/test_opinfo.py``, so most rows here have no NumPy reference. Symmetric
or positive-definite inputs are built inside ``fn`` (``a @ a.mT + n I``) so that
gradcheck's elementwise perturbations stay inside the op's domain.
"""

from __future__ import annotations

import numpy as np

import nnkit
import nnkit.nn.functional as F
from tests.opspec import OpSpec, Sample
from tests.optable_core import away, distinct, pos, rn

OPS: list[OpSpec] = []


def row(name, fn, samples, ref=None, **kw):
    OPS.append(OpSpec(name=name, fn=fn, ref=ref, samples=samples, **kw))


def one(*gens, **kwargs):
    """One sample: each ``gen`` is ``(generator, *shape)`` or a plain value."""

    def samples(rng):
        args = tuple(g[0](rng, *g[1:]) if isinstance(g, tuple) else g for g in gens)
        return [Sample(args, kwargs)]

    return samples


def idx(*values):
    return np.asarray(values, dtype=np.int64)


def spd(a):
    return a @ a.mT + 3 * nnkit.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def sym(a):
    return a + a.mT


# ------------------------------------------------------------- pointwise.py
row("exp2", nnkit.exp2, one((rn, 2, 3)), ref=np.exp2)
row("deg2rad", nnkit.deg2rad, one((rn, 3)), ref=np.deg2rad)
row("sinc", nnkit.sinc, one((away, 2, 3)), ref=np.sinc)
row("copysign", nnkit.copysign, one((away, 2, 3), (away, 3)), ref=np.copysign)
row("fmax", nnkit.fmax, one((distinct, 2, 3), (distinct, 3)), ref=np.fmax)
row("fmin", nnkit.fmin, one((distinct, 2, 3), (distinct, 3)), ref=np.fmin)
row("logaddexp2", nnkit.logaddexp2, one((rn, 2, 3), (rn, 3)), ref=np.logaddexp2)
row("ldexp", nnkit.ldexp, one((rn, 3), idx(1, -2, 0)), ref=np.ldexp)
row("float_power", nnkit.float_power, one((pos, 3), 2.5))
row("rsub", nnkit.rsub, one((rn, 3), (rn, 3)), ref=lambda a, b: b - a)
row("nextafter", nnkit.nextafter, one((rn, 3), (rn, 3)), gradgrad=False)

# --------------------------------------------------------------- arrange.py
row("fliplr", nnkit.fliplr, one((rn, 2, 3)), ref=np.fliplr)
row("block_diag", nnkit.block_diag, one((rn, 2, 2), (rn, 3), (rn, 1, 1)))
row("column_stack", lambda a, b: nnkit.column_stack([a, b]), one((rn, 3), (rn, 3, 2)))
row("cartesian_prod", nnkit.cartesian_prod, one((rn, 2), (rn, 3)))
row("diagflat", nnkit.diagflat, one((rn, 2, 2)), ref=np.diagflat)
row("broadcast_tensors", nnkit.broadcast_tensors, one((rn, 2, 1), (rn, 3)))
row("hsplit", lambda a: nnkit.hsplit(a, [1]), one((rn, 2, 3)))
row("softmax", lambda a: nnkit.softmax(a, 1), one((rn, 2, 3)))
row("permute_copy", lambda a: nnkit.permute_copy(a, (1, 0)), one((rn, 2, 3)))

# -------------------------------------------------------------- distance.py
row("cdist", nnkit.cdist, one((rn, 3, 2), (rn, 4, 2)))
row("cdist_p1", lambda a, b: nnkit.cdist(a, b, 1.0), one((rn, 3, 2), (rn, 4, 2)))
row("cdist_p3", lambda a, b: nnkit.cdist(a, b, 3.0), one((rn, 3, 2), (rn, 4, 2)))
row("pdist", F.pdist, one((rn, 4, 3)))
row("pairwise_distance", F.pairwise_distance, one((rn, 3, 4), (rn, 3, 4)))
row("cosine_similarity", F.cosine_similarity, one((rn, 3, 4), (rn, 1, 4)))
row("dist", lambda a, b: nnkit.dist(a, b, 3), one((rn, 2, 3), (rn, 3)))
row("inner", nnkit.inner, one((rn, 2, 3), (rn, 4, 3)), ref=np.inner)
row("addr", nnkit.addr, one((rn, 2, 3), (rn, 2), (rn, 3)), ref=lambda m, a, b: m + np.outer(a, b))
row("addbmm", nnkit.addbmm, one((rn, 2, 4), (rn, 3, 2, 3), (rn, 3, 3, 4)))
row("diff", lambda a: nnkit.diff(a, 2, 0), one((rn, 4, 3)), ref=lambda a: np.diff(a, 2, 0))
row("trapezoid", nnkit.trapezoid, one((rn, 2, 4), (rn, 4)), ref=np.trapezoid)
row("cumulative_trapezoid", nnkit.cumulative_trapezoid, one((rn, 2, 4)))
row("cov", nnkit.cov, one((rn, 3, 5)), ref=np.cov)
row("corrcoef", nnkit.corrcoef, one((rn, 3, 5)), ref=np.corrcoef)

# ------------------------------------------------------------ loss_extra.py
_pm = np.asarray([1.0, -1.0, 1.0])
row("soft_margin_loss", F.soft_margin_loss, one((rn, 3), _pm))
row("margin_ranking_loss", F.margin_ranking_loss, one((rn, 3), (rn, 3), _pm))
row(
    "hinge_embedding_loss", F.hinge_embedding_loss, one((lambda r, *s: away(r, *s, at=1.0), 3), _pm)
)
row("cosine_embedding_loss", F.cosine_embedding_loss, one((rn, 3, 4), (rn, 3, 4), _pm))
row("poisson_nll_loss", lambda a, b: F.poisson_nll_loss(a, b, full=True), one((rn, 4), (pos, 4)))
row("gaussian_nll_loss", F.gaussian_nll_loss, one((rn, 3, 2), (rn, 3, 2), (pos, 3, 1)))
row("multilabel_soft_margin_loss", F.multilabel_soft_margin_loss, one((rn, 2, 3), (pos, 2, 3)))
row("multi_margin_loss", F.multi_margin_loss, one((rn, 3, 4), idx(0, 3, 1)))
row("triplet_margin_loss", F.triplet_margin_loss, one((rn, 3, 4), (rn, 3, 4), (rn, 3, 4)))
row("ctc_loss", lambda x, t: F.ctc_loss(x.log_softmax(-1), t, [4, 3], [2, 1], reduction="none"),
    one((rn, 4, 2, 3), np.array([[1, 2], [2, 0]])), gradgrad=False)  # fmt: skip

# -------------------------------------------------------------- nn_extra.py
row("pixel_shuffle", lambda a: F.pixel_shuffle(a, 2), one((rn, 1, 4, 2, 3)))
row("channel_shuffle", lambda a: F.channel_shuffle(a, 2), one((rn, 1, 4, 3)))
row("rms_norm", lambda a, w: F.rms_norm(a, (3,), w), one((rn, 2, 3), (rn, 3)))
row("instance_norm", F.instance_norm, one((rn, 2, 3, 4)))
row("local_response_norm", lambda a: F.local_response_norm(a, 3), one((rn, 2, 4, 3)))
row("bilinear", F.bilinear, one((rn, 2, 3), (rn, 2, 4), (rn, 5, 3, 4), (rn, 5)))

row("max_pool3d", lambda a: F.max_pool3d(a, 2, stride=1), one((distinct, 1, 2, 3, 3, 3)))
row("avg_pool3d", lambda a: F.avg_pool3d(a, 2, padding=1), one((rn, 1, 2, 3, 3, 3)))
row("adaptive_avg_pool3d", lambda a: F.adaptive_avg_pool3d(a, (2, 1, 2)), one((rn, 2, 3, 3, 3)))

for _m, _shape in (
    ("nearest", (1, 2, 3, 4)),
    ("linear", (1, 2, 5)),
    ("bilinear", (1, 2, 3, 4)),
    ("bicubic", (1, 1, 4, 3)),
    ("trilinear", (1, 1, 3, 2, 3)),
    ("area", (1, 2, 6)),
):
    row(
        f"interpolate_{_m}",
        lambda a, m=_m: F.interpolate(a, scale_factor=1.7, mode=m),
        one((rn, *_shape)),
    )
row(
    "interpolate_align",
    lambda a: F.interpolate(a, size=(4, 2), mode="bilinear", align_corners=True),
    one((rn, 1, 2, 3, 3)),
)

row("conv_transpose1d", F.conv_transpose1d, one((rn, 2, 2, 3), (rn, 2, 3, 2), (rn, 3)))
row(
    "conv_transpose2d",
    lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2),
    one((rn, 1, 4, 2, 3), (rn, 4, 1, 3, 2)),
)
row(
    "conv_transpose3d",
    lambda x, w: F.conv_transpose3d(x, w, stride=(1, 2, 1), dilation=2, output_padding=(0, 1, 1)),
    one((rn, 1, 2, 2, 2, 2), (rn, 2, 1, 2, 1, 2)),
)

row("adaptive_max_pool1d", lambda a: F.adaptive_max_pool1d(a, 3), one((distinct, 2, 2, 5)))
row("adaptive_max_pool2d", lambda a: F.adaptive_max_pool2d(a, (2, 3)), one((distinct, 2, 4, 5)))
row("adaptive_max_pool3d", lambda a: F.adaptive_max_pool3d(a, 2), one((distinct, 1, 3, 3, 3)))

# ------------------------------------------------------------- pool_more.py
row("lp_pool1d", lambda a: F.lp_pool1d(a, 2, 2), one((rn, 2, 3, 6)))
row("lp_pool1d_p3", lambda a: F.lp_pool1d(a, 3, 3, stride=2), one((pos, 1, 2, 7)))
row("lp_pool2d", lambda a: F.lp_pool2d(a, 2, (2, 3), stride=1), one((rn, 2, 2, 4, 5)))
row("lp_pool2d_ceil", lambda a: F.lp_pool2d(a, 1.5, 2, ceil_mode=True), one((pos, 1, 5, 5)))
_UNPOOL1 = [[[1, 2, 5]], [[0, 3, 4]]]
_UNPOOL2 = [[[[0, 3], [9, 14]], [[5, 6], [8, 15]]]]
row(
    "max_unpool1d",
    lambda a: F.max_unpool1d(a, nnkit.tensor(_UNPOOL1, device=a.device), 2),
    one((rn, 2, 1, 3)),
)
row(
    "max_unpool2d",
    lambda a: F.max_unpool2d(a, nnkit.tensor(_UNPOOL2, device=a.device), 2, output_size=(5, 4)),
    one((rn, 1, 2, 2, 2)),
)
_UNPOOL3 = [[[[[0, 7], [18, 29]], [[33, 46], [50, 63]]]]]
row(
    "max_unpool3d",
    lambda a: F.max_unpool3d(a, nnkit.tensor(_UNPOOL3, device=a.device), 2, output_size=(4, 4, 5)),
    one((rn, 1, 1, 2, 2, 2)),
)

# ---------------------------------------------------------- embedding_bag.py


def _bag_ref(i, w, off, mode="mean", psw=None, padding_idx=None, last=False):
    """NumPy embedding_bag over a 1-d ``i`` and its ``offsets``."""
    ends = list(off[1:]) + ([] if last else [len(i)])
    out = np.zeros((len(ends), w.shape[1]), dtype=w.dtype)
    for b, (lo, hi) in enumerate(zip(off, ends)):
        ks = [k for k in range(lo, hi) if i[k] != padding_idx]
        if not ks:
            continue
        rows = w[i[ks]] * (1.0 if psw is None else psw[ks][:, None])
        out[b] = {"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode]
    return out


_BAG_I, _BAG_OFF = idx(1, 4, 4, 0, 2, 3, 4, 1), idx(0, 3, 3, 6)
for _mode in ("sum", "mean", "max"):
    row(
        f"embedding_bag_{_mode}",
        lambda i, w, off, m=_mode: F.embedding_bag(i, w, off, mode=m, padding_idx=0),
        one(_BAG_I, (distinct, 5, 3), _BAG_OFF),
        ref=lambda i, w, off, m=_mode: _bag_ref(i, w, off, m, padding_idx=0),
    )
row(
    "embedding_bag_2d",
    lambda i, w: F.embedding_bag(i, w, mode="mean"),
    one(idx(1, 4, 2, 4, 0, 3).reshape(2, 3), (rn, 5, 3)),
    ref=lambda i, w: _bag_ref(i.reshape(-1), w, np.arange(0, i.size, i.shape[1])),
)
row(
    "embedding_bag_per_sample_weights",
    lambda i, w, off, p: F.embedding_bag(
        i, w, off, mode="sum", per_sample_weights=p, include_last_offset=True, padding_idx=4
    ),
    one(_BAG_I, (rn, 5, 3), idx(0, 2, 2, 8), (rn, 8)),
    ref=lambda i, w, off, p: _bag_ref(i, w, off, "sum", p, 4, last=True),
)

# ---------------------------------------------------------- decomp / linalg
L = nnkit.linalg
row("linalg.inv", lambda a: L.inv(spd(a)), one((rn, 2, 3, 3)))
row("linalg.det", L.det, one((rn, 3, 3)), ref=np.linalg.det)
row("linalg.slogdet", lambda a: L.slogdet(a)[1], one((rn, 2, 3, 3)))
row("linalg.solve", lambda a, b: L.solve(spd(a), b), one((rn, 3, 3), (rn, 2, 3, 2)))
row("linalg.cholesky", lambda a: L.cholesky(spd(a)), one((rn, 3, 3)))
row("linalg.eigh", lambda a: L.eigh(sym(a))[0], one((rn, 3, 3)))
row("linalg.eigh_vectors", lambda a: L.eigh(sym(a))[1].abs(), one((rn, 3, 3)))
row("linalg.svdvals", L.svdvals, one((rn, 4, 3)), ref=lambda a: np.linalg.svd(a)[1])
row("linalg.matrix_norm_nuc", lambda a: L.matrix_norm(a, "nuc"), one((rn, 3, 2)))
row("linalg.vector_norm", lambda a: L.vector_norm(a, 3, (0, 1)), one((away, 2, 3)))
row("linalg.cond", L.cond, one((rn, 3, 3)), ref=np.linalg.cond)
row("linalg.matrix_power", lambda a: L.matrix_power(spd(a), -3), one((rn, 3, 3)))
row("linalg.multi_dot", lambda a, b, c: L.multi_dot([a, b, c]), one((rn, 3), (rn, 3, 2), (rn, 2)))
row("linalg.vander", lambda a: L.vander(a, N=4), one((rn, 3)))
row(
    "linalg.solve_triangular",
    lambda a, b: L.solve_triangular(spd(a), b, upper=False),
    one((rn, 3, 3), (rn, 3, 2)),
)
row("linalg.tensorinv", lambda a: L.tensorinv(spd(a).reshape(2, 2, 4), ind=2), one((rn, 4, 4)))
row(
    "cholesky_solve",
    lambda b, a: nnkit.cholesky_solve(b, L.cholesky(spd(a))),
    one((rn, 3, 2), (rn, 3, 3)),
)
row("cholesky_inverse", lambda a: nnkit.cholesky_inverse(L.cholesky(spd(a))), one((rn, 3, 3)))
row("logdet", lambda a: nnkit.logdet(spd(a)), one((rn, 3, 3)))


# ------------------------------------------------ decomp_more.py / fold.py
def _qr_inv(q, r):
    """A function of ``Q, R`` that does not depend on LAPACK's sign choices."""
    return q.abs().sum(-2) + (r * r).sum(-1)


def _svd_inv(u, s, vh):
    return (u.abs() * s.unsqueeze(-2)) @ vh.abs()


row("linalg.qr", lambda a: _qr_inv(*L.qr(a)), one((rn, 2, 4, 3)))
row("linalg.qr_wide", lambda a: _qr_inv(*L.qr(a)), one((rn, 3, 5)))
row("linalg.svd", lambda a: _svd_inv(*L.svd(a, full_matrices=False)), one((rn, 2, 4, 3)))
row("linalg.svd_wide", lambda a: _svd_inv(*L.svd(a, full_matrices=False)), one((rn, 3, 4)))
row("linalg.pinv", L.pinv, one((rn, 2, 4, 3)), ref=np.linalg.pinv)
row("linalg.pinv_hermitian", lambda a: L.pinv(spd(a), hermitian=True), one((rn, 3, 3)))
row("linalg.lstsq", lambda a, b: L.lstsq(a, b).solution, one((rn, 4, 3), (rn, 4, 2)))
row(
    "unfold",
    lambda a: F.unfold(a, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
    one((rn, 2, 2, 5, 6)),
)
row("fold", lambda a: F.fold(a, (4, 5), 2), one((rn, 1, 8, 12)))

# -------------------------------------------------------------- scatter.py
_mask = np.asarray([True, False, True])
row("take", nnkit.take, one((rn, 2, 3), idx(0, 5, 2)))
row("put", nnkit.put, one((rn, 2, 3), idx(0, 5), (rn, 2)))
row("index_fill", lambda a, i, v: nnkit.index_fill(a, 1, i, v), one((rn, 2, 3), idx(0, 2), (rn,)))
row(
    "index_copy",
    lambda a, i, s: nnkit.index_copy(a, 0, i, s),
    one((rn, 3, 2), idx(2, 0), (rn, 2, 2)),
)
row("scatter", lambda a, i, s: nnkit.scatter(a, 0, i, s), one((rn, 2, 2), idx([1, 0]), (rn, 1, 2)))
for _r in ("sum", "mean", "amax", "amin", "prod"):
    row(
        f"scatter_reduce_{_r}",
        lambda a, i, s, r=_r: nnkit.scatter_reduce(a, 0, i, s, r),
        one((distinct, 2, 2), idx([1, 0], [1, 1]), (distinct, 2, 2)),
        gradgrad=_r != "prod",  # refused (NotImplementedError), see test_opinfo_fixes
    )
row("select_scatter", lambda a, s: nnkit.select_scatter(a, s, 0, 1), one((rn, 2, 3), (rn, 3)))
row(
    "slice_scatter",
    lambda a, s: nnkit.slice_scatter(a, s, 1, 0, 3, 2),
    one((rn, 2, 3), (rn, 2, 2)),
)
row("masked_scatter", nnkit.masked_scatter, one((rn, 2, 3), _mask, (rn, 6)))
row("fill", nnkit.fill, one((rn, 2, 3), (rn,)))
row("aminmax", lambda a: nnkit.aminmax(a, dim=1), one((distinct, 2, 3)))

# --------------------------------------------------------- special_more.py
row("special.ndtr", nnkit.special.ndtr, one((rn, 2, 3)))
row("special.ndtri", nnkit.special.ndtri, one((lambda r, *s: r.uniform(0.1, 0.9, s), 2, 3)))
row("special.entr", nnkit.special.entr, one((pos, 2, 3)))
row("special.xlog1py", nnkit.special.xlog1py, one((rn, 2, 3), (pos, 3)))

from tests.optable_nn_linalg import OPS as _NN_LINALG_OPS  # noqa: E402  (LU, grid_sample, ...)

OPS += _NN_LINALG_OPS

from tests.optable_tensor_extra import OPS as _TENSOR_EXTRA_OPS  # noqa: E402  (as_strided, ...)

OPS += _TENSOR_EXTRA_OPS
