"""nnkit.onnx.export: the file passes onnx's checker and ONNX Runtime reproduces nnkit's
eval-mode outputs (float32, atol 1e-5) at the example's batch size and at another."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit import nn

onnx = pytest.importorskip("onnx", reason="the onnx package is not installed")
ort = pytest.importorskip("onnxruntime", reason="the onnxruntime package is not installed")

ATOL = 1e-5


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _outputs(out):
    if isinstance(out, nnkit.Tensor):
        return [out]
    return [t for o in out for t in _outputs(o)]


def export_and_compare(model, example, other, path, train_before=True, **kwargs):
    """Export ``model`` on ``example``; compare ONNX Runtime with nnkit on both inputs."""
    model(*_tuple(example))  # builds lazy layers
    model.train(train_before)
    nnkit.onnx.export(model, example, path, **kwargs)
    assert model.training is train_before
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    model.eval()
    for x in (example, other):
        xs = _tuple(x)
        with nnkit.no_grad():
            expected = [t.numpy() for t in _outputs(model(*xs))]
        feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), xs)}
        got = session.run(None, feeds)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=0, atol=ATOL)
    model.train(train_before)
    return proto


@pytest.fixture(autouse=True)
def _seed():
    nnkit.manual_seed(0)


def test_mlp(tmp_path):
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 4))
    export_and_compare(model, nnkit.randn(8, 10), nnkit.randn(3, 10), tmp_path / "mlp.onnx")


def test_activations_and_softmax(tmp_path):
    model = nn.Sequential(
        nn.Linear(6, 12),
        nn.Sigmoid(),
        nn.Linear(12, 12),
        nn.Tanh(),
        nn.LeakyReLU(0.1),
        nn.ELU(),
        nn.SiLU(),
        nn.Softplus(),
        nn.GELU(approximate="tanh"),
        nn.ReLU(),
        nn.Linear(12, 5),
        nn.LogSoftmax(-1),
    )
    export_and_compare(model, nnkit.randn(8, 6), nnkit.randn(3, 6), tmp_path / "act.onnx")
    model = nn.Sequential(nn.Linear(6, 5), nn.Softmax(dim=1))
    export_and_compare(model, nnkit.randn(8, 6), nnkit.randn(1, 6), tmp_path / "sm.onnx")


def test_every_other_activation_of_nnkit_nn(tmp_path):
    model = nn.Sequential(
        nn.Linear(6, 12),
        nn.Hardswish(),
        nn.Hardsigmoid(),
        nn.Linear(12, 12),
        nn.Mish(),
        nn.CELU(0.7),
        nn.Softsign(),
        nn.Threshold(0.1, -2.0),
        nn.Hardshrink(0.3),
        nn.Softshrink(0.2),
        nn.Tanhshrink(),
        nn.PReLU(),
        nn.Linear(12, 12),
        nn.GLU(),
        nn.Identity(),
    )
    export_and_compare(model, nnkit.randn(8, 6), nnkit.randn(3, 6), tmp_path / "more.onnx")


def test_cnn_with_batchnorm(tmp_path):
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, stride=2, padding=2, dilation=2, groups=2),
        nn.AvgPool2d(2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 3),
    )
    model(nnkit.randn(6, 3, 16, 16))  # running statistics that differ from the init
    export_and_compare(
        model, nnkit.randn(4, 3, 16, 16), nnkit.randn(2, 3, 16, 16), tmp_path / "cnn.onnx"
    )


def test_conv1d_batchnorm1d_adaptive(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(4, 6, 3, stride=2, padding=1)
            self.bn = nn.BatchNorm1d(6)
            self.pool = nn.AdaptiveAvgPool2d((2, 3))

        def forward(self, x):
            y = self.bn(self.conv(x)).relu()  # (N, 6, 6)
            return self.pool(y.unsqueeze(1)).flatten(1)

    export_and_compare(
        Net(),
        nnkit.randn(5, 4, 12),
        nnkit.randn(2, 4, 12),
        tmp_path / "c1.onnx",
        train_before=False,
    )


def test_pad_and_group_norm(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 6, 3)

        def forward(self, x):
            y = nnkit.nn.functional.pad(self.conv(x), (1, 1, 2, 0), value=0.5)
            return nnkit.nn.functional.group_norm(y, 2)

    export_and_compare(
        Net(), nnkit.randn(3, 4, 8, 8), nnkit.randn(5, 4, 8, 8), tmp_path / "gn.onnx"
    )


def test_layernorm_gelu_block(tmp_path):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.norm = nn.Linear(16, 32), nn.LayerNorm(32)
            self.act, self.fc2 = nn.GELU(), nn.Linear(32, 16)

        def forward(self, x):
            return x + self.fc2(self.act(self.norm(self.fc1(x))))

    export_and_compare(Block(), nnkit.randn(4, 7, 16), nnkit.randn(2, 7, 16), tmp_path / "ln.onnx")


def test_keras_sequential(tmp_path):
    model = nnkit.Sequential(
        [
            nnkit.layers.Dense(16, activation="relu"),
            nnkit.layers.Dense(8, activation="tanh"),
            nnkit.layers.Dense(3, activation="softmax"),
        ]
    )
    export_and_compare(model, nnkit.randn(5, 8), nnkit.randn(2, 8), tmp_path / "k.onnx")


def test_functional_model_with_two_outputs(tmp_path):
    inputs = nnkit.Input((12,))
    hidden = nnkit.layers.Dense(16, activation="relu")(inputs)
    model = nnkit.Model(
        inputs,
        [nnkit.layers.Dense(5, name="digit")(hidden), nnkit.layers.Dense(1, name="odd")(hidden)],
    )
    proto = export_and_compare(model, nnkit.randn(4, 12), nnkit.randn(7, 12), tmp_path / "f.onnx")
    assert len(proto.graph.output) == 2


def test_tensor_ops_in_forward(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(12, 12)

        def forward(self, x):  # (N, 3, 4)
            y = self.fc(x.reshape(x.shape[0], 12)).reshape(-1, 4, 3).permute(0, 2, 1)
            z = nnkit.cat([y, x * 2.0 - 1.0], 2)[:, 1:, ::2]
            w = z.transpose(1, 2).exp().sqrt() / (z.abs().sum(-1).unsqueeze(1) + 1)
            return w.mean(1) + w[:, 0].clamp(-0.5, 0.5) + w.amax(1) - w.logsumexp(1)

    export_and_compare(Net(), nnkit.randn(4, 3, 4), nnkit.randn(7, 3, 4), tmp_path / "t.onnx")


class EmbeddingLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 12, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(24, 3)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.emb(tokens))
        return self.fc(out[:, -1]), h, c


def test_embedding_lstm(tmp_path):
    export_and_compare(
        EmbeddingLSTM(),
        nnkit.randint(0, 20, (4, 6)),
        nnkit.randint(0, 20, (2, 6)),
        tmp_path / "lstm.onnx",
    )


def test_gru_and_rnn(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(5, 7, num_layers=2, batch_first=True)
            self.rnn = nn.RNN(7, 4, nonlinearity="relu", batch_first=True)

        def forward(self, x):
            out, h = self.gru(x)
            return self.rnn(out)[0], h

    export_and_compare(Net(), nnkit.randn(3, 6, 5), nnkit.randn(5, 6, 5), tmp_path / "gru.onnx")


@pytest.mark.parametrize("activation,norm_first", [("relu", False), ("gelu", True)])
def test_transformer_encoder_layer(tmp_path, activation, norm_first):
    layer = nn.TransformerEncoderLayer(
        16, 4, dim_feedforward=32, activation=activation, batch_first=True, norm_first=norm_first
    )
    export_and_compare(layer, nnkit.randn(4, 5, 16), nnkit.randn(2, 5, 16), tmp_path / "tel.onnx")


def test_cross_attention_two_inputs(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, q, kv):
            return self.att(q, kv, kv)[0]

    proto = export_and_compare(
        Net(),
        (nnkit.randn(3, 4, 16), nnkit.randn(3, 6, 16)),
        (nnkit.randn(2, 4, 16), nnkit.randn(2, 6, 16)),
        tmp_path / "mha.onnx",
        input_names=["query", "memory"],
        output_names=["attended"],
    )
    assert [i.name for i in proto.graph.input] == ["query", "memory"]
    assert [o.name for o in proto.graph.output] == ["attended"]


def test_static_batch_and_opset(tmp_path):
    model = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    path = tmp_path / "static.onnx"
    x = nnkit.randn(2, 4)
    nnkit.onnx.export(model, x, path, dynamic_batch=False, opset=18)
    proto = onnx.load(str(path))
    assert proto.opset_import[0].version == 18
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 2
    got = ort.InferenceSession(str(path)).run(None, {"input": x.numpy()})[0]
    with nnkit.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=0, atol=ATOL)
    with pytest.raises(ValueError, match="opset"):
        nnkit.onnx.export(model, nnkit.randn(2, 4), path, opset=11)


class Square(nnkit.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class SquareLayer(nn.Module):
    def forward(self, x):
        return Square.apply(x)


def test_unsupported_op_names_op_and_layer_and_writes_nothing(tmp_path):
    model = nn.Sequential(nn.Linear(3, 3), SquareLayer())
    model.train()
    path = tmp_path / "bad.onnx"
    with pytest.raises(nnkit.onnx.UnsupportedOpError, match=r"Square .*layer '1' \(SquareLayer\)"):
        nnkit.onnx.export(model, nnkit.randn(2, 3), path)
    assert list(tmp_path.iterdir()) == []
    assert model.training and all(m.training for m in model.modules())
    # an existing file is left untouched
    path.write_bytes(b"old")
    with pytest.raises(nnkit.onnx.UnsupportedOpError):
        nnkit.onnx.export(model, nnkit.randn(2, 3), path)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx"]


def test_mixed_training_flags_are_restored(tmp_path):
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5), nn.BatchNorm1d(3))
    model.train()
    model[1].eval()
    nnkit.onnx.export(model, nnkit.randn(4, 3), tmp_path / "m.onnx")
    assert [m.training for m in model.modules()] == [True, True, False, True]
