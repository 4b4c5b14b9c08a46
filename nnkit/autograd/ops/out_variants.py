"""PyTorch's ``out=`` keyword, added once, generically, to the ops that have it in PyTorch.

``nnkit.add(a, b, out=t)`` computes ``add(a, b)`` and writes it into ``t``, which it
returns. ``install`` wraps the functions of a namespace (``nnkit``, ``nnkit.linalg``,
``nnkit.special``, ``nnkit.nn.functional``) listed in ``OUT_OPS``: the ops whose OpInfo
entry in PyTorch says ``supports_out``, plus ``sum``, ``prod``, ``median``, ``nanmedian``,
``clip``, ``concat``, ``rand``, ``randint``, ``randperm``, ``expit``, ``gammaln`` and
``psi``, which take ``out=`` in PyTorch too; each lists ``out`` in its Args. The functions inside
``nnkit.autograd.ops`` and the Tensor methods stay unwrapped (PyTorch's methods have no
``out=``), so a call without ``out`` costs one Python call more and nothing else.

PyTorch's rules, as in torch 2.13:

* ``out`` is a Tensor, or a tuple/list of Tensors for an op with several results.
* Under grad mode, an input or ``out`` that requires grad raises ``RuntimeError`` ("...
  functions with out=... arguments don't support automatic differentiation ..."); under
  :func:`nnkit.no_grad` the values are written and nothing is recorded.
* The result must be castable to ``out``'s dtype (``torch.can_cast``: bool → integer →
  float, never back): "result type Float can't be cast to the desired output type Long".
  Some ops need ``out``'s dtype to equal the result's (the matrix products, linear
  algebra, indexing, rounding, ``softmax``, every op with several results, and any call
  with an explicit ``dtype=``): "Expected out tensor to have dtype float, but got double
  instead". Factories (``zeros``, ``arange``, ``randn``...) take ``out``'s dtype and
  device; an explicit different ``dtype=`` raises.
* ``out`` on another device than the result raises.
* An ``out`` of another shape is resized, with PyTorch's deprecation ``UserWarning``
  unless it has no elements. A contiguous ``out`` that is not a view keeps its memory
  when it is large enough (views of it see the result, as in PyTorch); otherwise it gets
  new memory (unlike PyTorch, views of the old memory no longer see it).
* The write is an in-place write (``copy_``): ``out``'s version counter is bumped, views
  of ``out`` see the result and an ``out`` that is a view writes through to its base.
* Overlap: an expanded ``out`` raises; the pointwise ops raise when an input partly
  overlaps ``out`` (an input that *is* ``out`` is fine), and ``cat``/``stack``/
  ``index_select``/``gather``/``take``/``masked_select`` when any input overlaps it, with
  PyTorch's "unsupported operation: some elements of the input tensor and the written-to
  tensor refer to a single memory location". The other ops compute out of place first,
  so overlap is harmless there (PyTorch allows it too).
* The return value is ``out`` itself (for several results, a tuple of the ``out``
  tensors, of the type the op returns: ``.values``/``.indices`` still work; None for the
  ops returning a list, ``unbind_copy`` and ``split_with_sizes_copy``, as in PyTorch).

Example:
    >>> out = nnkit.empty(0)
    >>> nnkit.add(nnkit.tensor([1.0, 2.0]), 1, out=out) is out
    True
    >>> out
    tensor([2.0, 3.0])
    >>> idx = nnkit.empty(0, dtype=nnkit.int64)
    >>> nnkit.max(nnkit.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, out=(out, idx)).indices is idx
    True
    >>> out, idx
    (tensor([5.0, 7.0]), tensor([1, 0]))
"""

from __future__ import annotations

import functools
import inspect
import re
import warnings

from nnkit.autograd.factories import empty
from nnkit.autograd.grad_mode import state
from nnkit.autograd.ops.inplace import copy_
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.backends.out_memory import internal_overlap, overlap_status, resized_in_place

__all__ = ["OUT_OPS", "install", "with_out"]

#: The op names given ``out=``, per namespace ('' is ``nnkit``).
OUT_OPS = {
    "": """abs acos acosh add addbmm addcdiv addcmul addmm addmv addr alias_copy all amax amin
    aminmax any arange argmax argmin asin asinh atan atan2 atanh baddbmm bernoulli
    bitwise_and bitwise_not bitwise_or bitwise_xor bmm bucketize cat ceil cholesky_inverse
    cholesky_solve clamp clamp_max clamp_min clip column_stack concat conj_physical copysign
    cos cosh cross cummax cummin cumprod cumsum deg2rad diag diagonal_copy diff digamma div
    dot dstack empty eq erf erfc erfinv exp exp2 expand_copy expm1 eye float_power floor
    floor_divide fmax fmin fmod frac full gather gcd ge gt heaviside histc hstack hypot
    index_add index_copy index_select inner isin isneginf isposinf kron kthvalue lcm ldexp
    le lerp lgamma linspace log log10 log1p log2 log_softmax logaddexp logaddexp2
    logcumsumexp logical_and logical_not logical_or logical_xor logit logspace logsumexp lt
    masked_select matmul max maximum mean median min minimum mm mode msort mul multinomial
    mv nan_to_num nanmean nanmedian nanquantile nansum narrow_copy ne neg nextafter nonzero
    norm normal ones outer permute_copy pow prod qr quantile rad2deg rand randint randn
    randperm reciprocal remainder round rsqrt scatter scatter_add scatter_reduce
    searchsorted sgn sigmoid sign signbit sin sinc sinh slice_scatter softmax softplus sort
    split_with_sizes_copy sqrt square squeeze_copy stack std sub sum svd t_copy take
    take_along_dim tan tanh tensordot topk transpose_copy triangular_solve tril triu
    true_divide trunc unbind_copy unsqueeze_copy var vdot view_copy vstack where xlogy
    zeros bitwise_left_shift bitwise_right_shift i0 igamma igammac mvlgamma polygamma
    cholesky lu_solve lu_unpack
    as_strided_copy unfold_copy index_reduce renorm histogram""".split(),
    "linalg": """cholesky cholesky_ex cond cross det eigh eigvalsh inv inv_ex lstsq matmul
    matrix_norm matrix_power matrix_rank multi_dot norm pinv qr slogdet solve solve_ex
    solve_triangular svd svdvals tensorinv tensorsolve vecdot vector_norm
    householder_product lu lu_factor lu_factor_ex lu_solve""".split(),
    "special": """entr expit gammaln ndtr ndtri psi xlog1py erfcx gammainc gammaincc i0 i0e
    i1 i1e log_ndtr multigammaln polygamma zeta airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1
    chebyshev_polynomial_t chebyshev_polynomial_u chebyshev_polynomial_v chebyshev_polynomial_w
    hermite_polynomial_h hermite_polynomial_he laguerre_polynomial_l legendre_polynomial_p
    modified_bessel_i0 modified_bessel_i1 modified_bessel_k0 modified_bessel_k1
    scaled_modified_bessel_k0 scaled_modified_bessel_k1 shifted_chebyshev_polynomial_t
    shifted_chebyshev_polynomial_u shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w
    spherical_bessel_j0""".split(),
    "nn.functional": """avg_pool2d avg_pool3d gelu hardshrink linear logsigmoid normalize
    softplus softshrink""".split(),
}

# Ops whose out dtype must equal the result's (PyTorch checks equality, not castability).
_EXACT = set(
    """abs addbmm addmm addmv alias_copy all amax amin any argmax argmin baddbmm bitwise_not
    bmm bucketize ceil
    conj_physical cross diag diagonal_copy dot expand_copy float_power floor frac gather
    heaviside histc index_add index_copy index_select isin isneginf isposinf log_softmax
    logcumsumexp masked_select matmul mm msort multinomial mv nan_to_num nanquantile
    narrow_copy neg nonzero norm permute_copy quantile round scatter scatter_add
    scatter_reduce searchsorted sgn sign signbit slice_scatter softmax split_with_sizes_copy
    squeeze_copy t_copy take take_along_dim tensordot transpose_copy tril triu trunc
    unbind_copy unsqueeze_copy vdot view_copy where linalg.cholesky linalg.cholesky_ex
    linalg.cross linalg.det linalg.eigh linalg.eigvalsh linalg.inv linalg.inv_ex
    linalg.lstsq linalg.matmul linalg.matrix_norm linalg.multi_dot linalg.norm linalg.qr
    linalg.slogdet linalg.solve linalg.solve_ex linalg.solve_triangular linalg.svd
    linalg.svdvals linalg.vecdot linalg.vector_norm nn.functional.avg_pool2d
    nn.functional.avg_pool3d nn.functional.gelu nn.functional.hardshrink
    nn.functional.linear nn.functional.logsigmoid nn.functional.softplus softplus
    nn.functional.softshrink lu_solve lu_unpack linalg.lu linalg.lu_factor
    linalg.lu_factor_ex linalg.lu_solve as_strided_copy unfold_copy index_reduce renorm
    histogram""".split()
)
# Pointwise ops: an input that partly overlaps ``out`` raises.
_POINTWISE = set(
    """abs acos acosh add addcdiv addcmul asin asinh atan atan2 atanh bitwise_and
    bitwise_not bitwise_or bitwise_xor ceil clamp clamp_max clamp_min clip copysign cos cosh
    deg2rad digamma div eq erf erfc erfinv exp exp2 expm1 float_power floor floor_divide
    fmax fmin fmod frac gcd ge gt heaviside hypot lcm ldexp le lerp lgamma log log10 log1p
    log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logit lt
    maximum minimum mul nan_to_num ne neg nextafter outer pow rad2deg reciprocal remainder
    round rsqrt sgn sigmoid sign sin sinc sinh sqrt square sub tan tanh true_divide trunc
    where xlogy index_add index_copy scatter scatter_add scatter_reduce slice_scatter
    special.entr special.xlog1py special.expit special.gammaln special.psi softplus
    nn.functional.gelu nn.functional.hardshrink nn.functional.softplus
    nn.functional.softshrink bitwise_left_shift bitwise_right_shift i0 igamma igammac
    polygamma special.erfcx special.i0 special.i0e special.i1 special.i1e special.log_ndtr
    special.polygamma special.zeta special.gammainc special.gammaincc""".split()
)
# Ops that refuse any overlap between an input and ``out``.
_NO_OVERLAP = set(
    """cat concat stack vstack dstack hstack column_stack index_select gather take
    take_along_dim masked_select""".split()
)
# Reductions whose out= form needs a ``dim`` in PyTorch.
_NEEDS_DIM = {"sum", "prod", "median", "nanmedian"}
# Ops that resize a non-empty ``out`` without PyTorch's deprecation warning.
_SILENT_RESIZE = set(
    """zeros ones full empty eye linspace logspace rand randn randint randperm addbmm
    nn.functional.logsigmoid narrow_copy multinomial bernoulli""".split()
)
_FACTORIES = set(
    "arange linspace logspace zeros ones empty full eye rand randn randint randperm".split()
)

_TORCH_NAME = {  # ScalarType names (torch's "result type Float ...")
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
    "int8": "Char",
    "uint8": "Byte",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "bool": "Bool",
}
_C_NAME = {  # C++ type names (torch's "Expected out tensor to have dtype long int ...")
    "float16": "c10::Half",
    "float32": "float",
    "float64": "double",
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short int",
    "int32": "int",
    "int64": "long int",
    "bool": "bool",
}
_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}  # torch.can_cast: bool -> integer -> float

OUT_DOC = (
    "out: an output tensor (a tuple of tensors for several results) to write the "
    "result into and return, as in PyTorch; see :mod:`nnkit.autograd.ops.out_variants`."
)

_WRAPPERS: dict = {}  # id(original function) -> (original, wrapper)


def install(namespace: dict, group: str) -> None:
    """Give the ops of ``OUT_OPS[group]`` in ``namespace`` (a module's globals) PyTorch's
    ``out=`` keyword; other names bound to an already wrapped function get its wrapper.

    Args:
        namespace: the module globals to update.
        group: ``''`` (``nnkit``), ``'linalg'``, ``'special'`` or ``'nn.functional'``.
    """
    for name in OUT_OPS[group]:
        namespace[name] = with_out(namespace[name], f"{group}.{name}" if group else name)
    for name, obj in list(namespace.items()):
        got = _WRAPPERS.get(id(obj))
        if got is not None and got[0] is obj:
            namespace[name] = got[1]


def with_out(fn, name: str):
    """``fn`` with PyTorch's ``out=`` keyword (see the module docstring), once per ``fn``.

    Args:
        fn: the op (a plain function, or one already wrapped, which is returned as is).
        name: its qualified PyTorch name (``'add'``, ``'linalg.inv'``): chooses the rules.

    Returns:
        The wrapper: without ``out`` it calls ``fn``; it documents ``out``.
    """
    if getattr(fn, "_out_variant", False):
        return fn
    got = _WRAPPERS.get(id(fn))
    if got is not None and got[0] is fn:
        return got[1]
    rules = tuple(name in group for group in (_EXACT, _POINTWISE, _NO_OVERLAP, _FACTORIES))
    rules += (name not in _SILENT_RESIZE,)
    short = name.rpartition(".")[2]

    @functools.wraps(fn)
    def op(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return _call_with_out(fn, short, rules, args, kwargs, out)

    op._out_variant = True
    op.__doc__ = _doc_with_out(fn.__doc__)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover - every listed op has one
        sig = None
    if sig is not None and "out" not in sig.parameters:
        params = list(sig.parameters.values())
        at = len(params) - (params[-1].kind == inspect.Parameter.VAR_KEYWORD if params else 0)
        params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
        op.__signature__ = sig.replace(parameters=params)
    _WRAPPERS[id(fn)] = (fn, op)
    return op


_ARGS = re.compile(r"^([ \t]*)Args:[ \t]*$", re.M)
_SECTION = re.compile(r"^([ \t]*)(Returns|Raises|Example|Examples|Gradient|Note)\b.*:", re.M)


def _doc_with_out(doc: str | None) -> str:
    """``doc`` with an ``out`` entry at the end of its Args section (or a new one)."""
    if not doc:
        return f"Args:\n    {OUT_DOC}\n"
    lines = doc.split("\n")
    m = _ARGS.search(doc)
    if m is not None:
        indent = m.group(1)
        i = doc[: m.start()].count("\n") + 1
        while (
            i < len(lines)
            and lines[i].strip()
            and len(lines[i]) - len(lines[i].lstrip()) > len(indent)
        ):
            i += 1
        lines.insert(i, f"{indent}    {OUT_DOC}")
        return "\n".join(lines)
    s = _SECTION.search(doc)
    if s is not None:
        indent = s.group(1)
        i = doc[: s.start()].count("\n")
        lines[i:i] = [f"{indent}Args:", f"{indent}    {OUT_DOC}", ""]
        return "\n".join(lines)
    indent = min((len(x) - len(x.lstrip()) for x in lines[1:] if x.strip()), default=0)
    return doc.rstrip() + f"\n\n{' ' * indent}Args:\n{' ' * indent}    {OUT_DOC}\n"


# ----------------------------------------------------------------------- the call


def _tensors(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)


def _call_with_out(fn, name, rules, args, kwargs, out):
    exact, pointwise, no_overlap, factory, warn = rules
    several = isinstance(out, (tuple, list))
    outs = list(out) if several else [out]
    if not outs or not all(isinstance(o, Tensor) for o in outs):
        what = "tuple of Tensors" if several else "Tensor"
        bad = next((o for o in outs if not isinstance(o, Tensor)), out)
        raise TypeError(f"{name}(): argument 'out' must be {what}, not {type(bad).__name__}")
    inputs = [*_tensors(args), *_tensors(list(kwargs.values()))]
    if state.grad_enabled and any(t._impl.requires_grad for t in (*inputs, *outs)):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    for o in outs:
        if internal_overlap(o._impl.data):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor "
                "refers to a single memory location. Please clone() the tensor before "
                "performing the operation."
            )
    if pointwise or no_overlap:
        bad = ("partial",) if pointwise else ("partial", "full")
        for o in outs:
            for t in inputs:
                if overlap_status(o._impl.data, t._impl.data) in bad:
                    raise RuntimeError(
                        "unsupported operation: some elements of the input tensor and the "
                        "written-to tensor refer to a single memory location. Please "
                        "clone() the tensor before performing the operation."
                    )
    if kwargs.get("as_tuple"):  # nonzero(as_tuple=True): torch has no out= for it
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not tuple")
    if name in _NEEDS_DIM and len(args) < 2 and kwargs.get("dim") is None:
        raise TypeError(f"{name}(): out= needs a dim (PyTorch has no out= for the full {name})")
    if factory:
        kwargs = _factory_kwargs(kwargs, outs[0])
    elif kwargs.get("dtype") is not None:
        exact = True
    result = fn(*args, **kwargs)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    if not all(isinstance(r, Tensor) for r in results):
        raise TypeError(f"{name}(): out= needs a tensor result, this call gives {result!r}")
    if len(results) > 1 or isinstance(result, (tuple, list)):
        exact = True
        if not several or len(outs) != len(results):
            got = f"{len(outs)} tensors" if several else "a Tensor"
            raise TypeError(
                f"{name}(): argument 'out' must be a tuple of {len(results)} Tensors, got {got}"
            )
    elif several:
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    for r, o in zip(results, outs):
        _check_dtype_device(r, o, exact)
    for r, o in zip(results, outs):
        _write(o, r, name, warn)
    if not several:
        return out
    if isinstance(result, list):  # torch's ops with a list of results return None
        return None
    kind = type(result)
    if hasattr(kind, "_make"):
        return kind._make(outs)
    return kind(outs) if isinstance(result, tuple) else tuple(outs)


def _factory_kwargs(kwargs, o):
    """A factory makes ``out``'s dtype on ``out``'s device (an explicit other dtype raises)."""
    dtype = kwargs.get("dtype")
    if dtype is not None and _dt.to_dtype(dtype) != o.dtype:
        raise RuntimeError(
            f"dtype {_TORCH_NAME[str(_dt.to_dtype(dtype))]} does not match dtype of out "
            f"parameter ({_TORCH_NAME[str(o.dtype)]})"
        )
    kwargs = dict(kwargs, dtype=o.dtype)
    if kwargs.get("device") is None:
        kwargs["device"] = o.device
    return kwargs


def _check_dtype_device(r, o, exact: bool) -> None:
    rd, od = str(r.dtype), str(o.dtype)
    if exact and rd != od:
        raise RuntimeError(
            f"Expected out tensor to have dtype {_C_NAME[rd]}, but got {_C_NAME[od]} instead"
        )
    if _RANK[r._impl.data.dtype.kind] > _RANK[o._impl.data.dtype.kind]:
        raise RuntimeError(
            f"result type {_TORCH_NAME[rd]} can't be cast to the desired output type "
            f"{_TORCH_NAME[od]}"
        )
    if r.device != o.device:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two "
            f"devices, {o.device} and {r.device}!"
        )


def _write(o, r, name: str, warn: bool) -> None:
    """Resize ``o`` to ``r``'s shape if needed (warning as PyTorch), then copy ``r`` in."""
    impl = o._impl
    m = impl.data
    if name == "arange" and m.size == r.numel():
        r = r.reshape(m.shape)  # torch's arange fills an out of the right size in its shape
    if m.shape != r.shape:
        if m.size and name == "arange":
            warnings.warn(
                f"The number of elements in the out tensor of shape {list(m.shape)} is "
                f"{m.size} which does not match the computed number of elements "
                f"{r.numel()}. Note that this may occur as a result of rounding error. "
                f"The out tensor will be resized to a tensor of shape ({r.numel()},).",
                UserWarning,
                stacklevel=4,
            )
        elif m.size and warn:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(m.shape)}, which does not match the required output shape "
                f"{list(r.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. "
                "Pass an out tensor with zero elements (nnkit.empty(0)) to have it "
                "resized silently.",
                UserWarning,
                stacklevel=4,
            )
        new = resized_in_place(m, r.shape) if impl._base is None else None
        if new is None:
            new = empty(r.shape, dtype=o.dtype, device=o.device)._impl.data
            new.storage.version = m.version
            if impl._base is not None:  # new memory: no longer a view of its base
                impl._base = impl._view_recipe = None
        impl.data = new
    copy_(o, r)
