"""In-place activations (``F.relu_``, ``F.elu(x, inplace=True)``, ``nn.ReLU(inplace=True)``,
...) against PyTorch: values, gradients, the version counter, the leaf and saved-tensor
errors, writes through views, layers' repr/config, and a few training steps."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
import nnkit.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# Kinks included: -3 / 3 (hardswish, hardsigmoid), 0, 6 (relu6), 1.5 and -1.5.
DATA = [-3.0, -1.5, -0.5, 0.0, 0.75, 1.5, 3.0, 6.0]

# name -> (nnkit in-place call, torch in-place call)
CASES = {
    "F.relu_": (F.relu_, TF.relu_),
    "F.relu(inplace)": (lambda x: F.relu(x, inplace=True), lambda x: TF.relu(x, inplace=True)),
    "nnkit.relu_": (nnkit.relu_, torch.relu_),
    "Tensor.relu_": (lambda x: x.relu_(), lambda x: x.relu_()),
    "F.leaky_relu_": (lambda x: F.leaky_relu_(x, 0.1), lambda x: TF.leaky_relu_(x, 0.1)),
    "F.leaky_relu(inplace)": (
        lambda x: F.leaky_relu(x, 0.2, inplace=True),
        lambda x: TF.leaky_relu(x, 0.2, inplace=True),
    ),
    "F.elu_": (F.elu_, TF.elu_),
    "F.elu(inplace)": (
        lambda x: F.elu(x, 0.5, inplace=True),
        lambda x: TF.elu(x, 0.5, inplace=True),
    ),
    "F.selu_": (F.selu_, TF.selu_),
    "nnkit.selu_": (nnkit.selu_, torch.selu_),
    "F.selu(inplace)": (lambda x: F.selu(x, inplace=True), lambda x: TF.selu(x, inplace=True)),
    "F.celu_": (lambda x: F.celu_(x, 2.0), lambda x: TF.celu_(x, 2.0)),
    "nnkit.celu_": (nnkit.celu_, torch.celu_),
    "F.celu(inplace)": (
        lambda x: F.celu(x, 0.5, inplace=True),
        lambda x: TF.celu(x, 0.5, inplace=True),
    ),
    "F.hardtanh_": (lambda x: F.hardtanh_(x, -0.5, 1.5), lambda x: TF.hardtanh_(x, -0.5, 1.5)),
    "F.hardtanh(inplace)": (
        lambda x: F.hardtanh(x, inplace=True),
        lambda x: TF.hardtanh(x, inplace=True),
    ),
    "F.relu6(inplace)": (lambda x: F.relu6(x, inplace=True), lambda x: TF.relu6(x, inplace=True)),
    "F.threshold_": (lambda x: F.threshold_(x, 0.0, 5.0), lambda x: TF.threshold_(x, 0.0, 5.0)),
    "nnkit.threshold_": (
        lambda x: nnkit.threshold_(x, 0.75, -2.0),
        lambda x: torch.threshold_(x, 0.75, -2.0),
    ),
    "F.threshold(inplace)": (
        lambda x: F.threshold(x, 1.5, 0.25, inplace=True),
        lambda x: TF.threshold(x, 1.5, 0.25, inplace=True),
    ),
    "F.rrelu_": (F.rrelu_, TF.rrelu_),
    "nnkit.rrelu_": (lambda x: nnkit.rrelu_(x, 0.1, 0.3), lambda x: torch.rrelu_(x, 0.1, 0.3)),
    "F.rrelu(inplace)": (
        lambda x: F.rrelu(x, 0.2, 0.4, inplace=True),
        lambda x: TF.rrelu(x, 0.2, 0.4, inplace=True),
    ),
    "F.silu(inplace)": (lambda x: F.silu(x, inplace=True), lambda x: TF.silu(x, inplace=True)),
    "F.mish(inplace)": (lambda x: F.mish(x, inplace=True), lambda x: TF.mish(x, inplace=True)),
    "F.hardswish(inplace)": (
        lambda x: F.hardswish(x, inplace=True),
        lambda x: TF.hardswish(x, inplace=True),
    ),
    "F.hardsigmoid(inplace)": (
        lambda x: F.hardsigmoid(x, inplace=True),
        lambda x: TF.hardsigmoid(x, inplace=True),
    ),
}
NAMES = sorted(CASES)
WEIGHTS = [0.5, -1.0, 2.0, 1.0, -0.25, 3.0, 1.5, -2.0]


def _np(t):
    return t.detach().cpu().numpy()


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_values_identity_and_version(name, device):
    fn, tfn = CASES[name]
    x = nnkit.tensor(DATA, device=device)
    v0 = x._version
    y = fn(x)
    assert y is x
    assert x._version > v0
    _close(_np(x), tfn(torch.tensor(DATA)).numpy())


@pytest.mark.parametrize("name", NAMES)
def test_gradient_matches_torch(name, device):
    fn, tfn = CASES[name]
    a = nnkit.tensor(DATA, device=device, requires_grad=True)
    x = a * 1.0
    y = fn(x)
    assert y is x and y.requires_grad
    (y * nnkit.tensor(WEIGHTS, device=device)).sum().backward()
    ta = torch.tensor(DATA, requires_grad=True)
    ty = tfn(ta * 1.0)
    (ty * torch.tensor(WEIGHTS)).sum().backward()
    _close(_np(y), ty.detach().numpy())
    _close(_np(a.grad), ta.grad.numpy())


@pytest.mark.parametrize("name", NAMES)
def test_leaf_requiring_grad_is_refused_as_in_torch(name, device):
    fn, tfn = CASES[name]
    with pytest.raises(RuntimeError, match="leaf"):
        tfn(torch.tensor(DATA, requires_grad=True))
    x = nnkit.tensor(DATA, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        fn(x)
    with nnkit.no_grad():  # allowed outside the graph, as in torch
        assert fn(x) is x
    _close(_np(x), tfn(torch.tensor(DATA)).numpy())


@pytest.mark.parametrize("name", NAMES)
def test_input_saved_for_backward_then_overwritten_is_caught(name, device):
    fn, tfn = CASES[name]
    ta = torch.tensor(DATA, requires_grad=True)
    tx = ta * 1.0
    tsq = tx * tx  # saves tx
    tfn(tx)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tsq.sum().backward()
    a = nnkit.tensor(DATA, device=device, requires_grad=True)
    x = a * 1.0
    sq = x * x
    fn(x)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        sq.sum().backward()


@pytest.mark.parametrize("name", NAMES)
def test_writing_the_result_again_raises_where_torch_does(name, device):
    # The ReLU/ELU family and hardtanh save their result (torch likewise): a second
    # in-place write invalidates it. The others saved what they need elsewhere.
    fn, tfn = CASES[name]
    ta = torch.tensor(DATA, requires_grad=True)
    ty = tfn(ta * 1.0).mul_(2.0)
    try:
        ty.sum().backward()
        torch_raised = False
    except RuntimeError:
        torch_raised = True
    a = nnkit.tensor(DATA, device=device, requires_grad=True)
    y = fn(a * 1.0).mul_(2.0)
    if torch_raised:
        with pytest.raises(RuntimeError, match="modified by an in-place operation"):
            y.sum().backward()
    else:
        y.sum().backward()
        _close(_np(a.grad), ta.grad.numpy())


@pytest.mark.parametrize("name", NAMES)
def test_in_place_on_a_view_writes_into_the_base(name, device):
    fn, tfn = CASES[name]
    data = np.array(DATA + [d / 2 for d in DATA], dtype=np.float32).reshape(2, 8)
    w = np.arange(16, dtype=np.float32).reshape(2, 8) - 7.0
    a = nnkit.tensor(data, device=device, requires_grad=True)
    base = a * 1.0
    v = base[:, 1:6]
    assert fn(v) is v
    (base * nnkit.tensor(w, device=device)).sum().backward()
    ta = torch.tensor(data, requires_grad=True)
    tbase = ta * 1.0
    tfn(tbase[:, 1:6])
    (tbase * torch.tensor(w)).sum().backward()
    _close(_np(base), tbase.detach().numpy())
    _close(_np(a.grad), ta.grad.numpy())


def test_result_is_saved_without_a_copy_of_the_input():
    a = nnkit.tensor(DATA, requires_grad=True)
    x = a * 1.0
    F.relu_(x)
    (saved,) = x.grad_fn._saved
    assert saved.mat is x._impl.data  # the input's own memory, no separate buffer
    x.sum().backward()
    _close(_np(a.grad), (np.array(DATA) > 0).astype(np.float32))


@pytest.mark.parametrize(
    ("fn", "tfn"),
    [
        (lambda x: F.leaky_relu_(x, -0.1), lambda x: TF.leaky_relu_(x, -0.1)),
        (lambda x: F.elu_(x, -1.0), lambda x: TF.elu_(x, -1.0)),
        (lambda x: F.celu_(x, -1.0), lambda x: TF.celu_(x, -1.0)),
    ],
)
def test_negative_slope_backward_refused_as_in_torch(fn, tfn):
    tx = torch.tensor(DATA, requires_grad=True) * 1.0
    ty = tfn(tx)
    with pytest.raises(RuntimeError, match="negative slope"):
        ty.sum().backward()
    x = nnkit.tensor(DATA, requires_grad=True) * 1.0
    y = fn(x)
    _close(_np(y), ty.detach().numpy())
    with pytest.raises(RuntimeError, match="negative slope"):
        y.sum().backward()


@pytest.mark.parametrize(
    ("fn", "tfn"),
    [
        (F.relu_, TF.relu_),
        (lambda x: F.hardtanh_(x, -2.0, 1.0), lambda x: TF.hardtanh_(x, -2.0, 1.0)),
        (lambda x: F.threshold_(x, 0, 7), lambda x: TF.threshold_(x, 0, 7)),
    ],
)
def test_integer_tensors_as_in_torch(fn, tfn, device):
    data = [-3, -1, 0, 2, 5]
    x = nnkit.tensor(data, device=device)
    assert fn(x) is x
    assert x.dtype == nnkit.int64
    assert x.tolist() == tfn(torch.tensor(data)).tolist()


@pytest.mark.parametrize(
    "fn",
    [F.leaky_relu_, F.elu_, F.selu_, F.celu_, F.rrelu_, lambda x: F.silu(x, inplace=True)],
)
def test_integer_tensors_refused_where_torch_refuses(fn):
    with pytest.raises((NotImplementedError, RuntimeError)):
        fn(nnkit.tensor([-1, 2]))


def test_rrelu_training_draws_slopes_and_backpropagates_them(device):
    nnkit.manual_seed(0)
    data = np.array([-2.0, -1.0, -0.5, 0.0, 1.0, 3.0] * 50, dtype=np.float32)
    a = nnkit.tensor(data, device=device, requires_grad=True)
    x = a * 1.0
    assert F.rrelu_(x, 0.1, 0.3, training=True) is x
    x.sum().backward()
    y, g = _np(x), _np(a.grad)
    pos = data > 0
    _close(y[pos], data[pos])
    np.testing.assert_array_equal(g[pos], 1.0)
    neg = data < 0
    slopes = y[neg] / data[neg]
    assert slopes.min() >= 0.1 - 1e-6 and slopes.max() <= 0.3 + 1e-6
    assert slopes.std() > 0.03  # random, not the evaluation slope
    _close(g[neg], slopes)  # the gradient is the slope drawn
    assert np.all((g[data == 0] >= 0.1) & (g[data == 0] <= 0.3))  # torch draws at 0 too


LAYERS = {
    "ReLU": ({}, {}),
    "LeakyReLU": ({"negative_slope": 0.1}, {}),
    "ELU": ({"alpha": 0.5}, {}),
    "SELU": ({}, {}),
    "CELU": ({"alpha": 2.0}, {}),
    "Hardtanh": ({"min_val": -0.5, "max_val": 0.5}, {}),
    "ReLU6": ({}, {}),
    "SiLU": ({}, {}),
    "Mish": ({}, {}),
    "Hardswish": ({}, {}),
    "Hardsigmoid": ({}, {}),
    "Threshold": ({"threshold": 0.1, "value": -1.0}, {}),
    "RReLU": ({"lower": 0.1, "upper": 0.3}, {}),
}


@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("inplace", [False, True])
def test_layer_repr_and_config(layer, inplace):
    kwargs = LAYERS[layer][0]
    mine = getattr(nn, layer)(**kwargs, inplace=inplace)
    theirs = getattr(torch.nn, layer)(**kwargs, inplace=inplace)
    assert repr(mine) == repr(theirs)
    config = mine.get_config()
    assert config["inplace"] is inplace
    assert repr(type(mine).from_config(config)) == repr(theirs)


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_sequential_with_inplace_layer_trains_as_torch(layer, device):
    kwargs = LAYERS[layer][0]
    nnkit.manual_seed(0)
    mine = nn.Sequential(
        nn.Linear(4, 8), getattr(nn, layer)(**kwargs, inplace=True), nn.Linear(8, 2)
    ).to(device)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 8),
        getattr(torch.nn, layer)(**kwargs, inplace=True),
        torch.nn.Linear(8, 2),
    )
    with torch.no_grad():
        for (_, p), (_, tp) in zip(mine.named_parameters(), theirs.named_parameters()):
            tp.copy_(torch.from_numpy(_np(p)))
    if layer == "RReLU":  # random slopes while training: compare in evaluation mode
        mine.eval(), theirs.eval()
    opt = nnkit.optim.SGD(mine.parameters(), lr=0.1)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for _ in range(3):
        xb = (rng.standard_normal((16, 4)) * 2).astype(np.float32)
        yb = rng.standard_normal((16, 2)).astype(np.float32)
        loss = F.mse_loss(mine(nnkit.tensor(xb, device=device)), nnkit.tensor(yb, device=device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        tloss = TF.mse_loss(theirs(torch.from_numpy(xb)), torch.from_numpy(yb))
        topt.zero_grad()
        tloss.backward()
        topt.step()
        _close(loss.item(), tloss.item())
    for (_, p), (_, tp) in zip(mine.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(_np(p), tp.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_layer_overwrites_its_input():
    x = nnkit.tensor([-1.0, 2.0])
    assert nn.ReLU(inplace=True)(x) is x and x.tolist() == [0.0, 2.0]
    x = nnkit.tensor([-1.0, 2.0])
    assert nn.ReLU()(x) is not x and x.tolist() == [-1.0, 2.0]


def test_onnx_export_computes_in_place_layers_out_of_place(tmp_path):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    pytest.importorskip("onnx", reason="the onnx package is not installed")
    nnkit.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 8), nn.SiLU(inplace=True)
    )
    x = nnkit.randn(3, 4) * 3
    nnkit.onnx.export(model, x, tmp_path / "m.onnx")
    model.eval()
    with nnkit.no_grad():
        expected = _np(model(x))
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: _np(x)})[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", ["F.elu_", "F.selu_", "F.celu_", "F.leaky_relu_"])
def test_double_backward_through_the_saved_result(name):
    fn, tfn = CASES[name]
    a = nnkit.tensor(DATA, requires_grad=True)
    (g,) = nnkit.autograd.grad(fn(a * a).sum(), a, create_graph=True)
    g.sum().backward()
    ta = torch.tensor(DATA, requires_grad=True)
    (tg,) = torch.autograd.grad(tfn(ta * ta).sum(), ta, create_graph=True)
    tg.sum().backward()
    _close(_np(g), tg.detach().numpy())
    _close(_np(a.grad), ta.grad.numpy())
