"""Random sampling ops: ``bernoulli``, ``multinomial``, ``normal`` and ``randint_like``.

They draw from nnkit's global NumPy generator (seeded by :func:`nnkit.manual_seed`)
unless given a ``generator``; the streams differ from PyTorch's (same seed, other
values) but shapes, dtypes, devices and refusals follow torch. The results carry no
gradient.
"""

from __future__ import annotations

import numpy as np

from nnkit.autograd.factories import _cls_dt, _like
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.random_factories import rand, randint, randn
from nnkit.autograd.tensor import Tensor
from nnkit.backends import dtypes as _dt
from nnkit.random import default_generator

__all__ = ["bernoulli", "bernoulli_", "multinomial", "normal", "randint_like"]

# Functions only (torch has no Tensor.normal or Tensor.randint_like).
NOT_METHODS = {"normal", "randint_like"}


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """Draws 0 or 1 per element: 1 with probability ``input`` (or the number ``p``).

    Args:
        input: a floating tensor of probabilities in ``[0, 1]`` (with ``p`` given, only
            its shape, dtype and device are used).
        p: a probability for every element instead of ``input``'s values.
        generator: a :class:`numpy.random.Generator` to draw from instead of the global one.

    Returns:
        A tensor of ``input``'s shape, dtype and device holding 0s and 1s.

    Example:
        >>> nnkit.bernoulli(nnkit.tensor([0.0, 1.0, 1.0]))
        tensor([0.0, 1.0, 1.0])
    """
    check_tensor(input, "bernoulli")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"bernoulli: expected a floating point input, got {input.dtype}")
    with no_grad():
        probs = input.detach() if p is None else float(p)
        bad = (probs < 0) | (probs > 1) if p is None else not 0 <= probs <= 1
        if bool(bad.any() if isinstance(bad, Tensor) else bad):
            raise RuntimeError("bernoulli: expected all probabilities p to satisfy 0 <= p <= 1")
        u = rand(input.shape, dtype=input.dtype, device=input.device, generator=generator)
        return (u < probs).to(input.dtype)


def bernoulli_(input, p=0.5, *, generator=None) -> Tensor:
    """Fills ``input`` in place with 0/1 draws, 1 with probability ``p``
    (``torch.Tensor.bernoulli_``).

    Args:
        input: a floating tensor, written into.
        p: the probability, a number or a tensor broadcastable to ``input`` (default 0.5),
            within ``[0, 1]``.
        generator: a :class:`numpy.random.Generator` to draw from instead of the global one.

    Returns:
        ``input`` itself; its old value gets a zero gradient.

    Example:
        >>> nnkit.zeros(3).bernoulli_(1.0)
        tensor([1.0, 1.0, 1.0])
    """
    check_tensor(input, "bernoulli_")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"bernoulli_: expected a floating point input, got {input.dtype}")
    with no_grad():
        probs = p.detach() if isinstance(p, Tensor) else float(p)
        bad = (probs < 0) | (probs > 1) if isinstance(p, Tensor) else not 0 <= probs <= 1
        if bool(bad.any() if isinstance(bad, Tensor) else bad):
            raise RuntimeError("bernoulli_: expected all probabilities p to satisfy 0 <= p <= 1")
        u = rand(input.shape, dtype=input.dtype, device=input.device, generator=generator)
        draw = (u < probs).to(input.dtype)
    return input.copy_(draw)


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Draws category indices with probabilities proportional to the rows of ``input``.

    Args:
        input: non-negative finite weights, 1-d ``(K,)`` or 2-d ``(N, K)``; each row must
            have a positive sum (they need not sum to 1).
        num_samples: how many indices to draw per row.
        replacement: draw with replacement; without it an index never repeats in a row
            (``num_samples`` at most ``K``; once the nonzero weights are used up,
            zero-weight indices follow in increasing order, as torch on CPU).
        generator: a :class:`numpy.random.Generator` to draw from instead of the global one.

    Returns:
        An int64 tensor ``(num_samples,)`` or ``(N, num_samples)`` on ``input``'s device.

    Example:
        >>> nnkit.multinomial(nnkit.tensor([0.0, 0.0, 1.0, 1.0]), 2).sort().values
        tensor([2, 3])
    """
    check_tensor(input, "multinomial")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.ndim}-d")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial: expected a floating point input, got {input.dtype}")
    num_samples = int(num_samples)
    if num_samples <= 0:
        raise RuntimeError("multinomial: cannot sample n_sample <= 0 samples")
    w = input.detach().cpu().numpy().astype(np.float64).reshape(-1, input.shape[-1])
    k = w.shape[1]
    if k == 0:
        raise RuntimeError("multinomial: the number of categories cannot be 0")
    if not replacement and num_samples > k:
        raise RuntimeError(
            f"multinomial: cannot sample n_sample ({num_samples}) > prob_dist.size(-1) ({k}) "
            "samples without replacement"
        )
    if not np.isfinite(w).all() or (w < 0).any():
        raise RuntimeError(
            "multinomial: probability tensor contains either inf, nan or element < 0"
        )
    if (w.sum(axis=1) <= 0).any():
        raise RuntimeError(
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
        )
    gen = generator or default_generator()
    if replacement:
        cdf = np.cumsum(w, axis=1)
        cdf /= cdf[:, -1:]
        u = gen.random((w.shape[0], num_samples))
        out = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
        out = np.minimum(out, k - 1)
    else:
        # Gumbel top-k: the largest log(w) + Gumbel keys are a draw without replacement.
        with np.errstate(divide="ignore"):
            keys = np.log(w) - np.log(-np.log(gen.random(w.shape)))
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    out = out.astype(np.int64).reshape(*input.shape[:-1], num_samples)
    cls, _ = _cls_dt(_dt.int64, input.device)
    return Tensor._from_mat(cls.from_host(out))


def normal(
    mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """Draws from normal distributions: ``mean + std * N(0, 1)``, elementwise.

    Args:
        mean: a tensor of means, or a number.
        std: a tensor of non-negative standard deviations, or a number (default 1).
        size: the shape, required (and only allowed) when both are numbers.
        generator: a :class:`numpy.random.Generator` to draw from instead of the global one.
        dtype, device, requires_grad: for the number-and-number form only (defaults: the
            default float dtype, CPU, no gradient).

    Returns:
        The broadcast shape of ``mean`` and ``std`` (or ``size``); a tensor's dtype and
        device are kept. Negative ``std`` is refused.

    Example:
        >>> nnkit.normal(nnkit.tensor([1.0, 5.0]), 0.0)
        tensor([1.0, 5.0])
    """
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal: size is required when mean and std are numbers")
        if float(std) < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std)}")
        z = randn(size, dtype=dtype, device=device, generator=generator)
        out = z * float(std) + float(mean)
        return out.requires_grad_(True) if requires_grad else out
    if size is not None:
        raise TypeError("normal: size is only accepted when mean and std are numbers")
    ref = mean if mt else std
    for t in (mean, std):
        if isinstance(t, Tensor) and not t.dtype.is_floating_point:
            raise RuntimeError(f"normal: expected a floating point tensor, got {t.dtype}")
    with no_grad():
        m = mean.detach() if mt else float(mean)
        s = std.detach() if st else float(std)
        if bool((s < 0).any()) if st else s < 0:
            raise RuntimeError("normal expects all elements of std >= 0.0")
        shape = tuple(
            np.broadcast_shapes(tuple(mean.shape) if mt else (), tuple(std.shape) if st else ())
        )
        z = randn(shape, dtype=ref.dtype, device=ref.device, generator=generator)
        return (z * s + m).to(ref.dtype)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, generator=None) -> Tensor:
    """Integers drawn uniformly from ``[low, high)`` in ``input``'s shape.

    Args:
        input: the tensor whose shape (and default dtype and device) to take.
        low: the lowest value (default 0; ``randint_like(x, high)`` is also accepted).
        high: one above the highest value.
        dtype: the dtype (default: ``input``'s).
        device: the device (default: ``input``'s).
        generator: a :class:`numpy.random.Generator` to draw from instead of the global one.

    Returns:
        A new tensor of ``input``'s shape.

    Example:
        >>> x = nnkit.randint_like(nnkit.zeros(2, 3), 5)
        >>> x.shape, x.dtype, bool(((x >= 0) & (x < 5)).all())
        ((2, 3), nnkit.float32, True)
    """
    check_tensor(input, "randint_like")
    if high is None:
        low, high = 0, low
    if int(high) <= int(low):
        raise RuntimeError(f"randint_like: expected low < high, got low={low}, high={high}")
    dt, dev = _like(input, dtype, device)
    r = randint(int(low), int(high), tuple(input.shape), device=dev, generator=generator)
    return r.to(dt)
