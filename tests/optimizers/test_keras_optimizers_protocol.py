"""nnkit.optimizers as nnkit's training loop uses them: build, the PyTorch-style protocol
(step, zero_grad, param_groups, state_dict), configs, and ``fit``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import nnkit
from nnkit import optimizers
from nnkit.io import load_checkpoint, save_checkpoint
from tests.optimizers.test_keras_optimizers import SHAPES, make_grads, make_variables, npy

KINDS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]
RICH = {  # arguments that give each optimizer all its state
    "SGD": {"momentum": 0.9, "nesterov": True},
    "Adam": {"amsgrad": True},
    "AdamW": {"amsgrad": True},
    "RMSprop": {"momentum": 0.5, "centered": True},
    "Adagrad": {"initial_accumulator_value": 0.2},
}


def apply(opt, variables, grads) -> None:
    opt.apply([nnkit.tensor(g, dtype=v.dtype) for g, v in zip(grads, variables)])


# ------------------------------------------------------------------- state_dict
@pytest.mark.parametrize("kind", KINDS)
def test_state_dict_round_trip_through_a_checkpoint_continues_bit_exactly(kind, tmp_path):
    kwargs = {
        "learning_rate": 0.05,
        "weight_decay": 0.01,
        "gradient_accumulation_steps": 3,
        "use_ema": True,
        **RICH[kind],
    }
    cls = getattr(optimizers, kind)
    grads = make_grads(steps=10)
    original = make_variables()
    opt = cls(**kwargs)
    opt.build(original)
    for step in grads[:4]:  # mid-way through an accumulation cycle
        apply(opt, original, step)
    opt.param_groups[0]["initial_lr"] = 0.05  # what a scheduler adds to the group
    save_checkpoint(tmp_path / "ckpt.h5", optimizer=opt)
    restored_vars = [nnkit.tensor(npy(v), requires_grad=True) for v in original]
    restored = cls(**kwargs)
    restored.build(restored_vars)
    load_checkpoint(tmp_path / "ckpt.h5", optimizer=restored)
    assert restored._iterations == 4 and restored.iterations == 1
    assert restored.param_groups[0]["initial_lr"] == 0.05
    for step in grads[4:]:
        apply(opt, original, step)
        apply(restored, restored_vars, step)
    for a, b in zip(original, restored_vars):
        assert np.array_equal(npy(a), npy(b))
    for a, b in zip(opt.variables, restored.variables):
        assert np.array_equal(a.numpy(), b.numpy())
    sd = restored.state_dict()
    assert sd["iterations"] == 10 and sd["optimizer"] == kind and sd["learning_rate"] == 0.05
    assert set(sd["variables"]) >= {"average", "gradient_accumulator"}


def test_load_state_dict_refuses_what_does_not_fit():
    variables = make_variables()
    adam = optimizers.Adam(amsgrad=True)
    adam.build(variables)
    apply(adam, variables, make_grads(1)[0])
    plain = optimizers.Adam()
    plain.build(make_variables())
    with pytest.raises(ValueError, match=r"unexpected \['velocity_hat'\]"):
        plain.load_state_dict(adam.state_dict())
    with pytest.raises(ValueError, match="is for optimizer Adam, but this optimizer is SGD"):
        sgd = optimizers.SGD()
        sgd.build(make_variables())
        sgd.load_state_dict(adam.state_dict())
    with pytest.raises(ValueError, match="call optimizer.build"):
        optimizers.Adam(amsgrad=True).load_state_dict(adam.state_dict())
    other = optimizers.Adam(amsgrad=True)
    other.build(make_variables()[:1])
    with pytest.raises(ValueError, match="has 2 entries"):
        other.load_state_dict(adam.state_dict())
    assert other._iterations == 0  # nothing changed


# ------------------------------------------------------------ learning rate sync
def test_learning_rate_and_param_groups_stay_in_sync():
    v = nnkit.zeros(2, requires_grad=True)
    opt = optimizers.SGD(learning_rate=0.1)
    assert opt.param_groups[0]["lr"] == opt.learning_rate == 0.1
    opt.build([v])
    assert opt.param_groups[0]["params"] == [v]
    opt.learning_rate = 0.05
    assert opt.param_groups[0]["lr"] == 0.05
    opt.param_groups[0]["lr"] = 0.25  # what schedulers and ReduceLROnPlateau do
    assert opt.learning_rate == 0.25 and opt.get_config()["learning_rate"] == 0.25
    v.grad = nnkit.ones(2)
    opt.step()
    np.testing.assert_allclose(npy(v), [-0.25, -0.25])
    sched = nnkit.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    sched.step()
    assert opt.learning_rate == pytest.approx(0.125)
    plateau = nnkit.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.1, patience=0)
    plateau.step(1.0)
    plateau.step(1.0)
    assert opt.learning_rate == pytest.approx(0.0125)


def test_a_schedule_is_shown_in_param_groups_and_cannot_be_overwritten():
    v = nnkit.zeros(2)
    opt = optimizers.SGD(learning_rate=lambda step: 0.1 / (1 + step))
    assert opt.param_groups[0]["lr"] == opt.learning_rate == 0.1
    opt.apply_gradients([(nnkit.ones(2), v)])
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)
    assert opt.state_dict()["learning_rate"] is None
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.3
    opt.param_groups[0]["lr"] = 0.3
    with pytest.raises(TypeError, match="is a schedule"):
        opt.apply_gradients([(nnkit.ones(2), v)])
    opt.learning_rate = lambda: 0.5  # another callable may replace it
    opt.param_groups[0]["lr"] = 0.5
    assert opt.learning_rate == 0.5


# ------------------------------------------------------------------------ build
def test_build_is_idempotent_for_the_same_list_and_refuses_another():
    variables = make_variables()
    opt = optimizers.Adam()
    opt.build(variables)
    slots = opt.variables[2:]
    opt.build(list(variables))
    assert all(a is b for a, b in zip(opt.variables[2:], slots)) and len(slots) == 4
    with pytest.raises(ValueError, match="already built on 2 variables"):
        opt.build(make_variables())
    with pytest.raises(ValueError, match="already built"):
        opt.build(variables[:1])
    with pytest.raises(ValueError, match="Unknown variable"):
        opt.apply_gradients([(nnkit.ones(3), nnkit.zeros(3))])
    with pytest.raises(ValueError, match="must match"):
        opt.apply([nnkit.ones(3)])
    with pytest.raises(ValueError, match="gradient of shape"):
        opt.apply([nnkit.ones(4), nnkit.ones(2, 4)])


def test_build_errors():
    v = nnkit.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="more than once"):
        optimizers.SGD().build([v, v])
    with pytest.raises(ValueError, match="floating-point leaf"):
        optimizers.SGD().build([v * 2])
    with pytest.raises(ValueError, match="floating-point leaf"):
        optimizers.SGD().build([nnkit.zeros(2, dtype=nnkit.int64)])
    with pytest.raises(TypeError, match="only update Tensors"):
        optimizers.SGD().build([np.zeros(2)])
    with pytest.raises(ValueError, match="must already be built"):
        optimizers.SGD().apply([nnkit.ones(2)])
    with pytest.raises(ValueError, match="is not built"):
        optimizers.SGD().step()
    with pytest.raises(NotImplementedError, match="single parameter group"):
        optimizers.SGD().add_param_group({"params": [v]})


def test_apply_gradients_builds_and_filters_missing_gradients():
    a, b = nnkit.tensor([3.0, 4.0]), nnkit.tensor([3.0, 4.0])
    opt = optimizers.SGD(learning_rate=1.0)
    with pytest.raises(ValueError, match="No gradients provided"):
        optimizers.SGD().apply_gradients([(None, a)])
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        opt.apply_gradients([(None, a), (nnkit.ones(2), b)])
    np.testing.assert_allclose(a.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(b.numpy(), [2.0, 3.0])
    assert opt.built and opt.iterations == 1
    opt.apply([[1.0, 1.0], np.ones(2)])  # arrays are gradients too
    np.testing.assert_allclose(b.numpy(), [1.0, 2.0])


def test_step_uses_grad_skips_missing_and_zero_grad_clears():
    p, q = nnkit.ones(2, requires_grad=True), nnkit.ones(2, requires_grad=True)
    opt = optimizers.SGD(learning_rate=0.5)
    opt.build([p, q])
    opt.step()  # no gradient at all: nothing happens, as in PyTorch
    assert opt.iterations == 0
    (p * nnkit.tensor([1.0, 2.0])).sum().backward()
    assert opt.step(closure=lambda: 7) == 7
    np.testing.assert_allclose(npy(p), [0.5, 0.0])
    np.testing.assert_allclose(npy(q), [1.0, 1.0])
    assert opt.iterations == 1
    opt.zero_grad()
    assert p.grad is None


# ---------------------------------------------------------------- constructors
def test_constructor_arguments_and_errors():
    assert optimizers.AdamW().weight_decay == 0.004
    assert optimizers.Adam().epsilon == optimizers.RMSprop().epsilon == 1e-7
    assert optimizers.Adagrad().initial_accumulator_value == 0.1
    assert optimizers.SGD().get_config()["learning_rate"] == 0.01
    assert optimizers.RMSprop().rho == 0.9
    with pytest.raises(ValueError, match="`weight_decay` must be a float"):
        optimizers.AdamW(weight_decay=None)
    with pytest.raises(ValueError, match=r"`momentum` must be a float between \[0, 1\]"):
        optimizers.SGD(momentum=2.0)
    with pytest.raises(ValueError, match="Only one of `clipnorm`, `clipvalue`"):
        optimizers.SGD(clipnorm=0.1, clipvalue=0.1)
    with pytest.raises(ValueError, match="integer >= 2"):
        optimizers.Adam(gradient_accumulation_steps=1)
    with pytest.raises(ValueError, match="not recognized"):
        optimizers.Adam(lr=0.1)
    with pytest.raises(ValueError, match="should be float"):
        optimizers.Adam(learning_rate="fast")
    with pytest.raises(ValueError, match="ema_momentum"):
        optimizers.Adam(use_ema=True, ema_momentum=2.0)
    with pytest.warns(UserWarning, match="`decay` is no longer supported"):
        optimizers.SGD(decay=0.1)


def test_auto_names_follow_keras():
    first, second = optimizers.Adam(), optimizers.Adam()
    assert first.name.startswith("adam") and second.name != first.name
    assert optimizers.AdamW().name.startswith("adam_w")
    assert optimizers.RMSprop(name="mine").name == "mine"


# --------------------------------------------------------------- get and configs
def test_get_resolves_names_dicts_and_instances():
    assert isinstance(optimizers.get("sgd"), optimizers.SGD)
    assert isinstance(optimizers.get("adamw"), optimizers.AdamW)
    assert isinstance(optimizers.get("RMSprop"), optimizers.RMSprop)
    assert isinstance(optimizers.get("adagrad"), optimizers.Adagrad)
    assert optimizers.get(None) is None
    adam = optimizers.Adam()
    assert optimizers.get(adam) is adam
    got = optimizers.get({"class_name": "adam", "config": {"learning_rate": 0.5, "amsgrad": True}})
    assert isinstance(got, optimizers.Adam) and got.learning_rate == 0.5 and got.amsgrad
    with pytest.raises(ValueError, match="Could not interpret"):
        optimizers.get("typo")
    with pytest.raises(ValueError, match="Could not interpret"):
        optimizers.get(nnkit.optim.SGD([nnkit.zeros(1, requires_grad=True)], lr=0.1))


@pytest.mark.parametrize("kind", KINDS)
def test_config_round_trips(kind):
    cls = getattr(optimizers, kind)
    opt = cls(
        learning_rate=0.5,
        weight_decay=0.01,
        global_clipnorm=1.0,
        gradient_accumulation_steps=4,
        **RICH[kind],
    )
    config = opt.get_config()
    assert cls.from_config(config).get_config() == config
    serialized = optimizers.serialize(opt)
    assert serialized["class_name"] == kind
    again = optimizers.deserialize(json.loads(json.dumps(serialized)))
    assert type(again) is cls and again.get_config() == config and again.name == opt.name
    assert optimizers.get(serialized).get_config() == config


@nnkit.saving.register_serializable(package="tests_optimizers")
class InverseTime:
    """A Keras-style learning-rate schedule: called with the iteration count."""

    def __init__(self, initial: float, rate: float) -> None:
        self.initial, self.rate = initial, rate

    def __call__(self, step: int) -> float:
        return self.initial / (1 + self.rate * step)

    def get_config(self) -> dict:
        return {"initial": self.initial, "rate": self.rate}

    @classmethod
    def from_config(cls, config: dict) -> InverseTime:
        return cls(**config)


def test_a_schedule_serializes_with_its_optimizer():
    opt = optimizers.Adam(learning_rate=InverseTime(0.1, 0.5))
    again = optimizers.deserialize(json.loads(json.dumps(optimizers.serialize(opt))))
    assert isinstance(again._schedule, InverseTime) and again.learning_rate == 0.1
    keras_style = opt.get_config()
    keras_style["learning_rate"] = nnkit.saving.serialize(keras_style["learning_rate"])
    assert optimizers.Adam.from_config(keras_style).learning_rate == 0.1


# ------------------------------------------------------------------ summary view
def test_variables_as_keras_lists_them():
    variables = make_variables()
    opt = optimizers.Adam(gradient_accumulation_steps=2)
    opt.build(variables)
    listed = opt.variables
    n = sum(math.prod(s) for s in SHAPES)
    assert len(listed) == 2 + 2 * 3 and sum(t.numel() for t in listed) == 2 + 3 * n
    assert listed[0].dtype == nnkit.int64 and listed[1].dtype == nnkit.float32
    twin = optimizers.Adam(gradient_accumulation_steps=2)
    twin.build(make_variables())
    apply(opt, variables, make_grads(1)[0])
    twin.set_weights([t.numpy() for t in opt.variables])
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(opt.variables, twin.variables))
    assert twin.learning_rate == 0.001  # not its float32 copy
    with pytest.raises(ValueError, match="not yet been built"):
        optimizers.Adam().set_weights([])


# ------------------------------------------------------------------------- fit
def regression(n: int = 96):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.1).astype(np.float32)[:, None]
    return x, y


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [
        ("SGD", {"learning_rate": 0.05, "momentum": 0.9}),
        ("Adam", {"learning_rate": 0.05}),
        ("AdamW", {"learning_rate": 0.05}),
        ("RMSprop", {"learning_rate": 0.1}),
        ("Adagrad", {"learning_rate": 0.5}),
        ("Adam", {"learning_rate": 0.2, "gradient_accumulation_steps": 2, "clipnorm": 5.0}),
    ],
)
def test_fit_trains_with_a_built_keras_optimizer(kind, kwargs):
    x, y = regression()
    nnkit.manual_seed(0)
    model = nnkit.Sequential(nnkit.nn.Linear(4, 1))
    opt = getattr(optimizers, kind)(**kwargs)
    opt.build(list(model.parameters()))
    model.compile(opt, "mse")
    history = model.fit(x, y, batch_size=16, epochs=4, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    assert model.optimizer is opt
    assert opt.iterations == 4 * 6 // kwargs.get("gradient_accumulation_steps", 1)


def test_fit_callbacks_change_the_learning_rate():
    x, y = regression()
    model = nnkit.Sequential(nnkit.nn.Linear(4, 1))
    opt = optimizers.SGD(learning_rate=0.08)
    opt.build(list(model.parameters()))
    model.compile(opt, "mse")
    schedule = nnkit.callbacks.LearningRateScheduler(lambda epoch, lr: lr / 2)
    model.fit(x, y, batch_size=32, epochs=3, verbose=0, callbacks=[schedule])
    assert opt.learning_rate == pytest.approx(0.01)


def test_fit_builds_an_unbuilt_keras_optimizer():
    x, y = regression()
    model = nnkit.Sequential(nnkit.nn.Linear(4, 1))
    model.compile(optimizers.Adam(learning_rate=0.05), "mse")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)


def test_model_save_and_load_with_a_keras_optimizer(tmp_path):
    x, y = regression()
    model = nnkit.Sequential(nnkit.nn.Linear(4, 1))
    opt = optimizers.Adam(learning_rate=0.05)
    opt.build(list(model.parameters()))
    model.compile(opt, "mse")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    model.save(tmp_path / "m.h5")
    loaded = nnkit.load_model(tmp_path / "m.h5")
    assert isinstance(loaded.optimizer, optimizers.Adam)
    assert loaded.optimizer.iterations == opt.iterations
    nnkit.manual_seed(1)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    nnkit.manual_seed(1)
    loaded.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(model.parameters(), loaded.parameters()):  # the moments came back too
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
