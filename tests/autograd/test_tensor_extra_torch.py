"""Edge cases of the tensor-level ops of issue 13 against PyTorch: strided views
(``as_strided``, ``Tensor.unfold``) share memory and version counters, overlapping
windows' gradients, histogram edges, ``index_reduce``, ``resize_``, the strided
allocations and the in-place random samplers (seeded, statistics only)."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")


def _pair(a, requires_grad=False):
    a = np.asarray(a, dtype=np.float64)
    return (
        torch.tensor(a, requires_grad=requires_grad),
        nnkit.tensor(a, requires_grad=requires_grad),
    )


def _close(n, t, **kw):
    np.testing.assert_allclose(n.detach().numpy(), t.detach().numpy(), **kw)


# ----------------------------------------------------------------- as_strided
def test_as_strided_is_a_view_sharing_the_version_counter():
    x = nnkit.arange(6.0)
    v = x.as_strided((2, 2), (1, 2), 1)
    v.mul_(10)
    assert x.tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 5.0]
    assert x._version == v._version == 1
    assert v.storage_offset() == 1 and v.stride() == (1, 2)


def test_as_strided_overlapping_windows_gradient_matches_torch():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(8)
    g = rng.standard_normal((3, 4))
    tx, nx = _pair(a, True)
    torch.as_strided(tx, (3, 4), (2, 1)).backward(torch.tensor(g))
    nnkit.as_strided(nx, (3, 4), (2, 1)).backward(nnkit.tensor(g))
    _close(nx.grad, tx.grad)


def test_as_strided_of_an_overlapping_input_shares_the_gradient_like_torch():
    tb, nb = _pair([1.0, 2.0, 3.0], True)
    g = np.arange(4.0).reshape(2, 2)
    torch.as_strided(tb.expand(2, 3), (2, 2), (1, 1)).backward(torch.tensor(g))
    nnkit.as_strided(nb.expand(2, 3), (2, 2), (1, 1)).backward(nnkit.tensor(g))
    _close(nb.grad, tb.grad)


def test_as_strided_default_offset_is_the_views_and_bounds_are_checked():
    t = torch.arange(10.0)[4:]
    n = nnkit.arange(10.0)[4:]
    assert n.storage_offset() == t.storage_offset() == 4
    _close(n.as_strided((2, 2), (1, 2)), t.as_strided((2, 2), (1, 2)))
    _close(n.as_strided((2,), (3,), 0), t.as_strided((2,), (3,), 0))
    with pytest.raises(RuntimeError, match="out of bounds"):
        n.as_strided((3,), (4,), 2)
    with pytest.raises(RuntimeError, match="negative strides"):
        n.as_strided((2,), (-1,))


def test_inplace_on_as_strided_view_while_recording_reaches_the_base_gradient():
    tx, nx = _pair(np.arange(1.0, 7.0), True)
    outs = []
    for lib, x in ((torch, tx), (nnkit, nx)):
        y = x * 1
        lib.as_strided(y, (2,), (3,), 1).mul_(5)
        (y * y).sum().backward()
        outs.append(y)
    _close(nx.grad, tx.grad)
    _close(outs[1], outs[0])


# --------------------------------------------------------------------- unfold
def test_unfold_is_a_view_and_its_overlapping_gradient_matches_torch():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 7))
    tx, nx = _pair(a, True)
    tu, nu = tx.unfold(1, 3, 2), nx.unfold(1, 3, 2)
    assert nu.shape == tuple(tu.shape) and nu.stride() == tu.stride()
    g = rng.standard_normal(tuple(tu.shape))
    tu.backward(torch.tensor(g))
    nu.backward(nnkit.tensor(g))
    _close(nx.grad, tx.grad)
    base = nnkit.zeros(5)
    base.unfold(0, 2, 2).fill_(1.0)
    assert base.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0] and base._version == 1


def test_unfold_edge_cases_match_torch():
    _close(nnkit.tensor(3.0).unfold(0, 1, 1), torch.tensor(3.0).unfold(0, 1, 1))
    _close(nnkit.arange(4.0).unfold(0, 0, 1), torch.arange(4.0).unfold(0, 0, 1))
    with pytest.raises(RuntimeError, match="maximum size"):
        nnkit.arange(4.0).unfold(0, 5, 1)
    with pytest.raises(RuntimeError, match="step"):
        nnkit.arange(4.0).unfold(0, 2, 0)


# ---------------------------------------------------------------- histograms
def test_histogram_edges_weights_and_density_match_torch():
    a = np.array([0.0, 1.0, 1.5, 2.0, 3.0, -1.0, 4.0])
    w = np.arange(1.0, 8.0)
    ta, na = _pair(a)
    for bins in (4, [0.0, 1.0, 2.0, 3.0]):
        for kw in ({}, {"range": (0.0, 3.0)}, {"density": True}):
            if not isinstance(bins, int) and "range" in kw:
                continue
            for wt in (None, w):
                tb = bins if isinstance(bins, int) else torch.tensor(bins, dtype=torch.float64)
                nbn = bins if isinstance(bins, int) else nnkit.tensor(bins, dtype=nnkit.float64)
                th = torch.histogram(ta, tb, weight=None if wt is None else torch.tensor(wt), **kw)
                nh = nnkit.histogram(na, nbn, weight=None if wt is None else nnkit.tensor(wt), **kw)
                _close(nh.hist, th.hist)
                _close(nh.bin_edges, th.bin_edges)


def test_histogram_constant_and_empty_inputs_match_torch():
    for a in ([2.0, 2.0], []):
        th = torch.histogram(torch.tensor(a), 3)
        nh = nnkit.histogram(nnkit.tensor(a), 3)
        _close(nh.hist, th.hist)
        _close(nh.bin_edges, th.bin_edges)
    with pytest.raises(RuntimeError, match="floating"):
        nnkit.histogram(nnkit.tensor([1, 2]), 2)


def test_histogramdd_matches_torch():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((50, 2))
    ta, na = _pair(a)
    th = torch.histogramdd(ta, [3, 4], range=[-1.0, 1.0, -2.0, 2.0], density=True)
    nh = nnkit.histogramdd(na, [3, 4], range=[-1.0, 1.0, -2.0, 2.0], density=True)
    _close(nh.hist, th.hist)
    for ne, te in zip(nh.bin_edges, th.bin_edges):
        _close(ne, te)
    edges = [np.array([-1.0, 0.0, 2.0]), np.array([-3.0, 0.5, 1.0])]
    th = torch.histogramdd(ta, [torch.tensor(e) for e in edges])
    nh = nnkit.histogramdd(na, [nnkit.tensor(e) for e in edges])
    _close(nh.hist, th.hist)


# ------------------------------------------------------- index_reduce and co.
@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_matches_torch_with_repeated_indices(reduce, include_self):
    rng = np.random.default_rng(3)
    a, s = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    idx = [0, 2, 0, 0, 3]
    outs = []
    for lib in (torch, nnkit):
        x = lib.tensor(a, requires_grad=True)
        src = lib.tensor(s, requires_grad=True)
        out = lib.index_reduce(x, 0, lib.tensor(idx), src, reduce, include_self=include_self)
        out.backward(lib.tensor(np.arange(12.0).reshape(4, 3)))
        outs.append((out, x.grad, src.grad))
    for t, n in zip(*outs):
        _close(n, t)


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_reduce_in_place_matches_torch_and_records():
    rng = np.random.default_rng(6)
    a, s = rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    outs = []
    for lib in (torch, nnkit):
        x = lib.tensor(a, requires_grad=True)
        src = lib.tensor(s, requires_grad=True)
        y = x * 1
        v = y._version
        y.index_reduce_(0, lib.tensor([2, 0]), src, "prod")
        assert y._version > v
        (y * y).sum().backward()
        outs.append((y, x.grad, src.grad))
    for t, n in zip(*outs):
        _close(n, t)


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_integer_index_reduce_mean_rounds_like_torch():
    t = torch.index_reduce(
        torch.tensor([1, 7]), 0, torch.tensor([0, 0]), torch.tensor([2, 3]), "mean"
    )
    n = nnkit.index_reduce(
        nnkit.tensor([1, 7]), 0, nnkit.tensor([0, 0]), nnkit.tensor([2, 3]), "mean"
    )
    assert n.tolist() == t.tolist()


def test_combinations_unravel_index_gradient_renorm_match_torch():
    for r, rep in ((2, False), (3, True), (0, False), (4, False)):
        _close(
            nnkit.combinations(nnkit.tensor([1.0, 2.0, 3.0]), r, rep),
            torch.combinations(torch.tensor([1.0, 2.0, 3.0]), r, rep),
        )
    idx = [[-1, 0, 7], [23, 5, 11]]
    for nt, tt in zip(
        nnkit.unravel_index(nnkit.tensor(idx), (2, 3, 4)),
        torch.unravel_index(torch.tensor(idx), (2, 3, 4)),
    ):
        assert nt.tolist() == tt.tolist()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 5))
    coords = torch.tensor([0.0, 1.0, 1.5, 3.0], dtype=torch.float64)
    for kw in ({"edge_order": 2}, {"spacing": (coords,), "dim": 0, "edge_order": 2}):
        nkw = dict(kw)
        if "spacing" in kw:
            nkw["spacing"] = (nnkit.tensor(coords.numpy()),)
        for n, t in zip(
            nnkit.gradient(nnkit.tensor(a), **nkw), torch.gradient(torch.tensor(a), **kw)
        ):
            _close(n, t)
    tx, nx = _pair(a, True)
    torch.renorm(tx, 1, 1, 1.5).sum().backward()
    nnkit.renorm(nx, 1, 1, 1.5).sum().backward()
    _close(nx.grad, tx.grad)


def test_as_strided_scatter_follows_a_transposed_inputs_memory_like_torch():
    a = np.arange(12.0).reshape(3, 4)
    src = np.array([[100.0, 200.0], [300.0, 400.0]])
    t = torch.as_strided_scatter(torch.tensor(a).t(), torch.tensor(src), (2, 2), (1, 4), 1)
    n = nnkit.as_strided_scatter(nnkit.tensor(a).t(), nnkit.tensor(src), (2, 2), (1, 4), 1)
    _close(n, t)
    assert n.stride() == t.stride()


def test_diagonal_and_as_strided_scatter_refuse_wrong_src_shapes():
    with pytest.raises(RuntimeError, match="diagonal_scatter"):
        nnkit.diagonal_scatter(nnkit.zeros(3, 3), nnkit.zeros(2))
    with pytest.raises(RuntimeError, match="as_strided_scatter"):
        nnkit.as_strided_scatter(nnkit.zeros(4), nnkit.zeros(3), (2,), (1,))


# ----------------------------------------------------- allocation, conversion
def test_resize_keeps_the_leading_data_and_refuses_grad():
    x = nnkit.arange(6.0)
    x.resize_(2, 2)
    assert x.tolist() == torch.arange(6.0).resize_(2, 2).tolist()
    y = nnkit.arange(3.0).resize_(2, 3)
    assert y.shape == (2, 3) and y.reshape(-1)[:3].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="requires grad"):
        nnkit.zeros(2, requires_grad=True).resize_(4)


def test_strided_allocations_and_conversions_match_torch():
    assert nnkit.empty_strided((2, 3), (1, 2)).stride() == (1, 2)
    assert nnkit.zeros(1).new_empty_strided((2, 2), (0, 1)).stride() == (0, 1)
    for layout in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
        n = nnkit.empty_permuted((2, 3, 4), layout)
        t = torch.empty_permuted((2, 3, 4), layout)
        assert n.shape == tuple(t.shape) and n.stride() == t.stride()
    n = nnkit.zeros(2, dtype=nnkit.int64).new_empty(3)
    assert n.shape == (3,) and n.dtype == nnkit.int64
    a = [1.7, -2.5, 100.0]
    for name in ("char", "short"):
        assert (
            getattr(nnkit.tensor(a), name)().tolist() == getattr(torch.tensor(a), name)().tolist()
        )
    assert nnkit.tensor([1.7, 200.0]).byte().dtype == nnkit.uint8
    tx, nx = _pair([1.0, 2.0, 4.0], True)
    tx.__rdiv__(3.0).sum().backward()
    nx.__rdiv__(3.0).sum().backward()
    _close(nx.grad, tx.grad)


# ------------------------------------------------------------ random samplers
@pytest.mark.parametrize(
    "name,args,mean",
    [
        ("exponential_", (2.0,), 0.5),
        ("geometric_", (0.25,), 4.0),
        ("log_normal_", (0.0, 0.5), float(np.exp(0.125))),
        ("uniform_", (1.0, 3.0), 2.0),
    ],
)
def test_inplace_samplers_are_seeded_and_have_torchs_distribution(name, args, mean):
    nnkit.manual_seed(5)
    a = getattr(nnkit.empty(20000, dtype=nnkit.float64), name)(*args)
    nnkit.manual_seed(5)
    b = getattr(nnkit.empty(20000, dtype=nnkit.float64), name)(*args)
    assert nnkit.equal(a, b)
    t = getattr(torch.empty(20000, dtype=torch.float64), name)(*args)
    assert abs(a.mean().item() - mean) < 0.05 * mean
    assert abs(t.mean().item() - mean) < 0.05 * mean


def test_cauchy_and_generators_and_refusals():
    x = nnkit.empty(20001).cauchy_(1.0, 2.0, generator=np.random.default_rng(0))
    y = nnkit.empty(20001).cauchy_(1.0, 2.0, generator=np.random.default_rng(0))
    assert nnkit.equal(x, y) and x._version == 1
    q = x.quantile(nnkit.tensor([0.25, 0.5, 0.75])).tolist()  # median 1, quartiles 1 -+ 2
    assert abs(q[1] - 1.0) < 0.15 and abs(q[0] + 1.0) < 0.2 and abs(q[2] - 3.0) < 0.2
    g = nnkit.zeros(1000, dtype=nnkit.int64).geometric_(0.5)
    assert g.dtype == nnkit.int64 and int(g.min()) >= 1
    with pytest.raises(RuntimeError, match="lambda"):
        nnkit.empty(2).exponential_(0.0)
    with pytest.raises(RuntimeError, match="floating"):
        nnkit.zeros(2, dtype=nnkit.int64).cauchy_()
    with pytest.raises(RuntimeError, match="p to be"):
        nnkit.empty(2).geometric_(1.5)


def test_sampler_on_a_non_leaf_while_recording_gives_a_zero_gradient():
    w = nnkit.ones(3, requires_grad=True)
    y = w * 2
    y.exponential_()
    (y * 3).sum().backward()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]


def test_the_ops_follow_the_inputs_device(device):
    x = nnkit.arange(8.0, device=device, requires_grad=True)
    y = x.as_strided((3, 2), (1, 1), 1) * 1 + x.unfold(0, 2, 3).sum() * 0
    y.sum().backward()
    assert y.device == x.device == x.grad.device
    assert x.grad.cpu().tolist() == [0.0, 1.0, 2.0, 2.0, 1.0, 0.0, 0.0, 0.0]
    h = nnkit.histogram(x.detach(), 4)
    assert h.hist.device == x.device and h.hist.cpu().tolist() == [2.0, 2.0, 2.0, 2.0]
    hd = nnkit.histogramdd(x.detach().reshape(4, 2), [2, 2], density=True)
    assert hd.hist.device == x.device
    e = nnkit.empty(100, device=device).exponential_(1.0)
    assert e.device == x.device and bool((e >= 0).all())
    r = nnkit.index_reduce(x.detach(), 0, nnkit.tensor([0, 0], device=device), x[:2], "amax")
    assert r.device == x.device
    assert nnkit.empty_strided((2, 2), (1, 2), device=device).device == x.device
