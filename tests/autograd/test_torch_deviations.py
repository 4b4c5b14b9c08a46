"""Deviations from PyTorch found while documenting the ops (issue 13), each checked
against torch: values, dtypes, shapes, copies versus views, warnings and errors."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import nnkit

torch = pytest.importorskip("torch")

INTS = ["bool", "uint8", "int8", "int16", "int32", "int64"]


def _np(t):
    """A torch or nnkit tensor's values as a NumPy array."""
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return t.detach().cpu().numpy()


def _same(ours, theirs):
    """Equal values (NaN where NaN, infinities of the same sign), shape and dtype name."""
    assert str(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(_np(ours), _np(theirs))


def _both(values, dtype, device, requires_grad=False):
    ours = nnkit.tensor(values, dtype=getattr(nnkit, dtype), device=device)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype))
    if requires_grad:
        ours.requires_grad_(True)
        theirs.requires_grad_(True)
    return ours, theirs


# ------------------------------------------------------------------ sign of bool
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float32"])
def test_sign_matches_torch(dtype, device):
    values = [True, False, True] if dtype == "bool" else [3, 0, 1]
    ours, theirs = _both(values, dtype, device)
    _same(nnkit.sign(ours), torch.sign(theirs))
    _same(ours.sign(), theirs.sign())


def test_sign_of_bool_is_a_new_tensor(device):
    x = nnkit.tensor([True, False], device=device)
    s = nnkit.sign(x)
    s[0] = False
    assert x.tolist() == [True, False]


# ------------------------------------------------- integer reductions give int64
REDUCTIONS = {
    "sum": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(1),
    "sum_keepdim": lambda x: x.sum(0, keepdim=True),
    "fn_sum": lambda x: (nnkit if isinstance(x, nnkit.Tensor) else torch).sum(x),
    "prod": lambda x: x.prod(),
    "prod_dim": lambda x: x.prod(0),
    "cumsum": lambda x: x.cumsum(1),
    "fn_cumsum": lambda x: (nnkit if isinstance(x, nnkit.Tensor) else torch).cumsum(x, 0),
    "cumprod": lambda x: x.cumprod(0),
    "trace": lambda x: x.trace(),
}


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_integer_reductions_accumulate_in_int64(op, dtype, device):
    if op == "trace" and dtype == "bool":
        pytest.skip("torch.trace refuses bool; nnkit sums it as int64")
    values = (
        [[True, False, True], [True, True, False]] if dtype == "bool" else [[1, 2, 3], [4, 5, 6]]
    )
    ours, theirs = _both(values, dtype, device)
    got, want = REDUCTIONS[op](ours), REDUCTIONS[op](theirs)
    _same(got, want)
    assert got.dtype == nnkit.int64
    assert repr(got).startswith("tensor(")  # uint64 used to make the repr crash


def test_uint8_sum_wraps_nowhere_and_keeps_an_explicit_dtype(device):
    ours, theirs = _both([200, 100], "uint8", device)
    _same(ours.sum(), theirs.sum())  # 300: no wrap-around in uint8
    _same(ours.sum(dtype=nnkit.int32), theirs.sum(dtype=torch.int32))
    _same(nnkit.trace(ours.reshape(1, 2)), torch.trace(theirs.reshape(1, 2)))


# ------------------------------------------------------------ repr of empties
@pytest.mark.parametrize("dtype", INTS + ["float16", "float32", "float64"])
def test_repr_of_empty_1d_tensor_names_the_dtype_as_torch(dtype):
    ours = nnkit.zeros(0, dtype=getattr(nnkit, dtype))
    theirs = torch.zeros(0, dtype=getattr(torch, dtype))
    assert repr(ours) == repr(theirs).replace("torch.", "nnkit.")


@pytest.mark.parametrize("shape", [(0, 3), (2, 0), (2, 0, 3)])
def test_repr_of_empty_int64_tensor_names_its_dtype(shape):
    assert "dtype=nnkit.int64" in repr(nnkit.zeros(shape, dtype=nnkit.int64))
    assert "dtype=nnkit.bool" in repr(nnkit.zeros(shape, dtype=nnkit.bool))
    assert "dtype" not in repr(nnkit.zeros(shape))


def test_repr_of_non_empty_default_dtypes_still_omits_them():
    assert repr(nnkit.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(nnkit.tensor([True])) == "tensor([True])"


# ---------------------------------------------------------- clamp_ dtype errors
CLAMP_REFUSALS = [
    ("int64", (0.5, 1.5), {}, "min", "float"),
    ("int64", (), {"min": 0.5}, "min", "float"),
    ("int64", (), {"max": 1.5}, "max", "float"),
    ("int64", (0, 1.0), {}, "max", "float"),
    ("int32", (0.5,), {}, "min", "float"),
    ("uint8", (None, 2.5), {}, "max", "float"),
    ("bool", (0, 1), {}, "min", "int64"),
]


@pytest.mark.parametrize("dtype, args, kwargs, arg, result", CLAMP_REFUSALS)
def test_clamp__refuses_a_result_type_that_does_not_fit_like_torch(
    dtype, args, kwargs, arg, result, device
):
    ours, theirs = _both([1, 0], dtype, device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        theirs.clamp_(*args, **kwargs)
    with pytest.raises(RuntimeError) as info:
        ours.clamp_(*args, **kwargs)
    msg = str(info.value)
    assert msg.startswith("clamp_:") and f"'{arg}'" in msg
    assert re.search(rf"result type {result}\b.*output type {dtype}\b", msg)
    assert "ufunc" not in msg and "casting" not in msg  # no NumPy text
    assert ours.tolist() == [1, 0]  # nothing was written


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_clamp__refuses_a_tensor_bound_of_a_wider_kind(dtype, device):
    ours, theirs = _both([1, 0], dtype, device)
    bound = 0.5 if dtype == "int64" else 0
    with pytest.raises(RuntimeError, match="can't be cast"):
        theirs.clamp_(torch.tensor(bound))
    with pytest.raises(RuntimeError, match=r"^clamp_: argument 'min'"):
        ours.clamp_(nnkit.tensor(bound, device=device))


def test_clamp__with_fitting_bounds_still_works(device):
    ours, theirs = _both([-3, 1, 9], "int64", device)
    _same(ours.clamp_(0, 5), theirs.clamp_(0, 5))
    ours, theirs = _both([-3.0, 1.0, 9.0], "float32", device)
    _same(ours.clamp_(0, 5), theirs.clamp_(0, 5))  # integer bounds into floats
    _same(ours.clip_(max=0.5), theirs.clip_(max=0.5))


# ------------------------------------------------------------ chunk of empties
@pytest.mark.parametrize(
    "shape, chunks, dim",
    [((0, 3), 3, 0), ((0, 3), 3, 1), ((3, 0), 2, 1), ((0,), 1, 0), ((0,), 4, 0), ((5, 2), 3, 0)],
)
def test_chunk_shapes_match_torch(shape, chunks, dim, device):
    ours = nnkit.zeros(shape, device=device).chunk(chunks, dim)
    theirs = torch.zeros(shape).chunk(chunks, dim)
    assert [tuple(c.shape) for c in ours] == [tuple(c.shape) for c in theirs]


# ----------------------------------------------------------- flips are copies
FLIPS = {
    "flip": lambda L, x: x.flip(0),
    "flip_fn": lambda L, x: L.flip(x, (0, 1)),
    "fliplr": lambda L, x: L.fliplr(x),
    "flipud": lambda L, x: x.flipud(),
    "rot90": lambda L, x: L.rot90(x),
    "rot90_2": lambda L, x: x.rot90(2),
    "rot90_3": lambda L, x: x.rot90(3, (1, 0)),
}


@pytest.mark.parametrize("name", sorted(FLIPS))
def test_flips_copy_as_torch(name, device):
    fn = FLIPS[name]
    values = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    ours = nnkit.tensor(values, device=device, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    got, want = fn(nnkit, ours), fn(torch, theirs)
    _same(got, want)
    weights = np.arange(1.0, 1.0 + got.numel(), dtype=np.float32).reshape(tuple(got.shape))
    (got * nnkit.tensor(weights, device=device)).sum().backward()
    (want * torch.tensor(weights)).sum().backward()
    _same(ours.grad, theirs.grad)
    with nnkit.no_grad():
        got[0, 0] = -100.0
        got.add_(1.0)
    assert ours.tolist() == values.tolist()
    assert got.untyped_storage() is not ours.untyped_storage()


def test_flip_of_a_non_contiguous_input_is_a_contiguous_copy(device):
    x = nnkit.arange(6, device=device).reshape(2, 3).T
    f = x.flip(1)
    assert f.is_contiguous()
    assert f.tolist() == torch.arange(6).reshape(2, 3).T.flip(1).tolist()


# --------------------------------------------- floating-point errors are quiet
INF, NAN = math.inf, math.nan
QUIET_FORWARD = {
    "remainder_by_0.0": (lambda L, x: x % 0.0, [1.0, -1.0, 0.0]),
    "rremainder": (lambda L, x: 1.0 % x, [0.0, 2.0]),
    "fmod_by_0.0": (lambda L, x: L.fmod(x, 0.0), [1.0, 0.0]),
    "floordiv_by_0.0": (lambda L, x: x // 0.0, [1.0, -1.0, 0.0]),
    "sqrt_negative": (lambda L, x: L.sqrt(x), [-1.0, 4.0]),
    "rsqrt_0": (lambda L, x: L.rsqrt(x), [0.0, -1.0]),
    "log_0_negative": (lambda L, x: L.log(x), [0.0, -1.0, 1.0]),
    "log2": (lambda L, x: L.log2(x), [0.0, -1.0]),
    "log10": (lambda L, x: L.log10(x), [0.0, -1.0]),
    "log1p": (lambda L, x: L.log1p(x), [-1.0, -2.0]),
    "div_0_by_0": (lambda L, x: x / 0.0, [0.0, 1.0, -1.0]),
    "rdiv": (lambda L, x: 1.0 / x, [0.0]),
    "reciprocal": (lambda L, x: L.reciprocal(x), [0.0]),
    "pow_0_to_-1": (lambda L, x: x**-1.0, [0.0, 2.0]),
    "pow_negative_to_half": (lambda L, x: x**0.5, [-1.0, 4.0]),
    "pow_tensor_exponent": (lambda L, x: x ** (x - 1.0), [0.0, -0.5]),
    "exp_overflow": (lambda L, x: L.exp(x), [1000.0]),
    "inf_times_0": (lambda L, x: x * 0.0, [INF]),
    "inf_minus_inf": (lambda L, x: x - INF, [INF]),
    "acosh_domain": (lambda L, x: L.acosh(x), [0.5]),
    "atanh_domain": (lambda L, x: L.atanh(x), [1.0, 2.0]),
    "var_of_one": (lambda L, x: x.var(), [1.0]),
    "std_of_one": (lambda L, x: x.std(), [1.0]),
    "prod_inf_0": (lambda L, x: x.prod(), [INF, 0.0]),
    "cumprod_inf_0": (lambda L, x: x.cumprod(0), [INF, 0.0]),
    "sum_overflow": (lambda L, x: x.sum(), [3e38, 3e38]),
    "mse_inf": (lambda L, x: L.nn.functional.mse_loss(x, x), [INF]),
    "silu_-inf": (lambda L, x: L.nn.functional.silu(x), [-INF]),
}


@pytest.mark.parametrize("name", sorted(QUIET_FORWARD))
def test_float_kernels_return_inf_nan_without_warnings(name, device):
    fn, values = QUIET_FORWARD[name]
    ours, theirs = _both(values, "float32", device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns of var/std's degrees of freedom
        want = fn(torch, theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(fn(nnkit, ours), want)


QUIET_GRADS = {
    "acosh_at_1": (lambda L, x: L.acosh(x), [1.0]),
    "log_at_0": (lambda L, x: L.log(x), [0.0]),
    "sqrt_at_0": (lambda L, x: L.sqrt(x), [0.0]),
    "asin_at_1": (lambda L, x: L.asin(x), [1.0, -1.0]),
    "acos_at_1": (lambda L, x: L.acos(x), [1.0]),
    "atanh_at_1": (lambda L, x: L.atanh(x), [1.0]),
    "rsqrt_at_0": (lambda L, x: L.rsqrt(x), [0.0]),
    "log1p_at_-1": (lambda L, x: L.log1p(x), [-1.0]),
    "pow_half_at_0": (lambda L, x: x**0.5, [0.0]),
    "pow_-1_at_0": (lambda L, x: x**-1.0, [0.0]),
    "rdiv_at_0": (lambda L, x: 1.0 / x, [0.0]),
    "exp_overflow": (lambda L, x: L.exp(x), [1000.0]),
    "std_of_one": (lambda L, x: x.std(), [1.0]),
}


@pytest.mark.parametrize("name", sorted(QUIET_GRADS))
def test_gradients_at_singular_points_are_quiet_and_match_torch(name, device):
    fn, values = QUIET_GRADS[name]
    ours, theirs = _both(values, "float32", device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(nnkit, ours).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(torch, theirs).sum().backward()
    _same(ours.grad, theirs.grad)


def test_in_place_float_errors_are_quiet(device):
    ours, theirs = _both([1.0, 0.0, -1.0], "float32", device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(ours.div_(0.0), theirs.div_(0.0))
        _same(ours.mul_(0.0), theirs.mul_(0.0))  # inf * 0


def test_numpys_own_error_state_is_untouched():
    before = np.geterr()
    with np.errstate(all="raise"):
        nnkit.log(nnkit.tensor([0.0]))  # quiet inside nnkit's op, as torch
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))  # the user's own setting still rules their NumPy code
    assert np.geterr() == before
    with pytest.raises(RuntimeError):
        nnkit.tensor([1, 2]) // 0  # an op that raises leaves the state as it was
    assert np.geterr() == before


# ------------------------------------------------- integer division by zero raises
INT_DIV_ZERO = {
    "floordiv_op": ("floor_divide", lambda L, x, z: x // z),
    "floordiv_scalar": ("floor_divide", lambda L, x, z: x // 0),
    "rfloordiv": ("floor_divide", lambda L, x, z: 7 // z),
    "floor_divide": ("floor_divide", lambda L, x, z: L.floor_divide(x, z)),
    "div_floor": ("div", lambda L, x, z: L.div(x, z, rounding_mode="floor")),
    "div_trunc": ("div", lambda L, x, z: L.div(x, z, rounding_mode="trunc")),
    "remainder_op": ("remainder", lambda L, x, z: x % z),
    "remainder_scalar": ("remainder", lambda L, x, z: x % 0),
    "remainder": ("remainder", lambda L, x, z: L.remainder(x, z)),
    "fmod": ("fmod", lambda L, x, z: L.fmod(x, z)),
}


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("case", sorted(INT_DIV_ZERO))
def test_integer_division_by_zero_raises_like_torch(case, dtype, device):
    op, fn = INT_DIV_ZERO[case]
    x, tx = _both([5, 3], dtype, device)
    z, tz = _both([1, 0], dtype, device)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(torch, tx, tz)
    with pytest.raises(RuntimeError, match=rf"^{op}: ZeroDivisionError") as info:
        fn(nnkit, x, z)
    assert "'other'" in str(info.value)


@pytest.mark.parametrize("case", sorted(INT_DIV_ZERO))
def test_integer_division_without_zero_divisors_matches_torch(case, device):
    fn = INT_DIV_ZERO[case][1]
    x, tx = _both([7, -7, 6], "int64", device)
    z, tz = _both([2, 3, -4], "int64", device)
    if "scalar" in case:
        pytest.skip("divides by the literal 0")
    _same(fn(nnkit, x, z), fn(torch, tx, tz))


def test_integer_division_of_an_empty_tensor_by_zero_is_empty(device):
    x, tx = _both([], "int64", device)
    _same(x // 0, tx // 0)
    _same(x % 0, tx % 0)
