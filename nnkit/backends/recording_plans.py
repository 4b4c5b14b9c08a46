"""The wrappers a :class:`~nnkit.backends.recording.Recorder` installs, made once.

Patching every Mat method and every kernel function anew for each recording cost more
than recording a small step itself (wrappers made, ``sys.modules`` scanned). The plans
here are made once and reused while what they wrap is unchanged: per Mat class, while
the attributes of every class in its MRO are the very same objects; for the kernel
functions, while no module was loaded and every binding found is still in place.
"""

from __future__ import annotations

import operator
import sys
from types import FunctionType

__all__ = ["class_plan", "kernel_plan"]

#: Per Mat class: ``(snapshot of its MRO's attributes, [(name, wrapper)])``.
_CLASS_PLANS: dict = {}
#: ``[len(sys.modules) when made, [(module, name, function, wrapper)]]``.
_KERNEL_PLAN: list = [None, []]
#: The wrapper made for each kernel function (one per function, ever).
_KERNEL_WRAPPERS: dict = {}


def _attributes(cls) -> tuple:
    return tuple((k, tuple(vars(k)), tuple(vars(k).values())) for k in cls.__mro__)


def _same(a, b) -> bool:
    """Whether two :func:`_attributes` snapshots hold the very same objects."""
    return len(a) == len(b) and all(
        x[0] is y[0] and x[1] == y[1] and all(map(operator.is_, x[2], y[2])) for x, y in zip(a, b)
    )


def class_plan(cls, wrap, private) -> list:
    """``(name, wrapper)`` for each public method of ``cls`` (and each name of
    ``private``), a class or static method wrapped as one; ``wrap(name, fn)`` makes a
    wrapper."""
    snapshot = _attributes(cls)
    cached = _CLASS_PLANS.get(cls)
    if cached is not None and _same(cached[0], snapshot):
        return cached[1]
    plan, seen = [], set()
    for klass in cls.__mro__:
        for name, attr in list(vars(klass).items()):
            if name in seen or (name.startswith("_") and name not in private):
                continue
            seen.add(name)
            if isinstance(attr, (classmethod, staticmethod)):
                plan.append((name, type(attr)(wrap(name, attr.__func__))))
            elif callable(attr) and not isinstance(attr, type):
                plan.append((name, wrap(name, attr)))
    _CLASS_PLANS[cls] = (snapshot, plan)
    return plan


def kernel_plan(wrap, skip) -> list:
    """``(module, name, function, wrapper)`` for each public function of the
    ``nnkit.backends.*_kernels`` modules (but those named in ``skip``), wherever a loaded
    nnkit module binds it; ``wrap(fn)`` makes a wrapper."""
    key, plan = _KERNEL_PLAN
    if key == len(sys.modules) and all(vars(m).get(k) is v for m, k, v, _ in plan):
        return plan
    fns = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith("nnkit.backends.") and name.endswith("_kernels") and name not in skip:
            for k, v in vars(mod).items():
                if type(v) is FunctionType and v.__module__ == name and k[0] != "_":
                    fns[id(v)] = v
    plan = []
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith("nnkit"):
            continue
        for k, v in list(vars(mod).items()):
            if type(v) is FunctionType and fns.get(id(v)) is v:
                wrapped = _KERNEL_WRAPPERS.get(v)
                if wrapped is None:
                    wrapped = _KERNEL_WRAPPERS[v] = wrap(v)
                plan.append((mod, k, v, wrapped))
    _KERNEL_PLAN[:] = [len(sys.modules), plan]
    return plan
