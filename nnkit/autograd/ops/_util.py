"""Small helpers shared by the op families (argument checks, scalar operands)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from nnkit.autograd.function import ShapeError, ZeroDimCast
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.backends.mat import ArrayMat

__all__ = [
    "as_mat_pair",
    "float_pair",
    "result_dtype",
    "promote_tensors",
    "scalar_mat",
    "float_mat",
    "wrap_dim",
    "norm_dims",
    "reduce_dims",
    "check_tensor",
    "check_same_dtype",
    "check_floating",
    "is_scalar",
    "shape_arg",
    "infer_shape",
]


def is_scalar(value) -> bool:
    return isinstance(value, (numbers.Number, np.bool_)) and not isinstance(value, complex)


def scalar_mat(value, like: ArrayMat, op: str) -> ArrayMat:
    """A 0-d Mat for a Python number used with ``like`` (a scalar never upcasts floats).

    A float scalar with an integer tensor gives the default float dtype (as PyTorch).
    """
    vcls = value.__class__
    if (vcls is float or vcls is int) and like.dtype.kind == "f":
        # the hot case (``x + 1.0`` on a float tensor): the cache entry the checks
        # below would find, under the same key, without them
        hit = _scalar_cache.get((like.__class__, vcls, value, like.dtype))
        if hit is not None:
            return hit
    if isinstance(value, np.generic):
        value = value.item()
    if not is_scalar(value):
        raise TypeError(f"{op}: unsupported operand type {type(value).__name__}")
    kind = like.kind
    if isinstance(value, bool):
        dtype = like.dtype
    elif isinstance(value, numbers.Integral):
        dtype = like.dtype if kind in "fiu" else np.dtype(np.int64)
    else:
        dtype = like.dtype if kind == "f" else _dt.get_default_dtype().np
    if isinstance(value, float) and (value == 0.0 or value != value):
        # 0.0 and -0.0 compare (and hash) equal, and NaN never equals itself: not cached,
        # so ``x + (-0.0)`` keeps its sign (as PyTorch's) after an ``x + 0.0``
        m = like.__class__.scalar(value, dtype)
        m.serial = 0
        return m
    key = (like.__class__, value.__class__, value, dtype)
    hit = _scalar_cache.get(key)
    if hit is None:
        if len(_scalar_cache) > 512:
            _scalar_cache.clear()
        # Cached 0-d Mats are only ever read (operands), never written.
        hit = _scalar_cache[key] = like.__class__.scalar(value, dtype)
        hit.serial = 0  # shared: never a new buffer the autograd engine may reuse
    return hit


_scalar_cache: dict = {}


def as_mat_pair(a, b, op: str, graph=()):
    """Both operands of a binary op as Mats (one of them may be a Python number).

    Promotion follows PyTorch's categories: an integer or bool operand meeting a
    floating one takes the floating dtype (int64 tensor + 1.5 is float32, int64 tensor
    + float32 tensor is float32); within a category a dimensioned operand's dtype wins
    over a 0-d one (float32 tensor + float64 0-d tensor is float32, uint8 tensor + int64
    0-d tensor is uint8), else NumPy's rules apply.

    ``graph``: the forward's ``ctx.needs_input_grad`` where ``a`` and ``b`` are the op's
    own inputs; when it is true and a 0-d operand must be cast, :class:`ZeroDimCast` is
    raised instead, for ``Op.apply`` to cast it in the graph (see there).
    """
    if not isinstance(a, ArrayMat):
        if not isinstance(b, ArrayMat):
            raise TypeError(f"{op}: expected at least one tensor operand")
        a = scalar_mat(a, b, op)
    elif not isinstance(b, ArrayMat):
        b = scalar_mat(b, a, op)
    da, db = a.dtype, b.dtype
    if da is not db and da != db:
        ka, kb = da.kind, db.kind
        if ka == "f":
            if kb != "f":
                return a, b.astype(da)
        elif kb == "f":
            return a.astype(db), b
        elif ka == "b" or kb == "b":
            return a, b
        za, zb = a.ndim == 0, b.ndim == 0
        if za is not zb:  # one 0-d operand of the other's category: it takes its dtype
            if za:
                if graph:
                    raise ZeroDimCast(a, db)
                return a.astype(db), b
            if graph:
                raise ZeroDimCast(b, da)
            return a, b.astype(da)
    return a, b


def float_pair(a, b, op: str, graph=(), same_dtype: bool = False):
    """Both operands of a floating op as float Mats: :func:`as_mat_pair`'s promotion, an
    integer or bool pair giving the default float dtype (as PyTorch). ``graph``: as for
    :func:`as_mat_pair`. ``same_dtype``: also cast two float dtypes to the wider one (for
    kernels that compute on both at once and return the first one's dtype)."""
    a, b = as_mat_pair(a, b, op, graph)
    if a.dtype.kind != "f":  # then neither is floating
        a, b = float_mat(a), float_mat(b)
    elif same_dtype and a.dtype != b.dtype:
        wide = np.promote_types(a.dtype, b.dtype)
        a, b = a.astype(wide), b.astype(wide)
    return a, b


def _promote(d1, d2):
    """PyTorch's promote_types of two NumPy dtypes (a floating one wins over the others)."""
    f1, f2 = d1.kind == "f", d2.kind == "f"
    if f1 != f2:
        return d1 if f1 else d2
    return np.promote_types(d1, d2)


def result_dtype(*operands):
    """PyTorch's ``result_type`` of Mats (Python numbers and None are skipped: they take
    the result's dtype): the dimensioned operands' promoted dtype, unless the 0-d ones
    are of a higher category (bool < integer < floating); then the two promote.
    """
    dim = zero = None
    for m in operands:
        if isinstance(m, ArrayMat):
            if m.ndim:
                dim = m.dtype if dim is None else _promote(dim, m.dtype)
            else:
                zero = m.dtype if zero is None else _promote(zero, m.dtype)
    if dim is None or zero is None:
        return dim if zero is None else zero
    if dim.kind == "f" or (zero.kind != "f" and dim.kind != "b"):
        return dim
    return _promote(dim, zero)


def promote_tensors(*tensors, floating: bool = False) -> list:
    """``tensors`` cast (recorded, differentiable: ``Tensor.to``) to their PyTorch result
    dtype (:func:`result_dtype`); ``floating``: an integer or bool one gives the default
    float dtype. For ops composed of other ops, which must not promote step by step."""
    dt = result_dtype(*(t._impl.data for t in tensors))
    if floating and dt.kind != "f":
        dt = _dt.get_default_dtype().np
    return [t if t._impl.data.dtype == dt else t.to(dtype=dt) for t in tensors]


def float_mat(m: ArrayMat) -> ArrayMat:
    """``m`` itself if floating, else cast to the default float dtype."""
    if m.dtype.kind == "f":
        return m
    return m.astype(_dt.get_default_dtype().np)


def wrap_dim(dim: int, ndim: int, op: str) -> int:
    n = ndim if ndim > 1 else 1
    if dim.__class__ is int:  # the common case, checked without the isinstance calls
        if -n <= dim < n:
            return dim % n
    elif not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(
            f"{op}: dimension {dim} out of range for a tensor with {ndim} "
            f"dimension(s) (expected in [{-n}, {n - 1}])"
        )
    return int(dim) % n


def norm_dims(dim, ndim: int, op: str):
    """Normalise ``dim`` (None, int, or a sequence) into a sorted tuple, or None for all."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        dims = tuple(sorted({wrap_dim(d, ndim, op) for d in dim}))
        if len(dims) != len(dim):
            raise RuntimeError(f"{op}: dim {tuple(dim)} appears multiple times")
        return dims
    return (wrap_dim(dim, ndim, op),)


def reduce_dims(dim, ndim: int, op: str, empty_is_all: bool = True):
    """The dims a reduction's ``dim`` names, as :func:`norm_dims`, in torch's terms.

    None stands for every dimension: so does an empty ``dim`` (``sum(x, dim=())`` sums
    everything, as in torch; ``empty_is_all=False`` reduces nothing instead, as torch's
    ``all``/``any``), and any valid ``dim`` of a 0-d tensor (0 and -1 name its only
    "dimension": the reduction gives the value back).
    """
    if dim is None:
        return None
    dims = norm_dims(dim, ndim, op)
    if not dims:
        return None if empty_is_all else ()
    return None if ndim == 0 else dims


def check_tensor(x, op: str, name: str = "input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, got {type(x).__name__}")
    return x


def _int(value, op, name):
    """An int argument of ``op``: a Python int (not a bool) or a 1-element integer tensor."""
    if isinstance(value, Tensor):
        if value.numel() != 1 or value.dtype.is_floating_point:
            raise TypeError(f"{op}: argument '{name}' must be an int or a 1-element integer tensor")
        return int(value.item())
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}: argument '{name}' must be an int, got {type(value).__name__}")
    return int(value)


def _dims(value, op, name):
    """An int or a sequence of ints as a tuple of ints."""
    if isinstance(value, (list, tuple)):
        return tuple(_int(v, op, name) for v in value)
    return (_int(value, op, name),)


def check_floating(x, op: str, name: str = "input") -> None:
    """Refuse a non-floating tensor where PyTorch does (``RuntimeError``, naming ``op``)."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(
            f"{op}: expected {name} to have a floating point dtype, got {x.dtype} "
            f"(convert it with .float() first)"
        )


def check_same_dtype(op: str, input, other, name: str = "other") -> None:
    """Refuse operands of different dtypes (a product does not promote, as in PyTorch).

    Raises ``RuntimeError`` (PyTorch's class for this) naming ``op`` and both dtypes.
    """
    if input._impl.data.dtype != other._impl.data.dtype:  # the Mats': no DType lookups
        raise RuntimeError(
            f"{op}: expected input and {name} to have the same dtype, got "
            f"{input.dtype} and {other.dtype}"
        )


def shape_arg(shape) -> tuple:
    """A shape given as ints or as one tuple/list (``x.reshape(2, 3)``, ``x.reshape((2, 3))``)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def infer_shape(shape: tuple, numel: int, op: str) -> tuple:
    """``shape`` with its ``-1`` (if any) inferred from ``numel``; checked against it."""
    if shape.count(-1) > 1:
        raise ShapeError(f"{op}: only one dimension can be inferred (-1), got {shape}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise ShapeError(f"{op}: shape {shape} is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise ShapeError(f"{op}: shape {shape} is invalid for input of size {numel}")
    return shape
