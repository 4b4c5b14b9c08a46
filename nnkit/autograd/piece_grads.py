"""Gradients of pieces: what the backward of indexing, ``unbind``, ``split`` and
``narrow`` returns without ``create_graph``, and the engine's buffer summing them.

A :class:`PieceGrad` is zero but for ``values`` at ``idx``; the engine adds the pieces
reaching one tensor into one buffer (``_Accumulated``) in place rather than
materialising a zero-filled full-size gradient per piece (quadratic in their number).
"""

from __future__ import annotations

from nnkit.autograd.tensor import Tensor

__all__ = ["PieceGrad", "PARTIAL", "from_partial", "add_partial"]


class PieceGrad:
    """The gradient of a tensor one piece of which was used: zero but for ``values`` at
    ``idx`` (what the backward of indexing, ``unbind``, ``split`` and ``narrow``
    returns when the backward is not recorded). The engine adds the pieces of one
    tensor into one buffer, ``_Accumulated``, instead of materialising a zero-filled
    full-size gradient per piece (quadratic in the number of pieces)."""

    __slots__ = ("values", "shape", "idx")

    def __init__(self, values, shape, idx) -> None:
        self.values, self.shape, self.idx = values, shape, idx

    def accumulated(self):
        m = self.values._impl.data
        return _Accumulated(type(m).zeros(self.shape, m.dtype).index_add_(self.idx, m))

    def tensor(self):
        return self.accumulated().tensor()


class _Accumulated:
    """A gradient buffer only the engine holds (summed into in place)."""

    __slots__ = ("mat",)

    def __init__(self, mat) -> None:
        self.mat = mat

    def tensor(self):
        return Tensor._from_mat(self.mat)


PARTIAL = (PieceGrad, _Accumulated)


def from_partial(g, owned):
    """The Tensor for a PieceGrad or an ``_Accumulated`` buffer, which the engine owns."""
    if g.__class__ is PieceGrad:
        g = g.accumulated()
    if owned is not None:
        owned.add(g.mat)
    return g.tensor()


def add_partial(prev, g, owned):
    """``prev + g`` where either is a :class:`PieceGrad` or an ``_Accumulated`` buffer:
    pieces are added into the engine's buffer in place (no full-size temporary)."""
    if prev.__class__ is not _Accumulated:
        if g.__class__ is _Accumulated:
            prev, g = g, prev
        elif prev.__class__ is PieceGrad:
            prev = prev.accumulated()
        else:
            m = prev._impl.data if isinstance(prev, Tensor) else prev  # a Tensor or a Mat
            if owned is not None and m in owned and m.is_unaliased():
                owned.discard(m)  # the engine's already: used as the accumulator
            else:  # a Tensor someone may hold: copied once into a buffer of the engine's
                m = m.copy()
            prev = _Accumulated(m)
    if g.__class__ is PieceGrad:
        prev.mat.index_add_(g.idx, g.values._impl.data)
    else:
        m = g.mat if g.__class__ is _Accumulated else g._impl.data if isinstance(g, Tensor) else g
        prev.mat.iadd(m)
        if owned is not None:
            owned.discard(m)
    return prev
