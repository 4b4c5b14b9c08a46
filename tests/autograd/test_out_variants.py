"""PyTorch's ``out=`` keyword (``nnkit/autograd/ops/out_variants.py``), against torch.

A driver runs every OpInfo entry with ``supports_out`` that nnkit has on a few of its
samples with four kinds of ``out`` (empty, non-empty of another shape, another dtype,
and inputs that require grad) and compares what nnkit does with what torch does: the
values, dtypes and shapes written, that ``out`` itself is returned, the resize warning
and the errors. Hand-written cases cover the rest: overlap, views, the version counter,
factories, tuple outputs and the exact error messages.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np
import pytest

import nnkit
import nnkit.linalg
import nnkit.nn.functional as F
import nnkit.special
from nnkit.autograd.ops import out_variants as ov

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # op_db imports it

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

from tests.autograd import opinfo_map as om  # noqa: E402

NAMESPACES = {"": nnkit, "linalg": nnkit.linalg, "special": nnkit.special, "nn.functional": F}
ALT = {
    torch.float64: torch.float32,
    torch.float32: torch.float64,
    torch.int64: torch.float32,
    torch.bool: torch.int64,
    torch.int32: torch.int64,
}


def _nk_dtype(dt):
    return om._dtype_to_nnkit(dt)


def _wrapped(op):
    """The nnkit function an OpInfo entry resolves to, if it is one with ``out=``."""
    group, _, short = op.name.rpartition(".")
    ns = NAMESPACES.get(group)
    fn = getattr(ns, short, None) if ns is not None else None
    return fn if getattr(fn, "_out_variant", False) else None


ENTRIES = {
    om.entry_key(op): op
    for op in op_db
    if op.supports_out and om.resolve(op) is not None and _wrapped(op) is not None
}


def test_every_listed_op_is_wrapped_in_its_namespace():
    for group, names in ov.OUT_OPS.items():
        for name in names:
            fn = getattr(NAMESPACES[group], name)
            assert fn._out_variant, (group, name)
            assert "out:" in fn.__doc__ and "out=None" in str(inspect.signature(fn))
    # aliases share one wrapper; the ops package and the Tensor methods stay unwrapped
    assert nnkit.linalg.matmul is nnkit.matmul and nnkit.special.expit is nnkit.sigmoid
    assert F.softplus is nnkit.softplus
    assert not hasattr(nnkit.autograd.ops.add, "_out_variant")
    assert nnkit.Tensor.add is nnkit.autograd.ops.add


def test_the_driver_covers_the_opinfo_list():
    assert len(ENTRIES) >= 240, len(ENTRIES)


# ------------------------------------------------------------------ the OpInfo driver


def _torch_out(t, make):
    if isinstance(t, torch.Tensor):
        return make(t, 0)
    return (
        type(t)(make(x, i) for i, x in enumerate(t))
        if isinstance(t, list)
        else tuple(make(x, i) for i, x in enumerate(t))
    )


def _to_nnkit_out(tout):
    def conv(t):
        # (a clone: .numpy() would make torch's storage non-resizable)
        return nnkit.tensor(t.clone().numpy(), dtype=_nk_dtype(t.dtype))

    if isinstance(tout, torch.Tensor):
        return conv(tout)
    return type(tout)(conv(t) for t in tout)


def _outcome(call):
    """``('ok', result, warnings)`` or ``('error', exception type, message)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = call()
        except Exception as e:  # noqa: BLE001 - compared with torch's outcome
            return "error", type(e), str(e)
    resized = [w for w in caught if "resized" in str(w.message)]
    return "ok", res, resized


def _same_objects(res, out):
    if isinstance(out, list):  # ops with a list of results return None, as torch
        return res is None
    if isinstance(out, nnkit.Tensor):
        return res is out
    return len(res) == len(out) and all(r is o for r, o in zip(res, out))


@functools.cache
def _samples(key, dtype):
    op = ENTRIES[key]
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(op.sample_inputs("cpu", dtype, requires_grad=False))


def _cases(key):
    op = ENTRIES[key]
    for dt in om.sample_dtypes(op, float32=True):
        for i, s in om.pick(_samples(key, dt), 3 if dt == torch.float64 else 1):
            yield dt, i, s


def _requiring_grad(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach().requires_grad_(obj.is_floating_point())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_requiring_grad(o) for o in obj)
    return obj


def _compare(t_res, n_res, s, is_random, plain):
    """Values as the OpInfo driver compares them (up to sign or phase where OpInfo says
    so); an out of a wider dtype is compared at the result's own precision."""
    tf, nf = om.flatten(t_res), om.flatten(n_res)
    pf = om.flatten(plain)
    tf = [t.to(p.dtype) if t.dtype.is_floating_point else t for t, p in zip(tf, pf)]
    nf = [n.to(_nk_dtype(p.dtype)) if n.dtype.is_floating_point else n for n, p in zip(nf, pf)]
    try:
        om.compare_outputs(tf, nf, shape_only=is_random)
    except om.Mismatch:
        om.compare_outputs(tf, nf, shape_only=True)
        om.compare_outputs(
            om.flatten(s.output_process_fn_grad(t_res)), om.flatten(s.output_process_fn_grad(n_res))
        )


def _run(op, fn, s, tout_make, is_random, grad=False):
    """Run torch and nnkit on sample ``s`` with outs made by ``tout_make``; compare."""
    tin = (s.input, *s.args)
    kwargs = s.kwargs
    if grad:
        tin = _requiring_grad(tin)
        kwargs = {k: _requiring_grad(v) for k, v in kwargs.items()}
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plain = op.op(*tin, **kwargs)
    except Exception:  # torch refuses its own sample
        return "skip"
    if not isinstance(plain, (torch.Tensor, tuple, list)) or not all(
        isinstance(t, torch.Tensor) for t in om.flatten(plain)
    ):
        return "skip"
    tout = _torch_out(plain, tout_make)
    leaves: list = []
    nin = om.to_nnkit(tin, leaves)
    nkw = om.to_nnkit(kwargs, leaves)
    nout = _to_nnkit_out(tout)
    try:  # nnkit refuses the sample without out=: nothing to compare
        with nnkit.no_grad():
            fn(*nin, **nkw)
    except Exception:  # noqa: BLE001
        return "skip"
    torch.manual_seed(0)
    t_res = _outcome(lambda: op.op(*tin, **kwargs, out=tout))
    nnkit.manual_seed(0)
    n_res = _outcome(lambda: fn(*nin, **nkw, out=nout))
    if grad and not leaves:
        return "skip"
    if grad:  # torch refuses most; a few give a result whose backward fails: nnkit refuses
        assert n_res[0] == "error" and "automatic differentiation" in n_res[2], n_res
        return "error"
    if t_res[0] == "error" and om.entry_key(op) in _TORCH_QUIRKS:
        return "skip"
    if t_res[0] == "error" or n_res[0] == "error":
        assert t_res[0] == n_res[0] == "error", f"torch: {t_res}, nnkit: {n_res}"
        assert issubclass(n_res[1], (RuntimeError, TypeError)), n_res
        return "error"
    assert _same_objects(n_res[1], nout), "out= must return out itself"
    if op.name not in _MIXED_WARNING_RULES:
        got, want = [str(w.message)[:60] for w in n_res[2]], [str(w.message)[:60] for w in t_res[2]]
        assert got == want, f"resize warnings {got} vs torch {want}"
    _compare(tout, nout, s, is_random, plain)
    return "ok"


def _empty(dtype_of=None):
    def make(t, i):
        return torch.empty(0, dtype=dtype_of(t) if dtype_of else t.dtype)

    return make


@pytest.mark.parametrize("key", sorted(ENTRIES))
def test_opinfo_out_matches_torch(key):
    op = ENTRIES[key]
    fn, is_random = om.resolve(op)  # the wrapped op, or OpInfo's lambda calling it
    is_random = is_random or key in ("bernoulli", "multinomial", "normal", "normal.number_mean")
    ran = []
    for dt, _i, s in _cases(key):
        # an empty out of the result's dtype: resized silently
        ran.append(_run(op, fn, s, _empty(), is_random))
        # a non-empty out of another shape: resized with a warning
        ran.append(
            _run(op, fn, s, lambda t, i: torch.zeros(t.numel() + 1, dtype=t.dtype), is_random)
        )
        # another dtype: cast where torch casts, refused where torch refuses
        if key not in _MIXED_DTYPE_RULES:
            ran.append(_run(op, fn, s, _empty(lambda t: ALT.get(t.dtype, t.dtype)), is_random))
        # inputs that require grad: refused under grad mode
        if dt.is_floating_point and op.supports_autograd:
            _run(op, fn, s, _empty(), is_random, grad=True)
    assert "ok" in ran, ran  # at least one sample was written and compared


# Entries whose dtype rule torch decides per overload or per output (nnkit has one rule
# per op: exact for several outputs and the ops in ``out_variants._EXACT``, else a cast).
_MIXED_DTYPE_RULES = {
    "cumsum",
    "diff",
    "inner",
    "lerp",
    "linalg.matrix_power",
    "linalg.lstsq",
    "normal",
    "normal.number_mean",
    "nonzero",
    "kthvalue",
}

# Entries that warn on resizing for some overloads only (``mode`` of a 1-D input, ``median``
# without ``dim``, ``normal`` of a number mean): nnkit warns for all.
_MIXED_WARNING_RULES = {"mode", "median", "normal"}

# Entries where torch fails for a reason of its own, not one of out='s rules.
_TORCH_QUIRKS = {
    "normal.number_mean": "torch's normal(number, tensor, out=) broadcasts with out's old shape",
}


# ------------------------------------------------------------------ hand-written cases


def _pair(shape=(4, 4), lo=0.1, hi=0.9, seed=0):
    """The same values as a torch and an nnkit tensor."""
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return torch.tensor(a), nnkit.tensor(a)


def _both(code: str, **env):
    """Run ``code`` with ``lib`` = torch, then nnkit; the outcomes (``_outcome``)."""
    res = []
    for lib in (torch, nnkit):
        scope = {k: v[lib is nnkit] if isinstance(v, tuple) else v for k, v in env.items()}
        res.append(_outcome(lambda lib=lib, scope=scope: eval(code, {"lib": lib, **scope})))
    return res


def _assert_same(t_res, n_res, exact_message=True):
    assert t_res[0] == n_res[0], f"torch: {t_res}, nnkit: {n_res}"
    if t_res[0] == "error":
        assert issubclass(n_res[1], t_res[1]), (t_res, n_res)
        if exact_message:
            assert n_res[2] == t_res[2]


MESSAGES = [
    "lib.add(x, x, out=lib.empty(0, dtype=lib.int64))",
    "lib.exp(lib.arange(3), out=lib.empty(0, dtype=lib.int64))",
    "lib.add(lib.arange(3), 1, out=lib.empty(0, dtype=lib.bool))",
    "lib.argmax(x, 0, out=lib.empty(0))",
    "lib.argmax(x, 0, out=lib.empty(0, dtype=lib.int32))",
    "lib.mm(x, x, out=lib.empty(0, dtype=lib.float32))",
    "lib.max(x, 0, out=(lib.empty(0, dtype=lib.float32), lib.empty(0, dtype=lib.int64)))",
    "lib.max(x, 0, out=(lib.empty(0, dtype=lib.float64), lib.empty(0)))",
    "lib.sort(x, out=(lib.empty(0, dtype=lib.float32), lib.empty(0, dtype=lib.int64)))",
    "lib.sum(x, 0, dtype=lib.float32, out=lib.empty(0, dtype=lib.float64))",
    "lib.zeros(3, dtype=lib.int64, out=lib.empty(0))",
    "lib.add(x, x, out=[lib.empty(0)])",
    "lib.add(x, x, out=(lib.empty(0),))",
    "lib.add(xg, 1, out=lib.empty(0, dtype=lib.float64))",
    "lib.add(x, 1, out=lib.empty(0, dtype=lib.float64, requires_grad=True))",
    "lib.max(xg, 0, out=(lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.int64)))",
    "lib.add(x[0], 1, out=lib.zeros(1, dtype=lib.float64).expand(4))",
    "lib.add(x, x, out=lib.empty(0, dtype=lib.float32))",  # float64 -> float32: castable
    "lib.lt(x, 0.5, out=lib.empty(0, dtype=lib.float16))",  # bool -> anything
    "lib.var(x, 0, out=lib.empty(0, dtype=lib.int64))",
]


@pytest.mark.parametrize("code", MESSAGES)
def test_errors_and_casts_match_torch(code):
    x = _pair()
    xg = (x[0].clone().requires_grad_(), nnkit.tensor(x[1].numpy(), requires_grad=True))
    t_res, n_res = _both(code, x=x, xg=xg)
    _assert_same(t_res, n_res)
    if t_res[0] == "ok":
        om.compare_outputs(t_res[1], n_res[1])


def test_no_grad_writes_and_records_nothing():
    xt, xn = _pair()
    for lib, x in ((torch, xt), (nnkit, xn)):
        x.requires_grad_()
        o = lib.empty(0, dtype=lib.float64, requires_grad=True)  # a leaf that requires grad
        with lib.no_grad():
            r = lib.mul(x, 2, out=o)
        assert r is o and o.grad_fn is None and o.requires_grad
    assert np.allclose(xn.detach().numpy() * 2, o.detach().numpy())


UNARY = """abs acos asin atan atanh ceil cos cosh deg2rad digamma erf erfc erfinv exp exp2
expm1 floor frac lgamma log log10 log1p log2 logit nan_to_num neg rad2deg reciprocal round
rsqrt sgn sigmoid sign sin sinc sinh sqrt square tan tanh trunc""".split()
BINARY = """add atan2 copysign div eq float_power floor_divide fmax fmin fmod ge gt hypot
le logaddexp logaddexp2 lt maximum minimum mul ne nextafter pow remainder sub true_divide
xlogy""".split()


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_pointwise_overlap_rules_match_torch(name):
    """Partial overlap raises, an input that is ``out`` is fine, gaps make it "too hard"."""
    n_args = 1 if name in UNARY else 2
    for case in ("x.T", "x"):
        x = _pair()
        args = ", ".join([case] * n_args)
        t_res, n_res = _both(f"lib.{name}({args}, out=x)", x=x)
        _assert_same(t_res, n_res)
        if t_res[0] == "ok":
            assert n_res[1] is x[1]
            om.compare_outputs(x[0], x[1])
    x = _pair()
    args = ", ".join(["x[:, :2]"] * n_args)
    _assert_same(*_both(f"lib.{name}({args}, out=x[:, 1:3])", x=x))  # (values: torch's
    # depend on its loop order here, nnkit computes out of place first)


@pytest.mark.parametrize(
    "code",
    [
        "lib.add(x, x[0], out=x)",
        "lib.add(x, x[:1].expand(4, 4), out=x)",
        "lib.where(x > 0.5, x.T, x, out=x)",
        "lib.clamp(x, x.T, out=x)",
        "lib.lerp(x.T, x, 0.5, out=x)",
        "lib.addcmul(x.T, x, x, out=x)",
        "lib.outer(x[0], x[1], out=x)",
        "lib.cat([x[:2], x[2:]], out=x)",
        "lib.stack([x[0], x[1]], out=x[:2])",
        "lib.stack([x[2], x[3]], out=x[:2])",
        "lib.index_select(x, 0, lib.tensor([0, 1, 2, 3]), out=x)",
        "lib.gather(x, 1, lib.zeros(4, 4, dtype=lib.int64), out=x)",
        "lib.take(x, lib.tensor([0, 1]), out=x[0, :2])",
        "lib.masked_select(x, x > 0.5, out=x.view(-1))",
        "lib.mm(x, x, out=x)",
        "lib.cumsum(x, 1, out=x)",
        "lib.sum(x, 0, out=x[0])",
        "lib.sort(x, out=(x, lib.empty(0, dtype=lib.int64)))",
        "lib.tril(x.T, out=x)",
        "lib.special.entr(x.T, out=x)",
        "lib.special.xlog1py(x.T, x, out=x)",
        "lib.nn.functional.gelu(x.T, out=x)",
        "lib.nn.functional.softplus(x.T, out=x)",
        "lib.nn.functional.hardshrink(x.T, out=x)",
    ],
)
def test_other_overlap_rules_match_torch(code):
    """The same errors; where both run, torch's values depend on its loop order (it
    reads what it already wrote), nnkit's are the op's (computed out of place first)."""
    x = _pair()
    t_res, n_res = _both(code, x=x)
    _assert_same(t_res, n_res)


def test_out_is_written_in_place_like_torch():
    """Views of out see the result, a view out writes through, versions bump once."""
    for lib in (torch, nnkit):
        a = lib.tensor([1.0, 2.0, 3.0])
        base = lib.zeros(6)
        o = base[::2]
        v0 = base._version
        assert lib.add(a, 1, out=o) is o
        assert base.tolist() == [2.0, 0.0, 3.0, 0.0, 4.0, 0.0]
        assert base._version == v0 + 1 and o._version == base._version
        o = lib.zeros(3)
        view = o[1:]
        lib.mul(a, 2, out=o)
        assert view.tolist() == [4.0, 6.0] and o._version == 1
        o = lib.zeros(2, 3)
        flat = o.view(-1)
        with pytest.warns(UserWarning, match=r"resized since it had shape \[2, 3\]"):
            lib.add(lib.ones(3, 2), 1, out=o)  # same size: the same memory, reshaped
        assert o.shape == (3, 2) and flat.tolist() == [2.0] * 6
        o = lib.zeros(6)
        head = o[:3]
        with pytest.warns(UserWarning, match="which does not match the required output shape"):
            lib.add(a, 1, out=o)  # smaller: the first elements of the same memory
        assert head.tolist() == [2.0, 3.0, 4.0] and o.tolist() == [2.0, 3.0, 4.0]
        o = lib.empty(0)
        lib.add(a, 1, out=o)  # an empty out grows silently (filterwarnings=error)
        assert o.tolist() == [2.0, 3.0, 4.0]


def test_a_view_out_that_must_grow_gets_new_memory():
    """nnkit's documented difference: the base of a view out resized does not see it."""
    base = nnkit.zeros(4)
    o = base[:2]
    with pytest.warns(UserWarning, match="resized"):
        nnkit.add(nnkit.ones(3), 1, out=o)
    assert o.tolist() == [2.0, 2.0, 2.0] and base.tolist() == [0.0] * 4


def test_a_saved_out_is_caught_by_backward():
    """Writing into an out that a graph saved bumps the version autograd checks."""
    w = nnkit.tensor([1.0, 2.0], requires_grad=True)
    o = nnkit.tensor([3.0, 4.0])
    y = (w * o).sum()  # saves o
    nnkit.add(o, 1, out=o)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


@pytest.mark.parametrize(
    "code",
    [
        "lib.zeros(2, 3, out=lib.empty(0, dtype=lib.int64))",
        "lib.ones((2,), out=lib.empty(5, dtype=lib.float64))",
        "lib.full((2,), 1.5, out=lib.empty(0, dtype=lib.int64))",
        "lib.full((2,), True, out=lib.empty(0))",
        "lib.arange(5, out=lib.empty(0))",
        "lib.arange(5.0, out=lib.empty(0, dtype=lib.int64))",
        "lib.arange(6, out=lib.empty(2, 3))",
        "lib.arange(3, out=lib.empty(5))",
        "lib.linspace(0, 1, 5, out=lib.empty(0, dtype=lib.float64))",
        "lib.logspace(0, 2, 3, out=lib.empty(0, dtype=lib.float64))",
        "lib.eye(2, out=lib.empty(0, dtype=lib.bool))",
        "lib.empty(2, 3, out=lib.empty(0, dtype=lib.int64)).shape",
        "lib.zeros(2, dtype=lib.float64, out=lib.empty(0, dtype=lib.float64))",
    ],
)
def test_factories_take_outs_dtype_like_torch(code):
    t_res, n_res = _both(code)
    _assert_same(t_res, n_res)
    assert len(t_res[2]) == len(n_res[2]) and [str(w.message)[:50] for w in n_res[2]] == [
        str(w.message)[:50] for w in t_res[2]
    ]
    if isinstance(t_res[1], torch.Tensor) and "empty(" not in code[:12]:
        om.compare_outputs(t_res[1], n_res[1])


@pytest.mark.parametrize("code", ["randn(2, 3)", "rand(4)", "randint(0, 5, (3,))", "randperm(4)"])
def test_random_factories_draw_as_with_outs_dtype(code):
    for dt in ("float64", "int64") if "int" in code or "perm" in code else ("float64",):
        nnkit.manual_seed(3)
        want = eval(f"nnkit.{code[:-1]}, dtype=nnkit.{dt})")  # noqa: S307
        o = nnkit.empty(0, dtype=getattr(nnkit, dt))
        nnkit.manual_seed(3)
        assert eval(f"nnkit.{code[:-1]}, out=o)") is o  # noqa: S307
        assert o.dtype == want.dtype and o.tolist() == want.tolist()
        t = eval(f"torch.{code[:-1]}, out=torch.empty(0, dtype=torch.{dt}))")  # noqa: S307
        assert tuple(t.shape) == o.shape


@pytest.mark.parametrize(
    "code",
    [
        "lib.max(x, 1, out=o2)",
        "lib.min(x, 0, keepdim=True, out=o2)",
        "lib.sort(x, 1, descending=True, out=o2)",
        "lib.topk(x, 2, out=o2)",
        "lib.median(x, 1, out=o2)",
        "lib.nanmedian(x, 0, out=o2)",
        "lib.kthvalue(x, 2, 1, out=o2)",
        "lib.mode(lib.round(x * 3), 1, out=o2)",
        "lib.cummax(x, 1, out=o2)",
        "lib.aminmax(x, dim=0, out=(lib.empty(0, dtype=x.dtype), lib.empty(0, dtype=x.dtype)))",
    ],
)
def test_tuple_outs_match_torch(code):
    x = _pair(shape=(3, 5))
    o2 = tuple(
        (lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.int64)) for lib in (torch, nnkit)
    )
    t_res, n_res = _both(code, x=x, o2=o2)
    _assert_same(t_res, n_res)
    om.compare_outputs(tuple(t_res[1]), tuple(n_res[1]))
    if "aminmax" not in code:
        assert n_res[1][0] is o2[1][0] and n_res[1].values is o2[1][0]
        assert n_res[1].indices is o2[1][1]


@pytest.mark.parametrize(
    "code",
    [
        "lib.sum(x, 1, out=o)",
        "lib.sum(x, (0, 1), keepdim=True, out=o)",
        "lib.prod(x, 0, out=o)",
        "lib.clip(x, 0.2, 0.5, out=o)",
        "lib.concat([x, x], out=o)",
        "lib.special.expit(x, out=o)",
        "lib.special.gammaln(x, out=o)",
        "lib.special.psi(x, out=o)",
        "lib.special.ndtri(x, out=o)",
        "lib.nn.functional.softplus(x, out=o)",
        "lib.nn.functional.linear(x, x, out=o)",
        "lib.nn.functional.normalize(x, out=o)",
        "lib.linalg.matmul(x, x.T, out=o)",
        "lib.linalg.inv(x[:3, :3], out=o)",
        "lib.linalg.vector_norm(x, dim=1, out=o)",
        "lib.matmul(x, x.T, out=o)",
        "lib.cumsum(x, 1, out=o)",
        "lib.logsumexp(x, 1, out=o)",
        "lib.norm(x, out=o)",
        "lib.where(x > 0.5, x, x * 2, out=o)",
        "lib.index_select(x, 1, lib.tensor([0, 2]), out=o)",
        "lib.gather(x, 1, lib.tensor([[0], [1], [2]]), out=o)",
        "lib.std(x, 1, out=o)",
        "lib.var(x, 0, out=o)",
        "lib.amax(x, 1, out=o)",
        "lib.clamp(x, min=0.3, out=o)",
        "lib.pow(x, 2, out=o)",
        "lib.addmm(x[:, :3], x, x.T[:, :3], out=o)",
    ],
)
def test_more_ops_match_torch(code):
    x = _pair(shape=(3, 5))
    o = (torch.empty(0, dtype=torch.float64), nnkit.empty(0, dtype=nnkit.float64))
    t_res, n_res = _both(code, x=x, o=o)
    _assert_same(t_res, n_res)
    assert n_res[1] is o[1]
    om.compare_outputs(t_res[1], n_res[1])


@pytest.mark.parametrize("name", ["sum", "prod", "median", "nanmedian"])
def test_full_reductions_without_dim_take_no_out_as_in_torch(name):
    x = _pair(shape=(3, 5))
    o = (torch.empty(0, dtype=torch.float64), nnkit.empty(0, dtype=nnkit.float64))
    t_res, n_res = _both(f"lib.{name}(x, out=o)", x=x, o=o)
    _assert_same(t_res, n_res, exact_message=False)
    assert n_res[0] == "error" and n_res[1] is TypeError


def test_docstrings_and_signatures_mention_out():
    doc = nnkit.add.__doc__
    args = doc[doc.index("Args:") : doc.index("Returns:")]
    assert args.rstrip().endswith(ov.OUT_DOC)  # the last entry of Args
    assert doc.count("out: an output tensor") == 1
    assert str(nnkit.add.__signature__) == "(input, other, *, alpha=1, out=None)"
    assert "out=None" in str(nnkit.linalg.inv.__signature__)
    assert ov._doc_with_out("Sum.\n\n    Returns:\n        x\n").count("Args:") == 1
    assert nnkit.add(nnkit.tensor([1.0]), 2).tolist() == [3.0]  # without out: the op


def test_devices(monkeypatch):
    """``out`` on another device raises; factories make ``out``'s device (simulated)."""
    from tests._simulated_device import install

    install(monkeypatch)
    x = nnkit.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="same device"):
        nnkit.add(x, 1, out=nnkit.empty(0, device="cuda"))
    o = nnkit.empty(0, device="cuda")
    assert nnkit.add(x.to("cuda"), 1, out=o) is o and o.tolist() == [2.0, 3.0]
    assert o.device.type == "cuda"
    z = nnkit.empty(5, dtype=nnkit.int64, device="cuda")
    assert nnkit.arange(5, out=z) is z and z.tolist() == [0, 1, 2, 3, 4]
    a = nnkit.zeros(4, device="cuda")
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        nnkit.exp(a[1:], out=a[:3])
