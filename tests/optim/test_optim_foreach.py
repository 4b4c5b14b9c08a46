"""The group-wise (``foreach``) in-place optimizer steps (``nnkit/backends/optim_kernels``):
20-step trajectories against ``torch.optim`` in float64, with several parameter groups,
0-d parameters and a parameter whose gradient is missing on some steps; an interrupted
run resumed from ``state_dict`` continues bit for bit; updates stay in place (the same
memory, the version bumped); a user subclass overriding ``_update`` still works.
"""

import numpy as np
import pytest

import nnkit
from nnkit import optim
from nnkit.optim.optimizer import Optimizer

torch = pytest.importorskip("torch")

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, eps=1e-6)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("AdamW", dict(lr=0.02, weight_decay=0.05, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, alpha=0.9, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    (
        "Adagrad",
        dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1, maximize=True),
    ),
]
SHAPES = [(5, 3), (3,), (2, 2, 2), ()]
STEPS = 20


def _grads(seed):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s) for s in SHAPES] for _ in range(STEPS)]


def _groups(ps, kw):
    return [{"params": ps[:2]}, {"params": ps[2:], "lr": kw["lr"] * 0.5}]


def _run(opt, ps, grads, lib, start=0, stop=STEPS):
    """Apply ``grads[start:stop]``; the last parameter gets none on every third step."""
    out = []
    for step in range(start, stop):
        for i, p in enumerate(ps):
            missing = i == 3 and step % 3 == 1
            g = None if missing else grads[step][i]
            if lib is torch:
                p.grad = None if g is None else torch.tensor(g)
            else:
                p.grad = None if g is None else nnkit.tensor(g, dtype=p.dtype)
        opt.step()
        out.append([np.array(p.detach().numpy(), copy=True) for p in ps])
    return out


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_trajectory_matches_torch_float64(name, kw):
    rng = np.random.default_rng(7)
    x0 = [rng.standard_normal(s) for s in SHAPES]
    grads = _grads(8)
    ps = [nnkit.tensor(x, dtype=nnkit.float64, requires_grad=True) for x in x0]
    ts = [torch.tensor(x, requires_grad=True) for x in x0]
    ours = _run(getattr(optim, name)(_groups(ps, kw), **kw), ps, grads, nnkit)
    ref = _run(getattr(torch.optim, name)(_groups(ts, kw), **kw), ts, grads, torch)
    for a, b in zip(ours, ref):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [nnkit.float32, nnkit.float64])
@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_resume_from_state_dict_is_exact(name, kw, dtype):
    rng = np.random.default_rng(3)
    x0 = [rng.standard_normal(s) for s in SHAPES]
    grads = _grads(4)
    ps = [nnkit.tensor(x, dtype=dtype, requires_grad=True) for x in x0]
    full = _run(getattr(optim, name)(_groups(ps, kw), **kw), ps, grads, nnkit)
    qs = [nnkit.tensor(x, dtype=dtype, requires_grad=True) for x in x0]
    opt = getattr(optim, name)(_groups(qs, kw), **kw)
    _run(opt, qs, grads, nnkit, 0, 11)
    saved = opt.state_dict()
    rs = [nnkit.tensor(q.detach().numpy().copy(), dtype=dtype, requires_grad=True) for q in qs]
    opt2 = getattr(optim, name)(_groups(rs, kw), **kw)
    opt2.load_state_dict(saved)
    rest = _run(opt2, rs, grads, nnkit, 11, STEPS)
    for a, b in zip(full[11:], rest):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("name,kw", CONFIGS[1::2], ids=[n for n, _ in CONFIGS[1::2]])
def test_update_is_in_place_and_bumps_versions(name, kw):
    p = nnkit.randn(4, 3, requires_grad=True)
    opt = getattr(optim, name)([p], **kw)
    p.grad = nnkit.randn(4, 3)
    opt.step()  # allocates the state
    array = p._impl.data.array
    bufs = {k: (v._impl.data.array, v._version) for k, v in opt.state[p].items() if k != "step"}
    v0 = p._version
    p.grad = nnkit.randn(4, 3)
    opt.step()
    assert p._impl.data.array is array and p._version > v0
    for k, v in opt.state[p].items():
        if k != "step":
            assert v._impl.data.array is bufs[k][0] and v._version > bufs[k][1], k


def test_saved_parameter_modified_by_step_raises():
    p = nnkit.randn(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    y = (p * p).sum()
    p.grad = nnkit.ones(3)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_subclass_overriding_update_still_works():
    class SignSGD(Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr, "maximize": False, "weight_decay": 0})

        def _update(self, p, grad, state, group):
            p.add_(grad.sign(), alpha=-group["lr"])

    p = nnkit.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = SignSGD([p], lr=0.5)
    p.grad = nnkit.tensor([0.3, -0.1, 0.0])
    opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), [0.5, -1.5, 3.0])
    assert opt.state[p]["step"] == 1
