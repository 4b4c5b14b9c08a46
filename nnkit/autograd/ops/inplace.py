"""In-place ops (trailing underscore): write into the tensor's memory.

Outside the graph (``no_grad``, or nothing requires grad) they run directly on the
Mat and bump its Storage version. Inside it, the op is computed out of place from a
snapshot of the old value, written back, and the tensor's history is rebased onto
the new node, as PyTorch does. In place on a view while recording replays the
view on its base (``ViewScatter``), so the base's gradient sees the write; in place
on a leaf that requires grad raises a clear error.
"""

from __future__ import annotations

from nnkit.autograd import function as _fn
from nnkit.autograd.function import Op
from nnkit.autograd.grad_mode import no_grad, state
from nnkit.autograd.ops import elementwise as ew
from nnkit.autograd.ops._util import is_scalar, scalar_mat
from nnkit.autograd.ops.shape import broadcast_shapes

__all__ = [
    "add_",
    "sub_",
    "mul_",
    "div_",
    "clamp_",
    "clip_",
    "zero_",
    "fill_",
    "copy_",
    "addcmul_",
    "addcdiv_",
    "lerp_",
    "sqrt_",
    "exp_",
    "neg_",
    "pow_",
    "relu_",
    "sigmoid_",
    "tanh_",
    "masked_fill_",
    "uniform_",
    "normal_",
    "apply_inplace",
]


def _requires(o) -> bool:
    return isinstance(o, _fn.Tensor) and o._impl.requires_grad


def apply_inplace(x, name, graph_fn, fast_fn, others=(), clone_self=False):
    """Run an in-place op on ``x``.

    Args:
        graph_fn: ``graph_fn(old_x) -> Tensor`` computing the new value out of place
            (used when the graph is recorded).
        fast_fn: ``fast_fn(mat)`` writing the new value into ``x``'s Mat directly.
        others: the other operands (to know whether the graph is recorded).
        clone_self: the op's backward needs the old value of ``x``.
    """

    impl = x._impl
    if not (state.grad_enabled and (impl.requires_grad or any(_requires(o) for o in others))):
        try:
            fast_fn(impl.data)
        except ValueError as exc:
            _raise_if_read_only(name, exc)
            raise
        return x
    if impl.grad_fn is None and impl.requires_grad:
        raise RuntimeError(
            f"{name}: a leaf tensor that requires grad is being used in an "
            "in-place operation; do it under nnkit.no_grad() or on a clone()"
        )
    if impl._base is not None:
        return _inplace_on_view(x, name, graph_fn, clone_self)
    out = graph_fn(_snapshot(impl, clone_self))
    try:
        impl.data.copy_(out._impl.data)
    except ValueError as exc:
        _raise_if_read_only(name, exc)
        raise
    impl.grad_fn, impl.output_nr = out._impl.grad_fn, out._impl.output_nr
    impl.requires_grad = out._impl.requires_grad
    return x


def _snapshot(impl, clone: bool):
    """A TensorImpl holding ``impl``'s current value and graph position."""
    old = _fn.TensorImpl(impl.data.copy() if clone else impl.data, impl.requires_grad)
    old.grad_fn, old.output_nr, old._grad_acc = impl.grad_fn, impl.output_nr, impl._grad_acc
    return _fn.Tensor._wrap(old)


def _replay(t, recipe):
    """Apply a view's recipe (its view ops from the base) to the Tensor ``t``."""
    for cls, args, kwargs in recipe:
        t = cls.apply(t, *args, **kwargs)
    return t


def _replay_mat(m, recipe):
    from nnkit.autograd.function import _NoGraphCtx

    for cls, args, kwargs in recipe:
        m = cls.forward(_NoGraphCtx(), m, *args, **kwargs)
    return m


class ViewScatter(Op):
    """The base with the region a view recipe selects replaced by ``values``.

    This is how an in-place op on a view enters the graph: the base's new value is
    ``ViewScatter(old base, new view value)`` (PyTorch's CopySlices).
    """

    @staticmethod
    def forward(ctx, base, values, recipe):
        ctx.recipe = recipe
        out = base.copy()
        _replay_mat(out, recipe).copy_(values)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        region = _replay(grad_output, ctx.recipe)
        g_base = ViewScatter.apply(grad_output, region * 0, ctx.recipe)
        return g_base, region, None


def _inplace_on_view(x, name, graph_fn, clone_self):
    """In place on a view while recording: replay it on the base, rebase both."""
    impl = x._impl
    base = impl._base
    recipe = impl._view_recipe
    if recipe is None:
        raise RuntimeError(
            f"{name}: in-place modification of a view made by a custom "
            "Function is not supported while recording gradients; clone() it"
        )
    if base.grad_fn is None and base.requires_grad:
        raise RuntimeError(
            f"{name}: a view of a leaf tensor that requires grad is being used in "
            "an in-place operation; do it under nnkit.no_grad() or on a clone()"
        )
    old_base = _snapshot(base, clone_self)
    new_view = graph_fn(_replay(old_base, recipe))
    new_base = ViewScatter.apply(old_base, new_view, recipe)
    impl.data.copy_(new_view._impl.data)  # writes through into the base's memory
    base.grad_fn, base.output_nr = new_base._impl.grad_fn, new_base._impl.output_nr
    base.requires_grad = True
    regen = _replay(_fn.Tensor._wrap(base), recipe)._impl
    impl.grad_fn, impl.output_nr, impl.requires_grad = regen.grad_fn, regen.output_nr, True
    return x


def _raise_if_read_only(name, exc) -> None:
    if "read-only" in str(exc):
        raise RuntimeError(
            f"{name}: cannot write into an expanded (broadcast) tensor: several "
            "of its elements share one memory location; clone() it first"
        ) from None


def _check_binary(x, other, name, *, same_device=True):
    """In-place results keep ``x``'s dtype, shape and device: reject what would not fit."""
    xm = x._impl.data
    xk = xm.array.dtype.kind
    if isinstance(other, _fn.Tensor):
        om = other._impl.data
        if (
            same_device
            and (om.__class__ is not xm.__class__ or xm.multi_device)
            and om.device != xm.device
        ):
            raise RuntimeError(
                f"{name}: expected both tensors on the same device, found "
                f"{xm.device} (self) and {om.device} (other)"
            )
        ok = om.array.dtype.kind
        if ok == xk and om.array.shape == xm.array.shape:
            return  # the common case (optimizer updates): nothing to check
        shape = broadcast_shapes(x.shape, other.shape)
        if shape != x.shape:
            raise RuntimeError(
                f"{name}: output with shape {list(x.shape)} doesn't match the "
                f"broadcast shape {list(shape)}"
            )
    elif is_scalar(other):
        ok = "f" if isinstance(other, float) else "i"
    else:
        raise TypeError(f"{name}: unsupported operand type {type(other).__name__}")
    if xk in "biu" and ok == "f":
        raise RuntimeError(
            f"{name}: result type float can't be cast to the in-place output type {x.dtype}"
        )


def _mat(x, other):
    if isinstance(other, _fn.Tensor):
        return other._impl.data
    return scalar_mat(other, x._impl.data, "inplace")


def add_(x, other, *, alpha=1):
    """``x += alpha * other`` in place; returns ``x``."""
    _check_binary(x, other, "add_")
    if alpha != 1:
        return apply_inplace(
            x,
            "add_",
            lambda old: ew.add(old, other, alpha=alpha),
            lambda m: m.iaxpy(alpha, _mat(x, other)),
            (other,),
        )
    return apply_inplace(
        x, "add_", lambda old: ew.add(old, other), lambda m: m.iadd(_mat(x, other)), (other,)
    )


def sub_(x, other, *, alpha=1):
    """``x -= alpha * other`` in place; returns ``x``."""
    _check_binary(x, other, "sub_")
    if alpha != 1:
        return apply_inplace(
            x,
            "sub_",
            lambda old: ew.sub(old, other, alpha=alpha),
            lambda m: m.iaxpy(-alpha, _mat(x, other)),
            (other,),
        )
    return apply_inplace(
        x, "sub_", lambda old: ew.sub(old, other), lambda m: m.isub(_mat(x, other)), (other,)
    )


def mul_(x, other):
    """``x *= other`` in place; returns ``x``."""
    _check_binary(x, other, "mul_")
    return apply_inplace(
        x,
        "mul_",
        lambda old: ew.mul(old, other),
        lambda m: m.imul(_mat(x, other)),
        (other,),
        clone_self=True,
    )


def div_(x, other):
    """``x /= other`` in place (floating tensors only); returns ``x``."""
    if x._impl.data.dtype.kind != "f":
        raise RuntimeError(
            f"div_: result type float can't be cast to the in-place output type {x.dtype}"
        )
    _check_binary(x, other, "div_")
    return apply_inplace(
        x,
        "div_",
        lambda old: ew.div(old, other),
        lambda m: m.idiv(_mat(x, other)),
        (other,),
        clone_self=True,
    )


def clamp_(x, min=None, max=None):
    """Clamp ``x`` into ``[min, max]`` in place; returns ``x``."""
    if isinstance(min, _fn.Tensor) or isinstance(max, _fn.Tensor):
        return _via_copy(x, "clamp_", lambda old: ew.clamp(old, min, max), (min, max))
    if min is None and max is None:
        raise ValueError("clamp_: at least one of 'min' or 'max' must not be None")
    return apply_inplace(
        x,
        "clamp_",
        lambda old: ew.clamp(old, min, max),
        lambda m: m.iclip(min, max),
        clone_self=True,
    )


clip_ = clamp_


def zero_(x):
    """Fill ``x`` with zeros in place; returns ``x``."""
    return _fill(x, 0, "zero_")


def fill_(x, value):
    """Fill ``x`` with ``value`` in place; returns ``x``."""
    if isinstance(value, _fn.Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"fill_: value must be a 0-d tensor, got shape {list(value.shape)}")
        return copy_(x, value.reshape(()).expand(x.shape))
    return _fill(x, value, "fill_")


def _fill(x, value, name):
    return apply_inplace(x, name, lambda old: _replaced(old, value), lambda m: m.fill_(value))


def copy_(x, src):
    """Copy ``src`` (broadcast, cast, from any device) into ``x``; returns ``x``."""
    from nnkit.autograd.factories import tensor

    if not isinstance(src, _fn.Tensor):
        src = tensor(src, dtype=x.dtype, device=x.device)
    if src._impl.data.dtype.kind != "f":
        _check_binary(x, src, "copy_", same_device=False)
    if broadcast_shapes(x.shape, src.shape) != x.shape:
        raise RuntimeError(
            f"copy_: source shape {list(src.shape)} can't be broadcast to {list(x.shape)}"
        )

    def fast(m):
        s = src._impl.data
        m.copy_(s if s.device == m.device else s.to_device(m.device))

    def graph(old):
        return _replaced(old, src.to(x.device).to(x.dtype))

    return apply_inplace(x, "copy_", graph, fast, (src,))


def _replaced(old, value):
    """``value`` broadcast to ``old``'s shape, with a zero gradient for ``old``.

    Built with ``where`` on an all-False mask, which saves no copy of ``old`` (``old * 0``
    would save it, and the write-back would then invalidate it) and stays finite when
    ``old`` holds inf or nan.
    """
    from nnkit.autograd.factories import zeros

    keep = zeros(old.shape, dtype="bool", device=old.device)
    return ew.where(keep, old, value)


def _via_copy(x, name, fn, others=(), clone_self=True):
    """An in-place op with no dedicated kernel: compute out of place, then write back."""

    def fast(m):
        with no_grad():
            m.copy_(fn(x)._impl.data)

    return apply_inplace(x, name, fn, fast, others, clone_self)


def addcmul_(x, tensor1, tensor2, *, value=1):
    """``x += value * tensor1 * tensor2`` in place."""
    return _via_copy(
        x,
        "addcmul_",
        lambda old: ew.addcmul(old, tensor1, tensor2, value=value),
        (tensor1, tensor2),
        clone_self=False,
    )


def addcdiv_(x, tensor1, tensor2, *, value=1):
    """``x += value * tensor1 / tensor2`` in place."""
    return _via_copy(
        x,
        "addcdiv_",
        lambda old: ew.addcdiv(old, tensor1, tensor2, value=value),
        (tensor1, tensor2),
        clone_self=False,
    )


def lerp_(x, end, weight):
    """``x += weight * (end - x)`` in place."""
    return _via_copy(x, "lerp_", lambda old: ew.lerp(old, end, weight), (end, weight))


def sqrt_(x):
    return _via_copy(x, "sqrt_", ew.sqrt)


def exp_(x):
    return _via_copy(x, "exp_", ew.exp)


def neg_(x):
    return _via_copy(x, "neg_", ew.neg, clone_self=False)


def pow_(x, exponent):
    return _via_copy(x, "pow_", lambda old: ew.pow(old, exponent), (exponent,))


def relu_(x):
    return _via_copy(x, "relu_", ew.relu)


def sigmoid_(x):
    return _via_copy(x, "sigmoid_", ew.sigmoid)


def tanh_(x):
    return _via_copy(x, "tanh_", ew.tanh)


def masked_fill_(x, mask, value):
    """Write ``value`` where ``mask`` is True, in place."""
    return _via_copy(
        x, "masked_fill_", lambda old: ew.masked_fill(old, mask, value), (value,), clone_self=False
    )


def uniform_(x, a: float = 0.0, b: float = 1.0):
    """Fill ``x`` with draws from U(a, b) (nnkit's global generator), in place."""
    from nnkit.random import default_generator

    m = x._impl.data
    draw = type(m).uniform(a, b, m.shape, m.dtype, default_generator())
    return apply_inplace(
        x, "uniform_", lambda old: _replaced(old, _t(draw)), lambda mm: mm.copy_(draw)
    )


def normal_(x, mean: float = 0.0, std: float = 1.0):
    """Fill ``x`` with draws from N(mean, std²) (nnkit's global generator), in place."""
    from nnkit.random import default_generator

    m = x._impl.data
    draw = type(m).randn(m.shape, m.dtype, default_generator())
    if std != 1.0 or mean != 0.0:
        draw = draw.mul(type(m).scalar(std, m.dtype)).add(type(m).scalar(mean, m.dtype))
    return apply_inplace(
        x, "normal_", lambda old: _replaced(old, _t(draw)), lambda mm: mm.copy_(draw)
    )


def _t(mat):
    return _fn.Tensor._from_mat(mat)
