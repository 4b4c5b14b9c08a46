"""Global random state of nnkit.

Every random factory (``rand``, ``randn``, ``randint``, dropout, default parameter
initialisation, DataLoader shuffling without an explicit seed) draws from the one
generator returned by :func:`default_generator`; :func:`manual_seed` resets it.
"""

from __future__ import annotations

import threading

import numpy as np

from nnkit.backends.recording import unsafe

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
        >>> _ = nnkit.manual_seed(0); a = nnkit.rand(3)
        >>> _ = nnkit.manual_seed(0); b = nnkit.rand(3)
        >>> nnkit.equal(a, b)
        True
    """
    global _initial_seed
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"manual_seed: seed must be non-negative, got {seed}")
    unsafe("the step seeds nnkit's random generator")  # nnkit.compile cannot replay that
    with _lock:
        _initial_seed = seed
        _generator.bit_generator.state = np.random.PCG64(seed).state
    return _generator


def seed() -> int:
    """Seed the global generator from OS entropy and return the seed used.

    Returns:
        The seed, a non-negative int (what :func:`initial_seed` returns from now on).
    """
    s = int(np.random.SeedSequence().entropy % (2**63))
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed last given to :func:`manual_seed` (or drawn at import).

    Returns:
        The seed, an int.

    Example:
        >>> _ = nnkit.manual_seed(42)
        >>> nnkit.initial_seed()
        42
    """
    return _initial_seed


def default_generator() -> np.random.Generator:
    """The global ``numpy.random.Generator`` every nnkit random op draws from.

    Returns:
        The generator itself (not a copy): drawing from it advances nnkit's state.
    """
    return _generator


def get_rng_state() -> dict:
    """A copy of the global generator's state (a plain dict, safe to store).

    Returns:
        The ``bit_generator.state`` dict of the PCG64 generator.

    Example:
        >>> state = nnkit.get_rng_state()
        >>> a = nnkit.rand(2)
        >>> nnkit.set_rng_state(state)
        >>> nnkit.equal(nnkit.rand(2), a)
        True
    """
    return _generator.bit_generator.state


def set_rng_state(state: dict) -> None:
    """Restore a state returned by :func:`get_rng_state`.

    Args:
        state: the dict returned by :func:`get_rng_state`.
    """
    unsafe("the step sets nnkit's random state")  # nnkit.compile cannot replay that
    _generator.bit_generator.state = state


class fork_rng:
    """Context manager that restores the global random state on exit.

    Example:
        >>> from nnkit.random import fork_rng
        >>> with fork_rng():
        ...     _ = nnkit.rand(3)          # draws that do not disturb the caller's stream
        >>> a = nnkit.rand(2)
        >>> _ = nnkit.manual_seed(0)
        >>> nnkit.equal(nnkit.rand(2), a)
        True
    """

    def __enter__(self):
        self._state = get_rng_state()
        return self

    def __exit__(self, *exc):
        set_rng_state(self._state)
        return False
