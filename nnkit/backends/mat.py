"""The Mat interface: every array operation autograd needs, written once against ``xp``.

``ArrayMat`` implements the interface for any NumPy-compatible array module; the
NumPy backend sets ``xp = numpy`` and the CuPy backend ``xp = cupy`` plus what
differs (device placement, streams, fused kernels). Nothing outside
``nnkit/backends`` touches the arrays themselves.

Conventions:
    * Methods return a new Mat and never modify their inputs, except the in-place
      family (``iadd``, ``setitem``, ``fill_``, ...), which write into the receiver's
      Storage and bump its version.
    * View methods (``reshape`` of contiguous data, ``transpose``, ``expand``, basic
      ``getitem``, ...) return a Mat over the *same* Storage.
    * Indices given to indexing methods are tuples whose items are ints, slices,
      ``None``, ``Ellipsis`` or integer/boolean Mats.
"""

from __future__ import annotations

from itertools import count

import numpy as np

from nnkit.backends.creation import MatCreationMixin
from nnkit.backends.device import get_mat_class
from nnkit.backends.index_kernels import IndexKernelsMixin
from nnkit.backends.nn_kernels import NNKernelsMixin, erf_array
from nnkit.backends.order_kernels import OrderKernelsMixin
from nnkit.backends.special_kernels import SpecialKernelsMixin
from nnkit.backends.storage import Storage
from nnkit.backends.winograd_kernels import WinogradKernelsMixin

__all__ = ["ArrayMat", "next_serial"]

#: The next creation stamp (thread-safe): every Mat takes one when made, so a Mat whose
#: ``serial`` exceeds a stamp drawn earlier was made after that moment.
next_serial = count(1).__next__
_alloc = object.__new__


class ArrayMat(
    MatCreationMixin,
    IndexKernelsMixin,
    NNKernelsMixin,
    OrderKernelsMixin,
    SpecialKernelsMixin,
    WinogradKernelsMixin,
):
    """A (possibly strided) view of a Storage, implemented with the array module ``xp``."""

    # shape and dtype are read on every op: kept as plain attributes (an array's shape
    # and dtype never change once it is wrapped), not properties over the array.
    __slots__ = ("array", "_storage", "serial", "shape", "dtype", "__weakref__")
    xp = np
    device = None  # set by subclasses
    multi_device = False  # True where Mats of one class may live on different devices

    def __init__(self, array, storage: Storage | None = None) -> None:
        self.array = array
        self._storage = storage
        self.shape = array.shape
        self.dtype = array.dtype
        # Creation stamp (see next_serial); 0 marks a Mat shared from the start (a cache).
        self.serial = next_serial()

    @property
    def storage(self) -> Storage:
        """The Storage this Mat views (made on first use: most results never need one)."""
        s = self._storage
        if s is None:
            s = self._storage = Storage(self.array, self.device)
        return s

    @property
    def version(self) -> int:
        """The Storage's version counter, without making a Storage: a Mat that has none
        yet was never written in place (writing makes one) nor viewed, so it is at 0."""
        s = self._storage
        return 0 if s is None else s.version

    # ----------------------------------------------------------------- wrapping
    # Every kernel's result is made by _new (or _view): they set the slots __init__ sets,
    # inline (a class call runs __init__ from C, which costs more than the arithmetic on
    # small arrays). A subclass whose __init__ does more overrides both.
    def _new(self, array) -> "ArrayMat":
        """A Mat over a freshly computed array (its own Storage)."""
        m = _alloc(self.__class__)
        m.array = array
        m._storage = None
        m.shape = array.shape
        m.dtype = array.dtype
        m.serial = next_serial()
        return m

    def _view(self, array) -> "ArrayMat":
        """A Mat over ``array``, which views this Mat's Storage."""
        m = ArrayMat._new(self, array)
        m._storage = self.storage
        return m

    @classmethod
    def wrap(cls, array) -> "ArrayMat":
        return cls(array)

    def alias(self) -> "ArrayMat":
        """Another Mat over this Mat's memory (sharing its Storage, as a view does)."""
        return self._view(self.array)

    # --------------------------------------------------------------- properties
    @property
    def kind(self) -> str:
        """The dtype's category: ``'f'`` floating, ``'i'`` signed integer, ``'u'``
        unsigned integer, ``'b'`` bool (NumPy's ``dtype.kind``)."""
        return self.dtype.kind

    @property
    def itemsize(self) -> int:
        return self.array.itemsize

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def size(self) -> int:
        return self.array.size

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    @property
    def strides(self) -> tuple:
        """Strides in elements (not bytes), like ``torch.Tensor.stride()``."""
        item = self.array.itemsize
        return tuple(s // item for s in self.array.strides)

    def is_contiguous(self) -> bool:
        return self.array.flags.c_contiguous

    def is_view_of(self, other: "ArrayMat") -> bool:
        return self.storage is other.storage

    def same_kind_as(self, other) -> bool:
        """Whether ``other`` has this Mat's shape, dtype and class (device kind)."""
        return (
            self.shape == other.shape
            and self.dtype == other.dtype
            and self.__class__ is other.__class__
        )

    def is_unaliased(self) -> bool:
        """Whether no other Mat can reach this Mat's memory: it never handed out a
        Storage (made when a view is taken or the memory is written in place), its array
        views no other array, and it is writable.

        This says nothing about who holds the Mat itself: only its owner can vouch for
        that. The autograd engine reuses a gradient buffer in place only when it owns
        the Mat (it allocated it and never handed it out) and the Mat is unaliased.
        """
        a = self.array
        return self._storage is None and a.base is None and self._writable(a)

    def accumulate_(self, other) -> "ArrayMat":
        """``self += other`` for a buffer only its owner sees (see :meth:`is_unaliased`).

        Unlike :meth:`iadd` it makes no Storage just to count the write: a Mat without
        one was never viewed nor saved at a version, so nobody can observe the change.
        """
        a = self.array
        self.xp.add(a, other.array, out=a, casting="unsafe")
        s = self._storage
        if s is not None:
            s.version += 1
        return self

    @staticmethod
    def _writable(a) -> bool:
        return a.flags.writeable

    # -------------------------------------------------------------- conversions
    def to_numpy(self) -> np.ndarray:
        """The values as a host ndarray (shares memory on the CPU)."""
        return self.array

    def item(self):
        return self.array.item()

    def __dlpack__(self, *args, **kwargs):
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def tolist(self):
        return self.array.tolist()

    def astype(self, dtype) -> "ArrayMat":
        if self.array.dtype == dtype:
            return self
        return self._new(self.array.astype(dtype))

    def copy(self) -> "ArrayMat":
        """A contiguous copy with its own Storage."""
        return self._new(self.xp.array(self.array, copy=True, order="C"))

    def contiguous(self) -> "ArrayMat":
        return self if self.array.flags.c_contiguous else self.copy()

    # --------------------------------------------------------- unary elementwise
    def neg(self):
        return self._new(self.xp.negative(self.array))

    def exp(self):
        return self._new(self.xp.exp(self.array))

    def expm1(self):
        return self._new(self.xp.expm1(self.array))

    def log(self):
        return self._new(self.xp.log(self.array))

    def log1p(self):
        return self._new(self.xp.log1p(self.array))

    def sqrt(self):
        return self._new(self.xp.sqrt(self.array))

    def rsqrt(self):
        return self._new(1 / self.xp.sqrt(self.array))

    def sin(self):
        return self._new(self.xp.sin(self.array))

    def cos(self):
        return self._new(self.xp.cos(self.array))

    def tan(self):
        return self._new(self.xp.tan(self.array))

    def tanh(self):
        return self._new(self.xp.tanh(self.array))

    def sigmoid(self):
        # Stable for large |x|: exp never overflows on either branch.
        x = self.array
        e = self.xp.exp(-self.xp.abs(x))
        return self._new(self.xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype))

    def softplus(self):
        x = self.array
        return self._new(self.xp.logaddexp(x, self.xp.zeros((), x.dtype)))

    def erf(self):
        xp = self.xp
        if hasattr(xp, "special") and hasattr(xp.special, "erf"):
            return self._new(xp.special.erf(self.array))
        return self._new(_erf_approx(xp, self.array))

    def relu(self):
        return self._new(self.xp.maximum(self.array, self.xp.zeros((), self.array.dtype)))

    def abs(self):
        return self._new(self.xp.abs(self.array))

    def sign(self):
        a = self.array
        if a.dtype.kind == "f":  # NaN has sign 0, as in torch (xp.sign gives NaN)
            return self._new((a > 0).astype(a.dtype) - (a < 0).astype(a.dtype))
        if a.dtype.kind == "b":  # a bool is its own sign (torch); xp.sign has no bool loop
            return self._new(a.copy())
        return self._new(self.xp.sign(a))

    def reciprocal(self):
        return self._new(self.xp.reciprocal(self.array.astype(self.array.dtype)))

    def floor(self):
        return self._new(self.xp.floor(self.array))

    def ceil(self):
        return self._new(self.xp.ceil(self.array))

    def round(self, decimals: int = 0):
        return self._new(self.xp.round(self.array, decimals))

    def trunc(self):
        return self._new(self.xp.trunc(self.array))

    def logical_not(self):
        return self._new(self.xp.logical_not(self.array))

    def invert(self):
        return self._new(self.xp.invert(self.array))

    def isnan(self):
        return self._new(self.xp.isnan(self.array))

    def isinf(self):
        return self._new(self.xp.isinf(self.array))

    def isfinite(self):
        return self._new(self.xp.isfinite(self.array))

    def all_finite(self) -> bool:
        return bool(self.xp.isfinite(self.array).all())

    # -------------------------------------------------------- binary elementwise
    def add(self, other):
        return self._new(self.xp.add(self.array, other.array))

    def sub(self, other):
        return self._new(self.xp.subtract(self.array, other.array))

    def mul(self, other):
        return self._new(self.xp.multiply(self.array, other.array))

    def div(self, other):
        return self._new(self.xp.true_divide(self.array, other.array))

    def floordiv(self, other):
        return self._new(self.xp.floor_divide(self.array, other.array))

    def remainder(self, other):
        return self._new(self.xp.remainder(self.array, other.array))

    def fmod(self, other):
        return self._new(self.xp.fmod(self.array, other.array))

    def pow(self, other):
        a, b = self.array, other.array
        if a.dtype.kind in "iu" and b.dtype.kind in "iu" and (b < 0).any():
            # As torch: an integer to a negative integer power is 1 / a**|b| truncated:
            # 1 for a == 1, +-1 for a == -1, 0 otherwise (where xp.power raises).
            xp = self.xp
            pos = xp.power(a, xp.where(b < 0, 0, b))
            odd = (b % 2).astype(bool)
            neg = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
            return self._new(xp.where(b < 0, neg, pos).astype(xp.result_type(a, b)))
        return self._new(self.xp.power(a, b))

    def maximum(self, other):
        return self._new(self.xp.maximum(self.array, other.array))

    def minimum(self, other):
        return self._new(self.xp.minimum(self.array, other.array))

    def eq(self, other):
        return self._new(self.xp.equal(self.array, other.array))

    def ne(self, other):
        return self._new(self.xp.not_equal(self.array, other.array))

    def lt(self, other):
        return self._new(self.xp.less(self.array, other.array))

    def le(self, other):
        return self._new(self.xp.less_equal(self.array, other.array))

    def gt(self, other):
        return self._new(self.xp.greater(self.array, other.array))

    def ge(self, other):
        return self._new(self.xp.greater_equal(self.array, other.array))

    def logical_and(self, other):
        return self._new(self.xp.logical_and(self.array, other.array))

    def logical_or(self, other):
        return self._new(self.xp.logical_or(self.array, other.array))

    def logical_xor(self, other):
        return self._new(self.xp.logical_xor(self.array, other.array))

    def bitwise_and(self, other):
        return self._new(self.xp.bitwise_and(self.array, other.array))

    def bitwise_or(self, other):
        return self._new(self.xp.bitwise_or(self.array, other.array))

    def bitwise_xor(self, other):
        return self._new(self.xp.bitwise_xor(self.array, other.array))

    # Fused activation gradients (one pass instead of a chain of small kernels); self
    # is the incoming gradient and ``out`` the activation's output.
    def tanh_grad(self, out):
        y = out.array
        return self._new(self.array * (1 - y * y))

    def sigmoid_grad(self, out):
        y = out.array
        return self._new(self.array * y * (1 - y))

    def relu_grad(self, out):
        return self._new(self.array * (out.array > 0))

    def logsumexp_grad(self, x, out):
        """``self * exp(x - out)``: logsumexp's backward (self and out broadcast)."""
        return self._new(self.array * self.xp.exp(x.array - out.array))

    def where(self, a, b):
        """``a`` where this (boolean) Mat is true, else ``b``."""
        return self._new(self.xp.where(self.array, a.array, b.array))

    def clip(self, lo, hi):
        """Clamp into [lo, hi]; ``lo``/``hi`` are Python numbers or None."""
        return self._new(self.xp.clip(self.array, lo, hi))

    def allclose(self, other, rtol=1e-5, atol=1e-8) -> bool:
        return bool(self.xp.allclose(self.array, other.array, rtol=rtol, atol=atol))

    def array_equal(self, other) -> bool:
        return bool(self.xp.array_equal(self.array, other.array))

    # --------------------------------------------------------------- reductions
    def sum(self, axis=None, keepdims=False, dtype=None):
        # the array's method: xp.sum's Python wrapper costs more than small sums
        return self._new(self.array.sum(axis=axis, keepdims=keepdims, dtype=dtype))

    def mean(self, axis=None, keepdims=False):
        a = self.array
        n = a.size if axis is None else _count(a.shape, axis)
        if n and a.dtype.kind == "f" and a.dtype.itemsize >= 4:
            # The sum over the count, as xp.mean computes it, without its Python wrapper
            # (which costs more than the arithmetic on small tensors).
            return self._new(a.sum(axis=axis, keepdims=keepdims) / n)
        if not n and a.dtype.kind in "fc":  # the mean of nothing: NaN, quietly (torch)
            out = self.xp.full(
                self.xp.sum(a, axis=axis, keepdims=keepdims).shape, np.nan, dtype=a.dtype
            )
            return self._new(out)
        return self._new(self.xp.mean(a, axis=axis, keepdims=keepdims))

    def prod(self, axis=None, keepdims=False):
        return self._new(self.xp.prod(self.array, axis=axis, keepdims=keepdims))

    def amax(self, axis=None, keepdims=False):
        return self._new(self.xp.max(self.array, axis=axis, keepdims=keepdims))

    def amin(self, axis=None, keepdims=False):
        return self._new(self.xp.min(self.array, axis=axis, keepdims=keepdims))

    def argmax(self, axis=None, keepdims=False):
        return self._new(self.xp.argmax(self.array, axis=axis, keepdims=keepdims))

    def argmin(self, axis=None, keepdims=False):
        return self._new(self.xp.argmin(self.array, axis=axis, keepdims=keepdims))

    def any(self, axis=None, keepdims=False):
        return self._new(self.xp.any(self.array, axis=axis, keepdims=keepdims))

    def all(self, axis=None, keepdims=False):
        return self._new(self.xp.all(self.array, axis=axis, keepdims=keepdims))

    def logsumexp(self, axis=None):
        """``log(sum(exp(x)))`` over ``axis`` (kept as size 1), shifted by the maximum."""
        xp, a = self.xp, self.array
        m = a.max(axis=axis, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros((), a.dtype))
        with np.errstate(divide="ignore"):  # an all -inf row gives -inf, as it should
            return self._new(xp.log(xp.exp(a - m).sum(axis=axis, keepdims=True)) + m)

    # ------------------------------------------------------------------- linalg
    def matmul(self, other, ta: bool = False, tb: bool = False):
        """``op(self) @ op(other)``, ``op`` swapping the last two axes where ``ta``/``tb``
        is set (a strided view: BLAS reads the transposed layout without a copy)."""
        a, b = self.array, other.array
        if ta:
            a = a.swapaxes(-1, -2)
        if tb:
            b = b.swapaxes(-1, -2)
        return self._new(self.xp.matmul(a, b))

    def tensordot(self, other, axes):
        return self._new(self.xp.tensordot(self.array, other.array, axes=axes))

    def einsum(self, subscripts, *others):
        return self._new(
            self.xp.einsum(subscripts, self.array, *[o.array for o in others], optimize=True)
        )

    # -------------------------------------------------------------------- views
    def reshape(self, shape):
        """A view when the strides allow it, else a copy (own Storage)."""
        a = self.array
        try:
            v = a.view()
            v.shape = shape
            return self._view(v)
        except AttributeError:
            return self._new(a.reshape(shape))

    def transpose(self, axes=None):
        return self._view(self.array.transpose(axes))

    def swapaxes(self, a, b):
        return self._view(self.xp.swapaxes(self.array, a, b))

    def expand(self, shape):
        """A read-only broadcast view of this Mat at ``shape``."""
        return self._view(self.xp.broadcast_to(self.array, shape))

    def unreduce(self, keep_shape, shape, scale=1):
        """A reduction's result back at the input's ``shape``: reshaped to ``keep_shape``
        (None: already there), times ``scale``, then broadcast (a read-only view)."""
        m = self if scale == 1 else self._new(self.array * scale)
        a = m.array if keep_shape is None else m.array.reshape(keep_shape)
        return m._view(self.xp.broadcast_to(a, shape))

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return self._new(self.xp.diagonal(self.array, offset, axis1, axis2).copy())

    def as_strided(self, shape, strides):
        """A view with explicit ``shape`` and ``strides`` (in elements)."""
        item = self.array.itemsize
        v = self.xp.lib.stride_tricks.as_strided(
            self.array, shape=shape, strides=tuple(s * item for s in strides)
        )
        return self._view(v)

    def flip(self, axis):
        """A contiguous copy reversed along ``axis`` (torch's flip copies; not a view)."""
        return self._new(self.xp.flip(self.array, axis).copy())

    # ---------------------------------------------------------------- in place
    # Each writes into this Mat's memory and bumps its Storage's version.
    def _written(self):
        self.storage.version += 1
        return self

    def setitem(self, idx, value):
        self.array[self._index(idx)] = value.array
        return self._written()

    def copy_(self, src):
        """Copy ``src`` (broadcast, cast) into this Mat's memory."""
        self.xp.copyto(self.array, src.array, casting="unsafe")
        return self._written()

    def fill_(self, value):
        self.array.fill(value)
        return self._written()

    def iadd(self, other):
        self.xp.add(self.array, other.array, out=self.array, casting="unsafe")
        return self._written()

    def isub(self, other):
        self.xp.subtract(self.array, other.array, out=self.array, casting="unsafe")
        return self._written()

    def imul(self, other):
        self.xp.multiply(self.array, other.array, out=self.array, casting="unsafe")
        return self._written()

    def idiv(self, other):
        self.xp.true_divide(self.array, other.array, out=self.array, casting="unsafe")
        return self._written()

    def iclip(self, lo, hi):
        self.xp.clip(self.array, lo, hi, out=self.array)
        return self._written()

    def iaxpy(self, alpha, other):
        """``self += alpha * other`` without a temporary where the backend allows."""
        self.xp.add(self.array, alpha * other.array, out=self.array, casting="unsafe")
        return self._written()

    # ------------------------------------------------------------------ devices
    def to_device(self, device):
        """This Mat's values on ``device`` (self when already there)."""
        if device == self.device:
            return self
        cls = get_mat_class(device)
        return cls.from_foreign(self, device)

    @classmethod
    def from_foreign(cls, mat, device):
        """Copy a Mat of another backend onto this one's ``device``."""
        return cls.from_host(mat.to_numpy(), copy=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype})"


def _count(shape, axis) -> int:
    """How many elements a reduction over ``axis`` (an int or a tuple) combines."""
    if isinstance(axis, int):
        return shape[axis]
    n = 1
    for k in axis:
        n *= shape[k]
    return n


def _erf_approx(xp, x):
    # Array modules without a special.erf use the vectorised Cephes kernel.
    return erf_array(xp, x)
