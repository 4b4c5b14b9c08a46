"""``nnkit.nn.init``: in-place weight initialisation (PyTorch names).

Every function fills its tensor under ``no_grad`` from nnkit's global generator and
returns it; see :mod:`nnkit.layers.initializers` for the formulas.

Example:
    >>> w = nnkit.empty(3, 5)
    >>> nnkit.nn.init.calculate_gain("relu")
    1.4142135623730951
    >>> nnkit.nn.init.xavier_uniform_(w, gain=nnkit.nn.init.calculate_gain("relu"))
    tensor([[ 0.3355, -0.5639, -1.1244, -1.1843,  0.7674],
            [ 1.0110,  0.2612,  0.5621,  0.1069,  1.0657],
            [ 0.7737, -1.2180,  0.8755, -1.1425,  0.5625]])
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
