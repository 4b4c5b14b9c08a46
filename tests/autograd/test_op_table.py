"""Op-table driven tests: forward vs NumPy, gradcheck, gradgradcheck, non-differentiability.

Rows come from ``tests/optable_core.py`` (tensor ops), ``tests/optable_reduce.py``
(reductions), ``tests/optable_discrete.py`` (comparisons, rounding, remainders),
``tests/optable_nn.py`` (neural-network functional ops), ``tests/optable_ordering.py``
(cumulative, sorting and selection ops), ``tests/optable_shaping.py`` (shape and
product ops) and ``tests/optable_special.py`` (elementwise math and activations). A new
op is one row there.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import nnkit
from nnkit.autograd import gradcheck, gradgradcheck
from tests.opspec import OpSpec, Sample
from tests.optable_core import OPS as CORE_OPS
from tests.optable_discrete import OPS as DISCRETE_OPS
from tests.optable_extra import OPS as EXTRA_OPS
from tests.optable_ordering import OPS as ORDERING_OPS
from tests.optable_reduce import OPS as REDUCE_OPS
from tests.optable_shaping import OPS as SHAPING_OPS
from tests.optable_special import OPS as SPECIAL_OPS

try:
    from tests.optable_nn import OPS as NN_OPS
except ImportError:  # the nn table is optional until the layers land
    NN_OPS = []

ALL_OPS: list[OpSpec] = (
    CORE_OPS
    + REDUCE_OPS
    + DISCRETE_OPS
    + NN_OPS
    + ORDERING_OPS
    + SHAPING_OPS
    + SPECIAL_OPS
    + EXTRA_OPS
)


def _params(kind):
    out = []
    for spec in ALL_OPS:
        if kind == "diff" and not spec.differentiable:
            continue
        if kind == "nondiff" and spec.differentiable:
            continue
        if kind == "gradgrad" and not (spec.differentiable and spec.gradgrad):
            continue
        rng = np.random.default_rng(zlib.crc32(spec.name.encode()))
        for k, s in enumerate(spec.samples(rng)):
            out.append(pytest.param(spec, s, id=f"{spec.name}-{k}{'-' + s.desc if s.desc else ''}"))
    return out


def _is_float_array(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _diff_idx(sample: Sample):
    if sample.diff is not None:
        return set(sample.diff)
    return {k for k, a in enumerate(sample.args) if _is_float_array(a)}


def _layout(arr: np.ndarray, layout: str, device, dtype):
    """A tensor with ``arr``'s values in the requested memory layout."""
    if layout == "noncontig" and arr.ndim >= 1:
        wide = np.repeat(arr, 2, axis=-1)
        return nnkit.tensor(wide, dtype=dtype, device=device)[..., ::2]
    if layout == "transposed" and arr.ndim >= 2:
        return nnkit.tensor(
            np.ascontiguousarray(np.swapaxes(arr, -1, -2)), dtype=dtype, device=device
        ).transpose(-1, -2)
    return nnkit.tensor(arr, dtype=dtype, device=device)


def _make_args(sample: Sample, device, float_dtype, layout="contig", grad=True):
    diff = _diff_idx(sample)
    args = []
    for k, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            dt = float_dtype if a.dtype.kind == "f" else None
            t = (
                _layout(a, layout, device, dt)
                if a.dtype.kind == "f"
                else nnkit.tensor(a, device=device)
            )
            if grad and k in diff:
                t.requires_grad_(True)
            args.append(t)
        else:
            args.append(a)
    return args


def _call(spec, sample, args):
    return spec.fn(*args, **sample.kwargs)


def _to_numpy(out):
    if isinstance(out, (tuple, list)):
        return [_to_numpy(o) for o in out]
    return np.asarray(out.detach().cpu().numpy())


@pytest.mark.parametrize("spec,sample", _params("all"))
def test_forward_matches_numpy(spec, sample, device):
    if spec.ref is None:
        pytest.skip("no NumPy reference for this op")
    args = _make_args(sample, device, nnkit.float64, grad=False)
    got = _to_numpy(_call(spec, sample, args))
    ref_args = [a.astype(np.float64) if _is_float_array(a) else a for a in sample.args]
    want = spec.ref(*ref_args, **sample.kwargs)
    got, want = (got, want) if isinstance(got, list) else ([got], [want])
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape, f"{spec.name}: shape {g.shape} != reference {w.shape}"
        np.testing.assert_allclose(g, w, atol=spec.atol, rtol=spec.rtol)


@pytest.mark.parametrize("spec,sample", _params("all"))
def test_forward_float32_keeps_dtype(spec, sample, device):
    """float32 inputs give float32 results (no silent upcast), within float32 tolerances."""
    if spec.ref is None or spec.random:
        pytest.skip("no NumPy reference for this op")
    if not any(_is_float_array(a) for a in sample.args):
        pytest.skip("no floating input")
    args = _make_args(sample, device, nnkit.float32, grad=False)
    got = _call(spec, sample, args)
    outs = got if isinstance(got, (tuple, list)) else [got]
    for o in outs:
        if o.dtype.is_floating_point:
            assert o.dtype == nnkit.float32, f"{spec.name}: float32 inputs gave {o.dtype}"
    ref_args = [a.astype(np.float64) if _is_float_array(a) else a for a in sample.args]
    want = spec.ref(*ref_args, **sample.kwargs)
    want = want if isinstance(got, (tuple, list)) else [want]
    for o, w in zip(_to_numpy(list(outs)), want):
        np.testing.assert_allclose(o, np.asarray(w), atol=spec.atol * 10, rtol=spec.rtol * 10)


def _checked_fn(spec, sample):
    """The op as a function of its arguments; random ops reseed so every call agrees."""

    def fn(*a):
        if spec.random:
            nnkit.manual_seed(7)
        return _call(spec, sample, a)

    return fn


@pytest.mark.parametrize("layout", ["contig", "noncontig", "transposed"])
@pytest.mark.parametrize("spec,sample", _params("diff"))
def test_gradcheck(spec, sample, layout, device):
    if layout != "contig" and not sample.noncontig:
        pytest.skip("sample opts out of non-contiguous layouts")
    args = _make_args(sample, device, nnkit.float64, layout)
    if layout != "contig" and not any(
        isinstance(a, nnkit.Tensor) and a.requires_grad and not a.is_contiguous() for a in args
    ):
        pytest.skip("no input of this sample has a non-contiguous form in this layout")
    fn = _checked_fn(spec, sample)
    assert gradcheck(fn, tuple(args), atol=spec.grad_atol, rtol=spec.grad_rtol)


@pytest.mark.parametrize("layout", ["contig", "noncontig"])
@pytest.mark.parametrize("spec,sample", _params("gradgrad"))
def test_gradgradcheck(spec, sample, layout, device):
    if layout != "contig" and not sample.noncontig:
        pytest.skip("sample opts out of non-contiguous layouts")
    args = _make_args(sample, device, nnkit.float64, layout)
    fn = _checked_fn(spec, sample)
    assert gradgradcheck(fn, tuple(args), atol=spec.grad_atol, rtol=spec.grad_rtol)


@pytest.mark.parametrize("spec,sample", _params("nondiff"))
def test_nondifferentiable_has_no_grad_fn(spec, sample, device):
    args = _make_args(sample, device, nnkit.float64)
    out = _call(spec, sample, args)
    for o in out if isinstance(out, (tuple, list)) else [out]:
        assert o.grad_fn is None and not o.requires_grad


#: Ops whose unrecorded backward is another computation, equal within float rounding
#: (compared to float64 rounding instead of bitwise).
_UNRECORDED_DIFFERS = {
    "cross_entropy": "one fused kernel (ops/loss_fused.py) against Tensor ops",
    "layer_norm": "one fused kernel, its sums as GEMVs (backends/norm_kernels.py)",
    # the bias's gradient as a GEMV with a ones vector, or carried in the GEMM through a
    # column of ones (backends/linear_kernels.py): BLAS's order of summation, which
    # equals NumPy's reduction on some kernels (SkylakeX) and not on others (Haswell/Zen)
    "linear": "the bias's gradient summed by BLAS (backends/linear_kernels.py)",
    "scaled_dot_product_attention": "the fused kernel from the saved weights and output",
    "scaled_dot_product_attention_heads": "the fused kernel from the saved weights and output",
}


@pytest.mark.parametrize("layout", ["contig", "noncontig"])
@pytest.mark.parametrize("spec,sample", _params("diff"))
def test_unrecorded_backward_matches_recorded(spec, sample, layout, device):
    """The backward without ``create_graph`` (where ops run their ``backward_mat``, on
    Mats) gives bitwise the gradients of the recorded one (their Tensor ``backward``);
    those of :data:`_UNRECORDED_DIFFERS` to float64 rounding."""
    if layout != "contig" and not sample.noncontig:
        pytest.skip("sample opts out of non-contiguous layouts")
    args = _make_args(sample, device, nnkit.float64, layout)
    inputs = [a for a in args if isinstance(a, nnkit.Tensor) and a.requires_grad]
    fn = _checked_fn(spec, sample)
    rng = np.random.default_rng(3)
    grads = {}
    for create_graph in (False, True):
        out = fn(*args)
        outs = [
            o
            for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, nnkit.Tensor) and o.requires_grad
        ]
        if not outs:
            pytest.skip("no differentiable output")
        if create_graph is False:
            weights = [
                nnkit.tensor(rng.standard_normal(o.shape), dtype=o.dtype, device=device)
                for o in outs
            ]
        got = nnkit.autograd.grad(
            outs, inputs, weights, create_graph=create_graph, allow_unused=True
        )
        grads[create_graph] = [None if g is None else _to_numpy(g) for g in got]
    for k, (fast, recorded) in enumerate(zip(grads[False], grads[True])):
        assert (fast is None) == (recorded is None), f"{spec.name}: input {k}"
        if fast is not None:
            assert fast.dtype == recorded.dtype and fast.shape == recorded.shape
            if spec.name in _UNRECORDED_DIFFERS:
                np.testing.assert_allclose(
                    fast, recorded, rtol=1e-10, atol=1e-12, err_msg=f"{spec.name}: input {k}"
                )
            else:
                np.testing.assert_array_equal(fast, recorded, err_msg=f"{spec.name}: input {k}")
