"""Floating-point errors stay quiet, as in PyTorch: IEEE results, no NumPy warnings.

NumPy reports a division by zero (``1 / 0``, ``log(0)``), an invalid operation
(``sqrt(-1)``, ``0 / 0``, ``inf - inf``, ``x % 0.0``) or an overflow as a
RuntimeWarning; PyTorch, like CuPy, just returns the ``inf`` or NaN. nnkit runs its
kernels with NumPy's error handling set to ``ignore``: ``Op.apply`` (every forward,
and so every op of a built-in backward), the in-place fast path and the backward pass
enter that state, once: a nested op finds it entered and pays one lookup. The user's
own NumPy code outside nnkit's ops keeps NumPy's settings.

``STATE.get() is QUIET`` tells whether the state is entered; ``token = STATE.set(QUIET)``
enters it and ``STATE.reset(token)`` leaves it: the inline form the hot paths use (on
NumPy 2, NumPy's own context variable with a prepared error object, a fraction of
``np.errstate``'s cost). :class:`quiet` is the same as a context manager.
"""

from __future__ import annotations

import numpy as np

__all__ = ["STATE", "QUIET", "quiet"]

try:  # NumPy >= 2: the context variable np.errstate sets, and a ready error object
    from numpy._core._ufunc_config import _extobj_contextvar as STATE
    from numpy._core.umath import _make_extobj

    QUIET = _make_extobj(all="ignore")
except ImportError:  # NumPy 1.x (or a future layout): the public, slower route

    class _SeterrState:
        """``get``/``set``/``reset`` of a ContextVar, over ``np.geterr``/``np.seterr``."""

        _ignore = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}

        def get(self):
            return QUIET if np.geterr() == self._ignore else None

        def set(self, _value):
            return np.seterr(all="ignore")

        def reset(self, token):
            np.seterr(**token)

    STATE = _SeterrState()
    QUIET = "ignore"


class quiet:
    """Context manager: NumPy's floating-point errors ignored inside (re-entrant)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = None if STATE.get() is QUIET else STATE.set(QUIET)

    def __exit__(self, *exc) -> None:
        if self._token is not None:
            STATE.reset(self._token)
