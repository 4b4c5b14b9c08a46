"""``nnkit.nn``: the PyTorch-style alias namespace.

Everything in :mod:`nnkit.layers` (``nnkit.nn.Module is nnkit.layers.Module``), plus the
submodules ``functional`` (stateless ops), ``init`` (weight initialisation) and
``utils`` (gradient clipping), and ``SyncBatchNorm`` (which lives in
:mod:`nnkit.distributed`, above the layers, and is loaded on first use).

Example:
    >>> import nnkit.nn as nn
    >>> import nnkit.nn.functional as F
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
"""

import importlib

from nnkit.layers import *  # noqa: F401,F403
from nnkit.layers import __all__ as _layers_all
from nnkit.nn import functional, init, utils  # noqa: F401  (functional imports no layers)

# Layers defined above nnkit.layers in the import graph, by the module that defines them.
_LAZY = {"SyncBatchNorm": "nnkit.distributed.sync_batchnorm"}

__all__ = list(_layers_all) + list(_LAZY) + ["functional", "init", "utils"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nnkit.nn' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
