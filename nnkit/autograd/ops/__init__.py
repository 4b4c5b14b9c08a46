"""The built-in differentiable ops, by family.

Each family module holds its ``Op`` classes (forward on Mats, backward in Tensor
ops) with the public lowercase function right below. This package re-exports the
functions and lists which of them are also Tensor methods.
"""

from nnkit.autograd.conversion import (
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
from nnkit.autograd.ops.activation_inplace import *  # noqa: F401,F403
from nnkit.autograd.ops.activation_inplace import NOT_METHODS as _ai_functions
from nnkit.autograd.ops.activation_inplace import __all__ as _ai
from nnkit.autograd.ops.arithmetic import *  # noqa: F401,F403
from nnkit.autograd.ops.arithmetic import __all__ as _ar
from nnkit.autograd.ops.arrange import *  # noqa: F401,F403
from nnkit.autograd.ops.arrange import NOT_METHODS as _ag_functions
from nnkit.autograd.ops.arrange import __all__ as _ag
from nnkit.autograd.ops.binary_math import *  # noqa: F401,F403
from nnkit.autograd.ops.binary_math import __all__ as _bm
from nnkit.autograd.ops.counting import *  # noqa: F401,F403
from nnkit.autograd.ops.counting import NOT_METHODS as _ct_functions
from nnkit.autograd.ops.counting import __all__ as _ct
from nnkit.autograd.ops.decomp_legacy import *  # noqa: F401,F403
from nnkit.autograd.ops.decomp_legacy import __all__ as _dl
from nnkit.autograd.ops.diagonals import *  # noqa: F401,F403
from nnkit.autograd.ops.diagonals import NOT_METHODS as _dg_functions
from nnkit.autograd.ops.diagonals import __all__ as _dg
from nnkit.autograd.ops.dim_index import *  # noqa: F401,F403
from nnkit.autograd.ops.dim_index import __all__ as _di
from nnkit.autograd.ops.discrete import *  # noqa: F401,F403
from nnkit.autograd.ops.discrete import __all__ as _dc
from nnkit.autograd.ops.distance import *  # noqa: F401,F403
from nnkit.autograd.ops.distance import NOT_METHODS as _ds_functions
from nnkit.autograd.ops.distance import __all__ as _ds
from nnkit.autograd.ops.elementwise import *  # noqa: F401,F403
from nnkit.autograd.ops.elementwise import __all__ as _ew
from nnkit.autograd.ops.grid_sample import *  # noqa: F401,F403
from nnkit.autograd.ops.grid_sample import NOT_METHODS as _gs_functions
from nnkit.autograd.ops.grid_sample import __all__ as _gs
from nnkit.autograd.ops.index_write import *  # noqa: F401,F403
from nnkit.autograd.ops.index_write import __all__ as _sc2
from nnkit.autograd.ops.indexing import *  # noqa: F401,F403
from nnkit.autograd.ops.indexing import __all__ as _ix
from nnkit.autograd.ops.inplace import *  # noqa: F401,F403
from nnkit.autograd.ops.inplace import __all__ as _ip
from nnkit.autograd.ops.inplace_math import *  # noqa: F401,F403
from nnkit.autograd.ops.inplace_math import __all__ as _im
from nnkit.autograd.ops.joining import *  # noqa: F401,F403
from nnkit.autograd.ops.joining import NOT_METHODS as _jn_functions
from nnkit.autograd.ops.joining import __all__ as _jn
from nnkit.autograd.ops.linalg import *  # noqa: F401,F403
from nnkit.autograd.ops.linalg import __all__ as _la
from nnkit.autograd.ops.linalg_more import *  # noqa: F401,F403
from nnkit.autograd.ops.linalg_more import __all__ as _lm
from nnkit.autograd.ops.lu import *  # noqa: F401,F403
from nnkit.autograd.ops.lu import NOT_METHODS as _lu_functions
from nnkit.autograd.ops.lu import __all__ as _lu
from nnkit.autograd.ops.masking import *  # noqa: F401,F403
from nnkit.autograd.ops.masking import __all__ as _mk
from nnkit.autograd.ops.methods import install_tensor_methods
from nnkit.autograd.ops.ordering import *  # noqa: F401,F403
from nnkit.autograd.ops.ordering import __all__ as _od
from nnkit.autograd.ops.pointwise import *  # noqa: F401,F403
from nnkit.autograd.ops.pointwise import NOT_METHODS as _pw_functions
from nnkit.autograd.ops.pointwise import __all__ as _pw
from nnkit.autograd.ops.random_ops import *  # noqa: F401,F403
from nnkit.autograd.ops.random_ops import NOT_METHODS as _ro_functions
from nnkit.autograd.ops.random_ops import __all__ as _ro
from nnkit.autograd.ops.reduction import *  # noqa: F401,F403
from nnkit.autograd.ops.reduction import __all__ as _rd
from nnkit.autograd.ops.scan import *  # noqa: F401,F403
from nnkit.autograd.ops.scan import __all__ as _sn
from nnkit.autograd.ops.selection import *  # noqa: F401,F403
from nnkit.autograd.ops.selection import __all__ as _sl
from nnkit.autograd.ops.shape import *  # noqa: F401,F403
from nnkit.autograd.ops.shape import __all__ as _sh
from nnkit.autograd.ops.shaping import *  # noqa: F401,F403
from nnkit.autograd.ops.shaping import NOT_METHODS as _sp_functions
from nnkit.autograd.ops.shaping import __all__ as _sp
from nnkit.autograd.ops.special import *  # noqa: F401,F403
from nnkit.autograd.ops.special import NOT_METHODS as _sc_functions
from nnkit.autograd.ops.special import __all__ as _sc
from nnkit.autograd.ops.special_extra import *  # noqa: F401,F403
from nnkit.autograd.ops.special_extra import NOT_METHODS as _sx_functions
from nnkit.autograd.ops.special_extra import __all__ as _sx
from nnkit.autograd.ops.statistics import *  # noqa: F401,F403
from nnkit.autograd.ops.statistics import NOT_METHODS as _st_functions
from nnkit.autograd.ops.statistics import __all__ as _st
from nnkit.autograd.ops.strided import *  # noqa: F401,F403
from nnkit.autograd.ops.strided import METHODS_ONLY as _sd_methods
from nnkit.autograd.ops.strided import NOT_METHODS as _sd_functions
from nnkit.autograd.ops.strided import __all__ as _sd
from nnkit.autograd.ops.tensor_alloc import *  # noqa: F401,F403
from nnkit.autograd.ops.tensor_alloc import METHODS_ONLY as _ta_methods
from nnkit.autograd.ops.tensor_alloc import NOT_METHODS as _ta_functions
from nnkit.autograd.ops.tensor_alloc import __all__ as _ta
from nnkit.autograd.ops.tensor_extra import *  # noqa: F401,F403
from nnkit.autograd.ops.tensor_extra import METHODS_ONLY as _tx_methods
from nnkit.autograd.ops.tensor_extra import NOT_METHODS as _tx_functions
from nnkit.autograd.ops.tensor_extra import __all__ as _tx
from nnkit.autograd.ops.windows import *  # noqa: F401,F403
from nnkit.autograd.ops.windows import NOT_METHODS as _wn_functions
from nnkit.autograd.ops.windows import __all__ as _wn

__all__ = sorted(
    set(_ar)
    | set(_ai)
    | set(_bm)
    | set(_dc)
    | set(_dg)
    | set(_di)
    | set(_ew)
    | set(_ix)
    | set(_ip)
    | set(_im)
    | set(_jn)
    | set(_la)
    | set(_mk)
    | set(_rd)
    | set(_sl)
    | set(_sh)
    | set(_od)
    | set(_sp)
    | set(_sc)
    | set(_sn)
    | set(_st)
    | set(_pw)
    | set(_ag)
    | set(_ds)
    | set(_lm)
    | set(_sc2)
    | set(_sx)
    | set(_wn)
    | set(_ct)
    | set(_ro)
    | set(_dl)
    | set(_sd)
    | set(_tx)
    | set(_ta)
    | set(_lu)
    | set(_gs)
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
        - _st_functions
        - _ai_functions
        - _ag_functions
        - _pw_functions
        - _ct_functions
        - _ds_functions
        - _dg_functions
        - _jn_functions
        - _sp_functions
        - _sc_functions
        - _sx_functions
        - _wn_functions
        - _ro_functions
        - _sd_functions
        - _tx_functions
        - _ta_functions
        - _lu_functions
        - _gs_functions
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

install_tensor_methods(
    {name: globals()[name] for name in TENSOR_METHODS} | _sd_methods | _ta_methods | _tx_methods
)
