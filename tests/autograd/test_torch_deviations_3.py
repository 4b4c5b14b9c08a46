"""Deviations from PyTorch in ``clamp`` with tensor bounds and the rounded ``div`` modes
(issue 13), each checked against torch: values, dtypes, gradients, errors."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")

NAN = float("nan")


def _np(t):
    """A torch or nnkit tensor's values as a NumPy array."""
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return t.detach().cpu().numpy()


def _same(ours, theirs):
    """Equal values (NaN where NaN), shape and dtype name."""
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(_np(ours), _np(theirs))


def _pair(values, device, dtype="float32", grad=False):
    """The same tensor in nnkit (on ``device``) and torch; None stays None; a number too."""
    if values is None or isinstance(values, (int, float)):
        return values, values
    ours = nnkit.tensor(values, dtype=getattr(nnkit, dtype), device=device)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype))
    if grad:
        ours.requires_grad_(True)
        theirs.requires_grad_(True)
    return ours, theirs


def _run_both(fn_ours, fn_theirs, args, device, dtype="float32", upstream=None):
    """Forward and backward of one call in nnkit and torch; compare values and grads."""
    pairs = [_pair(a, device, dtype, grad=True) for a in args]
    ours = fn_ours(*[p[0] for p in pairs])
    theirs = fn_theirs(*[p[1] for p in pairs])
    _same(ours, theirs)
    g_ours, g_theirs = (
        (nnkit.ones(ours.shape, dtype=ours.dtype, device=device), torch.ones_like(theirs))
        if upstream is None
        else _pair(np.broadcast_to(upstream, tuple(theirs.shape)).tolist(), device, dtype)
    )
    ours.backward(g_ours)
    theirs.backward(g_theirs)
    for o, t in pairs:
        if isinstance(t, torch.Tensor):
            _same(o.grad, t.grad)


# ---------------------------------------------------------- clamp with tensor bounds
# Ties (x == lo, x == hi, lo == hi), NaN in x and in each bound, lo > hi.
X = [0.0, 1.0, 2.0, NAN, 3.0, -1.0, 5.0, 0.5, 1.0, 7.0]
LO = [0.0, 0.0, 2.0, 0.0, NAN, 4.0, 1.0, 1.0, 1.0, 3.0]
HI = [1.0, 1.0, 3.0, 1.0, 4.0, 2.0, NAN, 1.0, 1.0, 3.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("lo", "hi"), [(LO, HI), (LO, None), (None, HI)], ids=["both", "min", "max"]
)
def test_clamp_tensor_bounds_ties_nan_and_crossed_bounds_match_torch(lo, hi, dtype, device):
    _run_both(nnkit.clamp, torch.clamp, (X, lo, hi), device, dtype)


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_clamp_min_and_clamp_max_with_tensor_bounds_match_torch(name, device):
    bound = LO if name == "clamp_min" else HI
    _run_both(getattr(nnkit, name), getattr(torch, name), (X, bound), device)


def test_clamp_tensor_bounds_give_a_tie_gradient_wholly_to_x(device):
    # The old composition of maximum and minimum split it 0.5 / 0.5 with the bound.
    x, lo, hi = (nnkit.tensor([1.0, 2.0], requires_grad=True, device=device) for _ in "abc")
    nnkit.clamp(x, lo, hi).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    assert lo.grad.tolist() == [0.0, 0.0] and hi.grad.tolist() == [0.0, 0.0]


def test_clamp_of_nan_gives_no_gradient_to_anyone(device):
    x = nnkit.tensor([NAN], requires_grad=True, device=device)
    lo = nnkit.tensor([0.0], requires_grad=True, device=device)
    hi = nnkit.tensor([1.0], requires_grad=True, device=device)
    nnkit.clamp(x, lo, hi).sum().backward()
    assert (x.grad.item(), lo.grad.item(), hi.grad.item()) == (0.0, 0.0, 0.0)


def test_clamp_tensor_bounds_with_many_ties_and_broadcasting_match_torch(device):
    # Small integers: ties everywhere, lo > hi in places. (torch's backward fails when x
    # itself broadcasts against both bounds: it ors masks of two shapes in place.)
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (4, 5, 3)).astype(float).tolist()
    lo = rng.integers(-2, 3, (5, 1)).astype(float).tolist()
    hi = rng.integers(-2, 3, (3,)).astype(float).tolist()
    up = rng.standard_normal((4, 5, 3))
    _run_both(nnkit.clamp, torch.clamp, (x, lo, hi), device, "float64", upstream=up)


def test_clamp_upstream_nan_gradient_stays_out_of_clamped_places(device):
    # torch masks with where, not a product: a NaN gradient reaches only what is kept.
    up = [NAN, NAN, NAN]
    _run_both(
        lambda x: nnkit.clamp(x, -1, 1),
        lambda x: torch.clamp(x, -1, 1),
        ([-2.0, 0.5, 3.0],),
        device,
        upstream=up,
    )
    _run_both(
        nnkit.clamp, torch.clamp, ([-2.0, 0.5, 3.0], [-1.0] * 3, [1.0] * 3), device, upstream=up
    )
    ours = nnkit.tensor([-2.0, 0.5, 3.0], requires_grad=True, device=device)
    nnkit.nn.functional.hardtanh(ours).backward(nnkit.tensor(up, device=device))
    assert np.isnan(_np(ours.grad)).tolist() == [False, True, False]
    assert _np(ours.grad)[[0, 2]].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("x_dtype", "lo_dtype", "lo"),
    [
        ("int64", "float32", [1.5]),
        ("float32", "int64", [2]),
        ("float32", "float64", [2.5]),
        ("int32", "int64", [2]),
        ("uint8", "uint8", [2]),
    ],
)
def test_clamp_tensor_bound_dtype_promotion_matches_torch(x_dtype, lo_dtype, lo, device):
    x = [1, 2, 3]
    ours = nnkit.clamp(
        nnkit.tensor(x, dtype=getattr(nnkit, x_dtype), device=device),
        nnkit.tensor(lo, dtype=getattr(nnkit, lo_dtype), device=device),
    )
    theirs = torch.clamp(
        torch.tensor(x, dtype=getattr(torch, x_dtype)),
        torch.tensor(lo, dtype=getattr(torch, lo_dtype)),
    )
    _same(ours, theirs)


def test_clamp_with_a_number_and_a_tensor_bound_matches_torch_with_tensors(device):
    # PyTorch refuses to mix a number and a tensor bound; nnkit takes the number as a
    # 0-d bound of x's dtype: the same result as torch given that tensor.
    ours_x, theirs_x = _pair([-2.0, 0.0, 0.5, 3.0], device, grad=True)
    ours_hi, theirs_hi = _pair([1.0, 1.0, 0.5, 1.0], device, grad=True)
    ours = nnkit.clamp(ours_x, 0.0, ours_hi)
    theirs = torch.clamp(theirs_x, torch.tensor(0.0), theirs_hi)
    _same(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    _same(ours_x.grad, theirs_x.grad)
    _same(ours_hi.grad, theirs_hi.grad)


def test_clamp_tensor_bounds_support_double_backward(device):
    x = nnkit.tensor([-2.0, 0.5, 3.0], requires_grad=True, device=device)
    lo = nnkit.tensor([-1.0, -1.0, -1.0], requires_grad=True, device=device)
    (g,) = nnkit.autograd.grad((nnkit.clamp(x, lo, 1.0) ** 2).sum(), x, create_graph=True)
    assert g.tolist() == [0.0, 1.0, 0.0]
    (gg,) = nnkit.autograd.grad(g.sum(), x)
    assert gg.tolist() == [0.0, 2.0, 0.0]


def test_clamp_tensor_bounds_export_to_onnx(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from tests.onnx.test_export import export_and_compare

    class Net(nnkit.nn.Module):
        def forward(self, x):
            lo = x.mean(1, keepdim=True)
            return nnkit.clamp(x, lo, x.amax(1, keepdim=True) - 0.1) + x.clamp_max(lo)

    export_and_compare(Net(), nnkit.randn(4, 5), nnkit.randn(2, 5), tmp_path / "clamp.onnx")


# ------------------------------------------------------------------- rounded div
BIG = [2**62 + 1, -7, 7, -(2**62) - 3, 0]
DIV_CASES = [
    (BIG, "int64", 2, None),
    (BIG, "int64", [3], "int64"),
    ([7, -7, 8, -8], "int32", [2, 2, -3, -3], "int16"),
    ([7, -7], "uint8", 2, None),
    ([7, -7], "int64", 2.0, None),
    ([7.0, -7.0], "float32", 2, None),
    ([7.0, -7.0], "float64", [2.0], "float32"),
    ([7, -7], "int64", [2.5], "float64"),
    ([5.5, -5.5, 1.0, -1.0, 0.0, -0.0], "float32", [0.1], "float32"),
    ([7.0, -7.0, 0.0], "float32", 0.0, None),
    ([True, False], "bool", [2, -3], "int64"),
]


def _div_operands(a, a_dtype, b, b_dtype, device):
    ours_a, theirs_a = _pair(a, device, a_dtype)
    ours_b, theirs_b = (b, b) if b_dtype is None else _pair(b, device, b_dtype)
    return ours_a, ours_b, theirs_a, theirs_b


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize(("a", "a_dtype", "b", "b_dtype"), DIV_CASES, ids=str)
def test_rounded_div_values_and_dtypes_match_torch(a, a_dtype, b, b_dtype, mode, device):
    ours_a, ours_b, theirs_a, theirs_b = _div_operands(a, a_dtype, b, b_dtype, device)
    _same(
        nnkit.div(ours_a, ours_b, rounding_mode=mode),
        torch.div(theirs_a, theirs_b, rounding_mode=mode),
    )
    _same(nnkit.true_divide(ours_a, ours_b), torch.true_divide(theirs_a, theirs_b))


@pytest.mark.parametrize(("a", "a_dtype", "b", "b_dtype"), DIV_CASES, ids=str)
def test_floor_divide_and_the_operator_match_torch(a, a_dtype, b, b_dtype, device):
    ours_a, ours_b, theirs_a, theirs_b = _div_operands(a, a_dtype, b, b_dtype, device)
    _same(ours_a // ours_b, theirs_a // theirs_b)
    _same(nnkit.floor_divide(ours_a, ours_b), torch.floor_divide(theirs_a, theirs_b))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_div_of_a_number_by_a_tensor_matches_torch(mode, device):
    for num in (7, -7, 7.5):
        ours = nnkit.div(num, nnkit.tensor([2, -2], device=device), rounding_mode=mode)
        _same(ours, torch.div(num, torch.tensor([2, -2]), rounding_mode=mode))
    _same(7 // nnkit.tensor([2, -2], device=device), 7 // torch.tensor([2, -2]))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_div_records_zero_gradients_as_torch(mode, device):
    ours_x, theirs_x = _pair([[7.0, -7.0, 3.0]], device, "float32", grad=True)
    ours_y, theirs_y = _pair([[2.0], [-2.0]], device, "float64", grad=True)
    ours = nnkit.div(ours_x, ours_y, rounding_mode=mode)
    theirs = torch.div(theirs_x, theirs_y, rounding_mode=mode)
    assert ours.requires_grad and theirs.requires_grad
    _same(ours, theirs)
    # zeros even where the incoming gradient is NaN; each in its operand's shape/dtype
    ours.backward(nnkit.full(ours.shape, NAN, dtype=ours.dtype, device=device))
    theirs.backward(torch.full(theirs.shape, NAN, dtype=theirs.dtype))
    _same(ours_x.grad, theirs_x.grad)
    _same(ours_y.grad, theirs_y.grad)


def test_rounded_div_of_integers_does_not_require_grad(device):
    ours = nnkit.div(nnkit.tensor([7, -7], device=device), 2, rounding_mode="trunc")
    assert not ours.requires_grad and ours.grad_fn is None


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_integer_div_by_zero_raises_as_torch(mode, device):
    with pytest.raises(RuntimeError):
        torch.div(torch.tensor([7, -7]), 0, rounding_mode=mode)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        nnkit.div(nnkit.tensor([7, -7], device=device), 0, rounding_mode=mode)


def test_rounded_div_of_two_bool_tensors_is_refused_as_torch(device):
    with pytest.raises(NotImplementedError):
        torch.div(torch.tensor([True, False]), torch.tensor([True, True]), rounding_mode="trunc")
    a, b = nnkit.tensor([True, False], device=device), nnkit.tensor([True, True], device=device)
    with pytest.raises(TypeError, match="bool"):
        nnkit.div(a, b, rounding_mode="trunc")


def test_unknown_rounding_mode_is_refused(device):
    with pytest.raises(RuntimeError):
        torch.div(torch.tensor([1.0]), 2, rounding_mode="round")
    with pytest.raises(ValueError, match="rounding_mode"):
        nnkit.div(nnkit.tensor([1.0], device=device), 2, rounding_mode="round")


# ------------------------------------------------------------------------- lgamma
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lgamma_is_exactly_zero_at_one_and_two_as_torch(dtype, device):
    # (the Lanczos sum left lgamma(1) = -8.9e-16; elsewhere float64 stays a few ulp off)
    ours, theirs = _pair([1.0, 2.0], device, dtype)
    _same(nnkit.lgamma(ours), torch.lgamma(theirs))
    assert nnkit.lgamma(ours).tolist() == [0.0, 0.0]


def test_lgamma_at_the_positive_integers_matches_torch_in_float32(device):
    ours, theirs = _pair([float(n) for n in range(1, 60)], device, "float32")
    _same(nnkit.lgamma(ours), torch.lgamma(theirs))


def test_negative_zero_scalar_keeps_its_sign_after_positive_zero():
    # the 0-d scalar cache once treated 0.0 and -0.0 as one key
    x = nnkit.tensor([-0.0, 1.0])
    assert np.signbit((x + 0.0).numpy()).tolist() == [False, False]
    assert np.signbit((x + (-0.0)).numpy()).tolist() == [True, False]
    assert np.signbit((x * -0.0).numpy()).tolist() == [False, True]
    assert np.isnan((x + float("nan")).numpy()).all()


@pytest.mark.parametrize("lib", ["nnkit", "torch"])
def test_gradient_of_another_dtype_is_cast_to_the_inputs(lib):
    # torch's engine casts a gradient to its input's dtype (a Function's backward may
    # return float64 for a float32 input); .grad and autograd.grad both follow it
    m = nnkit if lib == "nnkit" else torch

    class Twice(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g * 2).double()

    x = m.ones(2, requires_grad=True)
    Twice.apply(x).sum().backward()
    assert x.grad.dtype == m.float32 and x.grad.tolist() == [2.0, 2.0]
    (g,) = m.autograd.grad(Twice.apply(x).sum(), [x])
    assert g.dtype == m.float32 and g.tolist() == [2.0, 2.0]
