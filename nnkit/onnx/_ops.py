"""ONNX mappings of nnkit's built-in ops, keyed by Op class.

A mapping ``fn(g, args, kwargs, out)`` receives the op's arguments as the op got them
(Tensors and plain values) and its output Tensor, adds nodes to the :class:`Graph`
``g`` and binds ``out`` to the value that holds it. Composite functions (``linear``,
``gelu``, ``layer_norm``, ``batch_norm`` in eval mode, the pools, attention, ...) are
made of these ops, so they export through them.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.ops import (
    activation,
    activation_extra,
    arithmetic,
    attention,
    conv,
    dim_index,
    discrete,
    elementwise,
    indexing,
    joining,
    linalg,
    nn_misc,
    norm,
    pool,
    reduction,
    selection,
    shape,
)
from nnkit.autograd.tensor import Tensor
from nnkit.onnx._graph import UnsupportedOpError, to_numpy, to_numpy_dtype

__all__ = ["OPS", "lookup"]

_INT64_MAX = np.iinfo(np.int64).max
OPS: dict = {}
_BY_METHOD: dict = {}  # the comparison/rounding ops, made per method by discrete._nondiff


def lookup(cls):
    """The mapping of op class ``cls``, or None."""
    fn = OPS.get(cls)
    if fn is None and issubclass(cls, discrete._NonDiff):
        fn = _BY_METHOD.get(cls.method)
    return fn


def _register(*classes):
    def deco(fn):
        for cls in classes:
            OPS[cls] = fn
        return fn

    return deco


def default_axis(g, args, out):
    """The output's batch axis: an input's, where the output keeps that dimension."""
    if not isinstance(out, Tensor):
        return None
    for a in args:
        ax = g.axis_of(a)
        if ax is None:
            continue
        for b in (ax, ax + out.ndim - a.ndim):
            if 0 <= b < out.ndim and out.shape[b] == a.shape[ax]:
                return b
    return None


def _bind(g, out, name, args, axis="default"):
    g.bind(out, name, default_axis(g, args, out) if axis == "default" else axis)


def _input(g, a, dtype):
    """The name of ``a`` (a Tensor or a scalar) as a value of ``dtype``."""
    if not isinstance(a, Tensor):
        return g.name(a, dtype=dtype)
    name = g.name(a)
    if g.dtype.get(name, dtype) != dtype:
        name = g.node("Cast", [name], to=_onnx_type(g, dtype))
        g.dtype[name] = dtype
    return name


def _onnx_type(g, dtype) -> int:
    return g.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


# ---- elementwise
def _binary(op_type):
    def fn(g, args, kwargs, out):
        dtype = to_numpy_dtype(out)
        _bind(g, out, g.node(op_type, [_input(g, a, dtype) for a in args[:2]]), args)

    return fn


for _cls, _op in (
    (arithmetic.Add, "Add"),
    (arithmetic.Sub, "Sub"),
    (arithmetic.Mul, "Mul"),
    (arithmetic.Div, "Div"),
    (arithmetic.Pow, "Pow"),
    (selection.Maximum, "Max"),
    (selection.Minimum, "Min"),
):
    OPS[_cls] = _binary(_op)


def _compare(op_type, negate=False):
    def fn(g, args, kwargs, out):
        tensors = [a for a in args if isinstance(a, Tensor)]
        dtype = np.result_type(*[to_numpy_dtype(t) for t in tensors])
        name = g.node(op_type, [_input(g, a, dtype) for a in args[:2]])
        _bind(g, out, g.node("Not", [name]) if negate else name, args)

    return fn


for _m, _op, _neg in (
    ("eq", "Equal", False),
    ("ne", "Equal", True),
    ("lt", "Less", False),
    ("le", "LessOrEqual", False),
    ("gt", "Greater", False),
    ("ge", "GreaterOrEqual", False),
):
    _BY_METHOD[_m] = _compare(_op, _neg)


def _unary(*op_types):
    def fn(g, args, kwargs, out):
        name = g.name(args[0])
        for op_type in op_types:
            name = g.node(op_type, [name])
        _bind(g, out, name, args)

    return fn


for _cls, _ops in (
    (elementwise.Exp, ("Exp",)),
    (elementwise.Log, ("Log",)),
    (elementwise.Sqrt, ("Sqrt",)),
    (elementwise.Rsqrt, ("Sqrt", "Reciprocal")),
    (elementwise.Sin, ("Sin",)),
    (elementwise.Cos, ("Cos",)),
    (elementwise.Tan, ("Tan",)),
    (elementwise.Tanh, ("Tanh",)),
    (elementwise.Sigmoid, ("Sigmoid",)),
    (elementwise.Reciprocal, ("Reciprocal",)),
    (elementwise.Softplus, ("Softplus",)),
    (elementwise.Erf, ("Erf",)),
    (elementwise.Abs, ("Abs",)),
    (arithmetic.Neg, ("Neg",)),
    (elementwise.ReLU, ("Relu",)),
    (shape.Clone, ("Identity",)),
):
    OPS[_cls] = _unary(*_ops)
for _m, _op in (("floor", "Floor"), ("ceil", "Ceil"), ("sign", "Sign"), ("logical_not", "Not")):
    _BY_METHOD[_m] = _unary(_op)


def _expm1(g, args, kwargs, out):
    one = g.name(1, dtype=to_numpy_dtype(out))
    _bind(g, out, g.node("Sub", [g.node("Exp", [g.name(args[0])]), one]), args)


def _log1p(g, args, kwargs, out):
    one = g.name(1, dtype=to_numpy_dtype(out))
    _bind(g, out, g.node("Log", [g.node("Add", [g.name(args[0]), one])]), args)


OPS[elementwise.Expm1] = _expm1
OPS[elementwise.Log1p] = _log1p


@_register(selection.Clamp, activation.HardTanh)
def _clamp(g, args, kwargs, out):
    dtype = to_numpy_dtype(out)
    x, lo, hi = args[0], args[1], args[2]
    inputs = [
        g.name(x),
        "" if lo is None else g.name(lo, dtype=dtype),
        "" if hi is None else g.name(hi, dtype=dtype),
    ]
    while inputs[-1] == "":
        inputs.pop()
    _bind(g, out, g.node("Clip", inputs), args)


@_register(selection.ClampTensor)
def _clamp_tensor(g, args, kwargs, out):
    """``clamp`` with a tensor bound: ``Min(Max(x, lo), hi)`` (Clip takes scalars only)."""
    dtype = to_numpy_dtype(out)
    name = _input(g, args[0], dtype)
    for bound, op_type in ((args[1], "Max"), (args[2], "Min")):
        if bound is not None:
            name = g.node(op_type, [name, _input(g, bound, dtype)])
    _bind(g, out, name, args)


@_register(selection.Where)
def _where(g, args, kwargs, out):
    dtype = to_numpy_dtype(out)
    cond = _input(g, args[0], np.dtype(bool))
    _bind(
        g, out, g.node("Where", [cond, _input(g, args[1], dtype), _input(g, args[2], dtype)]), args
    )


@_register(shape.Cast)
def _cast(g, args, kwargs, out):
    name = g.node("Cast", [g.name(args[0])], to=_onnx_type(g, to_numpy_dtype(out)))
    _bind(g, out, name, args)


# ---- softmax, matmul
def _softmax(op_type):
    def fn(g, args, kwargs, out):
        _bind(g, out, g.node(op_type, [g.name(args[0])], axis=int(args[1])), args)

    return fn


OPS[activation.Softmax] = _softmax("Softmax")
OPS[activation.LogSoftmax] = _softmax("LogSoftmax")


def _transpose_last(g, name, ndim):
    perm = list(range(ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return g.node("Transpose", [name], perm=perm)


@_register(linalg.MatMul)
def _matmul(g, args, kwargs, out):
    a, b = g.name(args[0]), g.name(args[1])
    if kwargs.get("ta"):
        a = _transpose_last(g, a, args[0].ndim)
    if kwargs.get("tb"):
        b = _transpose_last(g, b, args[1].ndim)
    name = g.node("MatMul", [a, b])
    axis = g.axis_of(args[0])
    if axis is not None and axis >= args[0].ndim - 2:
        axis = out.ndim - (args[0].ndim - axis)  # the rows of a
    elif axis is not None:
        axis = axis + out.ndim - args[0].ndim
    else:
        axis = default_axis(g, args, out)
    _bind(g, out, name, args, axis)


@_register(nn_misc.Linear)
def _linear(g, args, kwargs, out):
    """``x W^T + b`` (2-d x) as Transpose, MatMul and Add, as the unfused ops export."""
    x, w, b = args[:3]
    name = g.node("MatMul", [g.name(x), _transpose_last(g, g.name(w), 2)])
    _bind(g, out, g.node("Add", [name, g.name(b)]), args)


@_register(attention.ScaledDotProductAttention)
def _sdpa(g, args, kwargs, out):
    """The fused attention as its composite's nodes: MatMul, Mul, Where or Add,
    Softmax, MatMul (the weights, when returned, are the Softmax's output)."""
    q, k, v, mask, scale = args[:5]
    heads = kwargs.get("heads")
    dtype = to_numpy_dtype(q)
    if heads is None:
        qn, kn, vn = g.name(q), g.name(k), g.name(v)
    elif k is None:  # the packed (N, L, 3E) projection: (3, N, H, L, D), then q, k, v
        t = g.node("Reshape", [g.name(q), g.ints([0, 0, 3, heads, q.shape[-1] // (3 * heads)])])
        t = g.node("Transpose", [t], perm=[2, 0, 3, 1, 4])
        qn, kn, vn = (
            g.node("Gather", [t, g.const(np.array(j, np.int64), "index")], axis=0) for j in range(3)
        )
    else:
        qn, kn, vn = (
            g.node(
                "Transpose",
                [g.node("Reshape", [g.name(a), g.ints([0, 0, heads, a.shape[-1] // heads])])],
                perm=[0, 2, 1, 3],
            )
            for a in (q, k, v)
        )
    s = g.node("MatMul", [qn, _transpose_last(g, kn, 4 if heads else k.ndim)])
    s = g.node("Mul", [s, g.name(scale, dtype=dtype)])
    if mask is not None and mask.dtype.name == "bool":
        s = g.node("Where", [g.name(mask), s, g.name(-np.inf, dtype=dtype)])
    elif mask is not None:
        s = g.node("Add", [s, _input(g, mask, dtype)])
    p = g.node("Softmax", [s], axis=-1)
    outs = out if isinstance(out, tuple) else (out,)
    res = g.node("MatMul", [p, vn])
    if heads is not None:  # (N, H, L, D) -> (N, L, E)
        res = g.node("Transpose", [res], perm=[0, 2, 1, 3])
        res = g.node("Reshape", [res, g.ints([0, 0, outs[0].shape[-1]])])
    _bind(g, outs[0], res, args)
    if len(outs) > 1:
        _bind(g, outs[1], p, args)


@_register(norm.LayerNorm)
def _layer_norm(g, args, kwargs, out):
    """The fused layer norm as ONNX's LayerNormalization (opset 17, nnkit's minimum)."""
    x, weight, bias, k, eps = args[:5]
    scale = (
        g.name(weight)
        if weight is not None
        else g.const(np.ones(x.shape[x.ndim - k :], to_numpy_dtype(x)), "ones")
    )
    inputs = [g.name(x), scale] + ([] if bias is None else [g.name(bias)])
    _bind(g, out, g.node("LayerNormalization", inputs, axis=-k, epsilon=float(eps)), args)


# ---- shapes
@_register(shape.Reshape)
def _reshape(g, args, kwargs, out):
    x = args[0]
    target = list(out.shape)
    ax = g.axis_of(x)
    out_ax = None
    if ax is not None:  # the output dimension that holds the batch: -1, computed at run time
        outer = int(np.prod(x.shape[:ax], dtype=np.int64))
        p = 1
        for j, d in enumerate(target):
            p *= d
            if p > outer:
                out_ax = j
                target[j] = -1
                break
    _bind(g, out, g.node("Reshape", [g.name(x), g.ints(target)]), args, out_ax)


@_register(shape.Permute)
def _permute(g, args, kwargs, out):
    perm = [int(d) for d in args[1]]
    ax = g.axis_of(args[0])
    _bind(
        g,
        out,
        g.node("Transpose", [g.name(args[0])], perm=perm),
        args,
        None if ax is None else perm.index(ax),
    )


@_register(shape.Expand)
def _expand(g, args, kwargs, out):
    x = args[0]
    target = list(out.shape)
    ax = default_axis(g, args, out)
    if ax is not None and x.shape[ax + x.ndim - out.ndim] != 1:
        target[ax] = 1  # broadcasting keeps the input's (run-time) batch size
    _bind(g, out, g.node("Expand", [g.name(x), g.ints(target)]), args, ax)


@_register(joining.Cat)
def _cat(g, args, kwargs, out):
    dim = int(args[0])
    xs = args[1:]
    dtype = to_numpy_dtype(out)
    _bind(g, out, g.node("Concat", [_input(g, x, dtype) for x in xs], axis=dim), xs)


@_register(indexing.GetItem)
def _getitem(g, args, kwargs, out):
    x, idx = args
    name = g.name(x)
    ax = g.axis_of(x)
    rank = x.ndim
    d = 0
    consuming = [it for it in idx if it is not None and it is not Ellipsis]
    arrays = [it for it in consuming if not isinstance(it, (int, slice))]
    if len(arrays) > 1:
        raise UnsupportedOpError("getitem with more than one index array has no ONNX mapping")
    for k, item in enumerate(idx):
        if item is Ellipsis:
            later = [it for it in idx[k + 1 :] if it is not None and it is not Ellipsis]
            d = rank - len(later)
        elif item is None:
            name = g.node("Unsqueeze", [name, g.ints([d])])
            ax = None if ax is None else ax + (ax >= d)
            rank += 1
            d += 1
        elif isinstance(item, int):
            name = g.node("Gather", [name, g.const(np.asarray(item, dtype=np.int64))], axis=d)
            ax = None if ax is None or ax == d else ax - (ax > d)
            rank -= 1
        elif isinstance(item, slice):
            if item == slice(None):
                d += 1
                continue
            size = x.shape[d] if d < x.ndim else None
            step = 1 if item.step is None else item.step
            if ax == d or size is None:
                start = item.start or 0
                stop = (
                    item.stop
                    if item.stop is not None
                    else (_INT64_MAX if step > 0 else -_INT64_MAX)
                )
            else:
                start, stop, step = item.indices(size)
                if stop < 0:
                    stop = -_INT64_MAX
            name = g.node(
                "Slice", [name, g.ints([start]), g.ints([stop]), g.ints([d]), g.ints([step])]
            )
            d += 1
        else:
            index = to_numpy(item).astype(np.int64)
            name = g.node("Gather", [name, g.const(index, "index")], axis=d)
            ax = None if ax is None or ax == d else ax + (index.ndim - 1) * (ax > d)
            rank += index.ndim - 1
            d += index.ndim
    _bind(g, out, name, args, ax)


# ---- reductions
def _axes(dims, ndim):
    return (
        None
        if dims is None
        else [int(d) % ndim for d in (dims if isinstance(dims, (tuple, list)) else (dims,))]
    )


def _reduce(op_type, axes_input):
    def fn(g, args, kwargs, out):
        x, dims, keepdim = args[0], args[1], args[2]
        axes = _axes(dims, x.ndim)
        inputs = [g.name(x)]
        attrs = {"keepdims": int(bool(keepdim))}
        if axes is not None:
            if axes_input or g.opset >= 18:
                inputs.append(g.ints(axes, "axes"))
            else:
                attrs["axes"] = axes
        name = g.node(op_type, inputs, **attrs)
        if out.dtype != args[0].dtype:
            name = g.node("Cast", [name], to=_onnx_type(g, to_numpy_dtype(out)))
        ax = g.axis_of(x)
        if ax is not None and axes is not None and ax not in axes:
            ax = ax if keepdim else ax - sum(a < ax for a in axes)
        else:
            ax = None
        _bind(g, out, name, args, ax)

    return fn


OPS[reduction.Sum] = _reduce("ReduceSum", True)
OPS[reduction.Mean] = _reduce("ReduceMean", False)
OPS[reduction.AMax] = _reduce("ReduceMax", False)
OPS[reduction.AMin] = _reduce("ReduceMin", False)
OPS[reduction.LogSumExp] = _reduce("ReduceLogSumExp", False)


# ---- gathers
@_register(nn_misc.Embedding)
def _embedding(g, args, kwargs, out):
    weight, indices = args[0], args[1]
    ax = g.axis_of(indices)
    _bind(g, out, g.node("Gather", [g.name(weight), g.name(indices)], axis=0), args, ax)


@_register(dim_index.IndexSelect)
def _index_select(g, args, kwargs, out):
    x, dim, index = args
    _bind(g, out, g.node("Gather", [g.name(x), g.name(index)], axis=int(dim)), args)


@_register(indexing.Gather)
def _gather(g, args, kwargs, out):
    x, dim, index = args
    _bind(g, out, g.node("GatherElements", [g.name(x), g.name(index)], axis=int(dim)), args)


# ---- convolution and pooling
def _spatial_attrs(geom):
    nd = len(geom.kernel)
    pads = [int(geom.pads[i][0]) for i in range(nd)] + [int(geom.pads[i][1]) for i in range(nd)]
    return {
        "kernel_shape": [int(k) for k in geom.kernel],
        "strides": [int(s) for s in geom.stride],
        "dilations": [int(s) for s in geom.dilation],
        "pads": pads,
    }


@_register(conv.ConvNd)
def _conv(g, args, kwargs, out):
    x, w, b, geom = args
    inputs = [g.name(x), g.name(w)] + ([] if b is None else [g.name(b)])
    name = g.node("Conv", inputs, group=int(geom.groups), **_spatial_attrs(geom))
    _bind(g, out, name, args, g.axis_of(x))


@_register(pool.MaxPoolNd)
def _max_pool(g, args, kwargs, out):
    x, geom = args
    _bind(g, out, g.node("MaxPool", [g.name(x)], **_spatial_attrs(geom)), args, g.axis_of(x))


@_register(pool.WindowSum)
def _window_sum(g, args, kwargs, out):
    x, geom = args
    attrs = _spatial_attrs(geom)
    if any(d != 1 for d in attrs.pop("dilations")):
        raise UnsupportedOpError("a dilated window sum has no ONNX mapping")
    name = g.node("AveragePool", [g.name(x)], count_include_pad=1, **attrs)
    count = g.name(float(np.prod(geom.kernel)), dtype=to_numpy_dtype(out))
    _bind(g, out, g.node("Mul", [name, count]), args, g.axis_of(x))


@_register(nn_misc.ConstantPad)
def _constant_pad(g, args, kwargs, out):
    x, widths, value = args
    pads = [int(lo) for lo, _ in widths] + [int(hi) for _, hi in widths]
    fill = g.name(value, dtype=to_numpy_dtype(out))
    name = g.node("Pad", [g.name(x), g.ints(pads, "pads"), fill], mode="constant")
    _bind(g, out, name, args, g.axis_of(x))


# ---- the activations of nnkit.autograd.ops.activation_extra
OPS[activation_extra.Hardswish] = _unary("HardSwish")


@_register(activation_extra.Celu)
def _celu(g, args, kwargs, out):
    _bind(g, out, g.node("Celu", [g.name(args[0])], alpha=float(args[1])), args)


def _logical(bool_op, int_op):
    """``&``, ``|``, ``^``: ONNX's logical op on booleans, its bitwise one (opset 18) on
    integers."""

    def fn(g, args, kwargs, out):
        dtype = to_numpy_dtype(out)
        op_type = bool_op if dtype == np.bool_ else int_op
        _bind(g, out, g.node(op_type, [_input(g, a, dtype) for a in args[:2]]), args)

    return fn


for _m, _bool, _int in (
    ("bitwise_and", "And", "BitwiseAnd"),
    ("bitwise_or", "Or", "BitwiseOr"),
    ("bitwise_xor", "Xor", "BitwiseXor"),
    ("logical_and", "And", "BitwiseAnd"),
    ("logical_or", "Or", "BitwiseOr"),
    ("logical_xor", "Xor", "BitwiseXor"),
):
    _BY_METHOD[_m] = _logical(_bool, _int)
