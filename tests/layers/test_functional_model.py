"""The functional API (``nnkit.Input``, ``nnkit.Model(inputs, outputs)``), Keras's layer
names, ``get_layer`` and ``summary()`` in Keras 3's layout, with Keras's numbers."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

import nnkit
from nnkit import nn
from nnkit.data import Dataset
from nnkit.layers import clear_session


@pytest.fixture(autouse=True)
def fresh_names():
    clear_session(free_memory=False)
    yield
    clear_session(free_memory=False)


class Pairs(Dataset):
    """Items ``((x1, x2), y)``: two inputs, one target (or a tuple of targets)."""

    def __init__(self, x1, x2, y):
        self.x1, self.x2, self.y = x1, x2, y

    def __len__(self):
        return len(self.x1)

    def __getitem__(self, i):
        y = tuple(t[i] for t in self.y) if isinstance(self.y, tuple) else self.y[i]
        return (self.x1[i], self.x2[i]), y


def arr(t):
    return t.detach().numpy()


def table_rows(lines):
    """{layer name: its row} of a summary's table."""
    return {
        m.group(1): line
        for line in lines
        if (m := re.match(r"^(\S+) \(\w+\) ", line)) and m.group(1) != "Layer"
    }


def lines_of(model, **kwargs):
    lines = []
    model.summary(print_fn=lines.append, **kwargs)
    return lines


def two_input_model():
    a, b = nnkit.Input((4,), name="a"), nnkit.Input((4,), name="b")
    shared = nn.Dense(3, activation="tanh", name="shared")
    merged = nn.concatenate([shared(a), shared(b)])
    return nnkit.Model([a, b], nn.Dense(2, name="head")(merged))


# ---------------------------------------------------------------- symbols
def test_input_is_a_symbolic_tensor_and_layers_infer_shapes():
    x = nnkit.Input(shape=(20,))
    assert x.shape == (None, 20) and x.dtype == nnkit.float32 and x.name == "input_layer"
    h = nn.Dense(64, activation="relu")(x)
    assert h.shape == (None, 64) and h.dtype == nnkit.float32
    seq = nnkit.Input((None, 8), batch_size=4)
    out, _ = nn.LSTM(8, 5, batch_first=True)(seq)
    assert seq.shape == (4, None, 8) and out.shape == (4, None, 5)
    ids = nnkit.Input((7,), dtype="int64")
    assert nn.Embedding(10, 3)(ids).shape == (None, 7, 3)
    img = nnkit.Input(batch_shape=(None, 1, 8, 8))
    assert nn.Flatten()(nn.Conv2d(1, 4, 3)(img)).shape == (None, 144)
    with pytest.raises(ValueError, match="shape"):
        nnkit.Input()
    with pytest.raises(TypeError, match="bool"):
        bool(x)


def test_symbolic_calls_leave_modes_statistics_and_randomness_alone():
    bn = nn.BatchNorm1d(3)
    bn(nnkit.randn(8, 3) * 5 + 2)  # running statistics away from their start
    before = {k: v.numpy().copy() for k, v in bn.state_dict().items()}
    state = nnkit.get_rng_state()
    nn.Dropout(0.5)(bn(nnkit.Input((3,))))
    assert bn.training
    for k, v in bn.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])
    assert nnkit.get_rng_state() == state  # built layers: no draw at all
    dense = nn.Dense(2)
    dense(nnkit.Input((3,)))  # building draws the initial weights, as in Keras
    assert dense.built and dense.weight.shape == (2, 3)


def test_operators_on_symbolic_tensors_are_recorded_as_layers():
    a, b = nnkit.Input((4,), name="a"), nnkit.Input((4,), name="b")
    out = [a + b, a - 1.5, 2.0 * b, -a, a * b / 2, a[:, 1:3], (a**2).reshape(-1, 2, 2), 1 - b]
    model = nnkit.Model([a, b], out)
    assert [t.shape for t in out[:5]] == [(None, 4)] * 5
    assert out[5].shape == (None, 2) and out[6].shape == (None, 2, 2)
    x, y = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    got = [arr(t) for t in model(nnkit.tensor(x), nnkit.tensor(y))]
    want = [x + y, x - 1.5, 2 * y, -x, x * y / 2, x[:, 1:3], (x**2).reshape(-1, 2, 2), 1 - y]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert {type(layer).__name__ for layer in model.layers} >= {
        "Add",
        "Subtract",
        "Multiply",
        "Negative",
        "GetItem",
    }


# ----------------------------------------------------------------- naming
def test_layers_are_named_as_keras_names_them():
    assert [
        nn.Dense(2).name,
        nn.Dense(2).name,
        nn.Dense(2, name="mine").name,
        nn.Dense(2).name,
    ] == ["dense", "dense_1", "mine", "dense_2"]
    assert nn.BatchNorm1d(3).name == "batch_norm1d" and nn.ReLU().name == "re_lu"
    assert nn.LSTM(2, 2).name == "lstm" and nn.Conv2d(1, 1, 1).name == "conv2d"

    class MyBlock(nnkit.Model):
        def __init__(self):
            super().__init__()
            self.inner = nn.Dense(2)

    block = MyBlock()
    assert block.name == "my_block" and block.inner.name == "dense_3"
    assert nnkit.Sequential([nn.Dense(2)]).name == "sequential"
    inputs = nnkit.Input((2,))
    assert nnkit.Model(inputs, inputs * 2).name == "functional"
    clear_session()
    assert nn.Dense(2).name == "dense"
    with pytest.raises(ValueError, match="cannot contain character"):
        nn.Dense(2, name="a/b")


def test_names_do_not_change_sequential_or_subclassed_state_dict_keys():
    model = nnkit.Sequential([nn.Linear(2, 3, name="first"), nn.ReLU(), nn.Linear(3, 1)])
    assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert model[0].name == "first" and model.get_layer("first") is model[0]
    assert [layer.name for layer in model.layers] == ["first", "re_lu", "linear"]


# ------------------------------------------------------------- the models
def test_two_inputs_and_a_shared_layer_train_like_the_computation_by_hand():
    torch = pytest.importorskip("torch")
    nnkit.manual_seed(0)
    model = two_input_model()
    assert [layer.name for layer in model.layers] == ["a", "b", "shared", "concatenate", "head"]
    assert list(model.state_dict()) == ["shared.weight", "shared.bias", "head.weight", "head.bias"]
    assert model.count_params() == 4 * 3 + 3 + 6 * 2 + 2  # the shared weights count once
    start = {
        k: torch.tensor(v.numpy().copy(), requires_grad=True) for k, v in model.state_dict().items()
    }
    rng = np.random.default_rng(1)
    x1, x2 = rng.normal(size=(2, 20, 4)).astype(np.float32)
    y = rng.normal(size=(20, 2)).astype(np.float32)

    model.compile("sgd", "mse", lr=0.1)
    history = model.fit(Pairs(x1, x2, y), batch_size=8, epochs=2, shuffle=False, verbose=0)

    opt = torch.optim.SGD(start.values(), lr=0.1)
    losses = []
    for _ in range(2):
        total = 0.0
        for i in range(0, 20, 8):
            t1, t2 = torch.tensor(x1[i : i + 8]), torch.tensor(x2[i : i + 8])

            def shared(t):
                return torch.tanh(t @ start["shared.weight"].T + start["shared.bias"])

            pred = torch.cat([shared(t1), shared(t2)], -1) @ start["head.weight"].T
            loss = ((pred + start["head.bias"] - torch.tensor(y[i : i + 8])) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(t1)
        losses.append(total / 20)
    np.testing.assert_allclose(history.history["loss"], losses, rtol=1e-5)
    for key, value in model.state_dict().items():
        np.testing.assert_allclose(value.numpy(), start[key].detach().numpy(), rtol=1e-5, atol=1e-6)


def test_inputs_may_come_as_a_list_as_arguments_or_by_name():
    model = two_input_model()
    x1, x2 = nnkit.randn(3, 4), nnkit.randn(3, 4)
    want = arr(model([x1, x2]))
    np.testing.assert_array_equal(arr(model(x1, x2)), want)
    np.testing.assert_array_equal(arr(model({"b": x2, "a": x1})), want)
    np.testing.assert_allclose(arr(model([x1.numpy(), x2.numpy()])), want)
    with pytest.raises(ValueError, match="expects 2 input"):
        model(x1)
    with pytest.raises(ValueError, match="expected shape=\\(None, 4\\)"):
        model(x1, nnkit.randn(3, 5))


def test_several_outputs_with_loss_weights():
    nnkit.manual_seed(0)
    a, b = nnkit.Input((4,), name="a"), nnkit.Input((3,), name="b")
    h = nn.Dense(8, activation="relu")(nn.concatenate([a, b]))
    model = nnkit.Model(
        {"a": a, "b": b}, [nn.Dense(1, name="value")(h), nn.Dense(2, name="other")(h)]
    )
    assert model.output_names == ["value", "other"]
    assert model.input_shape == [(None, 4), (None, 3)]
    assert model.output_shape == [(None, 1), (None, 2)]
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(size=(16, 4)).astype(np.float32), rng.normal(size=(16, 3))
    x2 = x2.astype(np.float32)
    y1, y2 = rng.normal(size=(16, 1)).astype(np.float32), rng.normal(size=(16, 2))
    y2 = y2.astype(np.float32)
    data = Pairs(x1, x2, (y1, y2))
    model.compile("adam", ["mse", "mae"], loss_weights=[1.0, 0.25])
    p1, p2 = (arr(t) for t in model({"a": nnkit.tensor(x1), "b": nnkit.tensor(x2)}))
    want = ((p1 - y1) ** 2).mean() + 0.25 * np.abs(p2 - y2).mean()

    class Dicts(Pairs):
        def __getitem__(self, i):
            (u, v), y = super().__getitem__(i)
            return {"a": u, "b": v}, y

    dicts = Dicts(x1, x2, (y1, y2))
    assert model.evaluate(dicts, batch_size=16, verbose=0) == pytest.approx(want, rel=1e-5)
    history = model.fit(dicts, batch_size=4, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    out = model.predict(dicts, verbose=0)
    assert [o.shape for o in out] == [(16, 1), (16, 2)]
    assert data[0][0][0].shape == (4,)


def test_a_nested_model_is_one_layer_of_the_outer_model():
    nnkit.manual_seed(0)
    inner_in = nnkit.Input((4,))
    encoder = nnkit.Model(inner_in, nn.Dense(3, activation="relu")(inner_in), name="encoder")
    a, b = nnkit.Input((4,), name="a"), nnkit.Input((4,), name="b")
    merged = nn.Add()([encoder(a), encoder(b)])  # the nested model is shared too
    model = nnkit.Model([a, b], nn.Dense(1, name="score")(merged))
    assert [layer.name for layer in model.layers] == ["a", "b", "encoder", "add", "score"]
    assert list(model.state_dict()) == [
        "encoder.dense.weight",
        "encoder.dense.bias",
        "score.weight",
        "score.bias",
    ]
    x1, x2 = nnkit.randn(5, 4), nnkit.randn(5, 4)
    want = model.get_layer("score")(encoder(x1) + encoder(x2))
    np.testing.assert_allclose(arr(model(x1, x2)), arr(want), rtol=1e-6)
    assert encoder.output.shape == (None, 3) and model.get_layer("encoder") is encoder
    text = "\n".join(lines_of(model))
    assert "encoder (Functional)" in text and "encoder[0][0], encoder[1][0]" in text


def test_get_layer_and_a_feature_extractor_from_a_layers_output():
    model = two_input_model()
    assert model.get_layer("head") is model.layers[4] and model.get_layer(index=2).name == "shared"
    with pytest.raises(ValueError, match="No such layer: nope. Existing layers are"):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="only has 5 layers"):
        model.get_layer(index=5)
    with pytest.raises(ValueError, match="Provide only"):
        model.get_layer("head", 1)
    features = nnkit.Model(model.inputs, model.get_layer("concatenate").output)
    x1, x2 = nnkit.randn(2, 4), nnkit.randn(2, 4)
    shared = model.get_layer("shared")
    np.testing.assert_allclose(
        arr(features(x1, x2)), arr(nnkit.cat([shared(x1), shared(x2)], -1)), rtol=1e-6
    )
    assert features.get_layer("shared") is shared  # the same weights


def test_graph_errors_are_clear():
    a, b = nnkit.Input((2,), name="a"), nnkit.Input((2,), name="b")
    with pytest.raises(ValueError, match="Graph disconnected"):
        nnkit.Model(a, nn.Add()([a, b]))
    with pytest.raises(ValueError, match="must be KerasTensors"):
        nnkit.Model(a, nnkit.zeros(2))
    x = nn.Dense(2, name="twice")(a)
    with pytest.raises(ValueError, match='"twice" is used 2 times'):
        nnkit.Model(a, nn.Dense(2, name="twice")(x))


def test_training_argument_deepcopy_and_the_subclassing_api_still_works():
    a = nnkit.Input((6,))
    model = nnkit.Model(a, nn.Dropout(0.5)(a))
    x = nnkit.ones(4, 6)
    assert model.training and (model(x, training=False).numpy() == 1).all()
    assert (model(x).numpy() != 1).any() and model.training
    original = two_input_model()
    twin = copy.deepcopy(original)
    x1, x2 = nnkit.randn(2, 4), nnkit.randn(2, 4)
    np.testing.assert_array_equal(arr(twin(x1, x2)), arr(original(x1, x2)))
    assert twin.get_layer("shared") is not original.get_layer("shared")
    with nnkit.no_grad():
        twin.get_layer("head").bias.add_(1.0)  # the copy's weights are its own
    np.testing.assert_allclose(arr(twin(x1, x2)), arr(original(x1, x2)) + 1, rtol=1e-6)
    assert table_rows(lines_of(twin))["shared"].rstrip().endswith("a[0][0], b[0][0]")
    head = twin.get_layer("head")
    assert nnkit.Model(twin.inputs, head.output).get_layer("head") is head

    class Net(nnkit.Model):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(3, 2)

        def forward(self, x):
            return self.body(x)

    net = Net()
    assert type(net) is Net and list(net.state_dict()) == ["body.weight", "body.bias"]
    assert isinstance(nnkit.Model(), nnkit.Model)


# ---------------------------------------------------------------- summary
def test_summary_numbers_are_keras_numbers():
    model = nnkit.Sequential([nn.Dense(64, activation="relu"), nn.BatchNorm1d(64), nn.Dense(10)])
    model.build((None, 20))
    lines = lines_of(model)
    text = "\n".join(lines)
    assert lines[0] == 'Model: "sequential"'
    assert [line.split()[:3] for line in lines if "(Dense)" in line or "(Batch" in line] == [
        ["dense", "(Dense)", "(None,"],
        ["batch_norm1d", "(BatchNorm1d)", "(None,"],
        ["dense_1", "(Dense)", "(None,"],
    ]
    assert [line.split()[-1] for line in lines if "(Dense)" in line or "(Batch" in line] == [
        "1,344",
        "256",
        "650",
    ]
    assert " Total params: 2,250 (8.79 KB)" in lines
    assert " Trainable params: 2,122 (8.29 KB)" in lines
    assert " Non-trainable params: 128 (512.00 B)" in lines
    assert "Optimizer" not in text and "Connected to" not in text
    assert model.count_params() == 2250

    rng = np.random.default_rng(0)
    model.compile("adam", "cross_entropy")
    model.fit(rng.normal(size=(8, 20)).astype(np.float32), rng.integers(0, 10, 8), verbose=0)
    lines = lines_of(model)
    assert " Optimizer params: 4,246 (16.59 KB)" in lines  # Adam: 2 moments + 2 scalars
    assert " Total params: 6,496 (25.38 KB)" in lines


def test_summary_of_a_functional_model_has_the_connected_to_column():
    model = two_input_model()
    lines = lines_of(model)
    header = next(line for line in lines if line.startswith("Layer (type)"))
    assert header.split()[-2:] == ["Connected", "to"]
    rows = table_rows(lines)
    assert rows["a"].split()[1:] == ["(InputLayer)", "(None,", "4)", "0", "-"]
    assert rows["shared"].rstrip().endswith("15  a[0][0], b[0][0]")
    assert rows["concatenate"].rstrip().endswith("shared[0][0], shared[1][0]")
    assert rows["head"].split()[2:5] == ["(None,", "2)", "14"]
    assert " Total params: 29 (116.00 B)" in lines
    chain_in = nnkit.Input((3,))
    chain = nnkit.Model(chain_in, nn.Dense(2)(nn.Dense(4)(chain_in)))
    assert "Connected to" not in "\n".join(lines_of(chain))  # a chain: Keras's 3 columns


def test_summary_options_and_sizes():
    from nnkit.models.summary import readable_memory_size

    assert [readable_memory_size(n) for n in (0, 1023, 1024, 7976, 5 * 2**20, 3 * 2**30)] == [
        "0.00 B",
        "1023.00 B",
        "1.00 KB",
        "7.79 KB",
        "5.00 MB",
        "3.00 GB",
    ]
    model = two_input_model()
    rows = table_rows(lines_of(model, layer_range=("shared", "concatenate")))
    assert list(rows) == ["shared", "concatenate"]
    model.get_layer("shared").requires_grad_(False)
    text = "\n".join(lines_of(model, show_trainable=True))
    assert " Non-trainable params: 15 (60.00 B)" in text and "Trainable" in text
    outer_in = nnkit.Input((4,))
    outer = nnkit.Model(outer_in, nnkit.Sequential([nn.Dense(2, name="deep")])(outer_in))
    assert any("└ deep (Dense)" in line for line in lines_of(outer, expand_nested=True))
