"""``nnkit.special``: special functions under ``torch.special``'s names.

The functions live with their Ops in ``nnkit/autograd/ops/`` (the normal distribution
and entropy helpers in ``special_more.py``; ``i0``/``i1``, ``erfcx``, ``log_ndtr``,
``zeta``, ``polygamma`` and the incomplete gamma functions in ``special_extra.py``; the
Bessel ``J``/``Y``/``K`` functions, ``airy_ai`` and the orthogonal polynomials, without
gradients as in torch, in ``special_bessel.py``); this module only re-exports them, with
torch's aliases (``expit`` for ``sigmoid``, ``gammaln`` for ``lgamma``, ``psi`` for
``digamma``, ``gammainc``/``gammaincc`` for ``igamma``/``igammac``, ``multigammaln`` for
``mvlgamma``).
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
from nnkit.autograd.ops.out_variants import install as _install_out_variants
from nnkit.autograd.ops.special_bessel import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
    spherical_bessel_j0,
)
from nnkit.autograd.ops.special_extra import (
    erfcx,
    i0,
    i0e,
    i1,
    i1e,
    igamma,
    igammac,
    log_ndtr,
    mvlgamma,
    polygamma,
    zeta,
)
from nnkit.autograd.ops.special_more import entr, ndtr, ndtri, xlog1py

expit = sigmoid
gammaln = lgamma
psi = digamma
gammainc = igamma
gammaincc = igammac
multigammaln = mvlgamma

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "spherical_bessel_j0",
    "erfcx",
    "gammainc",
    "gammaincc",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log_ndtr",
    "multigammaln",
    "polygamma",
    "zeta",
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

_install_out_variants(globals(), "special")  # out= where PyTorch has it
