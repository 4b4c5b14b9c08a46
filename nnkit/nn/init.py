"""``nnkit.nn.init``: in-place weight initialisation (PyTorch names).

Every function fills its tensor under ``no_grad`` from nnkit's global generator and
returns it; see :mod:`nnkit.layers.initializers` for the formulas.

Example:
    >>> w = nnkit.empty(3, 5)
    >>> nnkit.nn.init.xavier_uniform_(w, gain=nnkit.nn.init.calculate_gain("relu"))
"""

from nnkit.layers.initializers import (
    _calculate_fan_in_and_fan_out,
    calculate_gain,
    constant_,
    kaiming_normal_,
    kaiming_uniform_,
    normal_,
    ones_,
    trunc_normal_,
    uniform_,
    xavier_normal_,
    xavier_uniform_,
    zeros_,
)

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "constant_",
    "zeros_",
    "ones_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "trunc_normal_",
    "_calculate_fan_in_and_fan_out",
]
