"""Memory is part of correctness: a long training loop keeps flat memory."""

from __future__ import annotations

import gc
import tracemalloc

import nnkit
from nnkit import nn


def _train_steps(model, opt, x, y, n):
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(n):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()


def test_training_loop_memory_is_flat():
    nnkit.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 10))
    opt = nnkit.optim.Adam(model.parameters(), lr=1e-3)
    x, y = nnkit.randn(64, 32), nnkit.randint(0, 10, (64,))
    _train_steps(model, opt, x, y, 20)  # warm up: optimizer state, caches
    gc.collect()
    tracemalloc.start()
    try:
        _train_steps(model, opt, x, y, 50)
        gc.collect()
        after_50 = tracemalloc.get_traced_memory()[0]
        _train_steps(model, opt, x, y, 200)
        gc.collect()
        after_250 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # A leak of even one 64x64 float32 array per step would add > 3 MB here.
    assert after_250 - after_50 < 256 * 1024, (after_50, after_250)


def test_no_reference_cycles_left_by_a_training_step():
    nnkit.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = nnkit.optim.SGD(model.parameters(), lr=0.1)
    x, y = nnkit.randn(4, 8), nnkit.randint(0, 2, (4,))
    _train_steps(model, opt, x, y, 2)
    gc.collect()
    gc.disable()
    try:
        _train_steps(model, opt, x, y, 5)
        # Graphs are freed by reference counting alone: nothing for the cycle collector.
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_graph_dropped_without_backward_is_freed_by_refcount():
    x = nnkit.randn(16, 16, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        # relu, exp and tanh save their *outputs*; that must not create node cycles.
        y = (x.relu().exp().tanh() @ x).sum()
        del y
        assert gc.collect() == 0
    finally:
        gc.enable()
