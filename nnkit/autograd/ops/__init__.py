"""The built-in differentiable ops, by family.

Each family module holds its ``Op`` classes (forward on Mats, backward in Tensor
ops) with the public lowercase function right below. This package re-exports the
functions and lists which of them are also Tensor methods.
"""

from nnkit.autograd.factories import (
    bool,
    cpu,
    cuda,
    double,
    float,
    half,
    int,
    long,
    new_full,
    new_ones,
    new_tensor,
    new_zeros,
    to,
    type_as,
)
from nnkit.autograd.ops.discrete import *  # noqa: F401,F403
from nnkit.autograd.ops.discrete import __all__ as _dc
from nnkit.autograd.ops.elementwise import *  # noqa: F401,F403
from nnkit.autograd.ops.elementwise import __all__ as _ew
from nnkit.autograd.ops.indexing import *  # noqa: F401,F403
from nnkit.autograd.ops.indexing import __all__ as _ix
from nnkit.autograd.ops.inplace import *  # noqa: F401,F403
from nnkit.autograd.ops.inplace import __all__ as _ip
from nnkit.autograd.ops.linalg import *  # noqa: F401,F403
from nnkit.autograd.ops.linalg import __all__ as _la
from nnkit.autograd.ops.ordering import *  # noqa: F401,F403
from nnkit.autograd.ops.ordering import NOT_METHODS as _od_functions
from nnkit.autograd.ops.ordering import __all__ as _od
from nnkit.autograd.ops.reduction import *  # noqa: F401,F403
from nnkit.autograd.ops.reduction import __all__ as _rd
from nnkit.autograd.ops.shape import *  # noqa: F401,F403
from nnkit.autograd.ops.shape import __all__ as _sh
from nnkit.autograd.ops.shaping import *  # noqa: F401,F403
from nnkit.autograd.ops.shaping import NOT_METHODS as _sp_functions
from nnkit.autograd.ops.shaping import __all__ as _sp
from nnkit.autograd.ops.special import *  # noqa: F401,F403
from nnkit.autograd.ops.special import NOT_METHODS as _sc_functions
from nnkit.autograd.ops.special import __all__ as _sc

__all__ = sorted(
    set(_dc)
    | set(_ew)
    | set(_ix)
    | set(_ip)
    | set(_la)
    | set(_rd)
    | set(_sh)
    | set(_od)
    | set(_sp)
    | set(_sc)
)

# Functions whose first argument is the tensor, installed as Tensor methods.
TENSOR_METHODS = sorted(
    (
        set(__all__)
        - {
            "cat",
            "concat",
            "stack",
            "where",
            "broadcast_shapes",
            "apply_inplace",
            "setitem",
            "getitem",
            "index_put",
            "cast",
            "sum_to",
            "atleast_2d",
        }
        - _od_functions
        - _sp_functions
        - _sc_functions
    )
    | {
        "to",
        "cpu",
        "cuda",
        "float",
        "double",
        "half",
        "long",
        "int",
        "bool",
        "type_as",
        "new_zeros",
        "new_ones",
        "new_full",
        "new_tensor",
    }
)
