"""Global random state of nnkit.

Every random factory (``rand``, ``randn``, ``randint``, dropout, default parameter
initialisation, DataLoader shuffling without an explicit seed) draws from the one
generator returned by :func:`default_generator`; :func:`manual_seed` resets it.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = [
    "manual_seed",
    "seed",
    "initial_seed",
    "default_generator",
    "get_rng_state",
    "set_rng_state",
    "fork_rng",
]

_lock = threading.Lock()
_initial_seed = int(np.random.SeedSequence().entropy % (2**63))
_generator = np.random.Generator(np.random.PCG64(_initial_seed))


def manual_seed(seed: int) -> np.random.Generator:
    """Seed nnkit's global random generator, making every random factory reproducible.

    Args:
        seed: a non-negative integer.

    Returns:
        The (re-seeded) global ``numpy.random.Generator``.

    Example:
        >>> nnkit.manual_seed(0); a = nnkit.rand(3)
        >>> nnkit.manual_seed(0); b = nnkit.rand(3)   # a equals b
    """
    global _initial_seed
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"manual_seed: seed must be non-negative, got {seed}")
    with _lock:
        _initial_seed = seed
        _generator.bit_generator.state = np.random.PCG64(seed).state
    return _generator


def seed() -> int:
    """Seed the global generator from OS entropy and return the seed used."""
    s = int(np.random.SeedSequence().entropy % (2**63))
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed last given to :func:`manual_seed` (or drawn at import)."""
    return _initial_seed


def default_generator() -> np.random.Generator:
    """The global ``numpy.random.Generator`` every nnkit random op draws from."""
    return _generator


def get_rng_state() -> dict:
    """A copy of the global generator's state (a plain dict, safe to store)."""
    return _generator.bit_generator.state


def set_rng_state(state: dict) -> None:
    """Restore a state returned by :func:`get_rng_state`."""
    _generator.bit_generator.state = state


class fork_rng:
    """Context manager that restores the global random state on exit."""

    def __enter__(self):
        self._state = get_rng_state()
        return self

    def __exit__(self, *exc):
        set_rng_state(self._state)
        return False
