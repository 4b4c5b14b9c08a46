"""LSTM (or GRU) training throughput: one layer over a sequence, a linear head on the
last step.

Network (float32, batch 64, sequence 32, input 32, hidden 128)::

    LSTM(32 -> 128, batch_first) - last step - Linear(128 -> 10) - cross-entropy, SGD

With ``--cell gru`` the layer is a GRU (PyTorch's formulation, gates r, z, n) and the
floor a hand-written GRU likewise; the three losses of the first step (same weights,
same batch) are printed and must agree to float32 rounding before anything is timed.

Three implementations, timed in alternation in one run (medians after warm-up):

* nnkit: ``nnkit.nn.LSTM`` and ``nnkit.nn.Linear`` in eager mode; the LSTM layer is one
  fused op (``nnkit.autograd.ops.rnn_fused``: per step the input projection and the
  recurrence as small per-gate GEMMs and in-place passes over contiguous gate blocks,
  backpropagation through time in the kernel with the weight gradients as GEMMs over
  all steps, see ``nnkit.backends.rnn_kernels``);
* the NumPy floor: a hand-written forward and backward through time (one GEMM for the
  input projection of the whole sequence, one per step for the recurrence);
* PyTorch CPU (when installed), ``torch.nn.LSTM`` with the same thread count.

With ``--per-step`` nnkit's LSTM runs as per-step ops instead (``fused = False``: the
eager graph of cells, gradients of the sequence's pieces added into one buffer by the
engine), the path before the fused op. With ``--pieces-old`` that path's indexing
backward materialises one zero-filled full-size gradient per piece (the behaviour before
the engine summed pieces), for comparison.

Run: ``python -m benchmarks.bench_lstm [--repeats 15] [--cell lstm|gru] [--per-step]
[--pieces-old]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import nnkit
from benchmarks._common import blas_threads, env_line, interleaved_medians, try_torch

BATCH, SEQ, IN, HIDDEN, CLASSES, LR = 64, 32, 32, 128, 10, 0.01


def init_params(seed: int = 0, gates: int = 4) -> dict:
    """torch's layouts: gates stacked (i, f, g, o) (GRU: r, z, n) along the first axis."""
    rng = np.random.default_rng(seed)
    k = 1 / np.sqrt(HIDDEN)

    def u(*shape):
        return rng.uniform(-k, k, shape).astype(np.float32)

    return {
        "w_ih": u(gates * HIDDEN, IN),
        "w_hh": u(gates * HIDDEN, HIDDEN),
        "b_ih": u(gates * HIDDEN),
        "b_hh": u(gates * HIDDEN),
        "w": u(CLASSES, HIDDEN),
        "b": u(CLASSES),
    }


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def numpy_step(p: dict, x, y):
    """Forward, backward through time and SGD by hand."""
    n, t_len, _ = x.shape
    xw = (x.reshape(n * t_len, IN) @ p["w_ih"].T).reshape(n, t_len, 4 * HIDDEN)
    xw += p["b_ih"] + p["b_hh"]
    h, c = np.zeros((n, HIDDEN), np.float32), np.zeros((n, HIDDEN), np.float32)
    cache = []
    for t in range(t_len):
        z = xw[:, t] + h @ p["w_hh"].T
        i, f = _sigmoid(z[:, :HIDDEN]), _sigmoid(z[:, HIDDEN : 2 * HIDDEN])
        g, o = np.tanh(z[:, 2 * HIDDEN : 3 * HIDDEN]), _sigmoid(z[:, 3 * HIDDEN :])
        c_prev, h_prev = c, h
        c = f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        cache.append((i, f, g, o, c_prev, h_prev, tc))
    logits = h @ p["w"].T + p["b"]
    e = np.exp(logits - logits.max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    dlogits = prob
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    grads = {"w": dlogits.T @ h, "b": dlogits.sum(0)}
    dh, dc = dlogits @ p["w"], np.zeros_like(c)
    dz_all = np.empty((n, t_len, 4 * HIDDEN), np.float32)
    dw_hh = np.zeros_like(p["w_hh"])
    for t in range(t_len - 1, -1, -1):
        i, f, g, o, c_prev, h_prev, tc = cache[t]
        do = dh * tc
        dc = dc + dh * o * (1 - tc * tc)
        di, df, dg = dc * g, dc * c_prev, dc * i
        dz = dz_all[:, t]
        dz[:, :HIDDEN] = di * i * (1 - i)
        dz[:, HIDDEN : 2 * HIDDEN] = df * f * (1 - f)
        dz[:, 2 * HIDDEN : 3 * HIDDEN] = dg * (1 - g * g)
        dz[:, 3 * HIDDEN :] = do * o * (1 - o)
        dw_hh += dz.T @ h_prev
        dh, dc = dz @ p["w_hh"], dc * f
    flat = dz_all.reshape(n * t_len, 4 * HIDDEN)
    grads["w_ih"] = flat.T @ x.reshape(n * t_len, IN)
    grads["w_hh"] = dw_hh
    grads["b_ih"] = grads["b_hh"] = flat.sum(0)
    for k, gk in grads.items():
        p[k] -= LR * gk


def gru_numpy_step(p: dict, x, y) -> float:
    """The GRU's forward, backward through time and SGD by hand; returns the loss."""
    n, t_len, _ = x.shape
    hd = HIDDEN
    xw = (x.reshape(n * t_len, IN) @ p["w_ih"].T + p["b_ih"]).reshape(n, t_len, 3 * hd)
    h = np.zeros((n, hd), np.float32)
    cache = []
    for t in range(t_len):
        hw = h @ p["w_hh"].T + p["b_hh"]
        r = _sigmoid(xw[:, t, :hd] + hw[:, :hd])
        z = _sigmoid(xw[:, t, hd : 2 * hd] + hw[:, hd : 2 * hd])
        nn_ = np.tanh(xw[:, t, 2 * hd :] + r * hw[:, 2 * hd :])
        cache.append((r, z, nn_, h, hw[:, 2 * hd :]))
        h = nn_ + z * (h - nn_)
    logits = h @ p["w"].T + p["b"]
    zl = logits - logits.max(1, keepdims=True)
    lse = np.log(np.exp(zl).sum(1, keepdims=True))
    loss = float(-(zl - lse)[np.arange(n), y].mean())
    dlogits = np.exp(zl - lse)
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    grads = {"w": dlogits.T @ h, "b": dlogits.sum(0)}
    dh = dlogits @ p["w"]
    dx_all = np.empty((n, t_len, 3 * hd), np.float32)  # the input projection's gradient
    dh_all = np.empty((n, t_len, 3 * hd), np.float32)  # h @ W_hh^T + b_hh's
    h_prev_all = np.empty((n, t_len, hd), np.float32)
    for t in range(t_len - 1, -1, -1):
        r, z, nn_, h_prev, hn = cache[t]
        dn = dh * (1 - z) * (1 - nn_ * nn_)
        dr = dn * hn * r * (1 - r)
        dz = dh * (h_prev - nn_) * z * (1 - z)
        dxt, dht = dx_all[:, t], dh_all[:, t]
        dxt[:, :hd] = dht[:, :hd] = dr
        dxt[:, hd : 2 * hd] = dht[:, hd : 2 * hd] = dz
        dxt[:, 2 * hd :] = dn
        dht[:, 2 * hd :] = dn * r
        h_prev_all[:, t] = h_prev
        dh = dh * z + dht @ p["w_hh"]
    fx, fh = dx_all.reshape(n * t_len, 3 * hd), dh_all.reshape(n * t_len, 3 * hd)
    grads["w_ih"], grads["b_ih"] = fx.T @ x.reshape(n * t_len, IN), fx.sum(0)
    grads["w_hh"], grads["b_hh"] = fh.T @ h_prev_all.reshape(n * t_len, hd), fh.sum(0)
    for k, gk in grads.items():
        p[k] -= LR * gk
    return loss


def make_nnkit(params: dict, cell: str = "lstm"):
    lstm = (nnkit.nn.GRU if cell == "gru" else nnkit.nn.LSTM)(IN, HIDDEN, batch_first=True)
    head = nnkit.nn.Linear(HIDDEN, CLASSES)
    with nnkit.no_grad():
        for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
            getattr(lstm, f"{name.replace('w_', 'weight_').replace('b_', 'bias_')}_l0").copy_(
                nnkit.tensor(params[name])
            )
        head.weight.copy_(nnkit.tensor(params["w"]))
        head.bias.copy_(nnkit.tensor(params["b"]))
    opt = nnkit.optim.SGD([*lstm.parameters(), *head.parameters()], lr=LR)
    return lstm, head, opt


def framework_step(cross_entropy, lstm, head, opt, x, y):
    """One SGD step, written once for nnkit and for PyTorch; returns the loss."""
    out, _ = lstm(x)
    loss = cross_entropy(head(out[:, -1]), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def _detached(loss):
    return loss.detach() if hasattr(loss, "detach") else loss


def _old_piece_gradients() -> None:
    from nnkit.autograd.ops import indexing

    def backward(ctx, grad_output):
        return indexing.IndexPutZeros.apply(grad_output, ctx.in_shape, ctx.idx), None

    indexing.GetItem.backward = staticmethod(backward)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument(
        "--pieces-old",
        action="store_true",
        help="a zero-filled full-size gradient per piece (the old backward)",
    )
    ap.add_argument(
        "--per-step", action="store_true", help="nnkit's LSTM as per-step ops (not fused)"
    )
    ap.add_argument("--cell", choices=["lstm", "gru"], default="lstm", help="the layer")
    args = ap.parse_args(argv)
    if args.pieces_old:
        _old_piece_gradients()
    threads = blas_threads()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, SEQ, IN)).astype(np.float32)
    y = rng.integers(0, CLASSES, BATCH)
    gru = args.cell == "gru"
    params = init_params(gates=3 if gru else 4)
    floor_params = {k: v.copy() for k, v in params.items()}
    lstm, head, opt = make_nnkit(params, args.cell)
    lstm.fused = not args.per_step
    nx, ny = nnkit.tensor(x), nnkit.tensor(y)
    ce = nnkit.nn.functional.cross_entropy
    fns = {
        "numpy floor": lambda: (gru_numpy_step if gru else numpy_step)(floor_params, x, y),
        "nnkit": lambda: framework_step(ce, lstm, head, opt, nx, ny),
    }
    torch = try_torch(threads)
    if torch is not None:
        t_lstm = (torch.nn.GRU if gru else torch.nn.LSTM)(IN, HIDDEN, batch_first=True)
        t_head = torch.nn.Linear(HIDDEN, CLASSES)
        if gru:  # the same weights as the others, so that the losses can be compared
            with torch.no_grad():
                for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
                    key = name.replace("w_", "weight_").replace("b_", "bias_") + "_l0"
                    getattr(t_lstm, key).copy_(torch.from_numpy(params[name]))
                t_head.weight.copy_(torch.from_numpy(params["w"]))
                t_head.bias.copy_(torch.from_numpy(params["b"]))
        t_opt = torch.optim.SGD([*t_lstm.parameters(), *t_head.parameters()], lr=LR)
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        fns["torch"] = lambda: framework_step(
            torch.nn.functional.cross_entropy, t_lstm, t_head, t_opt, tx, ty
        )
    if gru:  # step 0: the same weights and batch give the same loss
        first = {name: float(np.asarray(_detached(fn()))) for name, fn in fns.items()}
        ref = first["numpy floor"]
        if any(abs(v - ref) > 1e-4 * max(1.0, abs(ref)) for v in first.values()):
            raise SystemExit(f"the step-0 losses disagree ({first})")
        print("step-0 losses: " + ", ".join(f"{k} {v:.6f}" for k, v in first.items()))
    med = interleaved_medians(fns, repeats=args.repeats, warmup=3)
    floor = med["numpy floor"]
    label = f" (per-step {args.cell.upper()})" if args.per_step else ""
    label += " (old piece gradients)" if args.pieces_old else ""
    print(
        f"{args.cell.upper()} training step{label}, batch {BATCH}, seq {SEQ}, in {IN}, "
        f"hidden {HIDDEN}, float32 ({env_line()})"
    )
    print(f"{'implementation':<14} {'ms/step':>9} {'samples/s':>11} {'vs floor':>9}")
    for name, t in med.items():
        print(f"{name:<14} {t * 1e3:9.2f} {BATCH / t:11.0f} {floor / t:8.2f}x")


if __name__ == "__main__":
    main()
