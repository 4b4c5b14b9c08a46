"""``nnkit.nn.init`` and ``nnkit.nn.utils``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
from nnkit.nn import init


def test_calculate_gain_table():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swoosh")


def test_fans_follow_torch():
    assert init._calculate_fan_in_and_fan_out(nnkit.empty(8, 3, 5, 5)) == (75, 200)
    assert init._calculate_fan_in_and_fan_out(nnkit.empty(10, 4)) == (4, 10)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(nnkit.empty(5))


def test_distributions_have_the_documented_spread(device):
    w = nnkit.empty(400, 300, device=device)
    bound = math.sqrt(6 / 700)
    a = init.xavier_uniform_(w).cpu().numpy()
    assert a.max() <= bound and a.min() >= -bound
    assert a.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    a = init.xavier_normal_(w).cpu().numpy()
    assert a.std() == pytest.approx(math.sqrt(2 / 700), rel=0.02)
    a = init.kaiming_normal_(w, nonlinearity="relu").cpu().numpy()
    assert a.std() == pytest.approx(math.sqrt(2 / 300), rel=0.02)
    a = init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu").cpu().numpy()
    assert np.abs(a).max() <= math.sqrt(6 / 400)
    a = init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5).cpu().numpy()
    assert a.min() >= -0.5 and a.max() <= 0.5
    assert (init.constant_(w, 0.3).cpu().numpy() == np.float32(0.3)).all()
    assert (init.ones_(w).cpu().numpy() == 1).all() and (init.zeros_(w).cpu().numpy() == 0).all()
    a = init.normal_(w, 2.0, 0.5).cpu().numpy()
    assert a.mean() == pytest.approx(2.0, abs=0.01)
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(w, mode="fan_avg")


def test_init_runs_in_place_on_parameters_without_recording():
    lin = nn.Linear(4, 3)
    weight = lin.weight
    out = init.xavier_uniform_(lin.weight)
    assert out is weight and weight.is_leaf and weight.grad_fn is None


def test_init_is_reproducible_under_manual_seed():
    nnkit.manual_seed(5)
    a = nn.Linear(6, 6).weight.detach().numpy().copy()
    nnkit.manual_seed(5)
    np.testing.assert_array_equal(nn.Linear(6, 6).weight.detach().numpy(), a)


def test_linear_default_init_bounds():
    lin = nn.Linear(25, 50)
    assert np.abs(lin.weight.detach().numpy()).max() <= 1 / 5
    assert np.abs(lin.bias.detach().numpy()).max() <= 1 / 5


def _with_grads(device, values):
    params = []
    for v in values:
        p = nn.Parameter(nnkit.zeros(len(v), device=device))
        p.grad = nnkit.tensor(v, device=device)
        params.append(p)
    return params


def test_clip_grad_norm_scales_to_max_norm(device):
    params = _with_grads(device, [[3.0, 0.0], [0.0, 4.0]])
    total = nn.utils.clip_grad_norm_(params, max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(params[0].grad.cpu().numpy(), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(params[1].grad.cpu().numpy(), [0.0, 0.8], rtol=1e-5)
    params = _with_grads(device, [[0.1, 0.2]])
    nn.utils.clip_grad_norm_(params, max_norm=1.0)
    np.testing.assert_allclose(params[0].grad.cpu().numpy(), [0.1, 0.2], rtol=1e-6)
    params = _with_grads(device, [[-3.0, 1.0], [2.0]])
    assert nn.utils.clip_grad_norm_(params, 1.5, norm_type=math.inf).item() == 3.0
    np.testing.assert_allclose(params[0].grad.cpu().numpy(), [-1.5, 0.5], rtol=1e-5)
    assert nn.utils.clip_grad_norm_([nn.Parameter(nnkit.zeros(2))], 1.0).item() == 0.0


def test_clip_grad_norm_matches_torch_for_p_norms():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s) for s in [(3, 4), (5,)]]
    for p in (1.0, 2.0, 3.0):
        params = _with_grads("cpu", [g.ravel().astype(np.float32) for g in grads])
        tparams = [torch.zeros(g.size, requires_grad=True) for g in grads]
        for tp, g in zip(tparams, grads):
            tp.grad = torch.tensor(g.ravel(), dtype=torch.float32)
        total = nn.utils.clip_grad_norm_(params, 0.5, norm_type=p)
        ttotal = torch.nn.utils.clip_grad_norm_(tparams, 0.5, norm_type=p)
        assert total.item() == pytest.approx(ttotal.item(), rel=1e-5)
        for a, b in zip(params, tparams):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5)


def test_clip_grad_norm_nonfinite_and_clip_value():
    params = _with_grads("cpu", [[float("inf"), 1.0]])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    params = _with_grads("cpu", [[-3.0, 0.5, 2.0]])
    nn.utils.clip_grad_value_(params, 1.0)
    np.testing.assert_array_equal(params[0].grad.numpy(), [-1.0, 0.5, 1.0])


def test_parameters_vector_round_trip():
    lin = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(lin.parameters())
    assert vec.shape == (8,)
    nn.utils.vector_to_parameters(vec.detach() * 0 + 1, lin.parameters())
    assert (lin.weight == 1).all().item() and (lin.bias == 1).all().item()


def test_nn_namespace_aliases_layers():
    import nnkit.layers as layers
    import nnkit.models as models

    assert nn.Module is layers.Module and nnkit.Module is layers.Module
    assert nnkit.Parameter is layers.Parameter and nnkit.Model is models.Model
    assert nnkit.Sequential is nn.Sequential is models.Sequential
    assert nn.Model is models.Model and nn.Functional is models.Functional
    assert "Sequential" not in layers.__all__ and not hasattr(layers, "Model")
    assert set(layers.__all__) <= set(nn.__all__)
    assert {"functional", "init", "utils"} <= set(nn.__all__)
    assert callable(nn.functional.conv2d)


@pytest.mark.parametrize("size", [2, 4, 5])
def test_vector_to_parameters_refuses_a_wrong_length_before_writing(size):
    lin = nn.Linear(2, 1)
    before = [p.detach().clone() for p in lin.parameters()]
    with pytest.raises(ValueError, match="vector_to_parameters: vec must be a 1-d tensor of 3"):
        nn.utils.vector_to_parameters(nnkit.ones(size), lin.parameters())
    for p, old in zip(lin.parameters(), before):
        assert (p == old).all()
