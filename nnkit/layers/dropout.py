"""``Dropout``: zeroes activations at random while training."""

from __future__ import annotations

from nnkit.autograd.tensor import Tensor
from nnkit.layers import _functional as F
from nnkit.layers.module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """While training, zero each element with probability ``p`` and scale the rest by
    1/(1−p); in eval mode, the identity.

    Args:
        p: the probability of zeroing an element, in [0, 1].
        inplace: while training, write the result into the input and return it (as
            PyTorch; see :func:`nnkit.nn.functional.dropout`).

    Raises:
        ValueError: if ``p`` is outside [0, 1].

    Example:
        >>> drop = Dropout(0.5)
        >>> x = nnkit.ones(8)
        >>> drop(x).tolist()       # training: zeros, and the rest scaled by 1/(1-p) = 2
        [0.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0]
        >>> drop.eval()(x) is x   # the identity in eval mode
        True
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1. Received: p={p!r}")
        self.p = float(p)
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return input
        return F.dropout(input, self.p, True, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
