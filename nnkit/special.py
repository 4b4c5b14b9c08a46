"""``nnkit.special``: special functions under ``torch.special``'s names.

The functions live with their Ops in ``nnkit/autograd/ops/`` (the normal distribution
and entropy helpers in ``special_more.py``); this module only re-exports them, with
torch's aliases (``expit`` for ``sigmoid``, ``gammaln`` for ``lgamma``, ``psi`` for
``digamma``).
"""

from __future__ import annotations

from nnkit.autograd.ops import (
    digamma,
    erf,
    erfc,
    erfinv,
    exp2,
    expm1,
    lgamma,
    log1p,
    logit,
    logsumexp,
    sigmoid,
    sinc,
    xlogy,
)
from nnkit.autograd.ops.special_more import entr, ndtr, ndtri, xlog1py

expit = sigmoid
gammaln = lgamma
psi = digamma

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammaln",
    "log1p",
    "logit",
    "logsumexp",
    "ndtr",
    "ndtri",
    "psi",
    "sinc",
    "xlog1py",
    "xlogy",
]
