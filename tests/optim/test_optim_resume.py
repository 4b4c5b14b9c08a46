"""Save optimizer + scheduler state at step k, rebuild, load, continue: bit-for-bit."""

import numpy as np
import pytest

import nnkit
from nnkit.optim import SGD, Adagrad, Adam, AdamW, RMSprop
from nnkit.optim import lr_scheduler as lrs

TOTAL, SAVE_AT = 10, 4
A = nnkit.tensor([0.5, -1.0, 2.0, 0.25])
C = nnkit.tensor([1.0, 0.0, -1.0, 3.0])


def _loss(w, b):
    return (((w * A).sum() + b - 0.5) ** 2).sum() + ((w - C) ** 2 * A).sum() + (w * b).sum()


CASES = {
    "sgd-nesterov-step": (
        lambda ps: SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
        lambda o: lrs.StepLR(o, 3, gamma=0.5),
    ),
    "adam-amsgrad-onecycle": (
        lambda ps: Adam(ps, lr=0.05, amsgrad=True),
        lambda o: lrs.OneCycleLR(o, 0.1, TOTAL),
    ),
    "adamw-warmup-cosine": (
        lambda ps: AdamW(ps, lr=0.05, weight_decay=0.1),
        lambda o: lrs.LinearWarmup(o, 4, lrs.CosineAnnealingLR(o, TOTAL), start_factor=0.2),
    ),
    "rmsprop-centered-plateau": (
        lambda ps: RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
        lambda o: lrs.ReduceLROnPlateau(o, patience=0, factor=0.5, threshold=0.5),
    ),
    "adagrad-lambda": (
        lambda ps: Adagrad(ps, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
        lambda o: lrs.LambdaLR(o, lambda t: 0.9**t),
    ),
    "sgd-groups-multistep": (
        lambda ps: SGD(
            [{"params": ps[:1], "momentum": 0.9}, {"params": ps[1:], "lr": 0.01}],
            lr=0.05,
            dampening=0.1,
        ),
        lambda o: lrs.MultiStepLR(o, [3, 6]),
    ),
    "sgd-onecycle-momentum": (
        lambda ps: SGD(ps, lr=0.05, momentum=0.9),
        lambda o: lrs.OneCycleLR(o, [0.1], TOTAL, three_phase=True),
    ),
    "adam-exponential": (
        lambda ps: Adam(ps, lr=0.02, betas=(0.8, 0.9), maximize=False),
        lambda o: lrs.ExponentialLR(o, 0.9),
    ),
}


def _params(values):
    return [nnkit.tensor(v, dtype=nnkit.float32, requires_grad=True) for v in values]


def _host(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def _train(params, opt, sched, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = _loss(*params)
        loss.backward()
        opt.step()
        if isinstance(sched, lrs.ReduceLROnPlateau):
            sched.step(loss.item())
        else:
            sched.step()


def _through_checkpoint(obj):
    """Mimics an HDF5 round trip: str keys, NumPy arrays and scalars, tuples as arrays."""
    if isinstance(obj, dict):
        return {str(k): _through_checkpoint(v) for k, v in obj.items()}
    if isinstance(obj, nnkit.Tensor):
        return _host(obj)
    if obj is None:
        return None
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        return [_through_checkpoint(v) for v in obj]
    return np.asarray(obj)


def _start():
    return _params([np.array([0.1, 0.2, -0.3, 0.4]), np.array([0.5])])


@pytest.mark.parametrize(
    "convert", [lambda sd: sd, _through_checkpoint], ids=["tensors", "checkpoint"]
)
@pytest.mark.parametrize("name", CASES)
def test_resume_is_bit_for_bit(name, convert):
    make_opt, make_sched = CASES[name]
    params = _start()
    opt = make_opt(params)
    sched = make_sched(opt)
    _train(params, opt, sched, SAVE_AT)
    saved = ([_host(p) for p in params], convert(opt.state_dict()), convert(sched.state_dict()))
    _train(params, opt, sched, TOTAL - SAVE_AT)

    resumed = _params(saved[0])
    opt2 = make_opt(resumed)
    sched2 = make_sched(opt2)
    opt2.load_state_dict(saved[1])
    sched2.load_state_dict(saved[2])
    _train(resumed, opt2, sched2, TOTAL - SAVE_AT)

    for p, q in zip(params, resumed):
        assert np.array_equal(_host(p), _host(q))
    assert sched2.get_last_lr() == sched.get_last_lr()
    for key in opt.state[params[0]]:
        a, b = opt.state[params[0]][key], opt2.state[resumed[0]][key]
        assert a == b if key == "step" else np.array_equal(_host(a), _host(b))
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]


def test_trajectory_moves():
    # Guards the resume test against a vacuous pass: training does change the parameters.
    params = _start()
    before = [_host(p) for p in params]
    opt = Adam(params, lr=0.05)
    _train(params, opt, lrs.StepLR(opt, 3), TOTAL)
    assert not np.array_equal(before[0], _host(params[0]))
