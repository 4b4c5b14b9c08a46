"""A layer harness in the spirit of Keras's ``run_layer_test``, run over every layer.

For each case: the output shape, the parameter count, a ``state_dict`` round trip into
a fresh instance giving identical outputs, and one hand-written SGD step that lowers
a loss.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn


@dataclass
class LayerCase:
    cls: type
    kwargs: dict
    input_shape: tuple
    output_shape: tuple
    params: int
    args: tuple = ()
    integer_input: int = 0  # > 0: indices in [0, integer_input)
    call: Callable[[Any, Any], Any] = field(default=lambda layer, x: layer(x))

    @property
    def id(self):
        parts = [str(a) for a in self.args] + [f"{k}={v}" for k, v in self.kwargs.items()]
        return f"{self.cls.__name__}({','.join(parts)})"


def _first(layer, x):
    return layer(x)[0]


def _attend(layer, x):
    return layer(x, x, x)[0]


CASES = [
    LayerCase(nn.Linear, {}, (2, 4), (2, 3), 15, args=(4, 3)),
    LayerCase(nn.Linear, {"bias": False}, (2, 5, 4), (2, 5, 3), 12, args=(4, 3)),
    LayerCase(nn.Dense, {"activation": "relu"}, (2, 4), (2, 3), 15, args=(3,)),
    LayerCase(nn.Dense, {"activation": "tanh", "in_features": 4}, (2, 4), (2, 3), 15, args=(3,)),
    LayerCase(
        nn.Dense, {"activation": "softmax", "use_bias": False}, (2, 4), (2, 6), 24, args=(6,)
    ),
    LayerCase(nn.Identity, {}, (2, 3), (2, 3), 0),
    LayerCase(nn.Flatten, {}, (2, 3, 4), (2, 12), 0),
    LayerCase(nn.Conv1d, {"padding": 1}, (2, 2, 7), (2, 4, 7), 28, args=(2, 4, 3)),
    LayerCase(nn.Conv2d, {}, (2, 2, 6, 6), (2, 4, 4, 4), 76, args=(2, 4, 3)),
    LayerCase(
        nn.Conv2d,
        {"stride": 2, "padding": 1, "groups": 2, "bias": False},
        (2, 2, 6, 6),
        (2, 4, 3, 3),
        36,
        args=(2, 4, 3),
    ),
    LayerCase(
        nn.Conv2d,
        {"padding": "same", "padding_mode": "reflect"},
        (2, 2, 5, 5),
        (2, 4, 5, 5),
        76,
        args=(2, 4, 3),
    ),
    LayerCase(nn.MaxPool2d, {}, (2, 3, 6, 6), (2, 3, 3, 3), 0, args=(2,)),
    LayerCase(nn.AvgPool2d, {"stride": 2, "padding": 1}, (2, 3, 6, 6), (2, 3, 3, 3), 0, args=(3,)),
    LayerCase(nn.AdaptiveAvgPool2d, {}, (2, 3, 7, 7), (2, 3, 2, 3), 0, args=((2, 3),)),
    LayerCase(nn.Dropout, {"p": 0.3}, (4, 5), (4, 5), 0),
    LayerCase(nn.BatchNorm1d, {}, (4, 3), (4, 3), 6, args=(3,)),
    LayerCase(nn.BatchNorm1d, {"momentum": None}, (4, 3, 5), (4, 3, 5), 6, args=(3,)),
    LayerCase(nn.BatchNorm2d, {}, (4, 3, 2, 2), (4, 3, 2, 2), 6, args=(3,)),
    # without a group of ranks (see tests/distributed/test_sync_batchnorm.py): BatchNorm
    LayerCase(nn.SyncBatchNorm, {}, (4, 3, 2, 2), (4, 3, 2, 2), 6, args=(3,)),
    LayerCase(nn.SyncBatchNorm, {"momentum": None}, (4, 3), (4, 3), 6, args=(3,)),
    LayerCase(nn.LayerNorm, {}, (2, 3, 5), (2, 3, 5), 10, args=(5,)),
    LayerCase(nn.LayerNorm, {"elementwise_affine": False}, (2, 3, 5), (2, 3, 5), 0, args=((3, 5),)),
    LayerCase(
        nn.Embedding, {"padding_idx": 0}, (2, 5), (2, 5, 4), 40, args=(10, 4), integer_input=10
    ),
    LayerCase(
        nn.RNN,
        {"num_layers": 2, "batch_first": True},
        (2, 3, 4),
        (2, 3, 5),
        115,
        args=(4, 5),
        call=_first,
    ),
    LayerCase(nn.RNN, {"nonlinearity": "relu"}, (3, 4), (3, 5), 55, args=(4, 5), call=_first),
    LayerCase(
        nn.LSTM, {"bidirectional": True}, (3, 2, 4), (3, 2, 10), 440, args=(4, 5), call=_first
    ),
    LayerCase(
        nn.GRU,
        {"dropout": 0.2, "num_layers": 2},
        (3, 2, 4),
        (3, 2, 5),
        345,
        args=(4, 5),
        call=_first,
    ),
    LayerCase(
        nn.MultiheadAttention,
        {"batch_first": True},
        (2, 5, 8),
        (2, 5, 8),
        288,
        args=(8, 2),
        call=_attend,
    ),
    LayerCase(
        nn.MultiheadAttention,
        {"dropout": 0.1},
        (5, 2, 8),
        (5, 2, 8),
        288,
        args=(8, 2),
        call=_attend,
    ),
    LayerCase(
        nn.TransformerEncoderLayer,
        {"dim_feedforward": 16, "batch_first": True},
        (2, 5, 8),
        (2, 5, 8),
        600,
        args=(8, 2),
    ),
    LayerCase(
        nn.TransformerEncoderLayer,
        {"dim_feedforward": 16, "norm_first": True, "activation": "gelu"},
        (5, 2, 8),
        (5, 2, 8),
        600,
        args=(8, 2),
    ),
    LayerCase(nn.ReLU, {}, (3, 4), (3, 4), 0),
    LayerCase(nn.LeakyReLU, {}, (3, 4), (3, 4), 0, args=(0.2,)),
    LayerCase(nn.GELU, {}, (3, 4), (3, 4), 0),
    LayerCase(nn.GELU, {"approximate": "tanh"}, (3, 4), (3, 4), 0),
    LayerCase(nn.SiLU, {}, (3, 4), (3, 4), 0),
    LayerCase(nn.ELU, {"alpha": 0.5}, (3, 4), (3, 4), 0),
    LayerCase(nn.Sigmoid, {}, (3, 4), (3, 4), 0),
    LayerCase(nn.Tanh, {}, (3, 4), (3, 4), 0),
    LayerCase(nn.Softmax, {"dim": 1}, (3, 4), (3, 4), 0),
    LayerCase(nn.LogSoftmax, {"dim": -1}, (3, 4), (3, 4), 0),
    LayerCase(nn.Softplus, {"beta": 2.0}, (3, 4), (3, 4), 0),
]


def _input(case, device, seed=0):
    rng = np.random.default_rng(seed)
    if case.integer_input:
        return nnkit.tensor(rng.integers(0, case.integer_input, case.input_shape), device=device)
    return nnkit.tensor(rng.standard_normal(case.input_shape).astype(np.float32), device=device)


def _make(case, device, seed):
    nnkit.manual_seed(seed)
    return case.cls(*case.args, **case.kwargs).to(device)


def _run(case, layer, x):
    nnkit.manual_seed(123)  # the same dropout masks in every call
    return case.call(layer, x)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_output_shape_and_parameter_count(case, device):
    layer = _make(case, device, 0)
    out = _run(case, layer, _input(case, device))
    assert tuple(out.shape) == case.output_shape
    assert out.device == nnkit.device(device)
    assert sum(p.numel() for p in layer.parameters()) == case.params
    assert all(isinstance(p, nn.Parameter) for p in layer.parameters())
    assert isinstance(repr(layer), str) and repr(layer).startswith(case.cls.__name__)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_state_dict_round_trip(case, device):
    x = _input(case, device)
    src, dst = _make(case, device, 0), _make(case, device, 1)
    _run(case, src, x)  # builds lazy layers and moves batch-norm statistics
    _run(case, dst, x)
    dst.load_state_dict(src.state_dict())
    src.eval()
    dst.eval()
    expected = _run(case, src, x).detach().cpu().numpy()
    np.testing.assert_array_equal(_run(case, dst, x).detach().cpu().numpy(), expected)


@pytest.mark.parametrize("case", [c for c in CASES if c.params], ids=lambda c: c.id)
def test_one_sgd_step_lowers_the_loss(case, device):
    x = _input(case, device)
    layer = _make(case, device, 0)
    out = _run(case, layer, x)
    target = nnkit.tensor(
        np.random.default_rng(7).standard_normal(out.shape).astype(np.float32), device=device
    )

    def loss_value():
        return ((_run(case, layer, x) - target) ** 2).mean()

    loss = loss_value()
    loss.backward()
    params = list(layer.parameters())
    assert all(p.grad is not None and p.grad.shape == p.shape for p in params)
    with nnkit.no_grad():
        for p in params:
            p.sub_(p.grad, alpha=0.05)
    assert loss_value().item() < loss.item()


def test_embedding_padding_row_is_zero_and_gets_no_gradient():
    emb = nn.Embedding(5, 3, padding_idx=1)
    assert (emb.weight[1] == 0).all().item()
    emb(nnkit.tensor([[1, 2], [1, 1]])).sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy()[1], 0)
    np.testing.assert_array_equal(emb.weight.grad.numpy()[2], 1)
    frozen = nn.Embedding.from_pretrained(nnkit.randn(4, 2))
    assert not frozen.weight.requires_grad and frozen(nnkit.tensor([3])).shape == (1, 2)


def test_dropout_scales_kept_values_and_validates_p():
    drop = nn.Dropout(0.25)
    out = drop(nnkit.ones(1000)).numpy()
    np.testing.assert_allclose(out[out != 0], 1 / 0.75, rtol=1e-6)
    assert 0.15 < (out == 0).mean() < 0.35
    drop.eval()
    x = nnkit.ones(3)
    assert drop(x) is x
    with pytest.raises(ValueError, match="Received: p=1.5"):
        nn.Dropout(1.5)


@pytest.mark.parametrize(
    "bad",
    [
        lambda: nn.Linear(0, 3),
        lambda: nn.Conv2d(3, 4, 3, groups=2),
        lambda: nn.Conv2d(2, 4, 3, padding_mode="mirror"),
        lambda: nn.Conv2d(2, 4, (3, 3, 3)),
        lambda: nn.Conv2d(2, 4, 3, stride=2, padding="same"),
        lambda: nn.BatchNorm1d(0),
        lambda: nn.Embedding(3, 2, padding_idx=3),
        lambda: nn.LSTM(3, 0),
        lambda: nn.RNN(3, 4, nonlinearity="sigmoid"),
        lambda: nn.MultiheadAttention(10, 3),
        lambda: nn.GELU("fast"),
        lambda: nn.MSELoss(reduction="avg"),
        lambda: nn.CrossEntropyLoss(label_smoothing=2.0),
    ],
)
def test_constructors_reject_bad_arguments_with_the_value(bad):
    with pytest.raises(ValueError, match="Received|within|divisible"):
        bad()


def test_batchnorm_rejects_wrong_rank():
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(nnkit.randn(2, 3))


def test_batchnorm_without_running_stats_uses_batch_statistics():
    bn = nn.BatchNorm1d(2, track_running_stats=False, affine=False).eval()
    out = bn(nnkit.randn(50, 2) * 4 + 3).detach().numpy()
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-5)
    assert bn.running_mean is None and list(bn.state_dict()) == []


LOSSES = [
    ("CrossEntropyLoss", {}, "logits", "classes"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1, "reduction": "sum"}, "logits", "classes"),
    ("CrossEntropyLoss", {"ignore_index": 2}, "logits", "classes"),
    ("NLLLoss", {"reduction": "none"}, "log_probs", "classes"),
    ("MSELoss", {}, "real", "real"),
    ("L1Loss", {"reduction": "sum"}, "real", "real"),
    ("HuberLoss", {"delta": 0.5}, "real", "real"),
    ("SmoothL1Loss", {"beta": 0.5}, "real", "real"),
    ("BCELoss", {}, "probs", "binary"),
    ("BCEWithLogitsLoss", {}, "real", "binary"),
]


@pytest.mark.parametrize(
    "name,kwargs,input_kind,target_kind", LOSSES, ids=[f"{n}-{k}" for n, k, _, _ in LOSSES]
)
def test_losses_match_torch(name, kwargs, input_kind, target_kind, device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    raw = rng.standard_normal((6, 4))
    inputs = {
        "logits": raw,
        "real": raw,
        "probs": 1 / (1 + np.exp(-raw)),
        "log_probs": raw - np.log(np.exp(raw).sum(1, keepdims=True)),
    }[input_kind]
    target = {
        "classes": rng.integers(0, 4, 6),
        "real": rng.standard_normal((6, 4)),
        "binary": (rng.random((6, 4)) > 0.5).astype(np.float64),
    }[target_kind]
    x = nnkit.tensor(inputs, dtype=nnkit.float64, device=device, requires_grad=True)
    loss = getattr(nn, name)(**kwargs)(x, nnkit.tensor(target, device=device))
    tx = torch.tensor(inputs, requires_grad=True)
    ref = getattr(torch.nn, name)(**kwargs)(tx, torch.tensor(target))
    np.testing.assert_allclose(
        loss.detach().cpu().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-8
    )
    loss.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-8)
