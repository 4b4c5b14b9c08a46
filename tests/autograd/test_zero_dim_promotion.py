"""Type promotion with a 0-d tensor operand against PyTorch (``torch.result_type``).

A dimensioned tensor's dtype wins over a 0-d tensor's of the same category (bool <
integer < floating): float32 tensor + float64 0-d tensor is float32, uint8 tensor + int64
0-d tensor is uint8; a 0-d tensor of a higher category decides (int32 tensor + float64
0-d tensor is float64). Checked for results (dtype and values), first- and second-order
gradients (``create_graph``) of both operands, and the dtype of ``.grad``.
"""

from __future__ import annotations

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")

# (the dimensioned operand's dtype, the 0-d operand's dtype)
PAIRS = [
    ("float32", "float64"),
    ("float64", "float32"),
    ("float16", "float32"),
    ("float32", "float16"),
    ("int32", "int64"),
    ("int64", "int32"),
    ("uint8", "int64"),
    ("bool", "int32"),
    ("int32", "bool"),
    ("int32", "float64"),
    ("int64", "float32"),
    ("float32", "int64"),
]

COND = [True, False, True, False]

# name -> (nnkit function, torch function, differentiable); each takes (first, second)
OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, True),
    "add_alpha": (
        lambda a, b: nnkit.add(a, b, alpha=2),
        lambda a, b: torch.add(a, b, alpha=2),
        True,
    ),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, True),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, True),
    "div": (lambda a, b: a / b, lambda a, b: a / b, True),
    "div_floor": (
        lambda a, b: nnkit.div(a, b, rounding_mode="floor"),
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        True,
    ),
    "pow": (lambda a, b: a**b, lambda a, b: a**b, True),
    "maximum": (nnkit.maximum, torch.maximum, True),
    "minimum": (nnkit.minimum, torch.minimum, True),
    "atan2": (nnkit.atan2, torch.atan2, True),
    "hypot": (nnkit.hypot, torch.hypot, True),
    "xlogy": (nnkit.xlogy, torch.xlogy, True),
    "fmod": (nnkit.fmod, torch.fmod, True),
    "remainder": (lambda a, b: a % b, lambda a, b: a % b, True),
    "where": (
        lambda a, b: nnkit.where(nnkit.tensor(COND), a, b),
        lambda a, b: torch.where(torch.tensor(COND), a, b),
        True,
    ),
    "clamp_min": (
        lambda a, b: nnkit.clamp(a, min=b),
        lambda a, b: torch.clamp(a, min=b),
        True,
    ),
    "clamp_max": (
        lambda a, b: nnkit.clamp(a, max=b),
        lambda a, b: torch.clamp(a, max=b),
        True,
    ),
    "addcmul": (
        lambda a, b: nnkit.addcmul(a, b, a, value=2),
        lambda a, b: torch.addcmul(a, b, a, value=2),
        True,
    ),
    "logaddexp": (nnkit.logaddexp, torch.logaddexp, True),
    "logaddexp2": (nnkit.logaddexp2, torch.logaddexp2, True),
    "fmax": (nnkit.fmax, torch.fmax, True),
    "fmin": (nnkit.fmin, torch.fmin, True),
    "copysign": (nnkit.copysign, torch.copysign, True),
    "ldexp": (nnkit.ldexp, torch.ldexp, True),
    # (gradients not compared: torch gives input 0 where input == other, nnkit g)
    "nextafter": (nnkit.nextafter, torch.nextafter, False),
    "float_power": (nnkit.float_power, torch.float_power, True),
    "xlog1py": (nnkit.special.xlog1py, torch.special.xlog1py, True),
    "eq": (lambda a, b: a == b, lambda a, b: a == b, False),
    "lt": (lambda a, b: a < b, lambda a, b: a < b, False),
    "ge": (nnkit.ge, torch.ge, False),
    "floor_divide": (lambda a, b: a // b, lambda a, b: a // b, False),
}


def _name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _values(dtype: str, zero_dim: bool):
    if dtype == "bool":
        return True if zero_dim else [True, False, True, True]
    if dtype.startswith("float"):
        return 2.0 if zero_dim else [0.5, 2.0, 2.5, 3.0]  # 2.0: a tie for maximum/minimum
    return 2 if zero_dim else [1, 2, 3, 4]


def _operands(dim_dtype, zero_dtype, dim_first, lib, grad):
    """The two operands in ``lib`` (nnkit or torch); floating ones require grad."""
    out = []
    for dtype, zero in ((dim_dtype, False), (zero_dtype, True)):
        floating = dtype.startswith("float")
        out.append(
            lib.tensor(
                _values(dtype, zero), dtype=getattr(lib, dtype), requires_grad=grad and floating
            )
        )
    return out if dim_first else out[::-1]


def _tol(dtype) -> dict:
    name = _name(dtype)
    if name == "float16":
        return {"rtol": 2e-3, "atol": 2e-3}
    if name == "float32":
        return {"rtol": 1e-5, "atol": 1e-6}
    return {"rtol": 1e-10, "atol": 1e-12}


def _check(got, want, what, computed=None):
    """``got`` equals torch's ``want``: dtype and values, to the tolerance of the coarser
    of its dtype and ``computed`` (the coarsest dtype the op met); None stands for 0."""
    tols = [_tol(computed)] if computed is not None else []
    tols += [_tol(t.dtype) for t in (got, want) if t is not None]
    tol = max(tols, key=lambda t: t["rtol"])
    if want is None or got is None:
        other = got if want is None else want
        if other is not None:  # torch's formula may leave rounding noise where nnkit has 0
            np.testing.assert_allclose(other.detach().double().numpy(), 0.0, err_msg=what, **tol)
        return
    assert _name(got.dtype) == _name(want.dtype), f"{what}: {got.dtype} vs {want.dtype}"
    np.testing.assert_allclose(
        got.detach().numpy().astype(np.float64),
        want.detach().double().numpy(),
        err_msg=what,
        **tol,
    )


def _leaves(operands):
    return [t for t in operands if t.requires_grad]


# torch's ldexp warns of resizing a 0-d output (its own internals)
@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("dim_first", [True, False], ids=["dim-first", "0d-first"])
@pytest.mark.parametrize(("dim_dtype", "zero_dtype"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
@pytest.mark.parametrize("op", sorted(OPS))
def test_zero_dim_operand_promotes_as_torch(op, dim_dtype, zero_dtype, dim_first):
    fn, tfn, diff = OPS[op]
    t_ops = _operands(dim_dtype, zero_dtype, dim_first, torch, diff)
    try:
        want = tfn(*t_ops)
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        pytest.skip(f"torch refuses it: {exc}")
    ops = _operands(dim_dtype, zero_dtype, dim_first, nnkit, diff)
    got = fn(*ops)
    assert _name(got.dtype) == _name(want.dtype)
    _check(got, want, "result")
    t_leaves, leaves = _leaves(t_ops), _leaves(ops)
    if not (diff and want.dtype.is_floating_point and t_leaves):
        return
    # first order, with a graph, through weights that tell the elements apart
    tw = torch.arange(1, 5, dtype=want.dtype)
    floats = [t.dtype for t in t_leaves] + [want.dtype]
    coarse = max(floats, key=lambda d: _tol(d)["rtol"])  # intermediates may be computed in it
    if not got.requires_grad:  # nnkit records no graph where torch's gradients are all 0
        for tg in torch.autograd.grad((want * tw).sum(), t_leaves, allow_unused=True):
            _check(None, tg, "grad of a result without a graph", coarse)
        return
    w = nnkit.tensor(tw.numpy())
    t_grads = torch.autograd.grad((want * tw).sum(), t_leaves, create_graph=True, allow_unused=True)
    grads = nnkit.autograd.grad((got * w).sum(), leaves, create_graph=True, allow_unused=True)
    for k, (g, tg) in enumerate(zip(grads, t_grads)):
        _check(g, tg, f"grad {k}", coarse)
    # second order: d/d(leaves) of the sum of the first-order gradients
    t_diff = [g.sum() for g in t_grads if g is not None and g.requires_grad]
    n_diff = [g.sum() for g in grads if g is not None and g.requires_grad]
    if t_diff or n_diff:
        t_g2 = (
            torch.autograd.grad(sum(t_diff), t_leaves, allow_unused=True)
            if t_diff
            else [None] * len(t_leaves)
        )
        g2 = (
            nnkit.autograd.grad(sum(n_diff), leaves, allow_unused=True)
            if n_diff
            else [None] * len(leaves)
        )
        for k, (g, tg) in enumerate(zip(g2, t_g2)):
            _check(g, tg, f"second-order grad {k}", coarse)
    # .grad of the leaves (the engine's accumulation)
    fn(*ops).backward(w)
    tfn(*t_ops).backward(tw)
    for k, (x, tx) in enumerate(zip(leaves, t_leaves)):
        _check(x.grad, tx.grad, f".grad {k}", coarse)


def test_zero_dim_operand_that_is_an_intermediate_gets_its_gradients():
    """The 0-d operand made by an op (not a leaf): the cast joins the graph before it."""
    s = nnkit.tensor(1.5, dtype=nnkit.float64, requires_grad=True)
    ts = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    x = nnkit.tensor([0.5, 1.0, 2.0], requires_grad=True)
    tx = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    y = x * (s * s)
    ty = tx * (ts * ts)
    assert _name(y.dtype) == _name(ty.dtype) == "float32"
    (gx, gs) = nnkit.autograd.grad(y.sum(), (x, s), create_graph=True)
    (tgx, tgs) = torch.autograd.grad(ty.sum(), (tx, ts), create_graph=True)
    _check(gx, tgx, "grad x")
    _check(gs, tgs, "grad s")
    (h,) = nnkit.autograd.grad(gs, (s,))
    (th,) = torch.autograd.grad(tgs, (ts,))
    _check(h, th, "second-order grad s")


@pytest.mark.parametrize(
    ("x", "lo", "hi"),
    [
        ((), "float16", "float64"),  # a 0-d input, dimensioned bounds: float64
        ((3,), "float64", "float16"),  # a dimensioned input, 0-d bounds: the input's
        ((), "int64", "float16"),
    ],
    ids=str,
)
def test_clamp_with_tensor_bounds_promotes_over_all_three_as_torch(x, lo, hi):
    """torch's result type of (input, min, max), 0-d rule included; no value is rounded
    through an intermediate dtype (a 0-d float32 input meets a float16 bound first)."""
    vals = {"x": 1.00048828125, "lo": 0, "hi": 3}  # x: not a float16 value
    ts = {
        "x": torch.full(x, vals["x"], dtype=torch.float32),
        "lo": torch.full((3,) if not x else (), vals["lo"], dtype=getattr(torch, lo)),
        "hi": torch.full((3,) if not x else (), vals["hi"], dtype=getattr(torch, hi)),
    }
    ns = {k: nnkit.tensor(v.numpy()) for k, v in ts.items()}
    want = torch.clamp(ts["x"], ts["lo"], ts["hi"])
    got = nnkit.clamp(ns["x"], ns["lo"], ns["hi"])
    assert _name(got.dtype) == _name(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
