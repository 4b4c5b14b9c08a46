"""Every public method of the Mat interface is exercised, against NumPy, on each backend.

Calls go through a recording subclass of the backend's Mat class, so the test knows
which methods (and classmethods and properties) ran; a Mat method that nothing here
reaches fails the coverage assertion, naming it. The neural-network kernels
(``NNKernelsMixin``, ``WinogradKernelsMixin``) are reached by running the nn op table
through the same recorder.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import nnkit
from nnkit.backends.mat import ArrayMat
from nnkit.backends.nn_kernels import NNKernelsMixin
from nnkit.backends.storage import Storage
from nnkit.backends.winograd_kernels import WinogradKernelsMixin

_device_mod = importlib.import_module("nnkit.backends.device")  # the package re-binds 'device'
_DATA_ATTRS = {"array", "storage", "xp", "device", "multi_device"}


def _public(cls) -> set:
    return {n for n in vars(cls) if not n.startswith("_") and n not in _DATA_ATTRS}


def _recording(mat_cls, seen: set):
    """A subclass of ``mat_cls`` that records every public attribute looked up."""

    class Meta(type(mat_cls)):
        def __getattribute__(cls, name):
            if name[0] != "_":
                seen.add(name)
            return super().__getattribute__(name)

    def __getattribute__(self, name):
        if name[0] != "_":
            seen.add(name)
        return object.__getattribute__(self, name)

    return Meta(
        f"Recording{mat_cls.__name__}",
        (mat_cls,),
        {"__slots__": (), "__getattribute__": __getattribute__},
    )


def _mat_class(device):
    return _device_mod.get_mat_class(nnkit.device(device))


def _h(m):
    return np.asarray(m.to_numpy())


def _close(m, want, **kw):
    got = _h(m)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, **({"rtol": 1e-6, "atol": 1e-12} | kw))


UNARY = {
    "neg": np.negative,
    "exp": np.exp,
    "expm1": np.expm1,
    "log": np.log,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda a: 1 / np.sqrt(a),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
    "softplus": lambda a: np.logaddexp(a, 0),
    "relu": lambda a: np.maximum(a, 0),
    "abs": np.abs,
    "sign": np.sign,
    "reciprocal": np.reciprocal,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "trunc": np.trunc,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
}
BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "floordiv": np.floor_divide,
    "remainder": np.remainder,
    "fmod": np.fmod,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
LOGICAL = {
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
}
REDUCE = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "amax": np.max,
    "amin": np.min,
    "argmax": np.argmax,
    "argmin": np.argmin,
    "any": np.any,
    "all": np.all,
}


def _exercise(M, dev):
    rng = np.random.default_rng(0)
    an = rng.uniform(0.5, 2.0, (2, 3))
    bn = rng.uniform(0.5, 2.0, (2, 3))
    a, b = M.from_host(an.copy()), M.from_host(bn)

    # creation
    _close(M.wrap(M.from_host(an).array), an)
    _close(M.from_data([[1, 2], [3, 4]], dtype=np.float32), [[1, 2], [3, 4]])
    assert M.from_host(an, copy=True).storage is not a.storage
    _close(M.zeros((2,), np.float32), [0, 0])
    _close(M.ones((2,), np.float32), [1, 1])
    _close(M.full((2,), 7.0, np.float32), [7, 7])
    assert M.empty((2, 3), np.float64).shape == (2, 3)
    _close(M.arange(0, 6, 2, np.int64), [0, 2, 4])
    _close(M.linspace(0.0, 1.0, 3, np.float64), [0, 0.5, 1])
    _close(M.eye(2, 3, np.float64), np.eye(2, 3))
    _close(M.scalar(2.5, np.float64), 2.5)
    g = np.random.default_rng(1)
    assert M.rand((3,), np.float32, g).dtype == np.float32
    assert M.randn((3,), np.float64, g).shape == (3,)
    assert set(_h(M.randint(0, 3, (20,), np.int64, g)).tolist()) <= {0, 1, 2}
    u = _h(M.uniform(-1.0, 1.0, (50,), np.float64, g))
    assert (u >= -1).all() and (u < 1).all()
    assert set(_h(M.bernoulli(0.5, (20,), np.float32, g)).tolist()) <= {0.0, 1.0}

    # properties and conversions
    assert a.shape == (2, 3) and a.ndim == 2 and a.size == 6 and a.nbytes == 48
    assert a.dtype == np.float64 and a.strides == (3, 1)
    assert a.is_contiguous() and not a.transpose((1, 0)).is_contiguous()
    assert a.transpose((1, 0)).is_view_of(a) and not a.copy().is_view_of(a)
    assert not a.transpose((1, 0)).is_unaliased()  # views a's memory
    c = a.copy()
    assert c.is_unaliased() or dev.type != "cpu"  # simulated arrays are views
    assert c.alias().is_view_of(c) and not c.is_unaliased()  # handed out a Storage
    assert a.kind == "f" and M.scalar(3, np.int64).kind == "i" and a.itemsize == 8
    assert a.same_kind_as(a.copy()) and not a.same_kind_as(a.transpose((1, 0)))
    assert not a.same_kind_as(a.astype(np.float32))
    d = a.copy()
    assert d.serial < a.copy().serial  # creation stamps grow
    assert d.accumulate_(a) is d and d.version == 0  # no Storage made to count it
    _close(d, 2 * an)
    assert a.copy().version == 0
    assert M.scalar(3, np.int64).item() == 3 and a.tolist() == an.tolist()
    assert a.astype(np.float64) is a and a.astype(np.float32).dtype == np.float32
    _close(a.copy(), an)
    t = a.transpose((1, 0))
    assert t.contiguous().is_contiguous() and a.contiguous() is a

    # elementwise
    for name, f in UNARY.items():
        x = a if name not in ("floor", "ceil", "round", "trunc", "sign") else M.from_host(an - 1)
        ref = f(an if x is a else an - 1)
        _close(getattr(x, name)(), ref)
    _close(a.round(1), np.round(an, 1))
    _close(a.erf(), [[__import__("math").erf(v) for v in row] for row in an])
    assert a.all_finite() and not M.from_host(np.array([1.0, np.inf])).all_finite()
    for name, f in BINARY.items():
        _close(getattr(a, name)(b), f(an, bn))
    pn, qn = rng.random((2, 3)) > 0.5, rng.random((2, 3)) > 0.5
    p, q = M.from_host(pn), M.from_host(qn)
    for name, f in LOGICAL.items():
        _close(getattr(p, name)(q), f(pn, qn))
    _close(p.logical_not(), ~pn)
    _close(M.from_host(np.array([1, 2])).invert(), np.invert(np.array([1, 2])))
    # torch's conventions where NumPy differs: sign(NaN) is 0; an integer to a negative
    # integer power is 1 / a**|b| truncated (NumPy raises)
    _close(M.from_host(np.array([np.nan, -0.5, 0.0, 2.0])).sign(), [0.0, -1.0, 0.0, 1.0])
    ib, ie = np.array([0, 1, -1, -1, 2, -3, 3]), np.array([-1, -2, -3, -2, -1, -1, 2])
    got = M.from_host(ib).pow(M.from_host(ie))
    assert got.dtype == np.int64
    _close(got, [0, 1, -1, 1, 0, 0, 9])
    _close(p.where(a, b), np.where(pn, an, bn))
    _close(a.clip(0.8, 1.5), np.clip(an, 0.8, 1.5))
    assert a.allclose(M.from_host(an + 1e-9)) and not a.allclose(b)
    assert a.array_equal(M.from_host(an.copy())) and not a.array_equal(b)
    yn = rng.random((2, 3))
    y = M.from_host(yn)
    _close(a.tanh_grad(y), an * (1 - yn * yn))
    _close(a.sigmoid_grad(y), an * yn * (1 - yn))
    _close(a.relu_grad(M.from_host(yn - 0.5)), an * (yn > 0.5))

    # reductions
    for name, f in REDUCE.items():
        _close(getattr(a, name)(), f(an))
        _close(getattr(a, name)(axis=1, keepdims=True), f(an, axis=1, keepdims=True))
    _close(M.from_host(np.array([1, 2], dtype=np.int32)).sum(dtype=np.int64), 3)
    _close(a.cumsum(1), np.cumsum(an, 1))
    _close(a.logsumexp(1), np.log(np.exp(an).sum(1, keepdims=True)))
    lse = np.log(np.exp(an).sum(1, keepdims=True))
    _close(
        M.from_host(np.full((2, 1), 2.0)).logsumexp_grad(a, a.logsumexp(1)), 2 * np.exp(an - lse)
    )
    _close(
        M.from_host(an.sum(1)).unreduce((2, 1), (2, 3), 0.5),
        np.broadcast_to(an.sum(1, keepdims=True) * 0.5, (2, 3)),
    )
    vals, idx = a.sort(axis=1, descending=True)
    _close(vals, -np.sort(-an, axis=1))
    _close(idx, np.argsort(-an, axis=1, kind="stable"))

    # linear algebra
    _close(a.matmul(b.transpose((1, 0))), an @ bn.T)
    _close(a.matmul(b, tb=True), an @ bn.T)
    _close(a.matmul(b, ta=True), an.T @ bn)
    _close(a.matmul(b.transpose((1, 0)), ta=True, tb=True), an.T @ bn)
    _close(a.tensordot(b, ((1,), (1,))), np.tensordot(an, bn, ((1,), (1,))))
    _close(a.einsum("ij,kj->ik", b), np.einsum("ij,kj->ik", an, bn))

    # views: every one shares the Storage
    for v, want in (
        (a.reshape((3, 2)), an.reshape(3, 2)),
        (a.transpose((1, 0)), an.T),
        (a.swapaxes(0, 1), an.T),
        (a.getitem((slice(None), 1)), an[:, 1]),
        (a.getitem((0, slice(None, None, 2))), an[0, ::2]),
        (M.from_host(an[:1]).expand((4, 3)), np.broadcast_to(an[:1], (4, 3))),
        (a.as_strided((2, 2), (1, 1)), np.lib.stride_tricks.as_strided(an, (2, 2), (8, 8))),
    ):
        _close(v, want)
    for v in (
        a.reshape((3, 2)),
        a.transpose((1, 0)),
        a.swapaxes(0, 1),
        a.getitem((slice(None), 1)),
        a.as_strided((2,), (1,)),
    ):
        assert v.storage is a.storage
    flipped = a.flip(0)  # a contiguous copy, as torch's flip
    _close(flipped, an[::-1])
    assert flipped.storage is not a.storage and flipped.is_contiguous()
    noncontig = a.transpose((1, 0)).reshape((6,))  # needs a copy
    assert noncontig.storage is not a.storage
    _close(noncontig, an.T.reshape(6))
    _close(a.diagonal(), np.diagonal(an))

    # indexing
    assert M.is_basic_index((0, slice(None))) and not M.is_basic_index(
        (M.from_host(np.array([0])),)
    )
    ix = M.from_host(np.array([1, 0, 1]))
    _close(a.getitem((ix,)), an[[1, 0, 1]])
    out = a.index_put((ix,), M.from_host(np.ones((3, 3))), accumulate=True)
    want = an.copy()
    np.add.at(want, [1, 0, 1], 1.0)
    _close(out, want)
    _close(a.index_put((0,), M.scalar(9.0, np.float64)), np.vstack([np.full(3, 9.0), an[1]]))
    _close(a.index_put((0,), M.from_host(np.ones(3)), accumulate=True), an + [[1], [0]])
    acc = M.from_host(np.zeros((2, 3)))  # in place: repeated advanced indices add up
    version = acc.storage.version
    assert acc.index_add_((ix,), M.from_host(np.ones((3, 3)))) is acc
    _close(acc, np.array([[1.0] * 3, [2.0] * 3]))
    _close(acc.index_add_((1, slice(1, None)), M.from_host(np.ones(2))), [[1, 1, 1], [2, 3, 3]])
    assert acc.storage.version == version + 2
    nz = M.from_host(np.array([[0, 1], [2, 0]])).nonzero()
    assert [_h(m).tolist() for m in nz] == [[0, 1], [1, 0]]
    _close(a.take(M.from_host(np.array([2, 0])), 1), an[:, [2, 0]])
    gi = np.array([[2, 0], [1, 1]])
    _close(a.take_along_axis(M.from_host(gi), 1), np.take_along_axis(an, gi, 1))
    _close(a.gather(1, M.from_host(gi)), np.take_along_axis(an, gi, 1))
    sa = a.scatter_add(1, M.from_host(gi), M.from_host(np.ones((2, 3))))
    want = an.copy()
    np.add.at(want, (np.array([[0, 0], [1, 1]]), gi), 1.0)
    _close(sa, want)
    _close(M.from_host(np.ones((2, 2))).gather_grad((2, 3), 1, M.from_host(gi)), want - an)
    ia = a.index_add(1, M.from_host(np.array([0, 0])), M.from_host(np.ones((2, 2))))
    _close(ia, an + [[2, 0, 0], [2, 0, 0]])
    _close(a.repeat(2, 0), np.repeat(an, 2, 0))
    _close(a.tile((1, 2)), np.tile(an, (1, 2)))
    _close(a.tril(0), np.tril(an)) and _close(a.triu(1), np.triu(an, 1))
    _close(a.triu(1), np.triu(an, 1))
    _close(a.pad(((1, 0), (0, 1)), 5.0), np.pad(an, ((1, 0), (0, 1)), constant_values=5.0))
    _close(a.pad(((1, 1), (0, 0)), mode="edge"), np.pad(an, ((1, 1), (0, 0)), mode="edge"))
    _close(M.concatenate([a, b], 0), np.concatenate([an, bn], 0))
    _close(M.stack([a, b], 1), np.stack([an, bn], 1))
    assert M.result_type(np.float32, np.int64) == np.result_type(np.float32, np.int64)

    # in place: write into the receiver's memory (and its views'), bump the version
    w = M.from_host(an.copy())
    view = w.transpose((1, 0))
    expect = an.copy()
    steps = [
        (
            lambda: w.setitem((0, 1), M.scalar(5.0, np.float64)),
            lambda e: e.__setitem__((0, 1), 5.0),
        ),
        (lambda: w.iadd(b), lambda e: e.__iadd__(bn)),
        (lambda: w.isub(b), lambda e: e.__isub__(bn)),
        (lambda: w.imul(b), lambda e: e.__imul__(bn)),
        (lambda: w.idiv(b), lambda e: e.__itruediv__(bn)),
        (lambda: w.iaxpy(2.0, b), lambda e: e.__iadd__(2.0 * bn)),
        (lambda: w.iclip(1.0, 3.0), lambda e: np.clip(e, 1.0, 3.0, out=e)),
        (
            lambda: w.copy_(M.from_host(np.arange(3.0))),
            lambda e: e.__setitem__(Ellipsis, np.arange(3.0)),
        ),
        (lambda: w.fill_(1.5), lambda e: e.fill(1.5)),
    ]
    for k, (do, ref) in enumerate(steps, 1):
        assert do() is w
        ref(expect)
        assert w.storage.version == k and view.storage.version == k
        _close(w, expect)
        _close(view, expect.T)

    # devices
    assert a.to_device(dev) is a
    back = M.from_foreign(a, dev)
    np.testing.assert_allclose(back.to_numpy(), an)
    assert back.storage is not a.storage
    assert "shape=(2, 3)" in repr(a)


def test_every_public_mat_method_is_exercised(device):
    seen: set = set()
    base = _mat_class(device)
    M = _recording(base, seen)
    _exercise(M, nnkit.device(device))
    from nnkit.backends.creation import MatCreationMixin
    from nnkit.backends.index_kernels import IndexKernelsMixin

    common = _public(ArrayMat) | _public(MatCreationMixin) | _public(IndexKernelsMixin)
    required = common | {n for n in _public(type(base)) if n in common}
    missing = sorted(required - seen)
    assert not missing, f"Mat methods not exercised by this test: {missing}"


def test_nn_kernels_are_exercised_by_the_nn_op_table(device, monkeypatch):
    try:
        from tests.optable_nn import OPS as NN_OPS
    except ImportError:
        pytest.skip("tests/optable_nn.py (the nn op table) is not there yet")
    from tests.autograd.test_op_table import _call, _make_args

    seen: set = set()
    base = _mat_class(device)
    M = _recording(base, seen)
    monkeypatch.setitem(_device_mod._mat_classes, nnkit.device(device).type, M)
    for spec in NN_OPS:
        rng = np.random.default_rng(0)
        for sample in spec.samples(rng):
            try:  # a failing row is the op table's to report; here only coverage counts
                args = _make_args(sample, device, nnkit.float64)
                out = _call(spec, sample, args)
                outs = [
                    o
                    for o in (out if isinstance(out, (tuple, list)) else [out])
                    if isinstance(o, nnkit.Tensor) and o.requires_grad
                ]
                ins = [a for a in args if isinstance(a, nnkit.Tensor) and a.requires_grad]
                if outs and ins:  # first and second derivatives (double-backward kernels)
                    gs = nnkit.autograd.grad(
                        [(o * o).sum() for o in outs], ins, create_graph=True, allow_unused=True
                    )
                    gs = [g for g in gs if g is not None and g.requires_grad]
                    if gs:
                        nnkit.autograd.backward([(g * g).sum() for g in gs])
            except Exception:
                continue
    try:  # pooling indices are an output option rather than a table row
        x = nnkit.randn(1, 1, 4, 4, device=device)
        nnkit.nn.functional.max_pool2d(x, 2, return_indices=True)
    except Exception:
        pass
    missing = sorted((_public(NNKernelsMixin) | _public(WinogradKernelsMixin)) - seen)
    assert not missing, f"NN kernels no nn op-table row reaches: {missing}"


def test_views_share_storage_and_version(device):
    M = _mat_class(device)
    a = M.from_host(np.arange(6.0).reshape(2, 3))
    views = [
        a.reshape((3, 2)),
        a.transpose((1, 0)),
        a.getitem((slice(None), 1)),
        a.expand((2, 2, 3)),
        a.swapaxes(0, 1),
    ]
    assert isinstance(a.storage, Storage)
    assert all(v.storage is a.storage for v in views)
    views[1].setitem((0, 1), M.scalar(-1.0, np.float64))
    assert a.to_numpy()[1, 0] == -1.0
    assert all(v.storage.version == 1 for v in views)
    assert a.storage.device == nnkit.device(device)
    assert a.storage.nbytes == 48
