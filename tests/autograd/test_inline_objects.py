"""The hot paths (``Op.apply``, ``resolve_saved``, ``ArrayMat._new``/``_view``) make
Tensors, TensorImpls, Nodes, SavedTensors and Mats without their ``__init__`` (a class
call runs it from C, which costs more than the arithmetic on small tensors): every slot
``__init__`` sets must be set there too, to the same values."""

from __future__ import annotations

import numpy as np

import nnkit
from nnkit.autograd.function import Node
from nnkit.autograd.saved import SavedTensor
from nnkit.autograd.tensor import TensorImpl
from nnkit.backends.mat import ArrayMat

_UNSET = object()


def _slots(obj) -> dict:
    """Every slot of ``obj``'s class (and its bases) with its value, or ``_UNSET``."""
    names = []
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    return {n: getattr(obj, n, _UNSET) for n in names if n not in ("__dict__", "__weakref__")}


def _same_as_init(obj, ref, differ=()) -> None:
    got, want = _slots(obj), _slots(ref)
    assert got.keys() == want.keys()
    for name, value in got.items():
        assert value is not _UNSET, f"{type(obj).__name__}.{name} is not set"
        if name not in differ:
            same = value is want[name] or (
                not isinstance(value, np.ndarray) and value == want[name]
            )
            assert same, f"{type(obj).__name__}.{name}"


def test_op_results_and_nodes_are_complete():
    x = nnkit.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * x  # a node saving two inputs
    impl = y._impl
    _same_as_init(impl, TensorImpl(impl.data, True), differ={"grad_fn"})
    assert impl.grad_fn is not None
    node = impl.grad_fn
    ref = Node(node._fn_cls)
    _same_as_init(node, ref, differ={"_saved", "next_functions", "needs_input_grad", "meta"})
    for s in node._saved:
        _same_as_init(s, SavedTensor(s.mat, s.impl, s.grad_fn, s.output_nr, s.kind))
    with nnkit.no_grad():
        z = x * 2.0
    _same_as_init(z._impl, TensorImpl(z._impl.data, False))
    k = (x > 0)._impl  # an integer-valued result of a recorded op: no graph
    _same_as_init(k, TensorImpl(k.data, False))


def test_engine_gradients_are_complete():
    x = nnkit.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (g,) = nnkit.autograd.grad((x * x).tanh().sum(), [x])
    _same_as_init(g._impl, TensorImpl(g._impl.data, False))


def test_mats_are_complete():
    m = nnkit.tensor(np.arange(6.0).reshape(2, 3))._impl.data
    for made in (m.neg(), m.transpose((1, 0))):  # _new, _view
        _same_as_init(made, ArrayMat(made.array, made._storage), differ={"serial"})
        assert made.serial > m.serial
