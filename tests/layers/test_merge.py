"""Keras's merge layers (``Concatenate``, ``Add``, ``Subtract``, ``Multiply``,
``Average``, ``Maximum``, ``Minimum``, ``Dot``) and their functions, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit import nn

RNG = np.random.default_rng(0)


def arrays(*shapes):
    return [RNG.normal(size=s).astype(np.float64) for s in shapes]


def run(layer, xs):
    return layer([nnkit.tensor(x) for x in xs]).detach().numpy()


@pytest.mark.parametrize(
    "layer, fn, reference",
    [
        (nn.Add, nn.add, lambda xs: xs[0] + xs[1] + xs[2]),
        (nn.Multiply, nn.multiply, lambda xs: xs[0] * xs[1] * xs[2]),
        (nn.Average, nn.average, lambda xs: (xs[0] + xs[1] + xs[2]) / 3),
        (nn.Maximum, nn.maximum, lambda xs: np.maximum(np.maximum(xs[0], xs[1]), xs[2])),
        (nn.Minimum, nn.minimum, lambda xs: np.minimum(np.minimum(xs[0], xs[1]), xs[2])),
    ],
)
def test_elementwise_merges_match_numpy(layer, fn, reference):
    xs = arrays((4, 3, 5), (4, 3, 5), (4, 3, 5))
    np.testing.assert_allclose(run(layer(), xs), reference(xs), rtol=1e-12)
    np.testing.assert_allclose(fn([nnkit.tensor(x) for x in xs]).numpy(), reference(xs), rtol=1e-12)
    a, b = nnkit.Input((3, 5)), nnkit.Input((3, 5))
    assert fn([a, b, a]).shape == (None, 3, 5)


def test_subtract_takes_exactly_two_inputs():
    x, y = arrays((4, 3), (4, 3))
    np.testing.assert_allclose(run(nn.Subtract(), [x, y]), x - y)
    np.testing.assert_allclose(nn.subtract([nnkit.tensor(x), nnkit.tensor(y)]).numpy(), x - y)
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        run(nn.Subtract(), [x, y, x])
    with pytest.raises(ValueError, match="at least 2 inputs"):
        run(nn.Subtract(), [x])


def test_elementwise_merges_broadcast_and_expand_lower_ranks_at_axis_1():
    x, y = arrays((4, 3, 5), (4, 5))
    np.testing.assert_allclose(run(nn.Add(), [x, y]), x + y[:, None, :])  # Keras's rule
    x, y = arrays((4, 3), (4, 1))
    np.testing.assert_allclose(run(nn.Multiply(), [x, y]), x * y)


def test_concatenate_matches_numpy_on_any_axis():
    x, y = arrays((2, 3, 4), (2, 3, 6))
    np.testing.assert_array_equal(run(nn.Concatenate(), [x, y]), np.concatenate([x, y], -1))
    x, y = arrays((2, 3, 4), (2, 5, 4))
    np.testing.assert_array_equal(run(nn.Concatenate(axis=1), [x, y]), np.concatenate([x, y], 1))
    np.testing.assert_array_equal(
        nn.concatenate([nnkit.tensor(x), nnkit.tensor(y)], axis=1).numpy(),
        np.concatenate([x, y], 1),
    )
    with pytest.raises(ValueError, match="matching shapes except for the concatenation axis"):
        run(nn.Concatenate(), [x, y])
    a, b = nnkit.Input((3, 4)), nnkit.Input((5, 4))
    assert nn.concatenate([a, b], axis=1).shape == (None, 8, 4)


@pytest.mark.parametrize(
    "shapes, axes, subscripts",
    [
        (((5, 3), (5, 3)), 1, "bi,bi->b"),
        (((5, 3), (5, 3)), -1, "bi,bi->b"),
        (((2, 4, 3), (2, 6, 3)), 2, "bxk,byk->bxy"),
        (((2, 5, 2), (2, 2, 5)), (1, 2), "bkx,byk->bxy"),
        (((2, 3), (2, 4, 3)), (1, 2), "bk,byk->by"),
        (((2, 3, 4, 5), (2, 6, 5)), (3, 2), "bxyk,bzk->bxyz"),
    ],
)
def test_dot_is_keras_batch_dot(shapes, axes, subscripts):
    x, y = arrays(*shapes)
    want = np.einsum(subscripts, x, y)
    if want.ndim == 1:
        want = want[:, None]  # Keras keeps at least 2 dimensions
    got = run(nn.Dot(axes=axes), [x, y])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
    sym = nn.dot([nnkit.Input(shapes[0][1:]), nnkit.Input(shapes[1][1:])], axes=axes)
    assert sym.shape == (None,) + want.shape[1:]


def test_dot_normalize_gives_the_cosine_similarity():
    x, y = arrays((6, 4), (6, 4))
    cos = (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    np.testing.assert_allclose(run(nn.Dot(axes=1, normalize=True), [x, y])[:, 0], cos, rtol=1e-12)
    zeros = np.zeros((1, 4))
    assert np.isfinite(run(nn.Dot(axes=1, normalize=True), [zeros, zeros])).all()


def test_dot_arguments_are_checked():
    with pytest.raises(TypeError, match="axes"):
        nn.Dot(axes="1")
    with pytest.raises(ValueError, match="two elements"):
        nn.Dot(axes=(1, 2, 3))
    with pytest.raises(ValueError, match="axis 0"):
        run(nn.Dot(axes=0), arrays((2, 3), (2, 3)))
    with pytest.raises(ValueError, match=r"x.shape\[1\] != y.shape\[1\]"):
        run(nn.Dot(axes=1), arrays((2, 3), (2, 4)))


def test_merges_take_a_list_and_one_batch_size():
    x, y = arrays((2, 3), (3, 3))
    with pytest.raises(ValueError, match="different batch sizes"):
        run(nn.Add(), [x, y])
    with pytest.raises(ValueError, match="list of inputs"):
        nn.Add()(nnkit.tensor(x))


def test_gradients_flow_through_every_merge():
    torch = pytest.importorskip("torch")
    x, y = arrays((3, 4), (3, 4))
    cases = [
        (nn.Add(), lambda a, b: a + b),
        (nn.Subtract(), lambda a, b: a - b),
        (nn.Multiply(), lambda a, b: a * b),
        (nn.Average(), lambda a, b: (a + b) / 2),
        (nn.Maximum(), torch.maximum),
        (nn.Minimum(), torch.minimum),
        (nn.Concatenate(), lambda a, b: torch.cat([a, b], -1)),
        (
            nn.Dot(axes=1, normalize=True),
            lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-7)[:, None],
        ),
    ]
    for layer, reference in cases:
        a, b = nnkit.tensor(x, requires_grad=True), nnkit.tensor(y, requires_grad=True)
        (layer([a, b]) ** 2).sum().backward()
        ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
        (reference(ta, tb) ** 2).sum().backward()
        np.testing.assert_allclose(
            a.grad.numpy(), ta.grad.numpy(), rtol=1e-7, atol=1e-12, err_msg=type(layer).__name__
        )
        np.testing.assert_allclose(
            b.grad.numpy(), tb.grad.numpy(), rtol=1e-7, atol=1e-12, err_msg=type(layer).__name__
        )


def test_merge_layers_are_exported_and_named_as_keras():
    for name in (
        "Concatenate",
        "Add",
        "Subtract",
        "Multiply",
        "Average",
        "Maximum",
        "Minimum",
        "Dot",
        "concatenate",
        "add",
        "subtract",
        "multiply",
        "average",
        "maximum",
        "minimum",
        "dot",
    ):
        assert getattr(nnkit.layers, name) is getattr(nnkit.nn, name)
    assert nn.Concatenate(name="joined").name == "joined"
    assert nn.Dot(axes=1).name.startswith("dot")
