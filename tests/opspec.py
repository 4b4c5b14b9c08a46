"""The op table's shape (OpInfo-like): one ``OpSpec`` per op, with sample inputs.

Every differentiable op gets a row; ``tests/autograd/test_op_table.py`` turns each
row into: forward against a NumPy reference, float64 ``gradcheck`` on contiguous,
non-contiguous and broadcast inputs, ``gradgradcheck`` (unless ``gradgrad=False``),
and "no grad_fn" for non-differentiable ops.

Sample arguments are NumPy arrays (turned into tensors by the harness: float arrays
become differentiable inputs, integer/bool arrays plain tensors) or plain Python
values (passed as they are).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Sample:
    """One call of an op.

    Attributes:
        args: positional arguments (ndarrays become tensors).
        kwargs: keyword arguments passed as they are.
        diff: indices of ``args`` that require grad (default: every float ndarray).
        desc: short label for test ids.
        noncontig: also run this sample with non-contiguous tensor inputs.
    """

    args: tuple
    kwargs: dict = field(default_factory=dict)
    diff: tuple | None = None
    desc: str = ""
    noncontig: bool = True


@dataclass
class OpSpec:
    """One row of the op table.

    Attributes:
        name: op name (test id).
        fn: called with tensors in place of the sample's arrays.
        ref: NumPy reference called with the arrays (None: no forward check).
        samples: ``samples(rng) -> list[Sample]``.
        differentiable: False for comparisons, argmax, ...: the output must have no
            grad_fn.
        gradgrad: run gradgradcheck.
        atol, rtol: forward tolerances (float32 runs); gradcheck uses its own.
        grad_atol, grad_rtol: gradcheck tolerances.
        random: the op draws random numbers (forward compared under a fixed seed only).
    """

    name: str
    fn: Callable
    ref: Callable | None
    samples: Callable
    differentiable: bool = True
    gradgrad: bool = True
    atol: float = 1e-5
    rtol: float = 1e-4
    grad_atol: float = 1e-5
    grad_rtol: float = 1e-3
    random: bool = False
