"""``broadcast_shapes`` against ``torch.broadcast_shapes``, including int (1-d) shapes."""

from __future__ import annotations

import pytest

import nnkit

torch = pytest.importorskip("torch")

CASES = [
    ((2, 1), (3,)),
    ((5, 1, 4), (3, 1), (4,)),
    (2, (3, 1)),
    (3, 3),
    ((0, 1), (4,)),
    ((),),
    (),
]


@pytest.mark.parametrize("shapes", CASES, ids=str)
def test_matches_torch(shapes):
    assert nnkit.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))


@pytest.mark.parametrize("shapes", [((2,), (3,)), (2, 3), ((2, 3), (3, 3, 3))], ids=str)
def test_incompatible_shapes_raise(shapes):
    with pytest.raises(RuntimeError):
        torch.broadcast_shapes(*shapes)
    with pytest.raises(nnkit.ShapeError, match="not broadcastable"):
        nnkit.broadcast_shapes(*shapes)
