"""Tensor and TensorImpl: the user-facing handle and the autograd state behind it.

``Tensor`` holds no maths, and this module imports nothing above it in the autograd
core (only the handles and the backends): the methods that need higher modules are
attached to the class by the modules that define them, when those are imported. The
constructor comes from :mod:`~nnkit.autograd.factories`, ``backward`` from
:mod:`~nnkit.autograd.engine`, ``__repr__``/``__str__`` from
:mod:`~nnkit.autograd.printing`, and the operators and op methods from
:mod:`nnkit.autograd.ops` (``ops/methods.py``); importing :mod:`nnkit.autograd` runs
them all.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from nnkit.autograd.handles import RemovableHandle
from nnkit.backends import dtypes as _dt

__all__ = ["Tensor", "TensorImpl", "AccumulateGrad", "grad_edge", "leaf_alias", "tensor_method"]


class TensorImpl:
    """Data and autograd state of a tensor.

    Attributes:
        data: the :class:`~nnkit.backends.mat.ArrayMat` holding the values.
        grad: the accumulated gradient (a Tensor) or None.
        grad_fn: the Node that produced this tensor, None for leaves.
        requires_grad: whether gradients flow to this tensor.
        output_nr: which output of ``grad_fn`` this tensor is.
    """

    __slots__ = ("data", "grad", "grad_fn", "requires_grad", "output_nr", "__dict__", "__weakref__")
    # Rarely set: class defaults, overridden in the (lazily allocated) instance dict.
    hooks = None
    post_hooks = None
    _grad_acc = None
    _base = None  # for a view: the TensorImpl whose memory it views
    _view_recipe = None  # for a view: the view ops that make it from _base

    def __init__(self, data, requires_grad: bool = False) -> None:
        self.data = data
        self.grad = None
        self.grad_fn = None
        self.requires_grad = requires_grad
        self.output_nr = 0


class AccumulateGrad:
    """The graph node of a leaf: accumulates incoming gradients into its ``.grad``."""

    __slots__ = ("impl", "next_functions", "__weakref__")
    _n_outputs = 1
    _released = False
    pre_hooks = retained = post_hooks = None

    def __init__(self, impl: TensorImpl) -> None:
        self.impl = impl
        self.next_functions = ()

    def name(self) -> str:
        return "AccumulateGrad"

    @property
    def variable(self) -> "Tensor":
        return Tensor._wrap(self.impl)

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


_grad_acc_lock = threading.Lock()


def grad_edge(impl: TensorImpl):
    """The ``(node, output_nr)`` edge that gradients for ``impl`` flow into."""
    fn = impl.grad_fn
    if fn is not None:
        return (fn, impl.output_nr)
    ref = impl._grad_acc
    acc = ref() if ref is not None else None
    if acc is None:
        with _grad_acc_lock:  # two threads must not make two nodes for one leaf
            ref = impl._grad_acc
            acc = ref() if ref is not None else None
            if acc is None:
                acc = AccumulateGrad(impl)
                impl._grad_acc = weakref.ref(acc)
    return (acc, 0)


def leaf_alias(mat, leaf: TensorImpl) -> TensorImpl:
    """A TensorImpl over ``mat`` whose gradients reach the leaf ``leaf``'s accumulator.

    Used where the engine or a saved-tensor hook hands out another handle on a leaf;
    the accumulator is held strongly (a weak reference from a new impl would die).
    """
    impl = TensorImpl(mat, True)
    acc = grad_edge(leaf)[0]
    impl._grad_acc = lambda: acc
    return impl


class Tensor:
    """A multi-dimensional array that records the operations applied to it.

    Create tensors with :func:`nnkit.tensor` and the factories (``zeros``, ``randn``,
    ...); ``Tensor(data)`` is the same as ``nnkit.tensor(data)``.

    Example:
        >>> x = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> y = (x @ x).relu().sum()
        >>> y.backward()
        >>> x.grad.shape
        (2, 2)
    """

    __slots__ = ("_impl", "__weakref__")
    __array_priority__ = 1000  # make numpy defer to Tensor's reflected operators
    # __init__ (nnkit.tensor's), backward, __repr__/__str__ and the op methods are set by
    # factories.py, engine.py, printing.py and ops/methods.py (see the module docstring).

    @classmethod
    def _wrap(cls, impl: TensorImpl) -> "Tensor":
        t = object.__new__(Tensor)
        t._impl = impl
        return t

    @classmethod
    def _from_mat(cls, mat, requires_grad: bool = False) -> "Tensor":
        t = object.__new__(Tensor)
        t._impl = TensorImpl(mat, requires_grad)
        return t

    @classmethod
    def _wrap_shared(cls, t: "Tensor") -> "Tensor":
        """Another handle on ``t``'s memory (a second Mat), keeping its graph position."""
        src = t._impl
        m = src.data.alias()
        if src.grad_fn is None and src.requires_grad:
            # An alias of a leaf must feed the leaf's own accumulator (else gradients
            # reaching the alias, e.g. with create_graph, are lost).
            return cls._wrap(leaf_alias(m, src))
        impl = TensorImpl(m, src.requires_grad)
        impl.grad_fn = src.grad_fn
        impl.output_nr = src.output_nr
        return cls._wrap(impl)

    # ------------------------------------------------------------- properties
    @property
    def shape(self) -> tuple:
        return self._impl.data.shape

    @property
    def dtype(self) -> _dt.DType:
        return _dt.from_np(self._impl.data.dtype)

    @property
    def device(self):
        return self._impl.data.device

    @property
    def ndim(self) -> int:
        return self._impl.data.ndim

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def itemsize(self) -> int:
        return self._impl.data.itemsize

    @property
    def nbytes(self) -> int:
        return self._impl.data.nbytes

    def dim(self) -> int:
        return self._impl.data.ndim

    def numel(self) -> int:
        return self._impl.data.size

    def element_size(self) -> int:
        return self._impl.data.itemsize

    def size(self, dim: int | None = None):
        """The shape, or the length of dimension ``dim``."""
        shape = self._impl.data.shape
        if dim is None:
            return shape
        return shape[_wrap_dim(dim, len(shape), "size")]

    def stride(self, dim: int | None = None):
        s = self._impl.data.strides
        return s if dim is None else s[_wrap_dim(dim, len(s), "stride")]

    def is_contiguous(self) -> bool:
        return self._impl.data.is_contiguous()

    def is_floating_point(self) -> bool:
        return self._impl.data.kind == "f"

    def _version(self) -> int:
        return self._impl.data.storage.version

    _version = property(_version)

    def untyped_storage(self):
        return self._impl.data.storage

    # --------------------------------------------------------- autograd state
    @property
    def requires_grad(self) -> bool:
        return self._impl.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` on a leaf (floating dtypes only); returns self."""
        impl = self._impl
        if impl.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf tensors; "
                    "use detach() to get a tensor that does not require grad"
                )
            return self
        if requires_grad and impl.data.kind != "f":
            raise RuntimeError(
                f"only tensors of floating point dtype can require gradients, got {self.dtype}"
            )
        impl.requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        return self._impl.grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad must be a Tensor or None, got {type(value).__name__}"
                )
            if value.shape != self.shape or value.dtype != self.dtype:
                raise RuntimeError(
                    f"assigned grad has shape {list(value.shape)} and dtype "
                    f"{value.dtype}, but the tensor has shape "
                    f"{list(self.shape)} and dtype {self.dtype}"
                )
            if value.device != self.device:
                raise RuntimeError(
                    f"assigned grad is on {value.device}, but the tensor is on {self.device}"
                )
        self._impl.grad = value

    @property
    def grad_fn(self):
        return self._impl.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._impl.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._impl.output_nr

    @property
    def data(self) -> "Tensor":
        """A tensor sharing this one's memory, outside the graph."""
        return Tensor._from_mat(self._impl.data)

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._impl.data = value._impl.data

    @property
    def retains_grad(self) -> bool:
        fn = self._impl.grad_fn
        return fn is not None and fn.retained is not None and self._impl.output_nr in fn.retained

    def retain_grad(self) -> None:
        """Make this non-leaf tensor keep its ``.grad`` after backward."""
        impl = self._impl
        if not impl.requires_grad:
            raise RuntimeError("can't retain_grad on a tensor that has requires_grad=False")
        fn = impl.grad_fn
        if fn is None:
            return
        if fn.retained is None:
            fn.retained = {}
        fn.retained[impl.output_nr] = weakref.ref(impl)

    def register_hook(self, hook):
        """Run ``hook(grad)`` when this tensor's gradient is computed.

        The hook may return a new gradient to use instead. Returns a handle whose
        ``remove()`` unregisters it.
        """
        impl = self._impl
        if not impl.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require grad")
        fn = impl.grad_fn
        if fn is None:
            if impl.hooks is None:
                impl.hooks = []
            impl.hooks.append(hook)
            return RemovableHandle(impl.hooks, hook)
        if fn.pre_hooks is None:
            fn.pre_hooks = {}
        hooks = fn.pre_hooks.setdefault(impl.output_nr, [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """On a leaf: run ``hook(tensor)`` after each backward has updated its ``.grad``."""
        impl = self._impl
        if impl.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if not impl.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require grad")
        if impl.post_hooks is None:
            impl.post_hooks = []
        impl.post_hooks.append(hook)
        return RemovableHandle(impl.post_hooks, hook)

    def detach(self) -> "Tensor":
        """A new tensor sharing this one's memory, cut from the graph."""
        return Tensor._from_mat(self._impl.data)

    def detach_(self) -> "Tensor":
        self._impl.grad_fn = None
        self._impl.requires_grad = False
        return self

    # ----------------------------------------------------------- conversions
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a NumPy array (shares memory on the CPU).

        Raises:
            RuntimeError: if the tensor requires grad (call ``detach()`` first) unless
                ``force=True``; GPU tensors are copied to the host.
        """
        if self._impl.requires_grad and not force:
            raise RuntimeError(
                "can't call numpy() on a tensor that requires grad; use tensor.detach().numpy()"
            )
        return self._impl.data.to_numpy()

    def __array__(self, dtype=None, copy=None):
        a = self._impl.data.to_numpy()
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a.copy() if copy else a

    def __dlpack__(self, *args, **kwargs):
        return self._impl.data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._impl.data.__dlpack_device__()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(
                f"a Tensor with {self.numel()} elements cannot be converted to a Python scalar"
            )
        return self._impl.data.item()

    def tolist(self):
        return self._impl.data.tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} elements is ambiguous")
        return bool(self.item())

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __format__(self, spec: str) -> str:
        if self.ndim == 0 and spec:
            return format(self.item(), spec)
        return str(self)

    def __reduce__(self):
        raise TypeError(
            "nnkit tensors are not picklable; save them with nnkit.io "
            "(HDF5) or convert with .numpy()"
        )


def _wrap_dim(dim: int, ndim: int, op: str) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"{op}: dimension {dim} out of range for a tensor with {ndim} "
            f"dimension(s) (expected in [{-n}, {n - 1}])"
        )
    return dim % n


def ones_like(t: Tensor) -> Tensor:
    m = t._impl.data
    return Tensor._from_mat(type(m).ones(m.shape, m.dtype))


def tensor_method(name: str):
    """Decorator: attach the function to :class:`Tensor` as its method ``name``.

    How a module above this one (the factories, the engine, the printer, the ops) gives
    Tensor the methods that need it, without this module importing it: the function is
    named ``Tensor.<name>`` (for help() and tracebacks) and returned unchanged otherwise.
    """

    def attach(fn):
        fn.__name__ = name
        fn.__qualname__ = f"Tensor.{name}"
        setattr(Tensor, name, fn)
        return fn

    return attach
