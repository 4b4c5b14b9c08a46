"""More dropout layers: channel dropout (``Dropout1d``/``2d``/``3d``) and the
self-normalising ``AlphaDropout`` / ``FeatureAlphaDropout`` (for SELU networks).

Each takes ``p`` and ``inplace`` as :class:`~nnkit.layers.Dropout` and is the identity
in eval mode.
"""

from __future__ import annotations

from nnkit.autograd.ops import dropout_alpha as _da
from nnkit.autograd.ops import nn_misc as _nm
from nnkit.autograd.tensor import Tensor
from nnkit.layers.dropout import Dropout

__all__ = ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class Dropout1d(Dropout):
    """While training, zero whole channels of ``(N, C, L)`` / ``(C, L)`` inputs with
    probability ``p`` and scale the rest by ``1 / (1 - p)``
    (:func:`nnkit.nn.functional.dropout1d`).

    Example:
        >>> y = Dropout1d(0.5)(nnkit.ones(2, 3, 4))
        >>> bool(((y == 0).all(-1) | (y == 2).all(-1)).all())
        True
    """

    def forward(self, input: Tensor) -> Tensor:
        return _nm.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """While training, zero whole channels of ``(N, C, H, W)`` / ``(C, H, W)`` inputs
    with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (:func:`nnkit.nn.functional.dropout2d`).

    Example:
        >>> Dropout2d(0.5).eval()(nnkit.ones(1, 2, 2, 2)).shape
        (1, 2, 2, 2)
    """

    def forward(self, input: Tensor) -> Tensor:
        return _nm.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """While training, zero whole channels of ``(N, C, D, H, W)`` / ``(C, D, H, W)``
    inputs with probability ``p`` and scale the rest by ``1 / (1 - p)``
    (:func:`nnkit.nn.functional.dropout3d`).

    Example:
        >>> Dropout3d(p=0.2)
        Dropout3d(p=0.2, inplace=False)
    """

    def forward(self, input: Tensor) -> Tensor:
        return _da.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    """While training, alpha dropout (:func:`nnkit.nn.functional.alpha_dropout`): drop
    elements to SELU's saturation and rescale so that the mean and variance of a
    standardised input are kept.

    Example:
        >>> y = AlphaDropout(0.5)(nnkit.zeros(1000))
        >>> sorted(set(round(v, 4) for v in y.tolist()))
        [-0.7792, 0.7792]
    """

    def forward(self, input: Tensor) -> Tensor:
        return _da.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """While training, alpha dropout of whole channels of ``(N, C, *)`` inputs
    (:func:`nnkit.nn.functional.feature_alpha_dropout`).

    Example:
        >>> y = FeatureAlphaDropout(0.5)(nnkit.zeros(2, 3, 4))
        >>> bool((y == y[:, :, :1]).all())
        True
    """

    def forward(self, input: Tensor) -> Tensor:
        return _da.feature_alpha_dropout(input, self.p, self.training, self.inplace)
