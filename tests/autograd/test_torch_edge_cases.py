"""Edge cases against PyTorch (issue 13, "Wrong today"): the same call gives torch's values,
shapes, dtypes and gradients, or a clear error where torch refuses.

Each case is ``fn(lib, F, *tensors)`` run once with ``lib, F = nnkit, nnkit.nn.functional``
and once with ``torch, torch.nn.functional`` on the same inputs: float64 arrays become
tensors requiring grad (float32 ones too, unless ``grad=False``), integer and bool arrays
plain tensors; other arguments pass as they are. The floating outputs are weighted by
fixed distinct weights and summed, so the gradients compared are not all ones.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pytest

import nnkit
import nnkit.nn.functional as F

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.nn.functional")

INF, NAN = math.inf, math.nan


def _make(lib, a, device, grad):
    if not isinstance(a, np.ndarray):
        return a
    t = torch.from_numpy(a.copy()) if lib is torch else nnkit.tensor(a, device=device)
    if grad and a.dtype.kind == "f":
        t.requires_grad_(True)
    return t


def _weights(lib, out):
    n = math.prod(out.shape)
    w = lib.arange(n, dtype=out.dtype) * 0.25 + 1.0
    if lib is nnkit:
        w = w.to(out.device)
    return w.reshape(tuple(out.shape))


def _run(lib, f, fn, arrays, device, grad, quiet):
    ins = [_make(lib, a, device, grad) for a in arrays]
    calm = np.errstate(all="ignore") if quiet else contextlib.nullcontext()
    with calm, warnings.catch_warnings():
        if quiet:
            warnings.simplefilter("ignore")
        out = fn(lib, f, *ins)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        diff = [o for o in outs if o.dtype.is_floating_point and o.requires_grad]
        if grad and diff:
            loss = sum((o * _weights(lib, o)).sum() for o in diff)
            loss.backward()
    grads = [
        t.grad if isinstance(a, np.ndarray) and a.dtype.kind == "f" else None
        for a, t in zip(arrays, ins)
    ]
    return outs, grads


def _np(t):
    return np.asarray(
        t.detach().cpu().numpy() if not hasattr(t, "numpy") or t.requires_grad else t.cpu().numpy()
    )


def _dtype(t) -> str:
    return str(t.dtype).replace("torch.", "")


def check(fn, *arrays, device="cpu", grad=True, quiet=False, rtol=1e-12, atol=1e-12):
    """``fn`` gives torch's outputs (values, shapes, dtypes) and input gradients."""
    ours, our_grads = _run(nnkit, F, fn, arrays, device, grad, quiet)
    theirs, their_grads = _run(torch, TF, fn, arrays, device, grad, quiet)
    assert len(ours) == len(theirs)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        assert tuple(o.shape) == tuple(t.shape), f"output {k}: shape {o.shape} != {t.shape}"
        assert _dtype(o) == _dtype(t), f"output {k}: dtype {o.dtype} != {t.dtype}"
        np.testing.assert_allclose(
            _np(o), _np(t), rtol=rtol, atol=atol, equal_nan=True, err_msg=f"output {k}"
        )
    for k, (g, gt) in enumerate(zip(our_grads, their_grads)):
        assert (g is None) == (gt is None), f"input {k}: grad {g} vs torch's {gt}"
        if g is not None:
            assert tuple(g.shape) == tuple(gt.shape), f"input {k}: grad shape"
            assert _dtype(g) == _dtype(gt), f"input {k}: grad dtype"
            np.testing.assert_allclose(
                _np(g),
                _np(gt),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
                err_msg=f"gradient of input {k}",
            )


def f64(*values):
    return np.array(values if len(values) != 1 else values[0], dtype=np.float64)


def arr(data, dtype=np.float64):
    return np.array(data, dtype=dtype)


RNG = np.random.default_rng(13)
X34 = RNG.standard_normal((3, 4))
X23 = arr([[0.5, -1.0, 0.0], [2.0, -3.0, 0.25]])
MASK23 = arr([[True, False, True], [False, False, True]], bool)


# ---------------------------------------------------------------- masked_fill
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            (lambda L, F, x, m, v: x.masked_fill(m, v), X23, MASK23, f64(2.5)),
            id="0d-value-requires-grad",
        ),
        pytest.param(
            (lambda L, F, x, m, v: x.masked_fill(m, v), X23, MASK23[:1], f64(-1.0)),
            id="mask-broadcast-to-input",
        ),
        pytest.param(
            (lambda L, F, x, m, v: x.masked_fill(m, v), X23[0], MASK23, f64(3.0)),
            id="mask-larger-than-input",
        ),
        pytest.param((lambda L, F, x, m: x.masked_fill(m, 2.0), X23, MASK23), id="scalar"),
        pytest.param(
            (lambda L, F, x, m: x.masked_fill(m, 2.5), arr([1, 2, 3], np.int64), MASK23[0]),
            id="int-input-float-value",
        ),
        pytest.param(
            (lambda L, F, x, m, v: x.masked_fill(m, v), X23.astype(np.float32), MASK23, f64(2.5)),
            id="float64-value-on-float32",
        ),
    ],
)
def test_masked_fill(case, device):
    check(*case, device=device)


def test_masked_fill_refuses_a_value_with_dimensions(device):
    x = nnkit.ones(2, device=device)
    with pytest.raises(RuntimeError, match="masked_fill.*0-dimensional"):
        x.masked_fill(nnkit.tensor([True, False], device=device), nnkit.ones(1, device=device))


# ---------------------------------------------------------- remainder / fmod
A = arr([[5.5, -3.2, 7.0], [-0.7, 2.25, -9.1]])
B = arr([[2.0, 1.5, -2.5], [0.4, -1.0, 3.0]])


@pytest.mark.parametrize("op", ["mod", "remainder", "fmod"])
@pytest.mark.parametrize("shapes", ["same", "bcast", "scalar", "rscalar", "0d"])
def test_remainder_and_fmod(op, shapes, device):
    def call(L, F, *ts):
        if op == "mod":
            a, b = ts if len(ts) == 2 else ((ts[0], 1.75) if shapes == "scalar" else (7.5, ts[0]))
            return a % b
        fn = getattr(L, op)
        if len(ts) == 2:
            return fn(*ts)
        if shapes == "scalar":
            return fn(ts[0], 1.75)
        return None if op == "fmod" else ts[0].__rmod__(7.5)

    args = {
        "same": (A, B),
        "bcast": (A, B[0]),
        "scalar": (A,),
        "rscalar": (B,),
        "0d": (f64(-4.3), B),
    }[shapes]
    if shapes == "rscalar" and op != "mod":
        pytest.skip("a Python number first: only the % operator")
    if shapes == "rscalar":  # torch has no derivative for number % tensor: values only,
        check(call, *args, device=device, grad=False)  # and d/dy = -floor(x / y)
        y = nnkit.tensor(B, device=device, requires_grad=True)
        (7.5 % y).sum().backward()
        np.testing.assert_allclose(y.grad.cpu().numpy(), -np.floor(7.5 / B))
        return
    check(call, *args, device=device)


def test_remainder_of_integers_has_no_gradient(device):
    check(lambda L, F, a: a % 3, arr([5, -5, 7], np.int64), device=device)


# ------------------------------------------------------ take_along_dim, index_select
X33 = np.arange(9.0).reshape(3, 3)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param((X33, arr([[0, 2]], np.int64), 1), id="index-broadcasts-3x3-1x2"),
        pytest.param((X33, arr([[2], [0], [1]], np.int64), 1), id="same-rows"),
        pytest.param((X33[:1], arr([[0], [2]], np.int64), 1), id="input-broadcasts"),
        pytest.param((X33, arr([[1, 0, 2]], np.int64), 0), id="dim0"),
        pytest.param((X33, arr([[-1], [0], [-3]], np.int64), -1), id="negative-indices"),
        pytest.param((X33, arr([8, 0, 4, 4], np.int64), None), id="flattened"),
    ],
)
def test_take_along_dim(case, device):
    x, idx, dim = case
    check(lambda L, F, x, i: L.take_along_dim(x, i, dim), x, idx, device=device)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param((f64(3.5), arr([0], np.int64), 0), id="0d-input"),
        pytest.param((f64(3.5), arr(0, np.int64), -1), id="0d-input-0d-index"),
        pytest.param((f64(1.0, 2.0, 3.0), arr(1, np.int64), 0), id="1d-input-0d-index"),
        pytest.param((X34, arr([2, 0, 2], np.int64), 1), id="2d"),
    ],
)
def test_index_select(case, device):
    x, idx, dim = case
    check(lambda L, F, x, i: L.index_select(x, dim, i), x, idx, device=device)


def test_index_select_on_0d_takes_one_index(device):
    with pytest.raises(IndexError, match="index_select.*only 1 value"):
        nnkit.index_select(nnkit.tensor(1.0, device=device), 0, nnkit.tensor([0, 0], device=device))


# ------------------------------------------------------------------------ norms
XN = arr([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0], [-3.0, 0.25, 0.0]])


@pytest.mark.parametrize("p", [-INF, INF, 0, 1, 2, 3, 1.5, 0.5, -1, "fro"])
@pytest.mark.parametrize("dims", ["all", "dim1", "dim0-keep", "tuple"])
def test_norm(p, dims, device):
    kw = {
        "all": {},
        "dim1": {"dim": 1},
        "dim0-keep": {"dim": 0, "keepdim": True},
        "tuple": {"dim": (0, 1)},
    }[dims]
    # the zero row: the gradient where the norm is 0 follows torch's conventions
    check(lambda L, F, x: x.norm(p, **kw), XN, device=device, quiet=True, rtol=1e-10)


def test_norm_ties_share_the_inf_gradient(device):
    check(lambda L, F, x: x.norm(INF), arr([1.0, -2.0, 2.0, 0.5]), device=device)
    check(lambda L, F, x: x.norm(-INF, 0), arr([[1.0, -2.0], [-1.0, 3.0]]), device=device)


def test_norm_nuc_and_unknown_strings_are_clear_errors(device):
    x = nnkit.ones(2, 2, device=device)
    assert abs(x.norm("nuc").item() - 2.0) < 1e-6  # singular values 2 and 0
    with pytest.raises(ValueError, match="norm: p='nuc' needs"):
        nnkit.ones(2, device=device).norm("nuc")
    with pytest.raises(ValueError, match="norm: p must be"):
        x.norm("abc")


@pytest.mark.parametrize("p", [0, 1, 2, 3, INF])
def test_normalize(p, device):
    check(lambda L, F, x: F.normalize(x, p=p, dim=1), XN, device=device, quiet=True, rtol=1e-10)


# --------------------------------------------------------------------- softplus
@pytest.mark.parametrize(
    "beta,threshold", [(1.0, 20.0), (2.0, 3.0), (1.0, 1.0), (0.5, 2.0), (3.0, 0.0)]
)
def test_softplus_threshold(beta, threshold, device):
    x = arr([-30.0, -2.0, 0.0, 0.9, 1.0, 1.5, 4.0, 6.5, 25.0])
    check(lambda L, F, x: F.softplus(x, beta, threshold), x, device=device, rtol=1e-10)


def test_logsigmoid_and_mish_take_no_threshold(device):
    x = arr([-40.0, -25.0, -1.0, 0.0, 3.0, 25.0])
    check(lambda L, F, x: F.logsigmoid(x), x, device=device, rtol=1e-10)
    check(lambda L, F, x: F.mish(x), x, device=device, rtol=1e-10)


# --------------------------------------------------------------------- linspace
@pytest.mark.parametrize(
    "case,rtol",
    [
        pytest.param(
            lambda L: L.linspace(L.tensor(0.1), 1.0, 3, dtype=L.float64), 1e-15, id="f32-start"
        ),
        pytest.param(
            lambda L: L.linspace(0.0, L.tensor(1.1), 5, dtype=L.float64), 1e-15, id="f32-end"
        ),
        # float32 results: torch computes in float32, nnkit rounds a float64 computation
        pytest.param(
            lambda L: L.linspace(L.tensor(0.1, dtype=L.float64), 1.0, 3), 2e-7, id="default-dtype"
        ),
        pytest.param(lambda L: L.linspace(0, 10, 4, dtype=L.int64), 0, id="int"),
        pytest.param(lambda L: L.linspace(0.3, 1.0, 1), 0, id="one-step"),
    ],
)
def test_linspace(case, rtol):
    check(lambda L, F: case(L), rtol=rtol, atol=0)


# ------------------------------------------------------ gradients at kinks
@pytest.mark.parametrize(
    "name,fn,x",
    [
        ("hardtanh", lambda L, F, x: F.hardtanh(x), arr([-1.5, -1.0, 0.0, 1.0, 2.0])),
        ("hardtanh-bounds", lambda L, F, x: F.hardtanh(x, -0.5, 2.0), arr([-0.5, 0.0, 2.0, 2.5])),
        ("relu6", lambda L, F, x: F.relu6(x), arr([-1.0, 0.0, 3.0, 6.0, 7.0])),
        ("elu", lambda L, F, x: F.elu(x), arr([-1.0, 0.0, 1.0])),
        ("elu-alpha", lambda L, F, x: F.elu(x, 1.5), arr([-1.0, 0.0, 1.0])),
        ("selu", lambda L, F, x: F.selu(x), arr([-1.0, 0.0, 1.0])),
        ("leaky_relu", lambda L, F, x: F.leaky_relu(x, 0.2), arr([-1.0, 0.0, 1.0])),
        ("relu", lambda L, F, x: F.relu(x), arr([-1.0, 0.0, 1.0])),
        ("clamp", lambda L, F, x: x.clamp(-1.0, 1.0), arr([-1.5, -1.0, 1.0, 1.5])),
        ("abs", lambda L, F, x: x.abs(), arr([-1.0, 0.0, 1.0])),
        ("pow-0**0", lambda L, F, x: x**0.0, arr([0.0, 2.0, -1.5])),
        ("pow-0**int0", lambda L, F, x: x**0, arr([0.0, 2.0])),
        ("pow-0**2", lambda L, F, x: x**2, arr([0.0, -2.0])),
        ("pow-0**-1", lambda L, F, x: x**-1.0, arr([0.0, 2.0])),
        ("rpow-0", lambda L, F, x: 0.0**x, arr([0.0, 2.0, -1.0])),
        ("rpow-neg-base", lambda L, F, x: (-2.0) ** x, arr([2.0, 3.0])),
    ],
)
def test_gradient_at_kinks(name, fn, x, device):
    check(fn, x, device=device, quiet=True)


@pytest.mark.parametrize(
    "a,b",
    [
        pytest.param(arr([0.0, 0.0, 2.0, 0.0]), arr([0.0, 2.0, 0.0, 0.5]), id="zero-base"),
        pytest.param(arr([0.0, -2.0, -1.5]), arr([-1.0, 2.0, 3.0]), id="neg-base-and-exp"),
        pytest.param(arr([[0.0], [3.0]]), arr([0.0, 1.0, 2.5]), id="broadcast"),
    ],
)
def test_pow_tensor_exponent_gradients(a, b, device):
    check(lambda L, F, a, b: a**b, a, b, device=device, quiet=True)


def test_sign_of_nan_is_zero(device):
    check(lambda L, F, x: L.sign(x), arr([NAN, -0.0, 0.0, -2.0, INF]), device=device, grad=False)
    check(lambda L, F, x: x.abs(), arr([NAN, 1.0]), device=device)


# ---------------------------------------------------- reductions of 0-d tensors
R0 = [
    ("sum", lambda x, d, k: x.sum(d, keepdim=k)),
    ("mean", lambda x, d, k: x.mean(d, keepdim=k)),
    ("amax", lambda x, d, k: x.amax(d, keepdim=k)),
    ("amin", lambda x, d, k: x.amin(d, keepdim=k)),
    ("logsumexp", lambda x, d, k: x.logsumexp(d, keepdim=k)),
    ("all", lambda x, d, k: x.all(d, keepdim=k)),
    ("any", lambda x, d, k: x.any(d, keepdim=k)),
    ("count_nonzero", lambda x, d, k: x.count_nonzero(d)),
    ("max", lambda x, d, k: tuple(x.max(d, keepdim=k))),
    ("min", lambda x, d, k: tuple(x.min(d, keepdim=k))),
    ("argmax", lambda x, d, k: x.argmax(d, keepdim=k)),
    ("argmin", lambda x, d, k: x.argmin(d, keepdim=k)),
    ("squeeze", lambda x, d, k: x.squeeze(d)),
    ("norm", lambda x, d, k: x.norm(2, d, keepdim=k)),
    ("var", lambda x, d, k: x.var(d, keepdim=k, correction=0)),
    ("std", lambda x, d, k: x.std(d, keepdim=k, correction=0)),
    ("var-nan", lambda x, d, k: x.var(d, keepdim=k)),
]


@pytest.mark.parametrize("name,fn", R0, ids=[n for n, _ in R0])
@pytest.mark.parametrize("dim,keepdim", [(0, False), (-1, False), (0, True), ((0,), False)])
def test_reduction_of_0d_with_dim(name, fn, dim, keepdim, device):
    if isinstance(dim, tuple) and name in ("max", "min", "argmax", "argmin"):
        pytest.skip("an int dim only")
    check(lambda L, F, x: fn(x, dim, keepdim), f64(-2.5), device=device, quiet=True)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize(
    "shape,dim", [((), 0), ((), -1), ((2, 0), 1), ((2, 0), 0), ((0,), 0), ((0, 3), -1)]
)
def test_softmax_of_0d_and_empty(name, shape, dim, device):
    x = RNG.standard_normal(shape)
    check(lambda L, F, x: getattr(F, name)(x, dim), x, device=device)


@pytest.mark.parametrize(
    "shape,reps",
    [
        ((0,), (2,)),
        ((2, 0), (2, 3)),
        ((0,), (0,)),
        ((2,), (0,)),
        ((0, 3), (2, 0)),
        ((), (0,)),
        ((), (2, 3)),
        ((2,), (0, 2)),
        ((2, 3), (1, 0)),
    ],
)
def test_repeat_empty(shape, reps, device):
    check(lambda L, F, x: x.repeat(*reps), RNG.standard_normal(shape), device=device)


X2 = arr([[1.0, 2.0, 4.0], [3.0, 5.0, 9.5]])


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda x: x.var(correction=None), id="var-correction-None"),
        pytest.param(lambda x: x.var(1, correction=None), id="var-dim-correction-None"),
        pytest.param(lambda x: x.std(True), id="std-True"),
        pytest.param(lambda x: x.std(False), id="std-False"),
        pytest.param(lambda x: x.var(False), id="var-False"),
        pytest.param(lambda x: x.var(1, True), id="var-dim-True"),
        pytest.param(lambda x: x.var(1, False, True), id="var-dim-False-keepdim"),
        pytest.param(lambda x: x.std(0, unbiased=False), id="std-unbiased-kw"),
        pytest.param(lambda x: x.var(1, correction=2), id="var-correction-2"),
        pytest.param(lambda x: x.sum(dim=()), id="sum-empty-dims-is-all"),
        pytest.param(lambda x: x.mean(dim=[]), id="mean-empty-dims-is-all"),
        pytest.param(lambda x: x.amax(dim=()), id="amax-empty-dims-is-all"),
        pytest.param(lambda x: (x > 2).all(dim=()), id="all-empty-dims-is-none"),
    ],
)
def test_var_std_signatures_and_empty_dims(call, device):
    check(lambda L, F, x: call(x), X2, device=device)


def test_var_std_of_empty_dims_is_over_all(device):
    # values only: torch's own backward of var(dim=()) is inf (it reduces nothing there)
    check(lambda L, F, x: (x.var(dim=()), x.std(dim=[])), X2, device=device, grad=False)


def test_std_of_a_constant_slice_has_zero_gradient(device):
    x = arr([[1.5, 1.5, 1.5], [1.0, 2.0, 4.0]])
    check(lambda L, F, x: x.std(1), x, device=device)
    check(lambda L, F, x: x.std(0, correction=0), x, device=device)


# ----------------------------------------------------------------------- errors
def test_integer_to_negative_integer_power(device):
    a = nnkit.tensor([2, 3], device=device)
    with pytest.raises(RuntimeError, match="pow: integers to negative integer powers") as info:
        a**-1
    assert not isinstance(info.value, nnkit.ShapeError)
    with pytest.raises(RuntimeError, match="pow"):
        a.pow(-2)
    # a tensor exponent gives torch's integer results
    base = arr([0, 1, -1, 2, -2, 3, -1, 4], np.int64)
    exp = arr([-1, -3, -3, -2, -1, 2, -2, 0], np.int64)
    check(lambda L, F, a, b: a**b, base, exp, device=device, quiet=True)


def test_broadcast_errors_name_the_op_not_numpy(device):
    a, b = nnkit.ones(2, 3, device=device), nnkit.ones(4, 5, device=device)
    for op, name in [
        (lambda: a % b, "remainder"),
        (lambda: a**b, "pow"),
        (lambda: nnkit.fmod(a, b), "fmod"),
        (lambda: a + b, "add"),
    ]:
        with pytest.raises(nnkit.ShapeError) as info:
            op()
        msg = str(info.value)
        assert msg.startswith(name) and "(2, 3)" in msg and "(4, 5)" in msg
        assert "operands could not be broadcast" not in msg  # NumPy's words


def test_errors_name_the_op_called(device):
    x = nnkit.ones(2, 3, device=device)
    with pytest.raises(nnkit.ShapeError, match=r"^take_along_dim: .*number of dimensions"):
        nnkit.take_along_dim(x, nnkit.tensor([0], device=device), 1)
    with pytest.raises(nnkit.ShapeError, match=r"^take_along_dim: .*do not broadcast"):
        nnkit.take_along_dim(x, nnkit.zeros(3, 1, dtype=nnkit.int64, device=device), 1)
    with pytest.raises(IndexError, match=r"^take_along_dim: index 3 is out of bounds"):
        nnkit.take_along_dim(x, nnkit.tensor([[3]], device=device), 1)
    with pytest.raises(RuntimeError, match=r"^norm: the -?inf norm of an empty"):
        nnkit.zeros(0, device=device).norm(INF)
