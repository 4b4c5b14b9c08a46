"""Run PyTorch's OpInfo samples through nnkit and compare (used by ``test_opinfo.py`` and
``benchmarks/opinfo_coverage.py``).

Each ``op_db`` entry is resolved to an nnkit callable by its name: ``nnkit.<name>``,
``nnkit.nn.functional.<x>`` for ``nn.functional.<x>``, ``nnkit.linalg.<x>`` /
``nnkit.special.<x>`` where those namespaces exist, else a ``Tensor`` method or property
of that name. Entries whose torch op is a wrapper lambda (``embedding`` swapping its
arguments, ``T`` reading a property...) run that same lambda with ``torch`` standing for
nnkit. Each sample's tensors (also inside lists, tuples and kwargs) become nnkit tensors;
the outputs are compared by structure, shape, dtype and value, then the gradients of a
random cotangent (and, where asked, second gradients) against torch's.

A sample ends as one of: ``pass``; ``wrong`` (a different value, shape, dtype or
gradient, or a crash where torch succeeds that does not explain itself); ``obscure``
(an error that does not say what is unsupported: NumPy's text, AttributeError, ...);
``refused`` (a clear error naming the op or the argument); ``exempt`` (listed in
``KNOWN_DEVIATIONS``); ``skip`` (torch itself fails on the sample).
"""

from __future__ import annotations

import math
import os
import traceback
import types
import warnings

import numpy as np
import torch

import nnkit

SKIP_PREFIXES = ("_refs", "jiterator", "torch.", "sparse.")
# Ops whose values are random (or uninitialised memory): compared by shape and dtype only.
RANDOM_NAMES = {
    "empty",
    "empty_like",
    "new_empty",
    "new_empty_strided",
    "empty_strided",
    "empty_permuted",
}

# (entry, sample index or description) -> why nnkit deliberately differs from torch.
_NORM_AT_ZERO = (
    "the second derivative of the 2-norm at the zero vector: torch gives NaN, nnkit 0 "
    "(its first derivative there is the 0 subgradient in both)"
)
KNOWN_DEVIATIONS: dict[tuple[str, object], str] = {
    ("linalg.norm.subgradients_at_zero", 0): _NORM_AT_ZERO,  # ord=None
    ("linalg.norm.subgradients_at_zero", 4): _NORM_AT_ZERO,  # ord=2
    **{
        ("as_strided_scatter", i): "torch's gradient for input is the output gradient at "
        "the scattered positions (zero elsewhere); nnkit's is the output gradient where "
        "input was not overwritten, the derivative of the op"
        for i in range(7)
    },
}


def entry_key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


class Missing(NotImplementedError):
    """A name a wrapper lambda uses that nnkit lacks."""


def _nnkit_namespace(parts: list[str]):
    """The nnkit object at a torch path (``["nn", "functional"]``), or None."""
    obj = nnkit
    for p in parts:
        if p == "Tensor" and obj is nnkit:
            obj = nnkit.Tensor
            continue
        try:
            obj = getattr(obj, p)
        except (AttributeError, ImportError):
            return None
    return obj


class _TorchShim:
    """Stands for ``torch`` (or a submodule) inside an OpInfo wrapper lambda."""

    def __init__(self, path: tuple[str, ...] = ()):
        self._path = path

    def __getattr__(self, name):
        path = (*self._path, name)
        if name in ("nn", "linalg", "special", "functional", "fft") and len(path) <= 2:
            if _nnkit_namespace(list(path)) is None:
                raise Missing(f"nnkit has no namespace {'.'.join(path)}")
            return _TorchShim(path)
        obj = _nnkit_namespace(list(path))
        if obj is None:
            raise Missing(f"nnkit has no {'.'.join(path)}")
        return obj


def _rebind(fn):
    """``fn`` (a lambda from torch's test suite) with ``torch`` meaning nnkit."""
    glb = dict(fn.__globals__)
    glb["torch"] = _TorchShim()
    glb["wrapper_set_seed"] = lambda f, *a, **k: f(*a, **k)
    return types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)


def _is_lambda(f) -> bool:
    return isinstance(f, types.FunctionType) and f.__name__ == "<lambda>"


def _names_in(code) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names_in(c)
    return names


def resolve(op):
    """``(callable, is_random)`` running ``op``'s samples in nnkit, or None."""
    name = op.name
    if name.startswith(SKIP_PREFIXES) or (name.startswith("_") and not name.endswith("__")):
        return None
    parts = name.split(".")
    target = _nnkit_namespace(parts)
    if target is None and len(parts) == 1:
        target = getattr(nnkit.Tensor, name, None)
    if target is None and len(parts) == 1 and _is_lambda(op.op):  # x.uniform_(...) as "uniform"
        target = getattr(nnkit.Tensor, name + "_", None)
    if target is None:
        return None
    is_random = name in RANDOM_NAMES
    if _is_lambda(op.op):
        is_random = is_random or "wrapper_set_seed" in _names_in(op.op.__code__)
        if "item" in parts:
            is_random = False
        return _rebind(op.op), is_random
    if isinstance(target, property):
        return (lambda x, *a, **k: getattr(x, name)), is_random
    if isinstance(target, type) or not callable(target):
        return None
    return target, is_random


# --- converting samples -------------------------------------------------------------


class Unconvertible(NotImplementedError):
    pass


def _dtype_to_nnkit(dt):
    name = str(dt).replace("torch.", "")
    if name == "bool":
        return nnkit.bool_
    got = getattr(nnkit, name, None)
    if not isinstance(got, nnkit.DType):
        raise Unconvertible(f"nnkit has no dtype {name}")
    return got


def to_nnkit(obj, leaves: list):
    """``obj`` with every torch tensor turned into an nnkit tensor (leaves collected)."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if t.is_complex() or t.dtype in (torch.bfloat16, torch.complex32):
            raise Unconvertible(f"nnkit has no dtype {t.dtype}")
        if t.layout != torch.strided:
            raise Unconvertible(f"nnkit has no layout {t.layout}")
        if t.storage_offset() and t.is_contiguous():  # a view into a larger storage: kept
            whole = torch.as_strided(
                t, (t.untyped_storage().nbytes() // t.element_size(),), (1,), 0
            )
            base = nnkit.tensor(whole.numpy().copy())
            off = t.storage_offset()
            n = base[off : off + t.numel()].reshape(tuple(t.shape))
            n.requires_grad_(obj.requires_grad)
        else:
            n = nnkit.tensor(t.numpy().copy(), requires_grad=obj.requires_grad)
        if obj.requires_grad:
            leaves.append((obj, n))
        return n
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, torch.nn.PairwiseDistance):  # a distance_function argument
        from nnkit.nn.functional import pairwise_distance

        return lambda a, b: pairwise_distance(a, b, obj.norm, obj.eps, obj.keepdim)
    if isinstance(obj, torch.dtype):
        return _dtype_to_nnkit(obj)
    if isinstance(obj, torch.device):
        return str(obj)
    if isinstance(obj, torch.memory_format):  # nnkit names layouts by strings
        return str(obj).replace("torch.", "")
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(to_nnkit(o, leaves) for o in obj)
    if isinstance(obj, dict):
        return {k: to_nnkit(v, leaves) for k, v in obj.items()}
    return obj


def flatten(out) -> list:
    if isinstance(out, (list, tuple)):
        return [y for o in out for y in flatten(o)]
    return [out]


# --- comparing ------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


def _tols(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype == torch.float32:
        return 1e-4, 1e-4
    return 1e-7, 1e-7


def _np(t: torch.Tensor) -> np.ndarray:
    if t._is_zerotensor():  # torch's lazily-zero gradients
        return np.zeros(tuple(t.shape), dtype=torch.empty(0, dtype=t.dtype).numpy().dtype)
    return t.detach().numpy()


def compare_tensor(t, n, what: str, grad: bool = False, shape_only: bool = False):
    """Raise Mismatch unless nnkit's ``n`` equals torch's ``t`` in shape, dtype, value."""
    if not isinstance(n, nnkit.Tensor):
        raise Mismatch(f"{what}: expected a tensor, got {type(n).__name__}")
    if tuple(t.shape) != tuple(n.shape):
        raise Mismatch(f"{what}: shape {tuple(n.shape)} != torch {tuple(t.shape)}")
    tname = str(t.dtype).replace("torch.", "")
    if str(n.dtype) != tname:
        raise Mismatch(f"{what}: dtype {n.dtype} != torch {tname}")
    if shape_only:
        return
    a = _np(t)
    b = n.detach().numpy()
    if a.dtype.kind in "fc":
        rtol, atol = _tols(t.dtype)
        if grad:
            rtol, atol = rtol * 10, atol * 10
        scale = max(1.0, float(np.nanmax(np.abs(a[np.isfinite(a)]), initial=0.0)))
        if not np.allclose(b, a, rtol=rtol, atol=atol * scale, equal_nan=True):
            bad = ~np.isclose(b, a, rtol=rtol, atol=atol * scale, equal_nan=True)
            i = np.argwhere(bad)[0]
            raise Mismatch(
                f"{what}: {int(bad.sum())} value(s) differ, e.g. at {tuple(i)}: "
                f"{b[tuple(i)]!r} != torch {a[tuple(i)]!r}"
            )
    elif not np.array_equal(a, b):
        raise Mismatch(f"{what}: values differ: {b.ravel()[:6]} != torch {a.ravel()[:6]}")


def compare_outputs(tout, nout, shape_only: bool = False):
    tf, nf = flatten(tout), flatten(nout)
    if len(tf) != len(nf):
        raise Mismatch(f"{len(nf)} outputs, torch gives {len(tf)}")
    for i, (t, n) in enumerate(zip(tf, nf)):
        if isinstance(t, torch.Tensor):
            compare_tensor(t, n, f"output {i}", shape_only=shape_only)
        elif t is None:
            if n is not None:
                raise Mismatch(f"output {i}: {n!r} != torch None")
        elif shape_only:
            if type(t) is not type(n):
                raise Mismatch(f"output {i}: {type(n).__name__} != {type(t).__name__}")
        elif isinstance(t, (bool, int, float)):
            nv = n.item() if isinstance(n, nnkit.Tensor) else n
            if type(nv) is not type(t) or not (
                nv == t
                or (isinstance(t, float) and math.isclose(nv, t, rel_tol=1e-6))
                or (isinstance(t, float) and math.isnan(t) and math.isnan(nv))
            ):
                raise Mismatch(f"output {i}: {nv!r} != torch {t!r}")
        elif t != n:
            raise Mismatch(f"output {i}: {n!r} != torch {t!r}")


# --- classifying errors ---------------------------------------------------------------

_NUMPY_DIR = os.path.dirname(np.__file__)
_OBSCURE_TYPES = (AttributeError, KeyError, AssertionError, ZeroDivisionError, NameError)
_OBSCURE_TYPES += (UnboundLocalError, RecursionError, OverflowError)
_NUMPY_TEXT = ("operands could not be broadcast", "axis", "ufunc", "numpy", "ndarray")


def classify_error(exc: BaseException, op, sample_kwargs) -> str:
    """``refused`` for an error that says what nnkit does not support, else ``obscure``."""
    if isinstance(exc, (Missing, Unconvertible)):
        return "refused"
    if isinstance(exc, _OBSCURE_TYPES) or isinstance(exc, np.exceptions.AxisError):
        return "obscure"
    frames = traceback.extract_tb(exc.__traceback__)
    if frames and frames[-1].filename.startswith(_NUMPY_DIR):
        return "obscure"
    msg = str(exc)
    if any(s in msg for s in _NUMPY_TEXT) and "nnkit" not in msg:
        return "obscure"
    short = op.name.split(".")[-1]
    words = [short, *[str(k) for k in sample_kwargs], "support", "nnkit"]
    if any(w in msg for w in words):
        return "refused"
    if isinstance(exc, (TypeError, ValueError, NotImplementedError)) and ":" in msg:
        return "refused"
    return "obscure"


# --- running one sample ---------------------------------------------------------------


def _cotangent(t: torch.Tensor, rng) -> torch.Tensor:
    return torch.from_numpy(rng.standard_normal(t.shape)).to(t.dtype)


def _grad_outputs(outs) -> list[int]:
    return [
        i
        for i, t in enumerate(outs)
        if isinstance(t, torch.Tensor) and t.requires_grad and t.dtype.is_floating_point
    ]


def _nnkit_grads(nouts, idx, vs, nleaves, create_graph=False):
    """nnkit's gradients of ``sum(v · out)``; a non-differentiable output counts as 0."""
    pairs = [
        (nouts[i], nnkit.tensor(_np(v).copy()))
        for i, v in zip(idx, vs)
        if isinstance(nouts[i], nnkit.Tensor) and nouts[i].requires_grad
    ]
    if not pairs:
        return [None] * len(nleaves)
    return nnkit.autograd.grad(
        [p[0] for p in pairs],
        nleaves,
        [p[1] for p in pairs],
        create_graph=create_graph,
        allow_unused=True,
    )


def _compare_grads(tgrads, ngrads, leaves, what: str):
    for j, (tg, ng, (t, _n)) in enumerate(zip(tgrads, ngrads, leaves)):
        if tg is None:
            tg = torch.zeros_like(t)
        if ng is None:
            ng = nnkit.zeros(tuple(t.shape), dtype=_dtype_to_nnkit(t.dtype))
        compare_tensor(tg, ng, f"{what} of input {j}", grad=True)


def run_sample(op, fn, is_random: bool, sample, seed: int, gradgrad: bool = False):
    """``(status, detail)`` for one OpInfo sample (see the module docstring)."""
    tin = (sample.input, *sample.args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.manual_seed(seed)
            tout = op.op(*tin, **sample.kwargs)
        except Exception as e:  # torch refuses its own sample: nothing to compare
            return "skip", f"torch: {type(e).__name__}: {e}"
        leaves: list = []
        try:
            nin = to_nnkit(tin, leaves)
            nkw = to_nnkit(sample.kwargs, leaves)
            nnkit.manual_seed(seed)
            nout = fn(*nin, **nkw)
        except Exception as e:
            return classify_error(e, op, sample.kwargs), f"{type(e).__name__}: {e}"
        try:
            try:
                tproc = flatten(sample.output_process_fn_grad(tout))
                nproc = flatten(sample.output_process_fn_grad(nout))
            except Exception:
                tproc, nproc = flatten(tout), flatten(nout)
            try:
                compare_outputs(tout, nout, shape_only=is_random)
            except Mismatch:
                # Outputs defined up to a sign or phase (eigenvectors, singular vectors):
                # OpInfo's output_process_fn_grad maps them to invariants; compare those.
                compare_outputs(tout, nout, shape_only=True)
                compare_outputs(tproc, nproc)
            if is_random or not leaves:
                return "pass", ""
            idx = _grad_outputs(tproc)
            if not idx:
                return "pass", ""
            rng = np.random.default_rng(seed)
            vs = [_cotangent(tproc[i], rng) for i in idx]
            tleaves = [t for t, _ in leaves]
            tg = torch.autograd.grad(
                [tproc[i] for i in idx], tleaves, vs, allow_unused=True, create_graph=gradgrad
            )
            nleaves = [n for _, n in leaves]
            ng = _nnkit_grads(nproc, idx, vs, nleaves, create_graph=gradgrad)
            _compare_grads(tg, ng, leaves, "gradient")
            if gradgrad:
                _second(tg, ng, leaves, rng)
        except Mismatch as e:
            return "wrong", str(e)
        except Exception as e:
            kind = classify_error(e, op, sample.kwargs)
            return kind, f"backward: {type(e).__name__}: {e}"
    return "pass", ""


def _second(tg, ng, leaves, rng):
    """Second gradients: of ``sum(w · grad)`` with respect to the inputs."""
    tj = [j for j, g in enumerate(tg) if g is not None and g.requires_grad]
    if not tj:
        return
    ws = [_cotangent(tg[j], rng) for j in tj]
    try:
        tgg = torch.autograd.grad(
            [tg[j] for j in tj], [t for t, _ in leaves], ws, allow_unused=True
        )
    except RuntimeError:  # torch has no second derivative (ctc_loss): nothing to compare
        return
    pairs = [
        (ng[j], nnkit.tensor(_np(w).copy()))
        for j, w in zip(tj, ws)
        if ng[j] is not None and ng[j].requires_grad
    ]
    if pairs:
        ngg = nnkit.autograd.grad(
            [p[0] for p in pairs], [n for _, n in leaves], [p[1] for p in pairs], allow_unused=True
        )
    else:
        ngg = [None] * len(leaves)
    _compare_grads(tgg, ngg, leaves, "second gradient")


def pick(seq: list, k: int) -> list[tuple[int, object]]:
    """At most ``k`` items of ``seq`` (with their indices), evenly spread, deterministic."""
    n = len(seq)
    if n <= k:
        return list(enumerate(seq))
    idx = sorted({round(i * (n - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]
    return [(i, seq[i]) for i in idx]


def sample_dtypes(op, float32: bool = True) -> list:
    """The dtypes to draw samples in: float64 (and float32), else an integer/bool dtype."""
    out = [d for d in (torch.float64, torch.float32) if op.supports_dtype(d, "cpu")]
    if not float32:
        out = out[:1]
    if not out:
        out = [d for d in (torch.int64, torch.bool) if op.supports_dtype(d, "cpu")][:1]
    return out


def run_entry(op, per_dtype=(8, 4), gradgrad_samples: int = 2, float32: bool = True):
    """Every chosen sample of ``op`` run: a list of ``(dtype, index, status, detail)``."""
    got = resolve(op)
    if got is None:
        return None
    fn, is_random = got
    key = entry_key(op)
    results = []
    for k, dtype in zip(per_dtype, sample_dtypes(op, float32)):
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grad = op.supports_autograd and dtype.is_floating_point
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=grad))
        for n, (i, sample) in enumerate(pick(samples, k)):
            gg = grad and op.supports_gradgrad and dtype == torch.float64 and n < gradgrad_samples
            status, detail = run_sample(op, fn, is_random, sample, seed=i, gradgrad=gg)
            dname = str(dtype).replace("torch.", "")
            reason = KNOWN_DEVIATIONS.get((key, i)) or KNOWN_DEVIATIONS.get((key, sample.name))
            if status not in ("pass", "skip") and reason:
                status, detail = "exempt", reason
            results.append((dname, i, status, detail))
    return results
