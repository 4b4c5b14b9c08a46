"""Thread safety: thread-local grad modes, exact accumulation into a shared leaf, and
independent training in several threads giving the same result as running serially."""

from __future__ import annotations

import threading

import numpy as np

import nnkit
from nnkit.autograd.function import grad_edge


def _run_threads(target, n):
    errors = []
    barrier = threading.Barrier(n)

    def wrapped(k):
        try:
            barrier.wait()
            target(k)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_grad_mode_is_thread_local():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def worker():
        seen["start"] = nnkit.is_grad_enabled()
        inside.set()
        release.wait()
        x = nnkit.ones(2, requires_grad=True)
        seen["records"] = (x * 2).grad_fn is not None

    with nnkit.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        inside.wait()
        release.set()
        t.join()
        assert not nnkit.is_grad_enabled()
    assert seen == {"start": True, "records": True}


def test_two_threads_accumulate_exactly_into_a_shared_leaf():
    w = nnkit.tensor(np.linspace(-1, 1, 64), dtype=nnkit.float64, requires_grad=True)
    n_threads, n_iter = 4, 50

    def work(k):
        for _ in range(n_iter):
            y = (w * float(k + 1)).sum() + (w * w).sum() * 0.0
            y.backward()

    _run_threads(work, n_threads)
    expected = sum(float(k + 1) for k in range(n_threads)) * n_iter
    np.testing.assert_array_equal(w.grad.numpy(), np.full(64, expected))


def test_concurrent_graphs_share_one_accumulate_grad_node():
    def check_once():
        w = nnkit.ones(3, requires_grad=True)
        nodes = []
        lock = threading.Lock()

        def work(k):
            y = w * 2.0
            with lock:
                nodes.append(y.grad_fn.next_functions[0][0])

        _run_threads(work, 4)
        assert all(n is nodes[0] for n in nodes)  # one AccumulateGrad for the leaf
        assert grad_edge(w._impl)[0] is nodes[0]

    for _ in range(20):
        check_once()


def test_grad_with_inputs_in_threads_sharing_a_leaf():
    w = nnkit.tensor([1.0, 2.0, 3.0], dtype=nnkit.float64, requires_grad=True)
    results = [None] * 4

    def work(k):
        for _ in range(20):
            (g,) = nnkit.autograd.grad((w * w * float(k)).sum(), w)
        results[k] = g.numpy()

    _run_threads(work, 4)
    for k, g in enumerate(results):
        np.testing.assert_allclose(g, 2 * k * np.array([1.0, 2.0, 3.0]))
    assert w.grad is None


def _train(seed, steps=15):
    rng = np.random.default_rng(seed)
    x = nnkit.tensor(rng.standard_normal((32, 6)), dtype=nnkit.float64)
    y = nnkit.tensor(rng.standard_normal((32, 2)), dtype=nnkit.float64)
    w1 = nnkit.tensor(rng.standard_normal((6, 16)) * 0.3, dtype=nnkit.float64, requires_grad=True)
    b1 = nnkit.zeros(16, dtype=nnkit.float64, requires_grad=True)
    w2 = nnkit.tensor(rng.standard_normal((16, 2)) * 0.3, dtype=nnkit.float64, requires_grad=True)
    params = [w1, b1, w2]
    for _ in range(steps):
        h = (x @ w1 + b1).tanh()
        loss = ((h @ w2 - y) ** 2).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with nnkit.no_grad():
            for p in params:
                p.sub_(0.1 * p.grad)
    return [p.detach().numpy().copy() for p in params] + [loss.item()]


def test_four_threads_training_match_serial_runs():
    serial = [_train(seed) for seed in range(4)]
    threaded = [None] * 4

    def work(k):
        threaded[k] = _train(k)

    _run_threads(work, 4)
    for s, t in zip(serial, threaded):
        for a, b in zip(s, t):
            np.testing.assert_array_equal(a, b)
