"""Learning-rate schedules: closed forms, torch's values, state dicts and bad input."""

import math

import numpy as np
import pytest

import nnkit
from nnkit.optim import SGD, Adagrad, Adam
from nnkit.optim.lr_scheduler import (
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearWarmup,
    LRScheduler,
    MultiStepLR,
    OneCycleLR,
    ReduceLROnPlateau,
    StepLR,
)

BASE = [0.1, 0.2]
STEPS = 25


def _opt(cls=SGD, **kwargs):
    params = [nnkit.tensor([1.0], requires_grad=True) for _ in BASE]
    return cls([{"params": [p], "lr": lr} for p, lr in zip(params, BASE)], **kwargs)


def _lrs(sched, steps=STEPS):
    out = [sched.get_last_lr()]
    for _ in range(steps):
        sched.step()
        out.append(sched.get_last_lr())
    return np.array(out)


def _onecycle(t, max_lr, total, pct=0.3, div=25.0, final_div=1e4):
    initial = max_lr / div
    peak = pct * total - 1
    if t <= peak:
        frac, start, end = t / peak, initial, max_lr
    else:
        frac, start, end = (t - peak) / (total - 1 - peak), max_lr, initial / final_div
    return end + (start - end) * (1 + math.cos(math.pi * frac)) / 2


def _warmup_cosine(t, base, warmup=5, factor=0.1, t_max=10):
    if t < warmup:
        return base * (factor + (1 - factor) * t / warmup)
    return base * (1 + math.cos(math.pi * (t - warmup) / t_max)) / 2


SCHEDULES = {
    "step": (lambda o: StepLR(o, 3, gamma=0.5), lambda t, b: b * 0.5 ** (t // 3)),
    "multistep": (
        lambda o: MultiStepLR(o, [9, 2, 5, 5], gamma=0.1),
        lambda t, b: b * 0.1 ** sum(m <= t for m in [2, 5, 5, 9]),
    ),
    "exponential": (lambda o: ExponentialLR(o, 0.9), lambda t, b: b * 0.9**t),
    "cosine": (
        lambda o: CosineAnnealingLR(o, 10, eta_min=0.01),
        lambda t, b: 0.01 + (b - 0.01) * (1 + math.cos(math.pi * t / 10)) / 2,
    ),
    "lambda": (lambda o: LambdaLR(o, lambda t: 1 / (t + 1)), lambda t, b: b / (t + 1)),
    "onecycle": (
        lambda o: OneCycleLR(o, 1.0, 30, cycle_momentum=False),
        lambda t, b: _onecycle(t, 1.0, 30),
    ),
    "warmup": (
        lambda o: LinearWarmup(o, 5, start_factor=0.1),
        lambda t, b: b * min(1.0, 0.1 + 0.9 * t / 5),
    ),
    "warmup-cosine": (
        lambda o: LinearWarmup(o, 5, CosineAnnealingLR(o, 10), start_factor=0.1),
        _warmup_cosine,
    ),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_matches_closed_form(name):
    make, formula = SCHEDULES[name]
    got = _lrs(make(_opt()))
    want = [[formula(t, b) for b in BASE] for t in range(STEPS + 1)]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16)


def _torch_schedule(name, torch, opt):
    s = torch.optim.lr_scheduler
    if name == "warmup":
        return s.LinearLR(opt, start_factor=0.1, total_iters=5)
    if name == "warmup-cosine":
        return s.SequentialLR(
            opt,
            [s.LinearLR(opt, start_factor=0.1, total_iters=5), s.CosineAnnealingLR(opt, 10)],
            milestones=[5],
        )
    return {
        "step": lambda: s.StepLR(opt, 3, gamma=0.5),
        "multistep": lambda: s.MultiStepLR(opt, [9, 2, 5, 5], gamma=0.1),
        "exponential": lambda: s.ExponentialLR(opt, 0.9),
        "cosine": lambda: s.CosineAnnealingLR(opt, 10, eta_min=0.01),
        "lambda": lambda: s.LambdaLR(opt, lambda t: 1 / (t + 1)),
        "onecycle": lambda: s.OneCycleLR(opt, 1.0, 30, cycle_momentum=False),
    }[name]()


@pytest.mark.filterwarnings("ignore::UserWarning")  # SequentialLR's internal step(0)
@pytest.mark.parametrize("name", SCHEDULES)
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    params = [torch.zeros(1, requires_grad=True) for _ in BASE]
    opt = torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, BASE)])
    sched = _torch_schedule(name, torch, opt)
    want = [sched.get_last_lr()]
    for _ in range(STEPS):
        opt.step()
        sched.step()
        want.append(sched.get_last_lr())
    got = _lrs(SCHEDULES[name][0](_opt()))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)


def _torch_onecycle_trace(torch, opt_name, **kwargs):
    p = torch.zeros(1, requires_grad=True)
    opt = getattr(torch.optim, opt_name)([p], lr=0.1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 0.5, 20, **kwargs)
    key = "betas" if opt_name == "Adam" else "momentum"
    trace = []
    for _ in range(20):
        group = opt.param_groups[0]
        trace.append((group["lr"], group[key][0] if key == "betas" else group[key]))
        opt.step()
        sched.step()
    return np.array(trace)


@pytest.mark.parametrize(
    ("opt_cls", "kwargs"),
    [
        (SGD, {}),
        (Adam, {}),
        (SGD, {"three_phase": True, "anneal_strategy": "linear", "pct_start": 0.25}),
        (
            Adam,
            {
                "three_phase": True,
                "base_momentum": 0.7,
                "max_momentum": 0.9,
                "div_factor": 10.0,
                "final_div_factor": 100.0,
            },
        ),
    ],
)
def test_onecycle_lr_and_momentum_match_torch(opt_cls, kwargs):
    torch = pytest.importorskip("torch")
    want = _torch_onecycle_trace(torch, opt_cls.__name__, **kwargs)
    opt = opt_cls([nnkit.tensor([1.0], requires_grad=True)], lr=0.1)
    sched = OneCycleLR(opt, 0.5, 20, **kwargs)
    got = []
    for _ in range(20):
        group = opt.param_groups[0]
        got.append((group["lr"], group["betas"][0] if opt_cls is Adam else group["momentum"]))
        sched.step()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if opt_cls is Adam:
        assert opt.param_groups[0]["betas"][1] == 0.999


def test_onecycle_from_epochs_and_steps_per_epoch():
    sched = OneCycleLR(_opt(), [1.0, 2.0], epochs=3, steps_per_epoch=4)
    assert sched.total_steps == 12
    assert sched.get_last_lr() == pytest.approx([1.0 / 25, 2.0 / 25])


def test_onecycle_stepping_past_the_end():
    sched = OneCycleLR(_opt(), 1.0, 5)
    for _ in range(5):
        sched.step()
    with pytest.raises(
        ValueError, match="Tried to step 6 times. The specified number of total steps is 5"
    ):
        sched.step()


def test_construction_sets_initial_lr_and_step_zero():
    opt = _opt()
    sched = StepLR(opt, 2, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == BASE
    assert sched.base_lrs == BASE and sched.last_epoch == 0
    assert sched.get_last_lr() == BASE
    opt.param_groups[0]["lr"] = 5.0
    second = ExponentialLR(opt, 0.5)
    assert second.base_lrs == BASE  # initial_lr is set once, like torch


def test_resuming_with_last_epoch():
    opt = _opt()
    with pytest.raises(
        KeyError,
        match="param 'initial_lr' is not specified in "
        r"param_groups\[0\] when resuming an optimizer",
    ):
        StepLR(opt, 2, last_epoch=3)
    for group in opt.param_groups:
        group["initial_lr"] = group["lr"]
    sched = StepLR(opt, 2, gamma=0.5, last_epoch=3)
    assert sched.last_epoch == 4
    assert sched.get_last_lr() == pytest.approx([b * 0.25 for b in BASE])


def test_lambda_lr_per_group_functions_and_state_dict_skips_them():
    opt = _opt()
    sched = LambdaLR(opt, [lambda t: 1.0, lambda t: 0.5**t])
    sched.step()
    sched.step()
    assert sched.get_last_lr() == pytest.approx([0.1, 0.05])
    state = sched.state_dict()
    assert "lr_lambdas" not in state
    fresh = LambdaLR(_opt(), [lambda t: 1.0, lambda t: 0.5**t])
    fresh.load_state_dict(state)
    fresh.step()
    assert fresh.get_last_lr() == pytest.approx([0.1, 0.025])


@pytest.mark.parametrize("name", SCHEDULES)
def test_state_dict_round_trip(name):
    make = SCHEDULES[name][0]
    first = make(_opt())
    for _ in range(7):
        first.step()
    state = first.state_dict()
    second = make(_opt())
    second.load_state_dict(state)
    assert second.last_epoch == 7 and second.get_last_lr() == first.get_last_lr()
    np.testing.assert_array_equal(_lrs(second, 6), _lrs(first, 6))


def test_load_state_dict_with_wrong_keys():
    state = ExponentialLR(_opt(), 0.5).state_dict()
    with pytest.raises(
        ValueError,
        match=r"state dict does not match StepLR: missing "
        r"\['step_size'\], unexpected \[\]",
    ):
        StepLR(_opt(), 2).load_state_dict(state)


def test_linear_warmup_state_dict_nests_the_after_schedule():
    opt = _opt()
    sched = LinearWarmup(opt, 2, StepLR(opt, 3))
    state = sched.state_dict()
    assert state["after"]["step_size"] == 3
    opt2 = _opt()
    with pytest.raises(ValueError, match="`after` schedule"):
        LinearWarmup(opt2, 2).load_state_dict(state)


# ---- ReduceLROnPlateau ----


def _plateau_trace(sched, metrics):
    out = []
    for metric in metrics:
        sched.step(metric)
        out.append(sched.get_last_lr())
    return out


def test_plateau_reduces_after_patience():
    sched = ReduceLROnPlateau(_opt(), factor=0.5, patience=2)
    assert sched.get_last_lr() == BASE
    trace = _plateau_trace(sched, [5.0, 5.0, 5.0, 5.0])
    assert trace[2] == BASE
    assert trace[3] == pytest.approx([0.05, 0.1])
    assert sched.num_bad_epochs == 0 and sched.last_epoch == 4


def test_plateau_relative_threshold():
    sched = ReduceLROnPlateau(_opt(), patience=0)
    sched.step(1.0)
    sched.step(0.99995)  # not better than 1.0 * (1 - 1e-4)
    assert sched.get_last_lr() == pytest.approx([0.01, 0.02])
    assert sched.best == 1.0


def test_plateau_min_lr_and_eps():
    sched = ReduceLROnPlateau(_opt(), patience=0, min_lr=[0.05, 0.0], factor=0.1)
    _plateau_trace(sched, [1.0, 1.0, 1.0])
    assert sched.get_last_lr() == pytest.approx([0.05, 0.002])
    opt = _opt()
    opt.param_groups[0]["lr"] = 1e-9
    tiny = ReduceLROnPlateau(opt, patience=0)
    _plateau_trace(tiny, [1.0, 1.0])
    assert tiny.get_last_lr()[0] == 1e-9  # a change below eps is skipped


def test_plateau_accepts_tensor_metric():
    sched = ReduceLROnPlateau(_opt(), mode="max", patience=0)
    sched.step(nnkit.tensor(2.0))
    sched.step(nnkit.tensor([1.0]))
    assert sched.best == 2.0 and sched.get_last_lr() == pytest.approx([0.01, 0.02])


PLATEAU_METRICS = [
    3.0,
    2.0,
    2.0,
    1.9999,
    2.1,
    1.5,
    1.5,
    1.5,
    1.5,
    1.5,
    1.4,
    1.6,
    1.6,
    1.6,
    1.6,
    1.6,
    1.6,
    1.0,
    2.0,
    2.0,
    2.0,
    2.0,
    2.0,
    2.0,
]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"patience": 1, "factor": 0.5},
        {"mode": "max", "patience": 1, "factor": 0.5, "cooldown": 2},
        {"threshold_mode": "abs", "threshold": 0.2, "patience": 1, "min_lr": 0.02},
        {"mode": "max", "threshold_mode": "abs", "threshold": 0.05, "patience": 0, "eps": 0.01},
    ],
)
def test_plateau_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    params = [torch.zeros(1, requires_grad=True) for _ in BASE]
    opt = torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, BASE)])
    ref = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    want = []
    for metric in PLATEAU_METRICS:
        ref.step(metric)
        want.append(ref.get_last_lr())
    got = _plateau_trace(ReduceLROnPlateau(_opt(), **kwargs), PLATEAU_METRICS)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_plateau_state_dict_round_trip():
    first = ReduceLROnPlateau(_opt(), patience=1, cooldown=1)
    _plateau_trace(first, PLATEAU_METRICS[:9])
    second = ReduceLROnPlateau(_opt(), patience=1, cooldown=1)
    second.load_state_dict(first.state_dict())
    for group, lr in zip(second.optimizer.param_groups, first.get_last_lr()):
        group["lr"] = lr
    rest = PLATEAU_METRICS[9:]
    assert _plateau_trace(second, rest) == _plateau_trace(first, rest)


# ---- bad input ----


@pytest.mark.parametrize(
    ("make", "exc", "message"),
    [
        (lambda o: StepLR(o, 0), ValueError, "step_size must be a positive integer, but got 0"),
        (lambda o: CosineAnnealingLR(o, 0), ValueError, "T_max must be positive, but got 0"),
        (
            lambda o: LambdaLR(o, [lambda t: 1.0]),
            ValueError,
            "expected 2 values for lr_lambda, got 1",
        ),
        (
            lambda o: OneCycleLR(o, 1.0),
            ValueError,
            r"You must define either total_steps OR \(epochs AND steps_per_epoch\)",
        ),
        (
            lambda o: OneCycleLR(o, 1.0, 0),
            ValueError,
            "Expected positive integer total_steps, but got 0",
        ),
        (
            lambda o: OneCycleLR(o, 1.0, epochs=0, steps_per_epoch=3),
            ValueError,
            "Expected positive integer epochs, but got 0",
        ),
        (
            lambda o: OneCycleLR(o, 1.0, 10, pct_start=1.5),
            ValueError,
            "Expected float between 0 and 1 pct_start, but got 1.5",
        ),
        (
            lambda o: OneCycleLR(o, 1.0, 10, anneal_strategy="exp"),
            ValueError,
            "anneal_strategy must be one of 'cos' or 'linear', instead got exp",
        ),
        (
            lambda o: OneCycleLR(o, [1.0, 2.0, 3.0], 10),
            ValueError,
            "expected 2 values for max_lr, got 3",
        ),
        (
            lambda o: LinearWarmup(o, -1),
            ValueError,
            "warmup_steps must be a non-negative integer, got -1",
        ),
        (
            lambda o: LinearWarmup(o, 3, start_factor=1.5),
            ValueError,
            r"start_factor must be in \[0, 1\], but got 1.5",
        ),
        (lambda o: LinearWarmup(o, 3, StepLR(_opt(), 2)), ValueError, "share one optimizer"),
        (
            lambda o: LinearWarmup(o, 3, ReduceLROnPlateau(o)),
            TypeError,
            "cannot hand over to ReduceLROnPlateau",
        ),
        (lambda o: ReduceLROnPlateau(o, factor=1.0), ValueError, r"Factor should be < 1.0."),
        (lambda o: ReduceLROnPlateau(o, mode="low"), ValueError, "mode low is unknown!"),
        (
            lambda o: ReduceLROnPlateau(o, threshold_mode="pct"),
            ValueError,
            "threshold mode pct is unknown!",
        ),
        (
            lambda o: ReduceLROnPlateau(o, min_lr=[0.1]),
            ValueError,
            "expected 2 values for min_lr, got 1",
        ),
    ],
)
def test_bad_input(make, exc, message):
    with pytest.raises(exc, match=message):
        make(_opt())


def test_onecycle_momentum_needs_momentum_or_betas():
    with pytest.raises(
        ValueError,
        match="optimizer must support momentum or beta1 with `cycle_momentum` option enabled",
    ):
        OneCycleLR(_opt(Adagrad), 1.0, 10)
    OneCycleLR(_opt(Adagrad), 1.0, 10, cycle_momentum=False)


@pytest.mark.parametrize(
    "make",
    [
        lambda o: StepLR(o, 2),
        lambda o: ReduceLROnPlateau(o),
        lambda o: OneCycleLR(o, 1.0, 10),
        lambda o: LambdaLR(o, lambda t: 1.0),
    ],
)
def test_scheduler_needs_an_optimizer(make):
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        make([])


def test_base_class_needs_get_lr():
    with pytest.raises(NotImplementedError):
        LRScheduler(_opt())
