"""In-place ops (trailing underscore): the machinery, and the writes ``zero_``,
``fill_``, ``copy_``, ``masked_fill_``, ``uniform_``, ``normal_`` (the in-place
arithmetic and math ops live in ``ops/inplace_math.py``). They write into the
tensor's memory and return the tensor itself.

Outside the graph (``no_grad``, or nothing requires grad) they run directly on the
Mat and bump its Storage version. Inside it, the op is computed out of place from a
snapshot of the old value, written back, and the tensor's history is rebased onto
the new node, as PyTorch does. In place on a view while recording replays the
view on its base (``ViewScatter``), so the base's gradient sees the write; in place
on a leaf that requires grad raises a clear error.
"""

from __future__ import annotations

from nnkit.autograd import function as _fn
from nnkit.autograd.factories import tensor, zeros
from nnkit.autograd.function import Op, _NoGraphCtx
from nnkit.autograd.grad_mode import no_grad, state
from nnkit.autograd.ops import selection as sel
from nnkit.autograd.ops._util import is_scalar, scalar_mat
from nnkit.autograd.ops.shape import broadcast_shapes
from nnkit.backends.fp_errors import QUIET as _FP_QUIET
from nnkit.backends.fp_errors import STATE as _FP_STATE
from nnkit.random import default_generator

_fp_get, _fp_set, _fp_reset = _FP_STATE.get, _FP_STATE.set, _FP_STATE.reset

__all__ = [
    "zero_",
    "fill_",
    "copy_",
    "masked_fill_",
    "uniform_",
    "normal_",
    "apply_inplace",
]


def _requires(o) -> bool:
    return isinstance(o, _fn.Tensor) and o._impl.requires_grad


def apply_inplace(x, name, graph_fn, fast_fn, others=(), clone_self=False):
    """Run an in-place op on ``x``: the building block of every ``*_`` op (not a Tensor
    method; for writing new in-place ops).

    Args:
        x: the tensor written into.
        name: the op's name, for error messages.
        graph_fn: ``graph_fn(old_x) -> Tensor`` computing the new value out of place
            (used when the graph is recorded).
        fast_fn: ``fast_fn(mat)`` writing the new value into ``x``'s Mat directly.
        others: the other operands (to know whether the graph is recorded).
        clone_self: the op's backward needs the old value of ``x``.

    Returns:
        ``x`` itself, its version bumped and, while recording, its history rebased.

    Raises:
        RuntimeError: for a leaf that requires grad (or a view of one) while
            recording, or an expanded (broadcast) ``x``.
    """

    impl = x._impl
    if not (state.grad_enabled and (impl.requires_grad or any(_requires(o) for o in others))):
        token = _fp_get() is not _FP_QUIET and _fp_set(_FP_QUIET)
        try:  # NumPy's floating-point errors quiet, as torch (nnkit.backends.fp_errors)
            fast_fn(impl.data)
        except ValueError as exc:
            _raise_if_read_only(name, exc)
            raise
        finally:
            if token:
                _fp_reset(token)
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
    xk = xm.kind
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
        ok = om.kind
        if ok == xk and om.shape == xm.shape:
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


def zero_(x):
    """Fill ``x`` with zeros in place (``torch.Tensor.zero_``).

    Args:
        x: the tensor written into (not an expanded view).

    Returns:
        ``x`` itself, its version bumped; while recording, the old value gets a zero
        gradient.

    Example:
        >>> nnkit.tensor([1.0, 2.0]).zero_()
        tensor([0.0, 0.0])
    """
    return _fill(x, 0, "zero_")


def fill_(x, value):
    """Fill ``x`` with ``value`` in place (``torch.Tensor.fill_``).

    Args:
        x: the tensor written into.
        value: a number (converted to ``x``'s dtype; a float truncates into an integer
            ``x``, as in PyTorch) or a 1-element tensor, which stays differentiable.

    Returns:
        ``x`` itself, its version bumped; while recording, the old value gets a zero
        gradient.

    Example:
        >>> nnkit.tensor([1, 2]).fill_(7)
        tensor([7, 7])
    """
    if isinstance(value, _fn.Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"fill_: value must be a 0-d tensor, got shape {list(value.shape)}")
        return copy_(x, value.reshape(()).expand(x.shape))
    return _fill(x, value, "fill_")


def _fill(x, value, name):
    return apply_inplace(x, name, lambda old: _replaced(old, value), lambda m: m.fill_(value))


def copy_(x, src):
    """Copy ``src`` into ``x`` in place (``torch.Tensor.copy_``), broadcast to ``x``'s shape,
    cast to its dtype and moved to its device.

    Args:
        x: the tensor written into.
        src: a tensor (on any device) that broadcasts to ``x``'s shape, or data that
            ``nnkit.tensor`` accepts. Floats truncate into an integer ``x``.

    Returns:
        ``x`` itself, its version bumped; while recording, the gradient flows to ``src``
        (summed over broadcast dimensions) and the old value gets zero.

    Raises:
        RuntimeError: if ``src`` does not broadcast to ``x``'s shape.

    Example:
        >>> nnkit.zeros(2, 2).copy_(nnkit.tensor([5.0, 6.0]))
        tensor([[5.0, 6.0],
                [5.0, 6.0]])
    """
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
    keep = zeros(old.shape, dtype="bool", device=old.device)
    return sel.where(keep, old, value)


def _via_copy(x, name, fn, others=(), clone_self=True):
    """An in-place op with no dedicated kernel: compute out of place, then write back.

    As in PyTorch, a floating result is not written into an integer or bool ``x``."""

    def checked(old):
        out = fn(old)
        if out._impl.data.dtype.kind == "f" and x._impl.data.dtype.kind != "f":
            raise RuntimeError(
                f"{name}: result type {out.dtype} can't be cast to the in-place output "
                f"type {x.dtype}"
            )
        return out

    def fast(m):
        with no_grad():
            m.copy_(checked(x)._impl.data)

    return apply_inplace(x, name, checked, fast, others, clone_self)


def masked_fill_(x, mask, value):
    """Write ``value`` where ``mask`` is True, in place (``torch.Tensor.masked_fill_``).

    Args:
        x: the tensor written into.
        mask: a bool tensor that broadcasts to ``x``'s shape.
        value: a number or a 0-d tensor.

    Returns:
        ``x`` itself, its version bumped; while recording, differentiable as
        :func:`~nnkit.masked_fill` (the filled positions pass no gradient to ``x``).

    Example:
        >>> nnkit.tensor([1.0, 2.0, 3.0]).masked_fill_(nnkit.tensor([True, False, True]), 0.0)
        tensor([0.0, 2.0, 0.0])
    """
    return _via_copy(
        x, "masked_fill_", lambda old: sel.masked_fill(old, mask, value), (value,), clone_self=False
    )


def uniform_(x, a: float = 0.0, b: float = 1.0):
    """Fill ``x`` with draws from the uniform distribution on ``[a, b)``, in place
    (``torch.Tensor.uniform_``), using nnkit's global generator (see ``manual_seed``).

    Args:
        x: a floating tensor, written into.
        a: the lower bound (default 0).
        b: the upper bound (default 1).

    Returns:
        ``x`` itself, its version bumped; the old value gets a zero gradient.

    Example:
        >>> x = nnkit.empty(1000).uniform_(-2.0, 3.0)
        >>> bool(x.min() >= -2.0), bool(x.max() < 3.0)
        (True, True)
    """
    m = x._impl.data
    draw = type(m).uniform(a, b, m.shape, m.dtype, default_generator())
    return apply_inplace(
        x, "uniform_", lambda old: _replaced(old, _t(draw)), lambda mm: mm.copy_(draw)
    )


def normal_(x, mean: float = 0.0, std: float = 1.0):
    """Fill ``x`` with draws from the normal distribution ``N(mean, std**2)``, in place
    (``torch.Tensor.normal_``), using nnkit's global generator (see ``manual_seed``).

    Args:
        x: a floating tensor, written into.
        mean: the mean (default 0).
        std: the standard deviation (default 1).

    Returns:
        ``x`` itself, its version bumped; the old value gets a zero gradient.

    Example:
        >>> x = nnkit.empty(10000).normal_(1.0, 2.0)
        >>> round(x.mean().item(), 1), round(x.std().item(), 1)
        (1.0, 2.0)
    """
    m = x._impl.data
    draw = type(m).randn(m.shape, m.dtype, default_generator())
    if std != 1.0 or mean != 0.0:
        draw = draw.mul(type(m).scalar(std, m.dtype)).add(type(m).scalar(mean, m.dtype))
    return apply_inplace(
        x, "normal_", lambda old: _replaced(old, _t(draw)), lambda mm: mm.copy_(draw)
    )


def _t(mat):
    return _fn.Tensor._from_mat(mat)
