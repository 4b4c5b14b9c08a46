"""``nnkit.nn``: the PyTorch-style alias namespace.

Everything in :mod:`nnkit.layers` (``nnkit.nn.Module is nnkit.layers.Module``), plus
``Sequential``, ``Model`` and ``Functional`` (from :mod:`nnkit.models`),
``SyncBatchNorm`` (from :mod:`nnkit.distributed`) and the submodules ``functional``
(stateless ops), ``init`` (weight initialisation) and ``utils`` (gradient clipping).
Like ``nnkit/__init__``, this package sits above every other one and only re-exports.

Example:
    >>> import nnkit.nn as nn
    >>> import nnkit.nn.functional as F
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
"""

from nnkit.distributed.sync_batchnorm import SyncBatchNorm
from nnkit.layers import *  # noqa: F401,F403
from nnkit.layers import __all__ as _layers_all
from nnkit.models import Functional, Model, Sequential
from nnkit.nn import functional, init, utils

__all__ = [
    *_layers_all,
    "Model",
    "Sequential",
    "Functional",
    "SyncBatchNorm",
    "functional",
    "init",
    "utils",
]
