"""Allocation, conversion and in-place sampling ops of issue 13: ``new_empty``,
``new_empty_strided``, ``empty_strided``, ``empty_permuted``, ``resize_``/``resize_as_``,
``Tensor.byte``/``char``/``short`` and the in-place random samplers ``cauchy_``,
``exponential_``, ``geometric_``, ``log_normal_``.

The samplers draw from nnkit's global NumPy generator (seeded by
:func:`nnkit.manual_seed`) unless given a ``generator``; the streams differ from
PyTorch's (same seed, other values) but the distributions are torch's.
"""

from __future__ import annotations

from nnkit.autograd.conversion import byte, char, short
from nnkit.autograd.factories import _cls_dt, _shape, empty, zeros
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import _dims, check_tensor
from nnkit.autograd.ops.inplace import apply_inplace
from nnkit.autograd.ops.selection import where
from nnkit.autograd.ops.strided import as_strided
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.backends import strided_kernels as _k
from nnkit.random import default_generator

__all__ = ["empty_strided", "empty_permuted", "resize_as_"]

NOT_METHODS: set[str] = {"empty_strided", "empty_permuted"}


def _like_args(x, dtype, device):
    return x.dtype if dtype is None else dtype, x.device if device is None else device


def new_empty(input, *size, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of shape ``size`` with ``input``'s dtype and device unless
    given (``torch.Tensor.new_empty``).

    Args:
        input: the tensor whose dtype and device are the defaults.
        size: the shape, as separate ints or one sequence.
        dtype, device: override ``input``'s.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor; write to it before reading.

    Example:
        >>> nnkit.zeros(2, dtype=nnkit.int64).new_empty(3, 1).shape
        (3, 1)
    """
    check_tensor(input, "new_empty")
    dtype, device = _like_args(input, dtype, device)
    return empty(_shape(size), dtype=dtype, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of shape ``size`` laid out with ``stride``
    (``torch.empty_strided``): it views a fresh Storage just large enough.

    Args:
        size: the shape (a sequence of ints).
        stride: one non-negative stride per dimension, in elements (0 repeats memory).
        dtype: the dtype (default: the default float dtype).
        device: the device (default CPU).
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new tensor with ``t.stride() == tuple(stride)``; write to it before reading.

    Example:
        >>> nnkit.empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    size, stride = _dims(size, "empty_strided", "size"), _dims(stride, "empty_strided", "stride")
    if len(size) != len(stride):
        raise ValueError(
            f"empty_strided: mismatch in length of strides ({len(stride)}) and shape ({len(size)})"
        )
    if any(n < 0 for n in size):
        raise ValueError(f"empty_strided: negative size in {list(size)}")
    n = 0 if 0 in size else 1 + sum((a - 1) * s for a, s in zip(size, stride))
    with no_grad():
        out = as_strided(zeros(n, dtype=dtype, device=device), size, stride, 0)
    return out.requires_grad_(True) if requires_grad else out


def new_empty_strided(input, size, stride, *, dtype=None, device=None, requires_grad=False):
    """:func:`empty_strided` with ``input``'s dtype and device unless given
    (``torch.Tensor.new_empty_strided``).

    Args:
        input: the tensor whose dtype and device are the defaults.
        size, stride: as in :func:`empty_strided`.
        dtype, device: override ``input``'s.
        requires_grad: make the result a leaf that records gradients.

    Returns:
        A new strided tensor; write to it before reading.

    Example:
        >>> nnkit.zeros(1).new_empty_strided((2, 2), (1, 2)).stride()
        (1, 2)
    """
    check_tensor(input, "new_empty_strided")
    dtype, device = _like_args(input, dtype, device)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of shape ``size`` whose dimensions lie in memory in the
    order ``physical_layout`` (outermost first), as ``torch.empty_permuted``.

    Args:
        size: the logical shape.
        physical_layout: a permutation of ``range(len(size))``.
        dtype, device, requires_grad: as in :func:`~nnkit.empty`.

    Returns:
        A new tensor of shape ``size`` (a permuted view of a contiguous buffer).

    Example:
        >>> nnkit.empty_permuted((2, 3), (1, 0)).stride()
        (1, 2)
    """
    size = _dims(size, "empty_permuted", "size")
    layout = _dims(physical_layout, "empty_permuted", "physical_layout")
    if sorted(layout) != list(range(len(size))):
        raise ValueError(
            f"empty_permuted: physical_layout {list(layout)} is not a permutation of "
            f"the {len(size)} dimensions"
        )
    inverse = [layout.index(k) for k in range(len(size))]
    with no_grad():
        out = empty(tuple(size[p] for p in layout), dtype=dtype, device=device)
        out = out.permute(inverse) if size else out
    return out.requires_grad_(True) if requires_grad else out


def resize_(input, *sizes, memory_format=None):
    """Give ``input`` the shape ``sizes``, in place (``torch.Tensor.resize_``): the first
    ``numel`` elements of its (row-major) data are kept; a larger size grows the memory,
    the new elements zero (torch leaves them uninitialised).

    Args:
        input: a tensor that does not require grad.
        sizes: the new shape, as separate ints or one sequence.
        memory_format: None or ``"contiguous_format"``.

    Returns:
        ``input`` itself, now contiguous of shape ``sizes``, its version bumped.

    Raises:
        RuntimeError: for a tensor that requires grad (as torch).

    Example:
        >>> nnkit.arange(6).resize_(2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    check_tensor(input, "resize_")
    if memory_format not in (None, "contiguous_format", "preserve_format"):
        raise NotImplementedError(f"resize_: memory_format={memory_format!r} is not supported")
    if input.requires_grad:
        raise RuntimeError("resize_: cannot resize a tensor that requires grad")
    shape = _shape(sizes)
    impl = input._impl
    m = impl.data
    n = 1
    for s in shape:
        n *= s
    if shape == m.shape:
        return input
    if m.is_contiguous() and n <= _k.storage_size(m) - _k.storage_offset(m):
        new = _k.storage_view(m, shape, _contiguous_strides(shape), _k.storage_offset(m), "resize_")
    else:
        cls, dt = _cls_dt(input.dtype, input.device)
        flat = cls.zeros((n,), dt.np)
        k = min(n, m.size)
        if k:
            flat.setitem((slice(0, k),), m.reshape((-1,)).getitem((slice(0, k),)))
        new = flat.reshape(shape)
    new.storage.version += 1
    impl.data = new
    return input


def _contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def resize_as_(input, the_template, *, memory_format=None):
    """``input.resize_(the_template.shape)`` (``torch.resize_as_``).

    Args:
        input: a tensor that does not require grad.
        the_template: a tensor whose shape ``input`` takes.
        memory_format: as in :func:`resize_`.

    Returns:
        ``input`` itself.

    Example:
        >>> nnkit.arange(4).resize_as_(nnkit.zeros(2, 2)).shape
        (2, 2)
    """
    check_tensor(the_template, "resize_as_", "the_template")
    return resize_(input, tuple(the_template.shape), memory_format=memory_format)


def _sample_(x, name, kind, a, b, generator, floating=True):
    """Fill ``x`` in place with draws of ``kind`` (see ``strided_kernels.draw``)."""
    check_tensor(x, name)
    if floating and not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating point tensor, got {x.dtype}")
    m = x._impl.data
    draw = _k.draw(type(m), kind, m.shape, m.dtype, generator or default_generator(), a, b)

    def graph(old):  # the old value is replaced: it gets a zero gradient
        keep = zeros(old.shape, dtype=_dt.bool_, device=old.device)
        return where(keep, old, Tensor._from_mat(draw))

    return apply_inplace(x, name, graph, lambda mm: mm.copy_(draw))


def cauchy_(input, median=0.0, sigma=1.0, *, generator=None):
    """Fill ``input`` with Cauchy draws, density ``1 / (pi * sigma * (1 + ((x - median) /
    sigma)**2))``, in place (``torch.Tensor.cauchy_``).

    Args:
        input: a floating tensor, written into.
        median: the location (default 0).
        sigma: the scale, positive (default 1).
        generator: a :class:`numpy.random.Generator` instead of nnkit's global one.

    Returns:
        ``input`` itself, its version bumped; the old value gets a zero gradient.

    Example:
        >>> x = nnkit.empty(10001).cauchy_(2.0, 0.5)
        >>> abs(x.median().item() - 2.0) < 0.1
        True
    """
    if not sigma > 0:
        raise RuntimeError(f"cauchy_: expects sigma > 0.0, but found sigma={sigma}")
    return _sample_(input, "cauchy_", "cauchy", float(median), float(sigma), generator)


def exponential_(input, lambd=1.0, *, generator=None):
    """Fill ``input`` with exponential draws of rate ``lambd`` (density ``lambd *
    exp(-lambd * x)``), in place (``torch.Tensor.exponential_``).

    Args:
        input: a floating tensor, written into.
        lambd: the rate, positive (default 1); the mean is ``1 / lambd``.
        generator: a :class:`numpy.random.Generator` instead of nnkit's global one.

    Returns:
        ``input`` itself, its version bumped; the old value gets a zero gradient.

    Example:
        >>> x = nnkit.empty(10000).exponential_(2.0)
        >>> round(x.mean().item(), 1), bool(x.min() >= 0)
        (0.5, True)
    """
    if not lambd > 0:
        raise RuntimeError(f"exponential_: expects lambda > 0.0, but found lambda={lambd}")
    return _sample_(input, "exponential_", "exponential", float(lambd), None, generator)


def geometric_(input, p, *, generator=None):
    """Fill ``input`` with geometric draws: the number of Bernoulli(``p``) trials up to
    and including the first success (1, 2, ...), in place (``torch.Tensor.geometric_``).

    Args:
        input: a tensor (integer dtypes too), written into.
        p: the success probability, in ``(0, 1)``.
        generator: a :class:`numpy.random.Generator` instead of nnkit's global one.

    Returns:
        ``input`` itself, its version bumped; the old value gets a zero gradient.

    Example:
        >>> x = nnkit.empty(10000).geometric_(0.5)
        >>> round(x.mean().item()), bool(x.min() >= 1)
        (2, True)
    """
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_: expects p to be in (0, 1), but got p={p}")
    return _sample_(input, "geometric_", "geometric", float(p), None, generator, False)


def log_normal_(input, mean=1.0, std=2.0, *, generator=None):
    """Fill ``input`` with log-normal draws ``exp(N(mean, std**2))``, in place
    (``torch.Tensor.log_normal_``).

    Args:
        input: a floating tensor, written into.
        mean: the mean of the underlying normal (default 1).
        std: its standard deviation, positive (default 2).
        generator: a :class:`numpy.random.Generator` instead of nnkit's global one.

    Returns:
        ``input`` itself, its version bumped; the old value gets a zero gradient.

    Example:
        >>> x = nnkit.empty(10000).log_normal_(0.0, 0.5)
        >>> round(x.log().mean().item(), 1), round(x.log().std().item(), 1)
        (0.0, 0.5)
    """
    if not std > 0:
        raise RuntimeError(f"log_normal_: expects std > 0.0, but found std={std}")
    return _sample_(input, "log_normal_", "log_normal", float(mean), float(std), generator)


def _rdiv(input, other):
    """``other / input`` (Python 2's ``__rdiv__``, kept by torch as ``__rtruediv__``)."""
    return input.__rtruediv__(other)


# Tensor methods that are not nnkit functions (as in torch).
METHODS_ONLY = {
    "new_empty": new_empty,
    "new_empty_strided": new_empty_strided,
    "resize_": resize_,
    "byte": byte,
    "char": char,
    "short": short,
    "cauchy_": cauchy_,
    "exponential_": exponential_,
    "geometric_": geometric_,
    "log_normal_": log_normal_,
    "__rdiv__": _rdiv,
}
