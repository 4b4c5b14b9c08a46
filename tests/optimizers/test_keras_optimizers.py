"""Keras 3's optimizers (nnkit.optimizers) against a NumPy transcription of Keras's
formulas (float64) and the golden values of Keras's own tests (float32)."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit
from nnkit import optimizers
from tests.optimizers.keras_reference import KerasReference

SHAPES = [(3,), (2, 4)]
STEPS = 6


def make_variables(seed: int = 0, dtype=nnkit.float64) -> list:
    rng = np.random.default_rng(seed)
    return [nnkit.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=True) for s in SHAPES]


def make_grads(steps: int = STEPS, seed: int = 1, scale: float = 3.0) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[scale * rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]


def run(cls, kwargs, grads, variables=None):
    variables = make_variables() if variables is None else variables
    opt = cls(**kwargs)
    for step in grads:
        opt.apply_gradients(
            zip([nnkit.tensor(g, dtype=v.dtype) for g, v in zip(step, variables)], variables)
        )
    return opt, variables


def reference(kind, kwargs, grads):
    ref = KerasReference(kind, [v.detach().numpy() for v in make_variables()], **kwargs)
    for step in grads:
        ref.apply(step)
    return ref


def npy(t) -> np.ndarray:
    return t.detach().numpy()


def assert_matches(variables, ref) -> None:
    for v, r in zip(variables, ref.vars):
        np.testing.assert_allclose(npy(v), r, rtol=1e-12, atol=1e-15)


CASES = [
    ("SGD", {}),
    ("SGD", {"learning_rate": 0.05, "momentum": 0.9}),
    ("SGD", {"learning_rate": 0.05, "momentum": 0.8, "nesterov": True}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.5, "weight_decay": 0.01}),
    ("Adam", {}),
    ("Adam", {"amsgrad": True}),
    (
        "Adam",
        {
            "learning_rate": 0.01,
            "beta_1": 0.8,
            "beta_2": 0.99,
            "epsilon": 1e-5,
            "weight_decay": 0.1,
        },
    ),
    ("AdamW", {}),
    ("AdamW", {"learning_rate": 0.02, "weight_decay": 0.05, "amsgrad": True}),
    ("RMSprop", {}),
    ("RMSprop", {"momentum": 0.9}),
    ("RMSprop", {"centered": True}),
    (
        "RMSprop",
        {
            "learning_rate": 0.01,
            "rho": 0.8,
            "momentum": 0.5,
            "epsilon": 1e-5,
            "centered": True,
            "weight_decay": 0.02,
        },
    ),
    ("Adagrad", {}),
    (
        "Adagrad",
        {
            "learning_rate": 0.2,
            "initial_accumulator_value": 0.3,
            "epsilon": 1e-6,
            "weight_decay": 0.01,
        },
    ),
]
KINDS = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]


@pytest.mark.parametrize(
    ("kind", "kwargs"), CASES, ids=[f"{k}-{'-'.join(kw) or 'defaults'}" for k, kw in CASES]
)
def test_update_rule_matches_keras(kind, kwargs):
    grads = make_grads()
    opt, variables = run(getattr(optimizers, kind), kwargs, grads)
    ref = reference(kind, kwargs, grads)
    assert_matches(variables, ref)
    assert opt.iterations == ref.iterations == STEPS


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "clip",
    [{"clipnorm": 1.0}, {"clipvalue": 0.5}, {"global_clipnorm": 2.0}],
    ids=lambda c: next(iter(c)),
)
def test_clipping_matches_keras(kind, clip):
    kwargs = {"learning_rate": 0.05, **clip}
    grads = make_grads()
    _, variables = run(getattr(optimizers, kind), kwargs, grads)
    assert_matches(variables, reference(kind, kwargs, grads))
    _, unclipped = run(getattr(optimizers, kind), {"learning_rate": 0.05}, grads)
    assert not np.allclose(npy(variables[0]), npy(unclipped[0]))


@pytest.mark.parametrize("kind", KINDS)
def test_accumulation_ema_loss_scale_and_schedule_match_keras(kind):
    kwargs = {
        "learning_rate": lambda step: 0.05 / (1 + step),
        "gradient_accumulation_steps": 2,
        "use_ema": True,
        "ema_momentum": 0.9,
        "ema_overwrite_frequency": 2,
        "loss_scale_factor": 4.0,
        "weight_decay": 0.01,
    }
    grads = make_grads(steps=8)
    opt, variables = run(getattr(optimizers, kind), kwargs, grads)
    ref = reference(kind, kwargs, grads)
    assert_matches(variables, ref)
    for average, r in zip(opt._model_variables_moving_average, ref.average):
        np.testing.assert_allclose(average.numpy(), r, rtol=1e-12)
    assert opt.iterations == ref.iterations == 4


def test_float32_variables_follow_keras_closely():
    grads = make_grads()
    variables = make_variables(dtype=nnkit.float32)
    _, variables = run(optimizers.Adam, {"learning_rate": 0.01}, grads, variables)
    ref = reference("Adam", {"learning_rate": 0.01}, grads)
    for v, r in zip(variables, ref.vars):
        assert v.dtype == nnkit.float32
        np.testing.assert_allclose(npy(v), r, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------- Keras's own golden values
KERAS_SINGLE_STEP = {  # keras/src/optimizers/*_test.py: test_single_step (learning_rate=0.5)
    "SGD": [0.5, -1.0, -0.5, 3.0],
    "Adam": [0.5, 1.5, 2.5, 3.5],
    "AdamW": [0.4980, 1.4960, 2.494, 3.492],
    "RMSprop": [-0.5811, 0.4189, 1.4189, 2.4189],
    "Adagrad": [0.5233, 1.5007, 2.5005, 3.5061],
}


@pytest.mark.parametrize("kind", KINDS)
def test_keras_single_step_golden(kind):
    opt = getattr(optimizers, kind)(learning_rate=0.5)
    v = nnkit.tensor([1.0, 2.0, 3.0, 4.0])
    opt.apply_gradients(zip([nnkit.tensor([1.0, 6.0, 7.0, 2.0])], [v]))
    np.testing.assert_allclose(v.numpy(), KERAS_SINGLE_STEP[kind], rtol=1e-4, atol=1e-4)


KERAS_GOLDEN = {  # test_correctness_with_golden: first grads 0.01, then arange(0.1, 1.1, 0.1)
    "SGD": (
        {"nesterov": True},
        np.array(
            [
                [0.9999] * 10,
                [0.9989, 0.9979, 0.9969, 0.9959, 0.9949, 0.9939, 0.9929, 0.9919, 0.9909, 0.9899],
                [0.9979, 0.9959, 0.9939, 0.9919, 0.9899, 0.9879, 0.9859, 0.9839, 0.9819, 0.9799],
                [0.9969, 0.9939, 0.9909, 0.9879, 0.9849, 0.9819, 0.9789, 0.9759, 0.9729, 0.9699],
                [0.9959, 0.9919, 0.9879, 0.9839, 0.9799, 0.9759, 0.9719, 0.9679, 0.9639, 0.9599],
            ]
        ),
    ),
    "Adam": (
        {"amsgrad": True},
        np.tile([[0.999], [0.9982], [0.9974], [0.9965], [0.9955]], (1, 10)),
    ),
    "RMSprop": (
        {"centered": True},
        np.tile([[0.9967], [0.9933], [0.9908], [0.9885], [0.9864]], (1, 10)),
    ),
    "Adagrad": (
        {"learning_rate": 0.2, "initial_accumulator_value": 0.3, "epsilon": 1e-6},
        np.array(
            [
                [0.9963] * 10,
                [0.9604, 0.9278, 0.9003, 0.8784, 0.8615, 0.8487, 0.8388, 0.8313, 0.8255, 0.8209],
                [0.9251, 0.8629, 0.8137, 0.7768, 0.7497, 0.7298, 0.7151, 0.704, 0.6956, 0.6891],
                [0.8903, 0.8012, 0.7342, 0.6862, 0.6521, 0.6277, 0.6099, 0.5967, 0.5867, 0.579],
                [0.856, 0.7422, 0.6604, 0.6037, 0.5644, 0.5367, 0.5168, 0.5021, 0.491, 0.4825],
            ]
        ),
    ),
    "AdamW": (
        {"learning_rate": 1.0, "weight_decay": 0.5, "epsilon": 2},
        np.array(
            [
                [0.4998] * 10,
                [0.2486, 0.2475, 0.2463, 0.2451, 0.244, 0.2428, 0.2417, 0.2405, 0.2394, 0.2382],
                [0.1223, 0.1198, 0.1174, 0.1149, 0.1124, 0.11, 0.1075, 0.1051, 0.1027, 0.1003],
                [0.0586, 0.0549, 0.0512, 0.0475, 0.0439, 0.0402, 0.0366, 0.033, 0.0294, 0.0258],
                [0.0263, 0.0215, 0.0167, 0.012, 0.0073, 0.0026, -0.0021, -0.0067, -0.0113, -0.0159],
            ]
        ),
    ),
}


@pytest.mark.parametrize("kind", KINDS)
def test_keras_correctness_golden(kind):
    kwargs, golden = KERAS_GOLDEN[kind]
    opt = getattr(optimizers, kind)(**kwargs)
    x = nnkit.ones(10)
    grads = nnkit.tensor(np.arange(0.1, 1.1, 0.1), dtype=nnkit.float32)
    opt.apply_gradients(zip([nnkit.full((10,), 0.01)], [x]))
    for row in golden:
        np.testing.assert_allclose(x.numpy(), row, rtol=5e-4, atol=5e-4)
        opt.apply_gradients(zip([grads], [x]))


@pytest.mark.parametrize("kind", KINDS)
def test_keras_weight_decay_golden(kind):
    zero = nnkit.zeros(())
    var1, var2, var3 = nnkit.tensor(2.0), nnkit.tensor(2.0), nnkit.tensor(2.0)
    cls = getattr(optimizers, kind)
    cls(learning_rate=1.0, weight_decay=0.004).apply_gradients(zip([zero], [var1]))
    for excluded in (var2, var3):
        opt = cls(learning_rate=1.0, weight_decay=0.004)
        opt.exclude_from_weight_decay(var_list=[excluded])
        opt.apply_gradients(zip([zero, zero], [var1, excluded]))
    assert var1.item() == pytest.approx(1.9760959, abs=1e-6)
    assert var2.item() == var3.item() == 2.0
    with pytest.raises(NotImplementedError, match="no names"):
        cls(weight_decay=0.1).exclude_from_weight_decay(var_names=["bias"])


def test_keras_clip_goldens():
    grad = [nnkit.tensor([100.0, 100.0])]
    np.testing.assert_allclose(
        optimizers.SGD(clipnorm=1)._clip_gradients(grad)[0].numpy(), [2**0.5 / 2] * 2, rtol=1e-6
    )
    np.testing.assert_allclose(
        optimizers.Adam(clipvalue=1)._clip_gradients(grad)[0].numpy(), [1.0, 1.0]
    )
    g = np.array([50.0, 100.0], dtype=np.float32)
    clipped = optimizers.SGD(global_clipnorm=1)._clip_gradients([nnkit.tensor(g)])[0]
    np.testing.assert_allclose(clipped.numpy(), g / np.linalg.norm(g), rtol=1e-6)
    small = optimizers.SGD(clipnorm=1)._clip_gradients([nnkit.tensor([0.3, 0.4])])[0]
    np.testing.assert_allclose(small.numpy(), [0.3, 0.4], rtol=1e-6)


def test_keras_ema_golden():
    v = nnkit.tensor([[3.0, 4.0], [5.0, 6.0]])
    grads = nnkit.ones((2, 2))
    opt = optimizers.SGD(
        learning_rate=1.0, use_ema=True, ema_momentum=0.9, ema_overwrite_frequency=3
    )
    opt.apply_gradients([(grads, v)])
    np.testing.assert_allclose(v.numpy(), [[2.0, 3.0], [4.0, 5.0]])
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(), v.numpy())
    opt.apply_gradients([(grads, v)])
    np.testing.assert_allclose(v.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(
        opt._model_variables_moving_average[0].numpy(), [[1.9, 2.9], [3.9, 4.9]], rtol=1e-6
    )
    opt.apply_gradients([(grads, v)])
    np.testing.assert_allclose(v.numpy(), [[1.71, 2.71], [3.71, 4.71]], rtol=1e-6)
    w = nnkit.tensor([1.0, 2.0])
    ema = optimizers.Adam(learning_rate=1.0, use_ema=True, ema_momentum=0.9)
    ema.apply_gradients([(nnkit.tensor([0.1, 0.2]), w)])
    v1 = w.numpy().copy()
    ema.apply_gradients([(nnkit.tensor([0.1, 0.2]), w)])
    expected = 0.9 * v1 + 0.1 * w.numpy()
    ema.finalize_variable_values([w])
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)


def test_keras_static_loss_scaling():
    v = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
    opt = optimizers.SGD(learning_rate=1.0, loss_scale_factor=1024.0)
    opt.apply_gradients([(nnkit.tensor([[1.0, 2.0], [3.0, 4.0]]) * 1024.0, v)])
    assert opt.scale_loss(1.0) == 1024.0
    np.testing.assert_allclose(v.numpy(), np.zeros((2, 2)))


def test_callable_learning_rate_without_arguments():
    v = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
    opt = optimizers.SGD(learning_rate=lambda: 0.1)
    opt.apply_gradients([(nnkit.ones((2, 2)), v)])
    np.testing.assert_allclose(v.numpy(), [[0.9, 1.9], [2.9, 3.9]], rtol=1e-6)
    assert opt.iterations == 1 and opt.learning_rate == pytest.approx(0.1)


# ------------------------------------------------------------ gradient accumulation
def test_keras_gradient_accumulation_golden():
    v = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]])
    grads = nnkit.ones((2, 2))
    opt = optimizers.SGD(learning_rate=1.0, gradient_accumulation_steps=3)
    expected = [
        ([[1.0, 2.0], [3.0, 4.0]], 1.0, 1, 0),
        ([[1.0, 2.0], [3.0, 4.0]], 2.0, 2, 0),
        ([[0.0, 1.0], [2.0, 3.0]], 0.0, 3, 1),
        ([[0.0, 1.0], [2.0, 3.0]], 1.0, 4, 1),
    ]
    for value, accumulated, raw, iterations in expected:
        opt.apply_gradients([(grads, v)])
        np.testing.assert_allclose(v.numpy(), value)
        np.testing.assert_allclose(opt._accumulated_gradients[0].numpy(), accumulated)
        assert (opt._iterations, opt.iterations) == (raw, iterations)


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_accumulation_is_one_update_on_the_mean(kind):
    cls = getattr(optimizers, kind)
    plain = cls(learning_rate=0.05, weight_decay=0.05)
    accumulating = cls(learning_rate=0.05, weight_decay=0.05, gradient_accumulation_steps=3)
    var1, var3 = make_variables(), make_variables()
    plain.build(var1)
    accumulating.build(var3)
    rng = np.random.default_rng(3)
    for call in range(1, 7):
        if call % 3 == 1:
            batch = [[rng.standard_normal(s) for s in SHAPES] for _ in range(3)]
            plain.apply(
                [nnkit.tensor(np.mean([b[i] for b in batch], axis=0)) for i in range(len(SHAPES))]
            )
        before = [npy(v).copy() for v in var3]
        for v, g in zip(var3, batch[(call - 1) % 3]):  # the PyTorch protocol: .grad, step()
            v.grad = nnkit.tensor(g)
        accumulating.step()
        accumulating.zero_grad()
        changed = any(not np.array_equal(b, npy(v)) for b, v in zip(before, var3))
        assert changed == (call % 3 == 0), f"call {call}"
        if call % 3 == 0:
            for a, b in zip(var1, var3):
                np.testing.assert_allclose(npy(a), npy(b), rtol=1e-12, atol=1e-14)
    assert accumulating.iterations == plain.iterations == 2
    assert accumulating._iterations == 6


def test_schedule_sees_every_call_under_accumulation():
    seen = []

    def schedule(step):
        seen.append(step)
        return 0.1

    opt = optimizers.SGD(learning_rate=schedule, gradient_accumulation_steps=3)
    v = nnkit.zeros(2)
    for _ in range(6):
        seen.clear()
        opt.apply_gradients([(nnkit.ones(2), v)])
    assert opt.iterations == 2 and opt._iterations == 6
    np.testing.assert_allclose(v.numpy(), [-0.2, -0.2], rtol=1e-6)
    ref = KerasReference(
        "SGD", [np.zeros(2)], learning_rate=lambda s: 0.1 / (s + 1), gradient_accumulation_steps=3
    )
    opt = optimizers.SGD(learning_rate=lambda s: 0.1 / (s + 1), gradient_accumulation_steps=3)
    w = nnkit.zeros(2, dtype=nnkit.float64)
    for _ in range(6):
        ref.apply([np.ones(2)])
        opt.apply_gradients([(nnkit.ones(2, dtype=nnkit.float64), w)])
    np.testing.assert_allclose(w.numpy(), ref.vars[0], rtol=1e-12)  # lr at calls 2 and 5


@pytest.mark.parametrize("dtype", [nnkit.float32, nnkit.float64, nnkit.float16])
@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (optimizers.Adam, {}),
        (optimizers.Adam, {"amsgrad": True, "learning_rate": 0.01}),
        (optimizers.Adam, {"weight_decay": 0.01, "clipnorm": 1.0}),
        (optimizers.AdamW, {"learning_rate": 0.003}),
        (optimizers.SGD, {}),
        (optimizers.SGD, {"momentum": 0.9}),
        (optimizers.SGD, {"momentum": 0.7, "nesterov": True, "weight_decay": 0.01}),
        (optimizers.RMSprop, {}),
        (optimizers.RMSprop, {"centered": True, "learning_rate": 0.01}),
        (optimizers.RMSprop, {"momentum": 0.9, "rho": 0.8}),
        (optimizers.RMSprop, {"momentum": 0.5, "centered": True, "clipvalue": 2.0}),
        (optimizers.Adagrad, {}),
        (optimizers.Adagrad, {"learning_rate": 0.1, "initial_accumulator_value": 0.0}),
    ],
)
def test_one_kernel_update_is_bitwise_its_update_step(cls, kwargs, dtype):
    """Adam, AdamW, SGD, RMSprop and Adagrad update every variable in one in-place
    kernel (``optim_kernels.keras_*_step``): bitwise what ``update_step`` gives variable
    by variable, the slots and the versions of the variables included. A scalar
    variable and a gradient that is a view come along."""
    shapes = [(3,), (2, 4), ()]
    results = []
    for fused in (True, False):
        g_rng = np.random.default_rng(1)
        # small weights (the first all zero): the update's own rounding shows in them
        variables = [
            nnkit.tensor(k * 1e-3 * np.random.default_rng(k).standard_normal(s), dtype=dtype,
                         requires_grad=True)
            for k, s in enumerate(shapes)
        ]  # fmt: skip
        opt = cls(**kwargs)
        opt._fused = fused
        versions = []
        for _ in range(7):
            grads = [nnkit.tensor(3 * g_rng.standard_normal(s), dtype=dtype) for s in shapes]
            grads[1] = nnkit.tensor(3 * g_rng.standard_normal((4, 2)), dtype=dtype).T
            opt.apply(grads, variables)
            versions.append([v._version for v in variables])
        results.append(([npy(v) for v in variables], [npy(s) for s in opt.variables], versions))
    (w_f, s_f, ver_f), (w_s, s_s, ver_s) = results
    assert all(np.array_equal(a, b) for a, b in zip(w_f, w_s))
    assert all(np.array_equal(a, b) for a, b in zip(s_f, s_s))
    assert ver_f == ver_s and ver_f[-1][0] > ver_f[0][0]


def test_subclass_overriding_update_step_runs_its_own(monkeypatch):
    """A subclass that overrides ``update_step`` is not bypassed by its base's one-kernel
    update; a subclass that does not inherits the one-kernel update."""
    calls = []

    class Traced(optimizers.RMSprop):
        def update_step(self, gradient, variable, learning_rate):
            calls.append(tuple(variable.shape))
            super().update_step(gradient, variable, learning_rate)

    class Renamed(optimizers.SGD):
        pass

    grads = [nnkit.ones(3), nnkit.ones(2, 2)]
    Traced(momentum=0.5).apply(grads, [nnkit.zeros(3), nnkit.zeros(2, 2)])
    assert calls == [(3,), (2, 2)]
    fused = []
    real = optimizers.SGD._update_fused

    def counting(self, *args):
        fused.append(type(self).__name__)
        return real(self, *args)

    monkeypatch.setattr(optimizers.SGD, "_update_fused", counting)
    w = nnkit.zeros(3)
    Renamed(learning_rate=0.5).apply([nnkit.ones(3)], [w])
    assert fused == ["Renamed"]
    np.testing.assert_array_equal(w.numpy(), np.full(3, -0.5, np.float32))
