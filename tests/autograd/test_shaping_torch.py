"""The shaping and product ops of issue 13 against PyTorch: values, shapes, gradients,
memory sharing of views (and in-place writes through them), edge cases and errors."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")


def _pair(arrs, requires_grad=True):
    nk = [nnkit.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f") for a in arrs]
    th = [torch.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f") for a in arrs]
    return nk, th


def _outs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


# name -> (function of (lib, *tensors), input shapes); the same code runs on both libraries.
CASES = {
    "t_2d": (lambda L, x: x.t(), [(2, 3)]),
    "t_1d": (lambda L, x: x.t(), [(4,)]),
    "t_0d": (lambda L, x: x.t(), [()]),
    "view_as": (lambda L, x, y: x.view_as(y), [(2, 6), (3, 4)]),
    "reshape_as": (lambda L, x, y: x.t().reshape_as(y), [(2, 6), (3, 4)]),
    "narrow": (lambda L, x: x.narrow(1, 1, 2), [(3, 4)]),
    "narrow_neg": (lambda L, x: x.narrow(-1, -3, 2), [(3, 4)]),
    "narrow_empty": (lambda L, x: L.narrow(x, 0, 3, 0), [(3, 4)]),
    "select": (lambda L, x: x.select(1, -1), [(2, 3, 4)]),
    "select_fn": (lambda L, x: L.select(x, 0, 2), [(3, 4)]),
    "tensor_split_n": (lambda L, x: x.tensor_split(3, dim=1), [(2, 7)]),
    "tensor_split_idx": (lambda L, x: L.tensor_split(x, [1, 5, 2, 9]), [(6, 2)]),
    "tensor_split_neg": (lambda L, x: x.tensor_split((-2,)), [(5,)]),
    "hstack": (lambda L, x, y: L.hstack([x, y]), [(2, 3), (2, 1)]),
    "hstack_1d": (lambda L, x, y: L.hstack((x, y)), [(3,), (0,)]),
    "vstack": (lambda L, x, y, z: L.vstack([x, y, z]), [(3,), (2, 3), (3,)]),
    "dstack": (lambda L, x, y: L.dstack([x, y]), [(2, 3), (2, 3, 2)]),
    "dstack_0d": (lambda L, x, y: L.dstack([x, y]), [(), ()]),
    "moveaxis": (lambda L, x: x.moveaxis(0, -1), [(2, 3, 4)]),
    "moveaxis_seq": (lambda L, x: L.moveaxis(x, (0, 1), (2, 0)), [(2, 3, 4)]),
    "moveaxis_0d": (lambda L, x: L.moveaxis(x, 0, -1), [()]),
    "roll": (lambda L, x: x.roll(2, 1), [(3, 4)]),
    "roll_multi": (lambda L, x: x.roll((1, -5), (0, 1)), [(3, 4)]),
    "roll_flat": (lambda L, x: L.roll(x, -3), [(3, 4)]),
    "roll_0d": (lambda L, x: x.roll(1), [()]),
    "tile": (lambda L, x: x.tile((2,)), [(2, 3)]),
    "tile_more": (lambda L, x: L.tile(x, (2, 1, 3)), [(2, 3)]),
    "tile_zero": (lambda L, x: x.tile((0, 2)), [(2, 3)]),
    "rot90": (lambda L, x: x.rot90(), [(2, 3)]),
    "rot90_k": (lambda L, x: L.rot90(x, -3, [2, 0]), [(2, 3, 4)]),
    "rot90_2": (lambda L, x: x.rot90(2, (1, 0)), [(2, 3)]),
    "diagonal": (lambda L, x: x.diagonal(), [(3, 4)]),
    "diagonal_off": (lambda L, x: L.diagonal(x, offset=-1, dim1=2, dim2=0), [(3, 2, 4)]),
    "diagonal_far": (lambda L, x: x.diagonal(7), [(3, 4)]),
    "diag_embed": (lambda L, x: x.diag_embed(), [(2, 3)]),
    "diag_embed_off": (lambda L, x: L.diag_embed(x, 2, 0, 2), [(2, 3)]),
    "diag_1d": (lambda L, x: x.diag(), [(3,)]),
    "diag_1d_off": (lambda L, x: L.diag(x, -2), [(3,)]),
    "diag_2d": (lambda L, x: x.diag(1), [(3, 4)]),
    "trace": (lambda L, x: x.trace(), [(3, 4)]),
    "meshgrid_ij": (lambda L, x, y: L.meshgrid(x, y, indexing="ij"), [(3,), (2,)]),
    "meshgrid_xy": (lambda L, x, y, z: L.meshgrid([x, y, z], indexing="xy"), [(3,), (2,), ()]),
    "mv": (lambda L, a, v: a.mv(v), [(2, 3), (3,)]),
    "addmm": (lambda L, c, a, b: c.addmm(a, b, beta=0.5, alpha=2), [(3,), (2, 4), (4, 3)]),
    "addmm_fn": (lambda L, c, a, b: L.addmm(c, a, b), [(2, 3), (2, 4), (4, 3)]),
    "addmv": (lambda L, c, a, v: L.addmv(c, a, v, alpha=-1), [(2,), (2, 3), (3,)]),
    "baddbmm": (lambda L, c, a, b: c.baddbmm(a, b, beta=2), [(1, 4), (2, 3, 5), (2, 5, 4)]),
    "vdot": (lambda L, a, b: a.vdot(b), [(4,), (4,)]),
    "tensordot": (lambda L, a, b: L.tensordot(a, b), [(2, 3, 4), (3, 4, 5)]),
    "tensordot_lists": (
        lambda L, a, b: L.tensordot(a, b, dims=([0, 2], [2, 1])),
        [(2, 3, 4), (5, 4, 2)],
    ),
    "tensordot_0": (lambda L, a, b: L.tensordot(a, b, 0), [(2,), (3,)]),
    "kron": (lambda L, a, b: a.kron(b), [(2, 3), (3, 2)]),
    "kron_mixed": (lambda L, a, b: L.kron(a, b), [(2,), (2, 1, 3)]),
    "cross": (lambda L, a, b: a.cross(b, dim=1), [(4, 3), (4, 3)]),
    "cross_bcast": (lambda L, a, b: L.cross(a, b, dim=-1), [(2, 1, 3), (1, 4, 3)]),
    "einsum_mm": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    "einsum_implicit": (lambda L, a, b: L.einsum("ba,cb", a, b), [(3, 2), (4, 3)]),
    "einsum_upper": (lambda L, a, b: L.einsum("Ab,ba", a, b), [(2, 3), (3, 4)]),
    "einsum_list": (lambda L, a, b: L.einsum("i j , j ->i", [a, b]), [(2, 3), (3,)]),
    "einsum_diag": (lambda L, a: L.einsum("iji->j", a), [(3, 2, 3)]),
    "einsum_trace": (lambda L, a: L.einsum("ii", a), [(4, 4)]),
    "einsum_ell": (lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b), [(2, 1, 2, 3), (3, 3, 4)]),
    "einsum_ell_mid": (lambda L, a: L.einsum("i...j->j...i", a), [(2, 3, 4, 5)]),
    "einsum_ell_impl": (lambda L, a, b: L.einsum("...i,i", a, b), [(2, 3, 4), (4,)]),
    "einsum_ell_sum": (lambda L, a: L.einsum("...ij->ij", a), [(2, 3, 4)]),
    "einsum_bcast1": (lambda L, a, b: L.einsum("bi,bj->bij", a, b), [(1, 3), (4, 2)]),
    "einsum_sum1": (lambda L, a, b: L.einsum("ij,ij->", a, b), [(1, 3), (4, 3)]),
    "einsum_four": (
        lambda L, a, b, c, d: L.einsum("ab,bc,cd,d->a", a, b, c, d),
        [(2, 3), (3, 4), (4, 5), (5,)],
    ),
    "einsum_unused": (lambda L, a, b: L.einsum("ij,kl->jk", a, b), [(2, 3), (4, 5)]),
    "einsum_scalar": (lambda L, a, b: L.einsum(",ij->ji", a, b), [(), (2, 3)]),
    "einsum_empty": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), [(2, 0), (0, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    fn, shapes = CASES[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    arrs = [np.asarray(rng.standard_normal(s)) for s in shapes]
    nk, th = _pair(arrs)
    got, want = _outs(fn(nnkit, *nk)), _outs(fn(torch, *th))
    assert len(got) == len(want)
    weights = [np.asarray(rng.standard_normal(tuple(w.shape))) for w in want]
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert g.dtype.name == str(w.dtype).replace("torch.", "")
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), atol=1e-12)
    loss_nk = sum((g * nnkit.tensor(wt)).sum() for g, wt in zip(got, weights))
    loss_th = sum((w * torch.tensor(wt)).sum() for w, wt in zip(want, weights))
    loss_nk.backward()
    loss_th.backward()
    for a, b in zip(nk, th):
        want_grad = np.zeros(a.shape) if b.grad is None else b.grad.numpy()
        got_grad = np.zeros(a.shape) if a.grad is None else a.grad.numpy()
        np.testing.assert_allclose(got_grad, want_grad, atol=1e-12)


# name -> (view function of (lib, base), whether torch returns a view of the base)
VIEWS = {
    "t": (lambda L, x: x.t(), True),
    "t_1d": (lambda L, x: x[0].t(), True),
    "view_as": (lambda L, x: x.view_as(L.zeros(4, 3)), True),
    "narrow": (lambda L, x: x.narrow(1, 1, 2), True),
    "select": (lambda L, x: x.select(0, 1), True),
    "tensor_split": (lambda L, x: x.tensor_split(2, 1)[1], True),
    "moveaxis": (lambda L, x: L.moveaxis(x.reshape(2, 2, 3), 2, 0), True),
    "diagonal": (lambda L, x: x.diagonal(1), True),
    "diagonal_neg": (lambda L, x: x.diagonal(-1, 1, 0), True),
    "diagonal_of_t": (lambda L, x: x.t().diagonal(), True),
    "rot90": (lambda L, x: x.rot90(), False),
    "roll": (lambda L, x: x.roll(1, 0), False),
    "diag": (lambda L, x: x.diag(), False),
    "tile": (lambda L, x: x.tile((1,)), False),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_memory_and_writes_show_like_torch(name):
    fn, is_view = VIEWS[name]
    arr = np.arange(12.0).reshape(3, 4)
    nb, tb = nnkit.tensor(arr), torch.tensor(arr)
    nv, tv = fn(nnkit, nb), fn(torch, tb)
    assert (tv._base is tb) == is_view  # the premise: what torch does
    assert (nv.untyped_storage() is nb.untyped_storage()) == is_view
    before = nb._version
    nv.mul_(-1.0)
    tv.mul_(-1.0)
    np.testing.assert_array_equal(nb.numpy(), tb.numpy())
    np.testing.assert_array_equal(nv.numpy(), tv.numpy())
    if is_view:
        assert nb._version == nv._version == before + 1


@pytest.mark.parametrize("name", [n for n, (_, v) in sorted(VIEWS.items()) if v])
def test_inplace_through_view_keeps_gradients(name):
    fn, _ = VIEWS[name]
    arr = np.random.default_rng(0).standard_normal((3, 4))
    nl, tl = nnkit.tensor(arr, requires_grad=True), torch.tensor(arr, requires_grad=True)
    nb, tb = nl * 1.0, tl * 1.0
    nv, tv = fn(nnkit, nb), fn(torch, tb)
    nv.mul_(3.0).add_(nv.detach() * 0 + 1.5)
    tv.mul_(3.0).add_(tv.detach() * 0 + 1.5)
    (nb * nb).sum().backward()
    (tb * tb).sum().backward()
    np.testing.assert_allclose(nl.grad.numpy(), tl.grad.numpy(), atol=1e-12)


def test_meshgrid_outputs_are_views():
    x, y = nnkit.arange(3.0), nnkit.arange(2.0)
    gx, gy = nnkit.meshgrid(x, y, indexing="ij")
    assert gx.untyped_storage() is x.untyped_storage()
    assert gy.untyped_storage() is y.untyped_storage()
    assert (
        gx.stride()
        == torch.meshgrid(torch.arange(3.0), torch.arange(2.0), indexing="ij")[0].stride()
    )


@pytest.mark.parametrize("args", [(3, 4), (4, 3, -1), (3, 3, 1), (0, 2), (2, 5, -4), (1, 1)])
def test_tri_indices_match_torch(args):
    for name in ("tril_indices", "triu_indices"):
        got, want = getattr(nnkit, name)(*args), getattr(torch, name)(*args)
        assert got.dtype == nnkit.int64 and got.requires_grad is False
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = nnkit.tril_indices(3, 3, dtype=nnkit.int32)
    assert got.dtype == nnkit.int32


def test_integer_inputs_keep_dtypes():
    a = np.arange(9).reshape(3, 3)
    for fn in (
        lambda L, x: x.trace(),
        lambda L, x: x.diagonal(),
        lambda L, x: x.rot90(),
        lambda L, x: L.einsum("ij,jk->ik", x, x),
        lambda L, x: L.kron(x, x),
        lambda L, x: x.diag_embed(),
        lambda L, x: x.roll(1),
    ):
        got, want = fn(nnkit, nnkit.tensor(a)), fn(torch, torch.tensor(a))
        assert got.dtype.name == str(want.dtype).replace("torch.", "")
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_torch_signatures_and_tensor_methods():
    x = nnkit.ones(2, 3)
    assert nnkit.select(x, dim=1, index=0).shape == (2,)
    assert nnkit.narrow(x, dim=1, start=nnkit.tensor(1), length=2).shape == (2, 2)
    assert x.tensor_split(nnkit.tensor([1]), dim=1)[1].shape == (2, 2)
    assert x.tensor_split(nnkit.tensor(2))[0].shape == (1, 3)
    assert nnkit.rot90(x, k=1, dims=[0, 1]).shape == (3, 2)
    assert nnkit.diagonal(x, offset=1, dim1=0, dim2=1).shape == (2,)
    assert nnkit.diag_embed(x, offset=0, dim1=-2, dim2=-1).shape == (2, 3, 3)
    assert nnkit.diag(x, diagonal=-1).shape == (1,)
    assert nnkit.addmm(nnkit.zeros(2, 2), x, x.t(), beta=0, alpha=1).shape == (2, 2)
    assert nnkit.cross(nnkit.ones(3), nnkit.ones(3)).shape == (3,)
    for name in (
        "hstack",
        "vstack",
        "dstack",
        "meshgrid",
        "einsum",
        "tril_indices",
        "triu_indices",
        "tensordot",
    ):
        assert not hasattr(nnkit.Tensor, name) and hasattr(nnkit, name)
    for name in (
        "t",
        "narrow",
        "select",
        "roll",
        "tile",
        "rot90",
        "diag",
        "diagonal",
        "diag_embed",
        "trace",
        "addmm",
        "kron",
        "cross",
        "vdot",
        "moveaxis",
    ):
        assert hasattr(nnkit.Tensor, name) and hasattr(nnkit, name)


def test_addmm_beta_zero_ignores_nan():
    c = nnkit.full((2, 2), float("nan"))
    out = nnkit.addmm(c, nnkit.ones(2, 3), nnkit.ones(3, 2), beta=0)
    assert out.tolist() == [[3.0, 3.0], [3.0, 3.0]]


ERRORS = [
    (lambda: nnkit.ones(2, 2, 2).t(), RuntimeError, "t"),
    (lambda: nnkit.ones(3).narrow(0, 2, 2), RuntimeError, "narrow"),
    (lambda: nnkit.ones(3).narrow(0, 5, 0), IndexError, "narrow"),
    (lambda: nnkit.ones(3).narrow(0, 0, -1), RuntimeError, "narrow"),
    (lambda: nnkit.ones(()).narrow(0, 0, 1), IndexError, "narrow"),
    (lambda: nnkit.ones(3).select(0, 3), IndexError, "select"),
    (lambda: nnkit.ones(3).select(1, 0), IndexError, "select"),
    (lambda: nnkit.ones(3).tensor_split(0), RuntimeError, "tensor_split"),
    (lambda: nnkit.ones(()).tensor_split(1), RuntimeError, "tensor_split"),
    (lambda: nnkit.hstack([]), RuntimeError, "hstack"),
    (lambda: nnkit.vstack([nnkit.ones(2), nnkit.ones(3)]), RuntimeError, "cat"),
    (lambda: nnkit.moveaxis(nnkit.ones(2, 3), (0, 1), (1,)), RuntimeError, "moveaxis"),
    (lambda: nnkit.moveaxis(nnkit.ones(2, 3), (0, 0), (1, 0)), RuntimeError, "moveaxis"),
    (lambda: nnkit.ones(2, 3).roll((1, 2), 0), RuntimeError, "roll"),
    (lambda: nnkit.ones(3).rot90(), RuntimeError, "rot90"),
    (lambda: nnkit.ones(2, 3).rot90(1, (0, -2)), RuntimeError, "rot90"),
    (lambda: nnkit.ones(2, 3).rot90(1, (0, 1, 2)), RuntimeError, "rot90"),
    (lambda: nnkit.ones(2, 3).diagonal(0, 1, -1), RuntimeError, "diagonal"),
    (lambda: nnkit.ones(3).diagonal(), IndexError, "diagonal"),
    (lambda: nnkit.ones(2, 2, 2).diag(), RuntimeError, "diag"),
    (lambda: nnkit.ones(()).diag_embed(), RuntimeError, "diag_embed"),
    (lambda: nnkit.ones(3).trace(), RuntimeError, "trace"),
    (lambda: nnkit.tril_indices(-1, 2), RuntimeError, "tril_indices"),
    (lambda: nnkit.meshgrid(nnkit.ones(2, 2)), RuntimeError, "meshgrid"),
    (lambda: nnkit.meshgrid(nnkit.ones(2), indexing="ab"), RuntimeError, "meshgrid"),
    (lambda: nnkit.meshgrid(), RuntimeError, "meshgrid"),
    (lambda: nnkit.ones(2, 3).mv(nnkit.ones(2)), RuntimeError, "mv"),
    (lambda: nnkit.ones(2, 3).mv(nnkit.ones(3, dtype=nnkit.float64)), RuntimeError, "mv"),
    (lambda: nnkit.ones(2).addmv(nnkit.ones(2, 3), nnkit.ones(2)), RuntimeError, "mv"),
    (lambda: nnkit.ones(2).addmm(nnkit.ones(2, 3), nnkit.ones(2, 2)), RuntimeError, "addmm"),
    (
        lambda: nnkit.ones(2).baddbmm(nnkit.ones(1, 2, 3), nnkit.ones(1, 2, 2)),
        RuntimeError,
        "baddbmm",
    ),
    (lambda: nnkit.ones(2, 3).mv(nnkit.ones(3, 1)), RuntimeError, "mv"),
    (lambda: nnkit.ones(2, 2, 2).addmm(nnkit.ones(2, 2), nnkit.ones(2, 2)), RuntimeError, "addmm"),
    (lambda: nnkit.ones(2).addmm(nnkit.ones(2, 2, 2), nnkit.ones(2, 2)), RuntimeError, "addmm"),
    (
        lambda: nnkit.ones(2).baddbmm(nnkit.ones(2, 2, 2), nnkit.ones(3, 2, 2)),
        RuntimeError,
        "baddbmm",
    ),
    (lambda: nnkit.ones(3).vdot(nnkit.ones(4)), RuntimeError, "vdot"),
    (lambda: nnkit.ones(3).vdot(nnkit.ones(3, dtype=nnkit.float64)), RuntimeError, "vdot"),
    (lambda: nnkit.tensordot(nnkit.ones(2, 3), nnkit.ones(2, 3), 1), RuntimeError, "tensordot"),
    (lambda: nnkit.tensordot(nnkit.ones(2, 3), nnkit.ones(2, 3), -1), RuntimeError, "tensordot"),
    (lambda: nnkit.ones(2, 4).cross(nnkit.ones(2, 4), dim=1), RuntimeError, "cross"),
    (lambda: nnkit.ones(2, 4).cross(nnkit.ones(2, 4)), RuntimeError, "cross"),
    (lambda: nnkit.einsum("ij,jk", nnkit.ones(2, 3)), ValueError, "einsum"),
    (lambda: nnkit.einsum("ij->ik", nnkit.ones(2, 3)), ValueError, "einsum"),
    (lambda: nnkit.einsum("ij->ii", nnkit.ones(2, 3)), ValueError, "einsum"),
    (lambda: nnkit.einsum("i1", nnkit.ones(2, 3)), ValueError, "einsum"),
    (lambda: nnkit.einsum("ijk", nnkit.ones(2, 3)), RuntimeError, "einsum"),
    (lambda: nnkit.einsum("ii", nnkit.ones(2, 3)), RuntimeError, "einsum"),
    (lambda: nnkit.einsum("ij,jk", nnkit.ones(2, 3), nnkit.ones(4, 2)), RuntimeError, "einsum"),
    (lambda: nnkit.einsum("i..j", nnkit.ones(2, 3)), ValueError, "einsum"),
    (
        lambda: nnkit.einsum("i,i", nnkit.ones(2), nnkit.ones(2, dtype=nnkit.float64)),
        RuntimeError,
        "einsum",
    ),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_name_the_op(k):
    fn, exc, op = ERRORS[k]
    with pytest.raises(exc, match=op):
        fn()
