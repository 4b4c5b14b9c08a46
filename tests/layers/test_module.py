"""Module mechanics: registration, names, state dicts, modes, devices, lazy build, repr."""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import nnkit
import nnkit.nn as nn
from nnkit.layers import NotBuiltError


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.scale = nn.Parameter(nnkit.ones(4))
        self.register_buffer("count", nnkit.zeros(()))
        self.register_buffer("cache", nnkit.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc(x) * self.scale


def _net():
    return nn.Sequential(
        OrderedDict(features=nn.Sequential(nn.Linear(3, 4), nn.ReLU()), head=nn.Linear(4, 2))
    )


# ------------------------------------------------------------------ Parameter
def test_parameter_is_a_leaf_tensor_requiring_grad():
    p = nn.Parameter(nnkit.randn(2, 3))
    assert isinstance(p, nnkit.Tensor) and isinstance(p, nn.Parameter)
    assert p.is_leaf and p.requires_grad and p.shape == (2, 3)
    assert repr(p).startswith("Parameter containing:")
    assert not nn.Parameter(np.zeros(3, dtype=np.float32), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    (p * 2).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), 2.0)
    assert type(p * 2) is nnkit.Tensor


def test_parameter_shares_memory_with_its_data():
    t = nnkit.zeros(3)
    p = nn.Parameter(t)
    with nnkit.no_grad():
        p.add_(1.0)
    np.testing.assert_array_equal(t.numpy(), [1, 1, 1])


# --------------------------------------------------------------- registration
def test_setattr_routes_parameters_modules_and_buffers():
    b = Block()
    assert list(b._parameters) == ["scale"]
    assert list(b._modules) == ["fc"]
    assert list(b._buffers) == ["count", "cache"]
    assert [n for n, _ in b.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert [n for n, _ in b.named_buffers()] == ["count", "cache"]
    assert list(b.state_dict()) == ["scale", "count", "fc.weight", "fc.bias"]
    assert "fc" in dir(b) and "scale" in dir(b) and "count" in dir(b)
    b.fc = None
    assert [n for n, _ in b.named_parameters()] == ["scale"]
    del b.scale
    assert not hasattr(b, "scale") and list(b.parameters()) == []


def test_setattr_rejects_wrong_types_for_registered_names():
    b = Block()
    with pytest.raises(TypeError, match="parameter 'scale'"):
        b.scale = nnkit.ones(4)
    with pytest.raises(TypeError, match="child module 'fc'"):
        b.fc = 3
    with pytest.raises(TypeError, match="buffer 'count'"):
        b.count = 3.0
    b.count = nnkit.ones(())
    assert b.count.item() == 1.0
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        _ = b.missing
    with pytest.raises(KeyError, match="be empty or contain"):
        b.register_buffer("a.b", None)
    with pytest.raises(KeyError, match="already exists"):
        b.register_parameter("fc", None)


def test_assignment_before_init_is_a_clear_error():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(nnkit.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_dotted_names_and_traversal():
    net = _net()
    assert [n for n, _ in net.named_parameters()] == [
        "features.0.weight",
        "features.0.bias",
        "head.weight",
        "head.bias",
    ]
    assert [n for n, _ in net.named_modules()] == [
        "",
        "features",
        "features.0",
        "features.1",
        "head",
    ]
    assert [n for n, _ in net.named_children()] == ["features", "head"]
    assert len(list(net.modules())) == 5 and len(list(net.children())) == 2
    assert net.get_submodule("features.0") is net.features[0]
    assert len(list(net.parameters(recurse=False))) == 0


def test_shared_parameters_are_listed_once():
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)
    b.weight = a.weight
    net = nn.Sequential(a, b, a)
    names = [n for n, _ in net.named_parameters()]
    assert names == ["0.weight", "0.bias", "1.bias"]
    assert len(list(net.parameters())) == 3
    assert len([m for m in net.modules()]) == 3  # a appears once
    assert "2.weight" in net.state_dict()  # state_dict lists every path, as torch


def test_deepcopy_keeps_sharing_and_copies_values():
    a = nn.Linear(2, 2)
    net = nn.Sequential(a, a, nn.BatchNorm1d(2))
    twin = copy.deepcopy(net)
    assert twin[0] is twin[1] and twin[0].weight is not a.weight
    np.testing.assert_array_equal(twin[0].weight.detach().numpy(), a.weight.detach().numpy())
    assert twin[0].weight.requires_grad and isinstance(twin[0].weight, nn.Parameter)


# ----------------------------------------------------------------- state dict
def test_state_dict_round_trip_and_in_place_loading(device):
    src, dst = _net().to(device), _net().to(device)
    weight = dst.head.weight
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst.head.weight is weight  # identity kept: optimizers keep working
    x = nnkit.randn(5, 3, device=device)
    np.testing.assert_allclose(dst(x).detach().cpu().numpy(), src(x).detach().cpu().numpy())
    sd = src.state_dict()
    assert all(not v.requires_grad for v in sd.values())


def test_load_state_dict_accepts_numpy_arrays():
    src, dst = _net(), _net()
    dst.load_state_dict({k: v.numpy() for k, v in src.state_dict().items()})
    np.testing.assert_array_equal(dst.head.bias.detach().numpy(), src.head.bias.detach().numpy())


def test_strict_loading_reports_every_problem_at_once():
    net = _net()
    sd = net.state_dict()
    del sd["head.bias"], sd["features.0.weight"]
    sd["extra.weight"] = nnkit.zeros(1)
    sd["head.weight"] = nnkit.zeros(3, 4)
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(sd)
    msg = str(err.value)
    assert "Error(s) in loading state_dict for Sequential" in msg
    assert '"features.0.weight"' in msg and '"head.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    assert "size mismatch for head.weight" in msg and "(3, 4)" in msg and "(2, 4)" in msg


def test_non_strict_loading_returns_keys_but_still_rejects_shapes():
    net = _net()
    sd = OrderedDict((k, v) for k, v in net.state_dict().items() if k.startswith("head"))
    sd["junk"] = nnkit.zeros(1)
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["features.0.weight", "features.0.bias"]
    assert result.unexpected_keys == ["junk"]
    with pytest.raises(RuntimeError, match="size mismatch"):
        net.load_state_dict({"head.bias": nnkit.zeros(5)}, strict=False)
    with pytest.raises(RuntimeError, match="expected a Tensor or NumPy array"):
        net.load_state_dict({"head.bias": [0.0, 0.0]}, strict=False)


def test_non_persistent_buffers_stay_out_of_state_dict():
    b = Block()
    assert "cache" not in b.state_dict() and "count" in b.state_dict()


# ---------------------------------------------------------------------- modes
def test_train_eval_change_dropout_and_batchnorm(device):
    net = nn.Sequential(nn.BatchNorm1d(4), nn.Dropout(0.5)).to(device)
    x = nnkit.randn(64, 4, device=device) * 3 + 1
    assert net.training and all(m.training for m in net.modules())
    out = net(x)
    assert (out == 0).float().mean().item() > 0.2  # dropout active
    bn = net[0]
    assert bn.num_batches_tracked.item() == 1
    assert np.abs(bn.running_mean.cpu().numpy()).sum() > 0
    net.eval()
    assert not any(m.training for m in net.modules())
    running = bn.running_mean.cpu().numpy().copy()
    out = net(x)
    expected = ((x - bn.running_mean) / (bn.running_var + bn.eps).sqrt()).cpu().numpy()
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(bn.running_mean.cpu().numpy(), running)
    assert bn.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")


# -------------------------------------------------------------------- dtype/device
def test_to_dtype_keeps_parameter_identity_and_integer_buffers(device):
    net = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).to(device)
    weight = net[0].weight
    net(nnkit.randn(4, 3, device=device)).sum().backward()
    assert net.to(nnkit.float64) is net
    assert net[0].weight is weight and weight.dtype == nnkit.float64
    assert weight.grad.dtype == nnkit.float64
    assert net[1].running_mean.dtype == nnkit.float64
    assert net[1].num_batches_tracked.dtype == nnkit.int64
    assert net(nnkit.randn(4, 3, dtype=nnkit.float64, device=device)).dtype == nnkit.float64
    net.float()
    assert weight.dtype == nnkit.float32
    with pytest.raises(TypeError, match="floating point"):
        net.to(nnkit.int32)


def test_zero_grad_apply_and_requires_grad():
    net = _net()
    net(nnkit.randn(2, 3)).sum().backward()
    net.zero_grad(set_to_none=False)
    assert all((p.grad == 0).all().item() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "ReLU", "Sequential", "Linear", "Sequential"]
    net.apply(lambda m: nn.init.zeros_(m.weight) if isinstance(m, nn.Linear) else None)
    assert (net.head.weight == 0).all().item()
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_forward_hooks_can_observe_and_replace():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape))
    out = lin(nnkit.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None])
    assert calls == [(1, 2)]
    h1.remove()
    h2.remove()
    lin(nnkit.ones(1, 2))
    assert calls == [(1, 2)]


def test_missing_forward_is_a_clear_error():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(nnkit.ones(1))


# ------------------------------------------------------------------ lazy Dense
def test_dense_builds_at_first_call_then_has_a_fixed_shape():
    layer = nn.Dense(10, activation="relu")
    assert not layer.built
    with pytest.raises(
        NotBuiltError,
        match=r"^Dense\(units=10, activation=relu\) has not "
        r"been built yet: call the model on a batch",
    ):
        layer.parameters()
    out = layer(nnkit.randn(4, 7))
    assert layer.built and out.shape == (4, 10) and (out >= 0).all().item()
    assert layer.weight.shape == (10, 7) and layer.bias.shape == (10,)
    assert layer.in_features == 7
    with pytest.raises(ValueError, match="built for inputs with last dimension 7"):
        layer(nnkit.randn(4, 8))


def test_unbuilt_model_fails_for_optimizers_and_checkpoints_naming_the_layer():
    model = nn.Sequential(nn.Dense(8, activation="tanh"), nn.Dense(3))
    for action in (
        model.parameters,
        model.state_dict,
        lambda: nnkit.optim.SGD(model.parameters(), lr=0.1),
    ):
        with pytest.raises(NotBuiltError, match=r"layer '0' of Sequential"):
            action()
    model(nnkit.randn(2, 5))
    assert [tuple(p.shape) for p in model.parameters()] == [(8, 5), (8,), (3, 8), (3,)]


def test_dense_eager_build_initializers_and_bad_arguments():
    layer = nn.Dense(4, use_bias=False, kernel_initializer="zeros", in_features=3)
    assert layer.built and layer.bias is None
    assert (layer.weight == 0).all().item()
    assert nn.Dense(2, input_shape=(6,)).weight.shape == (2, 6)
    with pytest.raises(ValueError, match="Received: units=0"):
        nn.Dense(0)
    with pytest.raises(ValueError, match="Unknown activation"):
        nn.Dense(3, activation="nope")
    with pytest.raises(ValueError, match="Unknown initializer"):
        nn.Dense(3, kernel_initializer="nope")


def test_lazy_build_follows_input_dtype(device):
    layer = nn.Dense(3, activation=nnkit.tanh)
    out = layer(nnkit.randn(2, 4, dtype=nnkit.float64, device=device))
    assert layer.weight.dtype == nnkit.float64 and out.dtype == nnkit.float64
    assert layer.weight.device == out.device


# -------------------------------------------------------------------- repr
def test_nested_repr_like_torch():
    net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Sequential(nn.Flatten(), nn.Linear(4, 2)))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1))\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Flatten(start_dim=1, end_dim=-1)\n"
        "    (1): Linear(in_features=4, out_features=2, bias=True)\n"
        "  )\n"
        ")"
    )


# --------------------------------------------------------------- containers
def test_sequential_list_operations():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)
    seq = nn.Sequential([a, b])
    assert isinstance(seq, nnkit.Model) and nnkit.Sequential is nn.Sequential
    seq.add(c)
    assert len(seq) == 3 and seq[-1] is c and list(seq) == [a, b, c]
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == [b, c]
    seq.insert(0, nn.Identity())
    assert list(seq._modules) == ["0", "1", "2", "3"] and seq[1] is a
    del seq[0]
    assert seq[0] is a and seq.layers == [a, b, c]
    seq[1] = nn.Tanh()
    assert isinstance(seq[1], nn.Tanh)
    with pytest.raises(IndexError):
        seq[5]
    with pytest.raises(TypeError):
        nn.Sequential(3)


def test_module_list_and_dict_register_their_members():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 1), "b": nn.Linear(2, 3)})

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return {k: head(x) for k, head in self.heads.items()}

    net = Net()
    assert len(list(net.parameters())) == 10
    assert "blocks.2.weight" in net.state_dict() and "heads.b.bias" in net.state_dict()
    assert net(nnkit.ones(1, 2))["b"].shape == (1, 3)
    net.blocks.append(nn.Linear(2, 2))
    assert len(net.blocks) == 4 and "a" in net.heads and list(net.heads) == ["a", "b"]
    del net.blocks[0]
    assert [n for n, _ in net.blocks.named_children()] == ["0", "1", "2"]


def test_summary_prints_a_table(capsys):
    conv = nn.Conv2d(1, 4, 3)
    model = nn.Sequential(conv, nn.Flatten(), nn.Dense(10))
    model.summary(input_shape=(1, 6, 6))
    text = capsys.readouterr().out
    assert f"{conv.name} (Conv2d)" in text and "(None, 4, 4, 4)" in text
    assert "(None, 10)" in text and "Total params: 690 (2.70 KB)" in text


def test_summary_of_an_unbuilt_model_says_so(capsys):
    model = nn.Sequential(nn.Linear(3, 4), nn.Dense(2))
    model.summary()
    text = capsys.readouterr().out
    # Keras's layout: an unbuilt layer counts 0 and the totals count the built weights
    assert "0 (unbuilt)" in text and "Total params: 16 (64.00 B)" in text
