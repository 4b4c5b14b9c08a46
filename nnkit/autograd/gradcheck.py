"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck``.

Both compare the analytic vector-Jacobian product ``vᵀJ`` (from backward, with a
random ``v``) against central differences of ``vᵀf(x)`` in float64. Small inputs are
checked element by element; large ones along a few random directions (Chainer's
directional derivative), which costs two forward passes per direction.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.engine import run_backward
from nnkit.autograd.factories import tensor, zeros, zeros_like
from nnkit.autograd.grad_mode import enable_grad, no_grad
from nnkit.autograd.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(AssertionError):
    """Raised when analytic and numerical gradients disagree."""


def _grad(outputs, inputs, grad_outputs, create_graph=False, allow_unused=False):
    """``nnkit.autograd.grad`` (the engine's capture mode)."""
    return run_backward(
        list(outputs),
        list(grad_outputs),
        None,
        create_graph,
        list(inputs),
        capture=True,
        allow_unused=allow_unused,
    )


def _outputs(fn, inputs):
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _weighted_sum(outs, weights):
    total = None
    for o, w in zip(outs, weights):
        term = (o * w).sum()
        total = term if total is None else total + term
    return total


def _diff_inputs(inputs):
    idx = [k for k, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    for k in idx:
        if inputs[k].dtype.name != "float64":
            raise ValueError(
                f"gradcheck: input {k} has dtype {inputs[k].dtype}; gradcheck needs "
                "float64 inputs for accurate finite differences"
            )
    return idx


def _loss_at(fn, inputs, weights, k, delta):
    """vᵀ f(x) with ``delta`` added to input ``k`` (computed without a graph)."""
    with no_grad():
        args = list(inputs)
        args[k] = inputs[k].detach() + delta
        outs = _outputs(fn, args)
        return float(_weighted_sum(outs, weights).item()) if outs else 0.0


def gradcheck(
    fn,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    max_full: int = 400,
    n_directions: int = 3,
    seed: int = 0,
) -> bool:
    """Check backward of ``fn`` against central finite differences.

    Args:
        fn: a function of ``inputs`` returning a tensor or a tuple of tensors.
        inputs: tuple of arguments; the float64 tensors with ``requires_grad`` are checked.
        eps: finite-difference step.
        atol, rtol: tolerances of the comparison.
        raise_exception: raise :class:`GradcheckError` on mismatch (else return False).
        max_full: check element by element when the inputs have at most this many
            elements in all, else along ``n_directions`` random directions.

    Returns:
        True when the gradients agree.

    Example:
        >>> x = nnkit.randn(3, dtype=nnkit.float64, requires_grad=True)
        >>> gradcheck(lambda t: (t * t).sum(), (x,))
        True
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff = _diff_inputs(inputs)
    if not diff:
        raise ValueError("gradcheck: no input requires grad")
    rng = np.random.default_rng(seed)
    outs = _outputs(fn, inputs)
    weights = [tensor(rng.standard_normal(o.shape), dtype=o.dtype, device=o.device) for o in outs]
    diff_outs = [(o, w) for o, w in zip(outs, weights) if o.requires_grad]
    if diff_outs:
        analytic = _grad(
            [o for o, _ in diff_outs],
            [inputs[k] for k in diff],
            [w for _, w in diff_outs],
            allow_unused=True,
        )
    else:
        analytic = [None] * len(diff)
    total = sum(inputs[k].numel() for k in diff)
    for k, g in zip(diff, analytic):
        a = (
            np.zeros(inputs[k].shape)
            if g is None
            else np.asarray(g.detach().cpu().numpy(), dtype=np.float64)
        )
        ok = (_check_full if total <= max_full else _check_directional)(
            fn, inputs, weights, k, a, eps, atol, rtol, rng, n_directions
        )
        if ok is not True:
            if raise_exception:
                raise GradcheckError(
                    f"gradcheck: analytic and numerical gradients of input {k} "
                    f"(shape {tuple(inputs[k].shape)}) differ: {ok}"
                )
            return False
    return True


def _check_full(fn, inputs, weights, k, analytic, eps, atol, rtol, rng, n_dir):
    x = inputs[k]
    numerical = np.zeros(x.shape)
    flat = numerical.reshape(-1)
    for j in range(x.numel()):
        delta = zeros(x.numel(), dtype=x.dtype, device=x.device)
        with no_grad():
            delta[j] = eps
        delta = delta.reshape(x.shape)
        flat[j] = (
            _loss_at(fn, inputs, weights, k, delta) - _loss_at(fn, inputs, weights, k, -delta)
        ) / (2 * eps)
    if np.allclose(analytic, numerical, atol=atol, rtol=rtol):
        return True
    err = np.abs(analytic - numerical)
    j = np.unravel_index(np.argmax(err), err.shape)
    return (
        f"max abs difference {err.max():.3g} at index {tuple(int(i) for i in j)} "
        f"(analytic {analytic[j]:.6g}, numerical {numerical[j]:.6g})\nanalytic:\n{analytic}"
        f"\nnumerical:\n{numerical}"
    )


def _check_directional(fn, inputs, weights, k, analytic, eps, atol, rtol, rng, n_dir):
    x = inputs[k]
    for _ in range(n_dir):
        d = rng.standard_normal(x.shape)
        d /= np.linalg.norm(d) or 1.0
        delta = tensor(d * eps, dtype=x.dtype, device=x.device)
        num = (
            _loss_at(fn, inputs, weights, k, delta) - _loss_at(fn, inputs, weights, k, -delta)
        ) / (2 * eps)
        ana = float((analytic * d).sum())
        if not np.isclose(ana, num, atol=atol, rtol=rtol):
            return f"directional derivative analytic {ana:.8g} vs numerical {num:.8g}"
    return True


def gradgradcheck(
    fn,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 1,
    max_full: int = 400,
) -> bool:
    """Check second derivatives: gradcheck of ``x, v ↦ vᵀ ∂f/∂x`` built with
    ``create_graph=True``.

    Args:
        fn, inputs: as for :func:`gradcheck`.
        grad_outputs: the ``v`` per output (random float64 tensors when None).

    Returns:
        True when the second derivatives agree.
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff = _diff_inputs(inputs)
    rng = np.random.default_rng(seed)
    outs = _outputs(fn, inputs)
    if grad_outputs is None:
        grad_outputs = [
            tensor(rng.standard_normal(o.shape), dtype=o.dtype, device=o.device, requires_grad=True)
            for o in outs
        ]
    n_in = len(inputs)

    def first_grad(*args):
        # The finite differences call this under no_grad with detached inputs: the
        # first derivative still needs a graph, so re-attach the inputs and record it.
        xs, vs = list(args[:n_in]), args[n_in:]
        with enable_grad():
            for k in diff:
                if not xs[k].requires_grad:
                    xs[k] = xs[k].detach().requires_grad_(True)
            return _first_grad(xs, vs)

    def _first_grad(xs, vs):
        ys = [o for o in _outputs(fn, xs)]
        pairs = [(y, v) for y, v in zip(ys, vs) if y.requires_grad]
        if not pairs:
            return tuple(zeros_like(xs[k]) for k in diff)
        gs = _grad(
            [y for y, _ in pairs],
            [xs[k] for k in diff],
            [v for _, v in pairs],
            create_graph=True,
            allow_unused=True,
        )
        return tuple(zeros_like(xs[k]) if g is None else g for k, g in zip(diff, gs))

    return gradcheck(
        first_grad,
        inputs + tuple(grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        max_full=max_full,
        seed=seed + 1,
    )
