"""The Optimizer base class: groups, zero_grad, state_dict layout and every bad input."""

import numpy as np
import pytest

import nnkit
from nnkit.optim import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop


def _param(*values):
    return nnkit.tensor(list(values) or [1.0, 2.0], requires_grad=True)


def _stepped(opt, params, steps=2):
    for _ in range(steps):
        for p in params:
            p.grad = nnkit.ones_like(p)
        opt.step()
    return opt


def test_defaults_fill_groups_and_groups_override():
    a, b = _param(), _param()
    opt = Adam([{"params": [a], "lr": 0.5}, {"params": [b]}], lr=0.1, amsgrad=True)
    assert opt.defaults["lr"] == 0.1
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.1]
    assert all(g["amsgrad"] is True and g["betas"] == (0.9, 0.999) for g in opt.param_groups)
    assert opt.param_groups[0]["params"][0] is a


def test_add_param_group_accepts_a_single_tensor():
    a, b = _param(), _param()
    opt = SGD([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.01, "momentum": 0.9})
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["momentum"] == 0.9
    assert opt.param_groups[1]["nesterov"] is False


def test_params_may_be_a_generator():
    params = [_param(), _param()]
    opt = SGD((p for p in params), lr=0.1)
    assert len(opt.param_groups[0]["params"]) == 2


def test_state_is_keyed_by_the_parameter_object():
    a, b = _param(), _param(3.0)
    opt = _stepped(Adam([a, b]), [a, b])
    assert a in opt.state and b in opt.state
    assert opt.state[a]["step"] == 2
    assert tuple(opt.state[b]["exp_avg"].shape) == (1,)


def test_zero_grad_sets_to_none_by_default():
    a = _param()
    opt = SGD([a], lr=0.1)
    a.grad = nnkit.ones_like(a)
    opt.zero_grad()
    assert a.grad is None


def test_zero_grad_can_fill_zeros():
    a, b = _param(), _param()
    opt = SGD([a, b], lr=0.1)
    a.grad = nnkit.ones_like(a)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])
    assert b.grad is None


def test_state_dict_layout():
    a, b, c = _param(), _param(), _param()
    opt = Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1)
    _stepped(opt, [a, c])
    sd = opt.state_dict()
    assert set(sd) == {"optimizer", "state", "param_groups"}
    assert sd["optimizer"] == "Adam"
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5
    assert sorted(sd["state"]) == [0, 2]
    assert sd["state"][0]["step"] == 2
    assert isinstance(sd["state"][0]["exp_avg"], nnkit.Tensor)


def test_state_dict_buffers_are_detached_copies():
    a = _param()
    opt = _stepped(Adam([a], lr=0.1), [a])
    sd = opt.state_dict()
    before = np.array(opt.state[a]["exp_avg"].numpy(), copy=True)
    with nnkit.no_grad():
        sd["state"][0]["exp_avg"].fill_(123.0)
    sd["param_groups"][0]["lr"] = 9.0
    np.testing.assert_array_equal(opt.state[a]["exp_avg"].numpy(), before)
    assert opt.param_groups[0]["lr"] == 0.1


def test_load_state_dict_accepts_numpy_and_string_keys():
    a = _param()
    opt = _stepped(Adam([a], lr=0.1, amsgrad=True), [a])
    sd = opt.state_dict()
    as_loaded = {
        "optimizer": np.bytes_(b"Adam"),
        "state": {
            "0": {
                k: np.asarray(v.numpy() if isinstance(v, nnkit.Tensor) else v)
                for k, v in sd["state"][0].items()
            }
        },
        "param_groups": [{k: np.asarray(v) for k, v in sd["param_groups"][0].items()}],
    }
    b = nnkit.tensor(a.detach().numpy(), requires_grad=True)
    opt2 = Adam([b], lr=0.7)
    opt2.load_state_dict(as_loaded)
    group = opt2.param_groups[0]
    assert group["lr"] == 0.1 and type(group["lr"]) is float
    assert group["betas"] == (0.9, 0.999) and isinstance(group["betas"], tuple)
    assert group["amsgrad"] is True
    assert group["params"][0] is b
    assert opt2.state[b]["step"] == 2 and type(opt2.state[b]["step"]) is int
    assert isinstance(opt2.state[b]["exp_avg"], nnkit.Tensor)
    assert opt2.state[b]["exp_avg"].dtype == b.dtype
    np.testing.assert_array_equal(
        opt2.state[b]["exp_avg_sq"].numpy(), opt.state[a]["exp_avg_sq"].numpy()
    )


def test_repr_lists_groups():
    text = repr(SGD([_param()], lr=0.1, momentum=0.9))
    assert text.startswith("SGD (") and "Parameter Group 0" in text and "momentum: 0.9" in text


def test_subclass_needs_only_init_state_and_update():
    class SignSGD(Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def _update(self, p, grad, state, group):
            p.sub_(grad / grad.abs(), alpha=group["lr"])

    a = nnkit.tensor([1.0, 1.0], requires_grad=True)
    opt = SignSGD([a])
    a.grad = nnkit.tensor([3.0, -0.5])
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.9, 1.1], rtol=1e-6)
    assert opt.state[a] == {"step": 1}


# ---- bad input ----


@pytest.mark.parametrize("cls", [SGD, Adam, AdamW, RMSprop, Adagrad])
def test_negative_learning_rate(cls):
    with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
        cls([_param()], lr=-0.1)


@pytest.mark.parametrize("cls", [Adam, AdamW])
@pytest.mark.parametrize(
    ("betas", "message"),
    [
        ((1.5, 0.999), "Invalid beta parameter at index 0: 1.5"),
        ((0.9, 1.0), "Invalid beta parameter at index 1: 1.0"),
        ((-0.1, 0.9), "Invalid beta parameter at index 0: -0.1"),
    ],
)
def test_betas_outside_unit_interval(cls, betas, message):
    with pytest.raises(ValueError, match=message):
        cls([_param()], betas=betas)


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (Adam, {"eps": -1e-8}, "Invalid epsilon value: -1e-08"),
        (AdamW, {"eps": -1.0}, "Invalid epsilon value: -1.0"),
        (RMSprop, {"eps": -1.0}, "Invalid epsilon value: -1.0"),
        (Adagrad, {"eps": -1.0}, "Invalid epsilon value: -1.0"),
        (Adam, {"weight_decay": -1}, "Invalid weight_decay value: -1"),
        (SGD, {"weight_decay": -0.5}, "Invalid weight_decay value: -0.5"),
        (SGD, {"momentum": -0.5}, "Invalid momentum value: -0.5"),
        (RMSprop, {"momentum": -0.5}, "Invalid momentum value: -0.5"),
        (RMSprop, {"alpha": -0.5}, "Invalid alpha value: -0.5"),
        (Adagrad, {"lr_decay": -0.5}, "Invalid lr_decay value: -0.5"),
        (
            Adagrad,
            {"initial_accumulator_value": -1.0},
            "Invalid initial_accumulator_value value: -1.0",
        ),
        (SGD, {"nesterov": True}, "Nesterov momentum requires a momentum and zero dampening"),
        (SGD, {"nesterov": True, "momentum": 0.9, "dampening": 0.1}, "Nesterov momentum requires"),
    ],
)
def test_invalid_hyper_parameters(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls([_param()], **kwargs)


def test_nan_learning_rate_is_invalid():
    with pytest.raises(ValueError, match="Invalid learning rate: nan"):
        SGD([_param()], lr=float("nan"))


def test_invalid_hyper_parameter_in_a_group():
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        SGD([{"params": [_param()], "lr": -1}], lr=0.1)
    opt = Adam([_param()])
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 2"):
        opt.add_param_group({"params": [_param()], "betas": (0.9, 2)})
    assert len(opt.param_groups) == 1


@pytest.mark.parametrize("exc", [TypeError, ValueError])
def test_set_of_params_rejected(exc):
    with pytest.raises(
        exc,
        match="params argument given to the optimizer should be an "
        "iterable of Tensors or dicts, but got set",
    ):
        SGD({_param()}, lr=0.1)


def test_set_inside_a_group_rejected():
    with pytest.raises(TypeError, match="but got set"):
        SGD([{"params": {_param()}}], lr=0.1)


def test_single_tensor_rejected():
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got"):
        SGD(_param(), lr=0.1)


def test_empty_parameter_list_rejected():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        Adam([])


def test_duplicate_parameter_rejected():
    a = _param()
    with pytest.raises(ValueError, match="appears more than once"):
        SGD([a, _param(), a], lr=0.1)


def test_parameter_in_two_groups_rejected():
    a = _param()
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        SGD([{"params": [a]}, {"params": [_param(), a]}], lr=0.1)
    opt = SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


def test_parameter_not_requiring_grad_rejected():
    frozen = nnkit.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="does not require grad"):
        Adam([_param(), frozen])


def test_non_leaf_rejected():
    a = _param()
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        SGD([a * 2], lr=0.1)


def test_non_tensor_rejected():
    with pytest.raises(
        TypeError, match="optimizer can only optimize Tensors, but one of the params is list"
    ):
        SGD([[1.0, 2.0]], lr=0.1)


def test_group_without_params_rejected():
    with pytest.raises(ValueError, match="'params' key"):
        SGD([{"lr": 0.1}], lr=0.1)


# ---- bad state dicts ----


def _adam_state(*shapes):
    params = [nnkit.zeros(*s).requires_grad_() for s in shapes]
    return _stepped(Adam(params, lr=0.1), params).state_dict()


def test_load_from_another_optimizer_class():
    sd = _stepped(SGD([_param()], lr=0.1, momentum=0.9), []).state_dict()
    with pytest.raises(
        ValueError, match="loaded state dict is for optimizer SGD, but this optimizer is Adam"
    ):
        Adam([_param()]).load_state_dict(sd)


def test_load_with_wrong_group_count():
    a, b = _param(), _param()
    opt = Adam([{"params": [a]}, {"params": [b]}])
    with pytest.raises(
        ValueError, match="loaded state dict has 1 parameter groups, but the optimizer has 2"
    ):
        opt.load_state_dict(_adam_state((2,), (2,)))


def test_load_with_wrong_param_count():
    opt = Adam([_param()])
    with pytest.raises(
        ValueError,
        match="parameter group 0 has 2 parameters in the loaded state dict, but 1 in the optimizer",
    ):
        opt.load_state_dict(_adam_state((2,), (2,)))


def test_load_with_wrong_state_shape():
    opt = Adam([_param(), nnkit.zeros(4).requires_grad_()])
    with pytest.raises(
        ValueError,
        match=r"state 'exp_avg' of parameter 1 has shape \(3,\), "
        r"but the parameter has shape \(4,\)",
    ):
        opt.load_state_dict(_adam_state((2,), (3,)))


def test_load_with_missing_state_entry_and_no_class_name():
    sd = _adam_state((2,))
    del sd["optimizer"]
    del sd["state"][0]["exp_avg_sq"]
    with pytest.raises(
        ValueError,
        match=r"state of parameter 0 does not match Adam: "
        r"missing \['exp_avg_sq'\]",
    ):
        Adam([_param()]).load_state_dict(sd)


def test_load_with_unexpected_state_entry():
    sd = _adam_state((2,))
    sd["state"][0]["momentum_buffer"] = sd["state"][0]["exp_avg"]
    with pytest.raises(ValueError, match=r"unexpected \['momentum_buffer'\]"):
        Adam([_param()]).load_state_dict(sd)


def test_load_with_state_for_unknown_parameter():
    sd = _adam_state((2,))
    sd["state"][5] = sd["state"][0]
    with pytest.raises(ValueError, match="state for parameter 5"):
        Adam([_param()]).load_state_dict(sd)


def test_failed_load_leaves_optimizer_untouched():
    a = _param()
    opt = _stepped(Adam([a], lr=0.1), [a])
    sd = _adam_state((2,))
    sd["param_groups"][0]["lr"] = 0.9
    sd["state"][0]["exp_avg"] = np.zeros(3)
    with pytest.raises(ValueError, match="shape"):
        opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.state[a]["step"] == 2


def test_load_with_invalid_hyper_parameter():
    sd = _adam_state((2,))
    sd["param_groups"][0]["lr"] = -3.0
    with pytest.raises(ValueError, match="Invalid learning rate: -3.0"):
        Adam([_param()]).load_state_dict(sd)
