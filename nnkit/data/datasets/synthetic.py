"""Small synthetic 2-d classification problems, generated from their own seeded RNG."""

from __future__ import annotations

import numpy as np

from nnkit.data.dataset import draw_seed

__all__ = ["make_moons", "make_spirals"]


def _check_count(fn: str, name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{fn}: {name} must be an integer >= {minimum}, got {value!r}")


def _check_noise(fn: str, noise: float) -> None:
    if not noise >= 0:
        raise ValueError(f"{fn}: noise must be non-negative, got {noise!r}")


def make_moons(
    n_samples: int = 100, *, noise: float = 0.0, seed: int | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaving half circles (scikit-learn's ``make_moons``), shuffled.

    The upper moon is class 0 (``n_samples // 2`` points, rounded down), the lower
    one class 1.

    Args:
        n_samples: the total number of points (at least 2).
        noise: the standard deviation of Gaussian noise added to each coordinate.
        seed: seeds this call's own generator (``None``: a seed drawn from nnkit's
            global generator, so ``nnkit.manual_seed`` makes it reproducible).

    Returns:
        ``(x, y)``: ``float32`` points of shape ``(n_samples, 2)`` and ``int64``
        labels of shape ``(n_samples,)``.

    Raises:
        ValueError: if ``n_samples < 2`` or ``noise < 0``.

    Example:
        >>> x, y = make_moons(200, noise=0.1, seed=0)
        >>> x.shape, x.dtype, sorted(set(y.tolist()))
        ((200, 2), dtype('float32'), [0, 1])
    """
    _check_count("make_moons", "n_samples", n_samples, 2)
    _check_noise("make_moons", noise)
    rng = np.random.default_rng(draw_seed() if seed is None else seed)
    n_out = n_samples // 2
    n_in = n_samples - n_out
    t_out, t_in = np.linspace(0, np.pi, n_out), np.linspace(0, np.pi, n_in)
    outer = np.stack([np.cos(t_out), np.sin(t_out)], axis=1)
    inner = np.stack([1 - np.cos(t_in), 0.5 - np.sin(t_in)], axis=1)
    x = np.concatenate([outer, inner]) + rng.normal(0.0, noise, size=(n_samples, 2))
    y = np.concatenate([np.zeros(n_out, np.int64), np.ones(n_in, np.int64)])
    perm = rng.permutation(n_samples)
    return x[perm].astype(np.float32), y[perm]


def make_spirals(
    n_samples: int = 300, n_classes: int = 3, *, noise: float = 0.2, seed: int | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Interleaved spiral arms, one per class (the CS231n / DeZero spiral), shuffled.

    Arm ``k`` has radius growing linearly from 0 to 1 while its angle runs from
    ``4k`` to ``4(k+1)`` radians, plus Gaussian noise of standard deviation
    ``noise`` on the angle. The samples are shared as evenly as possible among the
    classes (the first classes get one more when it does not divide).

    Args:
        n_samples: the total number of points (at least ``n_classes``).
        n_classes: the number of arms (at least 2).
        noise: the standard deviation of the angular noise, in radians.
        seed: seeds this call's own generator (``None``: a seed drawn from nnkit's
            global generator, so ``nnkit.manual_seed`` makes it reproducible).

    Returns:
        ``(x, y)``: ``float32`` points ``(n_samples, 2)`` and ``int64`` labels.

    Raises:
        ValueError: for ``n_classes < 2``, ``n_samples < n_classes`` or ``noise < 0``.

    Example:
        >>> x, y = make_spirals(300, 3, seed=0)
        >>> x.shape, np.bincount(y).tolist()
        ((300, 2), [100, 100, 100])
    """
    _check_count("make_spirals", "n_classes", n_classes, 2)
    _check_count("make_spirals", "n_samples", n_samples, n_classes)
    _check_noise("make_spirals", noise)
    rng = np.random.default_rng(draw_seed() if seed is None else seed)
    counts = [n_samples // n_classes + (k < n_samples % n_classes) for k in range(n_classes)]
    xs, ys = [], []
    for k, n in enumerate(counts):
        radius = np.linspace(0.0, 1.0, n)
        angle = np.linspace(4.0 * k, 4.0 * (k + 1), n) + rng.normal(0.0, noise, size=n)
        xs.append(np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1))
        ys.append(np.full(n, k, dtype=np.int64))
    perm = rng.permutation(n_samples)
    return np.concatenate(xs)[perm].astype(np.float32), np.concatenate(ys)[perm]
