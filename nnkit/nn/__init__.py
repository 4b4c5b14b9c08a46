"""``nnkit.nn``: the PyTorch-style alias namespace.

Everything in :mod:`nnkit.layers` (``nnkit.nn.Module is nnkit.layers.Module``), plus the
submodules ``functional`` (stateless ops), ``init`` (weight initialisation) and
``utils`` (gradient clipping).

Example:
    >>> import nnkit.nn as nn
    >>> import nnkit.nn.functional as F
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
"""

from nnkit.layers import *  # noqa: F401,F403
from nnkit.layers import __all__ as _layers_all
from nnkit.nn import functional, init, utils  # noqa: F401  (functional imports no layers)

__all__ = list(_layers_all) + ["functional", "init", "utils"]
