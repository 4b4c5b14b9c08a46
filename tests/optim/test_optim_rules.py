"""Each optimizer's trajectory on fixed gradients against NumPy references and torch."""

import numpy as np
import pytest

import nnkit
from nnkit.optim import SGD, Adagrad, Adam, AdamW, RMSprop

SHAPES = [(3,), (2, 2)]
STEPS = 6


def _x0():
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s) for s in SHAPES]


def _grads():
    rng = np.random.default_rng(0)
    return [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]


def _host(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


# ---- references: the documented update rules, written in float64 NumPy ----


def ref_sgd(
    x, grads, lr=1e-3, momentum=0, dampening=0, nesterov=False, weight_decay=0, maximize=False
):
    out, buf = [], None
    for g in grads:
        g = (-g if maximize else g) + weight_decay * x
        if momentum:
            buf = g if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        x = x - lr * g
        out.append(x)
    return out


def _adam(x, grads, lr, betas, eps, amsgrad, maximize, l2, decoupled):
    b1, b2 = betas
    m, v, vmax, out = 0 * x, 0 * x, 0 * x, []
    for t, g in enumerate(grads, 1):
        g = (-g if maximize else g) + l2 * x
        x = x * (1 - lr * decoupled)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        v_hat = (vmax if amsgrad else v) / (1 - b2**t)
        x = x - lr * (m / (1 - b1**t)) / (np.sqrt(v_hat) + eps)
        out.append(x)
    return out


def ref_adam(
    x, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False
):
    return _adam(x, grads, lr, betas, eps, amsgrad, maximize, weight_decay, 0)


def ref_adamw(
    x,
    grads,
    lr=1e-3,
    betas=(0.9, 0.999),
    eps=1e-8,
    weight_decay=1e-2,
    amsgrad=False,
    maximize=False,
):
    return _adam(x, grads, lr, betas, eps, amsgrad, maximize, 0, weight_decay)


def ref_rmsprop(
    x,
    grads,
    lr=1e-2,
    alpha=0.99,
    eps=1e-8,
    weight_decay=0,
    momentum=0,
    centered=False,
    maximize=False,
):
    v, a, b, out = 0 * x, 0 * x, 0 * x, []
    for g in grads:
        g = (-g if maximize else g) + weight_decay * x
        v = alpha * v + (1 - alpha) * g * g
        a = alpha * a + (1 - alpha) * g
        d = np.sqrt(v - a * a if centered else v) + eps
        b = momentum * b + g / d
        x = x - lr * (b if momentum > 0 else g / d)
        out.append(x)
    return out


def ref_adagrad(
    x,
    grads,
    lr=1e-2,
    lr_decay=0,
    weight_decay=0,
    initial_accumulator_value=0,
    eps=1e-10,
    maximize=False,
):
    s, out = np.full_like(x, initial_accumulator_value), []
    for t, g in enumerate(grads, 1):
        g = (-g if maximize else g) + weight_decay * x
        s = s + g * g
        x = x - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s) + eps)
        out.append(x)
    return out


CASES = [
    (SGD, ref_sgd, {"lr": 0.1}),
    (SGD, ref_sgd, {"lr": 0.1, "momentum": 0.9}),
    (SGD, ref_sgd, {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    (SGD, ref_sgd, {"lr": 0.1, "momentum": 0.8, "nesterov": True}),
    (
        SGD,
        ref_sgd,
        {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1, "maximize": True},
    ),
    (SGD, ref_sgd, {"lr": 0.05, "weight_decay": 0.5}),
    (Adam, ref_adam, {}),
    (Adam, ref_adam, {"lr": 0.1, "betas": (0.8, 0.9), "eps": 1e-3}),
    (Adam, ref_adam, {"lr": 0.1, "weight_decay": 0.2}),
    (Adam, ref_adam, {"lr": 0.1, "amsgrad": True}),
    (Adam, ref_adam, {"lr": 0.1, "amsgrad": True, "maximize": True, "weight_decay": 0.1}),
    (AdamW, ref_adamw, {}),
    (AdamW, ref_adamw, {"lr": 0.1, "weight_decay": 0.3, "eps": 1e-2}),
    (AdamW, ref_adamw, {"lr": 0.1, "amsgrad": True, "maximize": True}),
    (RMSprop, ref_rmsprop, {}),
    (RMSprop, ref_rmsprop, {"lr": 0.05, "alpha": 0.9, "eps": 1e-3, "weight_decay": 0.1}),
    (RMSprop, ref_rmsprop, {"lr": 0.05, "momentum": 0.9}),
    (RMSprop, ref_rmsprop, {"lr": 0.05, "centered": True}),
    (RMSprop, ref_rmsprop, {"lr": 0.05, "centered": True, "momentum": 0.5, "maximize": True}),
    (Adagrad, ref_adagrad, {}),
    (Adagrad, ref_adagrad, {"lr": 0.1, "lr_decay": 0.5, "weight_decay": 0.1}),
    (
        Adagrad,
        ref_adagrad,
        {"lr": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-3, "maximize": True},
    ),
]
IDS = [
    f"{cls.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}"
    for cls, _, kw in CASES
]


def run_nnkit(cls, kwargs, device="cpu", dtype=None):
    dtype = dtype or nnkit.float64
    params = [nnkit.tensor(x, dtype=dtype, device=device, requires_grad=True) for x in _x0()]
    opt = cls(params, **kwargs)
    trajectory = []
    for grads in _grads():
        for p, g in zip(params, grads):
            p.grad = nnkit.tensor(g, dtype=dtype, device=device)
        opt.step()
        trajectory.append([_host(p) for p in params])
    return opt, params, trajectory


@pytest.mark.parametrize(("cls", "ref", "kwargs"), CASES, ids=IDS)
def test_matches_numpy_reference(cls, ref, kwargs, device):
    _, _, got = run_nnkit(cls, kwargs, device)
    grads = _grads()
    for i, x0 in enumerate(_x0()):
        want = ref(x0, [g[i] for g in grads], **kwargs)
        for step in range(STEPS):
            np.testing.assert_allclose(got[step][i], want[step], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("cls", "ref", "kwargs"), CASES, ids=IDS)
def test_matches_torch(cls, ref, kwargs):
    torch = pytest.importorskip("torch")
    params = [torch.tensor(x, requires_grad=True) for x in _x0()]
    opt = getattr(torch.optim, cls.__name__)(params, **kwargs)
    _, _, got = run_nnkit(cls, kwargs)
    for step, grads in enumerate(_grads()):
        for p, g in zip(params, grads):
            p.grad = torch.tensor(g)
        opt.step()
        for i, p in enumerate(params):
            np.testing.assert_allclose(got[step][i], p.detach().numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize(("cls", "ref", "kwargs"), CASES[::3], ids=IDS[::3])
def test_float32_stays_float32_and_close(cls, ref, kwargs):
    opt, params, got = run_nnkit(cls, kwargs, dtype=nnkit.float32)
    grads = _grads()
    for i, (p, x0) in enumerate(zip(params, _x0())):
        assert p.dtype == nnkit.float32
        assert p.is_leaf and p.requires_grad
        for value in opt.state[p].values():
            if isinstance(value, nnkit.Tensor):
                assert value.dtype == nnkit.float32
                assert not value.requires_grad
        want = ref(x0, [g[i] for g in grads], **kwargs)
        np.testing.assert_allclose(got[-1][i], want[-1], rtol=1e-4, atol=1e-5)


def test_step_count_and_state_keys():
    opt, params, _ = run_nnkit(Adam, {"amsgrad": True})
    for p in params:
        assert opt.state[p]["step"] == STEPS
        assert set(opt.state[p]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}


def test_parameter_without_grad_is_skipped():
    a = nnkit.tensor([1.0, 2.0], requires_grad=True)
    b = nnkit.tensor([3.0], requires_grad=True)
    opt = SGD([a, b], lr=0.5, momentum=0.9)
    a.grad = nnkit.tensor([1.0, 1.0])
    opt.step()
    np.testing.assert_array_equal(_host(a), [0.5, 1.5])
    np.testing.assert_array_equal(_host(b), [3.0])
    assert a in opt.state and b not in opt.state


def test_update_is_in_place_on_the_parameter_storage():
    p = nnkit.tensor([1.0, 2.0], requires_grad=True)
    alias = p.detach()  # shares p's storage
    version = p._version
    opt = Adam([p], lr=0.1)
    p.grad = nnkit.tensor([1.0, -1.0])
    opt.step()
    np.testing.assert_array_equal(_host(alias), _host(p))
    np.testing.assert_allclose(_host(p), [0.9, 2.1], rtol=1e-6)
    assert p._version > version
    assert p.is_leaf and p.grad_fn is None


def test_groups_use_their_own_hyper_parameters():
    x0, grads = _x0(), _grads()
    a, b = (nnkit.tensor(x, dtype=nnkit.float64, requires_grad=True) for x in x0)
    opt = SGD([{"params": [a], "lr": 0.3, "momentum": 0.5}, {"params": b}], lr=0.1)
    for g in grads:
        a.grad = nnkit.tensor(g[0], dtype=nnkit.float64)
        b.grad = nnkit.tensor(g[1], dtype=nnkit.float64)
        opt.step()
    want_a = ref_sgd(x0[0], [g[0] for g in grads], lr=0.3, momentum=0.5)[-1]
    want_b = ref_sgd(x0[1], [g[1] for g in grads], lr=0.1)[-1]
    np.testing.assert_allclose(_host(a), want_a, rtol=1e-12)
    np.testing.assert_allclose(_host(b), want_b, rtol=1e-12)


def test_momentum_switched_on_mid_run_starts_a_buffer():
    p = nnkit.tensor([1.0], dtype=nnkit.float64, requires_grad=True)
    opt = SGD([p], lr=0.1)
    for momentum in (0, 0.9, 0.9):
        opt.param_groups[0]["momentum"] = momentum
        p.grad = nnkit.tensor([1.0], dtype=nnkit.float64)
        opt.step()
    # steps: -0.1 (no momentum), -0.1 (buffer = g), -0.1 * (0.9 + 1)
    np.testing.assert_allclose(_host(p), [1.0 - 0.1 - 0.1 - 0.19], rtol=1e-12)


def test_step_with_closure_returns_loss():
    p = nnkit.tensor([2.0, -1.0], requires_grad=True)
    opt = SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx(5.0)
    np.testing.assert_allclose(_host(p), [1.0, -0.5])


@pytest.mark.parametrize("lr,steps", [(0.05, 2000)])
def test_adam_minimises_rosenbrock(lr, steps):
    x = nnkit.tensor([-1.5], dtype=nnkit.float64, requires_grad=True)
    y = nnkit.tensor([2.0], dtype=nnkit.float64, requires_grad=True)
    opt = Adam([x, y], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((1 - x) ** 2 + 100 * (y - x * x) ** 2).sum()
        loss.backward()
        opt.step()
    assert abs(x.item() - 1) < 1e-3 and abs(y.item() - 1) < 1e-3
