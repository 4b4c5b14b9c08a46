"""Compiled steps: eager nnkit, ``nnkit.compile`` replays, PyTorch eager and the NumPy floor.

Workloads, each timed in alternation in one run (medians):

* ``chain``: the 200-op elementwise chain of :mod:`benchmarks.bench_overhead` (forward +
  backward on 64-element float32 tensors): microseconds per op, where the per-op
  overhead of the Tensor/autograd layer is everything;
* ``mlp16``, ``mlp128``: an MLP 784-512-512-10 training step (``zero_grad``,
  cross-entropy, ``backward``, ``SGD.step``) at batch 16 and 128, with the hand-written
  NumPy floor of :mod:`benchmarks.bench_mlp`;
* ``lstm``: the LSTM network and floor of :mod:`benchmarks.bench_lstm` (batch 64,
  sequence 32, hidden 128);
* ``transformer``: the encoder layer and floor of :mod:`benchmarks.bench_transformer`
  (batch 32, sequence 64, d_model 128);
* ``cnn``: the ConvNet and floor of :mod:`benchmarks.bench_cnn` (batch 64, 1x28x28);
* ``mlpN`` for any batch size N (``mlp1024`` among the defaults).

The compiled contender replays the recorded program of Mat kernel calls (no Tensor,
graph node or engine in between); before timing, the replayed losses are checked
against the eager ones (bitwise) over a few steps. ``--torch-compile`` adds the PyTorch
step through ``torch.compile`` (compiled before timing: tens of seconds per workload).
``--profile N`` prints where the time of N replays goes (cProfile) instead of timing;
``--copies`` counts the bytes a replay copies into the recorded buffers (the results of
kernels that make fresh arrays, per kernel) instead of timing.
Run: ``python -m benchmarks.bench_compiled [--repeats 25] [--only chain,mlp16,lstm]
[--torch-compile] [--profile 200] [--copies]``.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

import nnkit
import nnkit.nn.functional as F
from benchmarks import bench_cnn, bench_lstm, bench_mlp, bench_transformer
from benchmarks._common import blas_threads, env_line, interleaved_medians, try_torch
from benchmarks.bench_overhead import N_OPS, chain
from nnkit import nn
from nnkit.backends import replay
from nnkit.backends.mat import ArrayMat

SIZES = (784, 512, 512, 10)
LR = 0.01
WORKLOADS = ("chain", "mlp16", "mlp128", "mlp1024", "cnn", "lstm", "transformer")


def _check(eager, compiled, steps: int = 4) -> None:
    """Replays give the eager losses bit for bit (both sides start from equal state)."""
    for _ in range(steps):
        a, b = eager(), compiled()
        if a is not None and not np.array_equal(a.detach().numpy(), b.numpy()):
            raise SystemExit("the replay differs from the eager step")


def chain_contenders(torch) -> dict:
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(64).astype(np.float32)
    wv = (rng.standard_normal(64) * 0.5).astype(np.float32)
    x = nnkit.tensor(xv, requires_grad=True)
    w = nnkit.tensor(wv, requires_grad=True)
    x2 = nnkit.tensor(xv, requires_grad=True)
    w2 = nnkit.tensor(wv, requires_grad=True)

    def eager():
        chain(x, w).backward()

    def step():
        chain(x2, w2).backward()

    compiled = nnkit.compile(step)
    _check(eager, compiled)
    assert np.array_equal(x.grad.numpy(), x2.grad.numpy()), "replay differs from eager"
    fns = {"eager": eager, "compiled": compiled}
    if torch is not None:
        tx = torch.tensor(xv, requires_grad=True)
        tw = torch.tensor(wv, requires_grad=True)
        fns["torch"] = lambda: chain(tx, tw).backward()
    return fns


def _mlp():
    nnkit.manual_seed(0)
    layers = []
    for k, (i, o) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        layers.append(nn.Linear(i, o))
        if k + 2 < len(SIZES):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _nnkit_step(model, opt):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def mlp_contenders(torch, batch: int) -> dict:
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    yv = rng.integers(0, SIZES[-1], batch)
    x, y = nnkit.tensor(xv), nnkit.tensor(yv)
    m1, m2 = _mlp(), _mlp()
    eager = _nnkit_step(m1, nnkit.optim.SGD(m1.parameters(), lr=LR))
    compiled = nnkit.compile(_nnkit_step(m2, nnkit.optim.SGD(m2.parameters(), lr=LR)))
    _check(lambda: eager(x, y), lambda: compiled(x, y))
    floor = bench_mlp._init(np.random.default_rng(0))
    fns = {
        "eager": lambda: eager(x, y),
        "compiled": lambda: compiled(x, y),
        "floor": lambda: bench_mlp.numpy_step(floor, xv, yv),
    }
    if torch is not None:
        tm = torch.nn.Sequential(
            torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
            torch.nn.ReLU(), torch.nn.Linear(512, 10),
        )  # fmt: skip
        topt = torch.optim.SGD(tm.parameters(), lr=LR)
        tx, ty = torch.tensor(xv), torch.tensor(yv)

        def torch_step():
            topt.zero_grad()
            loss = torch.nn.functional.cross_entropy(tm(tx), ty)
            loss.backward()
            topt.step()

        fns["torch"] = torch_step
    return fns


def lstm_contenders(torch) -> dict:
    b = bench_lstm
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((b.BATCH, b.SEQ, b.IN)).astype(np.float32)
    yv = rng.integers(0, b.CLASSES, b.BATCH)
    params = b.init_params()
    x, y = nnkit.tensor(xv), nnkit.tensor(yv)
    ce = F.cross_entropy
    e_net, c_net = b.make_nnkit(params), b.make_nnkit(params)
    compiled = nnkit.compile(lambda x, y: b.framework_step(ce, *c_net, x, y))
    _check(lambda: b.framework_step(ce, *e_net, x, y), lambda: compiled(x, y))
    floor = {k: v.copy() for k, v in params.items()}
    fns = {
        "eager": lambda: b.framework_step(ce, *e_net, x, y),
        "compiled": lambda: compiled(x, y),
        "floor": lambda: b.numpy_step(floor, xv, yv),
    }
    if torch is not None:
        t_lstm = torch.nn.LSTM(b.IN, b.HIDDEN, batch_first=True)
        t_head = torch.nn.Linear(b.HIDDEN, b.CLASSES)
        t_opt = torch.optim.SGD([*t_lstm.parameters(), *t_head.parameters()], lr=b.LR)
        tx, ty = torch.from_numpy(xv), torch.from_numpy(yv)
        tce = torch.nn.functional.cross_entropy
        fns["torch"] = lambda: b.framework_step(tce, t_lstm, t_head, t_opt, tx, ty)
    return fns


def cnn_contenders(torch) -> dict:
    b = bench_cnn
    rng = np.random.default_rng(0)
    params = b.init_params()
    xv = rng.standard_normal((b.BATCH, 1, 28, 28)).astype(np.float32)
    yv = rng.integers(0, 10, b.BATCH)
    x, y = nnkit.tensor(xv), nnkit.tensor(yv)

    def net():
        return {k: nnkit.tensor(v, requires_grad=True) for k, v in params.items()}

    e_net, c_net = net(), net()
    compiled = nnkit.compile(lambda x, y: b.nnkit_step(c_net, x, y))
    _check(lambda: b.nnkit_step(e_net, x, y), lambda: compiled(x, y))
    floor = b.numpy_params(params)
    x_cl = np.ascontiguousarray(xv.transpose(0, 2, 3, 1))
    fns = {
        "eager": lambda: b.nnkit_step(e_net, x, y),
        "compiled": lambda: compiled(x, y),
        "floor": lambda: b.numpy_step(floor, x_cl, yv),
    }
    if torch is not None:
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
        tx, ty = torch.from_numpy(xv), torch.from_numpy(yv)
        fns["torch"] = lambda: b.torch_step(torch, tp, tx, ty)
    return fns


def transformer_contenders(torch, batch: int = 32) -> dict:
    b = bench_transformer
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((batch, b.SEQ, b.D_MODEL)).astype(np.float32)
    yv = rng.integers(0, b.CLASSES, batch)
    params = b.init_params()
    x, y = nnkit.tensor(xv), nnkit.tensor(yv)
    ce = F.cross_entropy

    def net():
        return b.make_model(nnkit.nn, nnkit.optim, nnkit.no_grad, nnkit.tensor, params)

    e_net, c_net = net(), net()
    compiled = nnkit.compile(lambda x, y: b.framework_step(ce, *c_net, x, y))
    _check(lambda: b.framework_step(ce, *e_net, x, y), lambda: compiled(x, y))
    floor = {k: v.copy() for k, v in params.items()}
    fns = {
        "eager": lambda: b.framework_step(ce, *e_net, x, y),
        "compiled": lambda: compiled(x, y),
        "floor": lambda: b.numpy_step(floor, xv, yv),
    }
    if torch is not None:
        t_net = b.make_model(torch.nn, torch.optim, torch.no_grad, torch.from_numpy, params)
        tx, ty = torch.from_numpy(xv), torch.from_numpy(yv)
        tce = torch.nn.functional.cross_entropy
        fns["torch"] = lambda: b.framework_step(tce, *t_net, tx, ty)
    return fns


def contenders(name: str, torch) -> tuple:
    """``(fns, batch)`` of a workload (batch None: the chain, timed per op)."""
    if name == "chain":
        return chain_contenders(torch), None
    if name.startswith("mlp"):
        batch = int(name[3:])
        return mlp_contenders(torch, batch), batch
    if name == "lstm":
        return lstm_contenders(torch), bench_lstm.BATCH
    if name == "transformer":
        return transformer_contenders(torch), 32
    if name == "cnn":
        return cnn_contenders(torch), bench_cnn.BATCH
    raise SystemExit(f"unknown workload {name!r} (one of {', '.join(WORKLOADS)})")


def _profile(fn, n: int) -> None:
    import cProfile  # optional: only with --profile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


class _CopyCounter:
    """Counts what ``replay.refill`` copies into recorded buffers, by kernel (installed
    before the programs are built: it wraps the steps that refill)."""

    def __init__(self) -> None:
        self.replay, self.bytes, self.current, self.depth = replay, Counter(), None, 0
        refill, generic = replay.refill, replay._generic

        def counted_refill(old, new):
            if self.depth == 0:
                self.bytes[self.current] += self._size(old)
            self.depth += 1
            try:
                refill(old, new)
            finally:
                self.depth -= 1

        def named_generic(step):
            call = generic(step)

            def run():
                self.current = step.name
                call()

            return run

        replay.refill, replay._generic = counted_refill, named_generic

    def _size(self, old) -> int:
        if isinstance(old, ArrayMat):
            a = old.array
            return a.nbytes if a.flags.writeable else self.replay.root_array(a).nbytes
        if isinstance(old, (tuple, list)):
            return sum(self._size(o) for o in old)
        if isinstance(old, dict):
            return sum(self._size(o) for o in old.values())
        return old.nbytes if isinstance(old, np.ndarray) else 0  # a state object: rebound

    def report(self, name: str, fn, n: int = 5) -> None:
        self.bytes.clear()
        for _ in range(n):
            fn()
        total = sum(self.bytes.values()) / n
        print(f"  {name:12s} {total:12.0f} bytes copied into recorded buffers per replay")
        for kernel, size in self.bytes.most_common(8):
            if size:
                print(f"    {kernel:26s} {size / n:12.0f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--only", default=",".join(WORKLOADS), help="workloads, comma-separated")
    ap.add_argument("--profile", type=int, default=0, help="cProfile N replays, no timing")
    ap.add_argument("--copies", action="store_true", help="bytes copied per replay, no timing")
    ap.add_argument("--torch-compile", action="store_true", help="add torch.compile's step")
    args = ap.parse_args(argv)
    torch = try_torch(blas_threads())
    print(f"eager vs nnkit.compile vs torch vs NumPy floor ({env_line()})")
    counter = _CopyCounter() if args.copies else None
    for name in args.only.split(","):
        fns, batch = contenders(name, torch)
        if counter is not None:
            counter.report(name, fns["compiled"])
            continue
        if args.profile:
            print(f"--- {name}: {args.profile} replays")
            _profile(fns["compiled"], args.profile)
            continue
        if args.torch_compile and "torch" in fns:
            fns["torch.compile"] = torch.compile(fns["torch"])
            fns["torch.compile"]()  # compiles now, not in the timed rounds
        if batch is None:
            res = interleaved_medians(fns, repeats=args.repeats, number=3)
            line = "  ".join(f"{k} {t / N_OPS * 1e6:6.2f}" for k, t in res.items())
            unit = "us/op"
        else:
            res = interleaved_medians(fns, repeats=args.repeats, warmup=3)
            line = "  ".join(f"{k} {batch / t:7.0f}" for k, t in res.items())
            unit = "samples/s"
        ratios = f"compiled/eager {res['eager'] / res['compiled']:.2f}x"
        for other in ("torch", "torch.compile"):
            if other in res:
                ratios += f"  compiled/{other} {res[other] / res['compiled']:.2f}x"
        print(f"  {name:12s} {unit}: {line}   {ratios}")


if __name__ == "__main__":
    main()
