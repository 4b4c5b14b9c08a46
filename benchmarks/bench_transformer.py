"""Transformer encoder training throughput: one post-norm encoder layer and a linear head.

Network (float32, batch 32, sequence 64, d_model 128, 4 heads, feed-forward 512)::

    TransformerEncoderLayer(128, 4, 512, dropout 0, ReLU, batch_first)
    - mean over the sequence - Linear(128 -> 10) - cross-entropy, plain SGD

Three implementations, timed in alternation in one run (medians after warm-up):

* nnkit: ``nnkit.nn.TransformerEncoderLayer`` and ``nnkit.nn.Linear`` with
  ``nnkit.optim.SGD``;
* the NumPy floor: a hand-written forward and backward of the same block (one GEMM for
  Q, K and V, batched GEMMs per head, softmax and LayerNorm by hand) and SGD;
* PyTorch CPU (when installed), ``torch.nn.TransformerEncoderLayer`` with the same
  weights and thread count.

The three losses of the first step (same weights, same batch) are printed and must
agree to float32 rounding before anything is timed.

``--sweep 8,32,128`` prints one row per batch size (floor / torch / nnkit samples/s and
nnkit's ratios). Run: ``python -m benchmarks.bench_transformer [--repeats 15] [--batch 32]
[--sweep 8,32,128] [--profile]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import nnkit
from benchmarks._common import blas_threads, env_line, interleaved_medians, try_torch

SEQ, D_MODEL, HEADS, FF, CLASSES, LR, EPS = 64, 128, 4, 512, 10, 0.01, 1e-5


def init_params(seed: int = 0) -> dict:
    """Random weights in torch's layouts (``(out, in)`` matrices), biases non-zero."""
    rng = np.random.default_rng(seed)

    def u(fan_in, *shape):
        k = 1 / np.sqrt(fan_in)
        return rng.uniform(-k, k, shape).astype(np.float32)

    e = D_MODEL
    return {
        "in_w": u(e, 3 * e, e),
        "in_b": u(e, 3 * e),
        "out_w": u(e, e, e),
        "out_b": u(e, e),
        "l1w": u(e, FF, e),
        "l1b": u(e, FF),
        "l2w": u(FF, e, FF),
        "l2b": u(FF, e),
        "n1g": 1 + u(4, e),
        "n1b": u(4, e),
        "n2g": 1 + u(4, e),
        "n2b": u(4, e),
        "hw": u(e, CLASSES, e),
        "hb": u(e, CLASSES),
    }


# ------------------------------------------------------------------ NumPy floor
def _ln(r, g, b):
    mu = r.mean(-1, keepdims=True)
    xc = r - mu
    rstd = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + EPS)
    xh = xc * rstd
    return xh * g + b, xh, rstd


def _ln_back(dy, xh, rstd, g):
    dxh = dy * g
    return rstd * (dxh - dxh.mean(-1, keepdims=True) - xh * (dxh * xh).mean(-1, keepdims=True))


def numpy_step(p: dict, x, y) -> float:
    """Forward, backward and SGD by hand; returns the loss (before the update)."""
    n, length, e = x.shape
    h, d = HEADS, e // HEADS
    scale = 1 / np.sqrt(d)
    x2 = x.reshape(n * length, e)
    qkv = (x2 @ p["in_w"].T + p["in_b"]).reshape(n, length, 3, h, d).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]  # (n, h, L, d) views
    att = q @ k.transpose(0, 1, 3, 2)
    att *= scale
    att -= att.max(-1, keepdims=True)
    np.exp(att, out=att)
    att /= att.sum(-1, keepdims=True)
    a2 = (att @ v).transpose(0, 2, 1, 3).reshape(n * length, e)
    y1, xh1, rs1 = _ln(x2 + a2 @ p["out_w"].T + p["out_b"], p["n1g"], p["n1b"])
    f = y1 @ p["l1w"].T + p["l1b"]
    np.maximum(f, 0, out=f)
    y2, xh2, rs2 = _ln(y1 + f @ p["l2w"].T + p["l2b"], p["n2g"], p["n2b"])
    pool = y2.reshape(n, length, e).mean(1)
    logits = pool @ p["hw"].T + p["hb"]
    z = logits - logits.max(1, keepdims=True)
    lse = np.log(np.exp(z).sum(1, keepdims=True))
    loss = float(-(z - lse)[np.arange(n), y].mean())
    g = np.exp(z - lse)
    g[np.arange(n), y] -= 1
    g /= n
    grads = {"hw": g.T @ pool, "hb": g.sum(0)}
    dy2 = np.broadcast_to((g @ p["hw"] / length)[:, None, :], (n, length, e)).reshape(-1, e)
    grads["n2g"], grads["n2b"] = (dy2 * xh2).sum(0), dy2.sum(0)
    dr2 = _ln_back(dy2, xh2, rs2, p["n2g"])
    grads["l2w"], grads["l2b"] = dr2.T @ f, dr2.sum(0)
    df = (dr2 @ p["l2w"]) * (f > 0)
    grads["l1w"], grads["l1b"] = df.T @ y1, df.sum(0)
    dy1 = dr2 + df @ p["l1w"]
    grads["n1g"], grads["n1b"] = (dy1 * xh1).sum(0), dy1.sum(0)
    dr1 = _ln_back(dy1, xh1, rs1, p["n1g"])
    grads["out_w"], grads["out_b"] = dr1.T @ a2, dr1.sum(0)
    da = (dr1 @ p["out_w"]).reshape(n, length, h, d).transpose(0, 2, 1, 3)
    dqkv = np.empty((3, n, h, length, d), np.float32)
    dqkv[2] = att.transpose(0, 1, 3, 2) @ da
    ds = da @ v.transpose(0, 1, 3, 2)
    ds -= (ds * att).sum(-1, keepdims=True)
    ds *= att
    ds *= scale
    dqkv[0] = ds @ k
    dqkv[1] = ds.transpose(0, 1, 3, 2) @ q
    dqkv = dqkv.transpose(1, 3, 0, 2, 4).reshape(n * length, 3 * e)
    grads["in_w"], grads["in_b"] = dqkv.T @ x2, dqkv.sum(0)
    for name, gk in grads.items():
        p[name] -= LR * gk
    return loss


# ------------------------------------------------------------- nnkit and torch
def make_model(nn, optim, no_grad, as_tensor, params: dict):
    """The encoder layer, the head and SGD, for nnkit or torch, with ``params``."""
    layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0, batch_first=True)
    head = nn.Linear(D_MODEL, CLASSES)
    targets = {
        "in_w": layer.self_attn.in_proj_weight,
        "in_b": layer.self_attn.in_proj_bias,
        "out_w": layer.self_attn.out_proj.weight,
        "out_b": layer.self_attn.out_proj.bias,
        "l1w": layer.linear1.weight,
        "l1b": layer.linear1.bias,
        "l2w": layer.linear2.weight,
        "l2b": layer.linear2.bias,
        "n1g": layer.norm1.weight,
        "n1b": layer.norm1.bias,
        "n2g": layer.norm2.weight,
        "n2b": layer.norm2.bias,
        "hw": head.weight,
        "hb": head.bias,
    }
    with no_grad():
        for name, t in targets.items():
            t.copy_(as_tensor(params[name]))
    opt = optim.SGD([*layer.parameters(), *head.parameters()], lr=LR)
    return layer, head, opt


def framework_step(cross_entropy, layer, head, opt, x, y):
    """One SGD step, written once for nnkit and for PyTorch; returns the loss."""
    loss = cross_entropy(head(layer(x).mean(1)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def _detached(loss):
    return loss.detach() if hasattr(loss, "detach") else loss


def contenders(batch: int) -> tuple:
    """``(fns, first)``: one training step per implementation at ``batch`` (same weights,
    same data), and the step-0 losses, checked to agree."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, SEQ, D_MODEL)).astype(np.float32)
    y = rng.integers(0, CLASSES, batch)
    params = init_params()
    floor_params = {k: v.copy() for k, v in params.items()}
    layer, head, opt = make_model(nnkit.nn, nnkit.optim, nnkit.no_grad, nnkit.tensor, params)
    nx, ny = nnkit.tensor(x), nnkit.tensor(y)
    ce = nnkit.nn.functional.cross_entropy
    fns = {
        "numpy floor": lambda: numpy_step(floor_params, x, y),
        "nnkit": lambda: framework_step(ce, layer, head, opt, nx, ny),
    }
    torch = try_torch(blas_threads())
    if torch is not None:
        t_layer, t_head, t_opt = make_model(
            torch.nn, torch.optim, torch.no_grad, torch.from_numpy, params
        )
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        fns["torch"] = lambda: framework_step(
            torch.nn.functional.cross_entropy, t_layer, t_head, t_opt, tx, ty
        )
    first = {name: float(np.asarray(_detached(fn()))) for name, fn in fns.items()}  # step 0
    ref = first["numpy floor"]
    if any(abs(v - ref) > 1e-4 * max(1.0, abs(ref)) for v in first.values()):
        raise SystemExit(f"the step-0 losses disagree ({first}): they compute different things")
    return fns, first


def _profile(fns) -> None:
    import cProfile  # optional: only with --profile
    import pstats

    for _ in range(3):
        fns["nnkit"]()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(10):
        fns["nnkit"]()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(30)


def sweep(batches, repeats: int) -> None:
    print(
        f"Transformer encoder training step, seq {SEQ}, d_model {D_MODEL}, {HEADS} heads, "
        f"ff {FF}, float32 ({env_line()}); samples/s"
    )
    print(
        f"{'batch':>6} {'floor':>9} {'torch':>9} {'nnkit':>9} {'nnkit/floor':>12} "
        f"{'nnkit/torch':>12}"
    )
    for batch in batches:
        med = interleaved_medians(contenders(batch)[0], repeats=repeats, warmup=2)
        floor, nk = batch / med["numpy floor"], batch / med["nnkit"]
        tor = batch / med["torch"] if "torch" in med else float("nan")
        print(f"{batch:6d} {floor:9.0f} {tor:9.0f} {nk:9.0f} {nk / floor:11.2f}x {nk / tor:11.2f}x")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sweep", help="comma-separated batch sizes, e.g. 8,32,128")
    ap.add_argument("--profile", action="store_true", help="cProfile 10 nnkit steps")
    args = ap.parse_args(argv)
    if args.sweep:
        sweep([int(b) for b in args.sweep.split(",")], args.repeats)
        return
    batch = args.batch
    fns, first = contenders(batch)
    if args.profile:
        _profile(fns)
        return
    print("step-0 losses: " + ", ".join(f"{k} {v:.6f}" for k, v in first.items()))
    med = interleaved_medians(fns, repeats=args.repeats, warmup=2)
    floor = med["numpy floor"]
    print(
        f"Transformer encoder training step, batch {batch}, seq {SEQ}, d_model {D_MODEL}, "
        f"{HEADS} heads, ff {FF}, float32 ({env_line()})"
    )
    print(f"{'implementation':<14} {'ms/step':>9} {'samples/s':>11} {'vs floor':>9}")
    for name, t in med.items():
        print(f"{name:<14} {t * 1e3:9.2f} {batch / t:11.0f} {floor / t:8.2f}x")


if __name__ == "__main__":
    main()
