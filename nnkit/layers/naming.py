"""Layer names as Keras 3 assigns them, and ``clear_session``.

Every :class:`~nnkit.layers.Module` has a ``name``: the one given (``Dense(4,
name="hidden")``) or the snake_case of its class name made unique per process with
``_1``, ``_2``, ... (``dense``, ``dense_1``, ``batch_norm1d``, ``re_lu``), exactly as
Keras's ``auto_name``/``uniquify`` do. A given name does not use up a number.
:func:`clear_session` restarts the numbering (Keras's ``keras.backend.clear_session``).

Names are labels for ``summary()``, ``get_layer`` and functional models (whose
``state_dict`` keys are layer names); they never change the ``state_dict`` keys of a
``Sequential`` or a subclassed model, which stay attribute names and indices.
"""

from __future__ import annotations

import gc
import inspect
import re
import threading
from collections import defaultdict
from collections.abc import Callable

__all__ = ["to_snake_case", "auto_name", "uniquify", "clear_session", "check_name"]

_lock = threading.Lock()
_uids: defaultdict[str, int] = defaultdict(int)
_accepts_name_cache: dict[Callable, bool] = {}


def to_snake_case(name: str) -> str:
    """Keras's ``to_snake_case``: ``'BatchNorm1d'`` → ``'batch_norm1d'``, ``'ReLU'`` →
    ``'re_lu'``, ``'LSTM'`` → ``'lstm'``.

    Args:
        name: a class name (non-word characters are dropped).

    Returns:
        The snake_case name.
    """
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def uniquify(name: str) -> str:
    """``name`` the first time, then ``name_1``, ``name_2``, ... (per process).

    Args:
        name: the base name.

    Returns:
        The unique name.
    """
    with _lock:
        count = _uids[name]
        _uids[name] += 1
    return name if count == 0 else f"{name}_{count}"


def auto_name(prefix: str) -> str:
    """The next unique name for a class named ``prefix`` (Keras's ``auto_name``).

    Args:
        prefix: the class name.

    Returns:
        The snake_case name, made unique (``dense``, ``dense_1``, ...).
    """
    return uniquify(to_snake_case(prefix))


def clear_session(free_memory: bool = True) -> None:
    """Reset the layer-name counters, so the next ``Dense`` is ``dense`` again.

    Keras 3's ``keras.backend.clear_session()`` / ``keras.utils.clear_session()``;
    models already built keep their names.

    Args:
        free_memory: also run Python's garbage collector.

    Example:
        >>> nnkit.layers.clear_session()
        >>> nnkit.nn.Dense(4).name
        'dense'
    """
    with _lock:
        _uids.clear()
    if free_memory:
        gc.collect()


def check_name(name: object) -> str:
    """``name`` if it is a valid layer name.

    Args:
        name: the proposed name.

    Returns:
        ``name``.

    Raises:
        ValueError: if it is not a string or contains ``/`` (Keras's rule).
    """
    if not isinstance(name, str) or "/" in name:
        raise ValueError(
            "Argument `name` must be a string and cannot contain character `/`. "
            f"Received: name={name!r} (of type {type(name)})"
        )
    return name


def accepts_name(init: Callable) -> bool:
    """Whether a constructor takes ``name=`` itself (a ``name`` parameter or ``**kwargs``)."""
    found = _accepts_name_cache.get(init)
    if found is None:
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            params = []
        found = any(p.name == "name" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        _accepts_name_cache[init] = found
    return found


def without_name(init: Callable, kwargs: dict) -> dict:
    """``kwargs`` less ``name`` when ``init`` does not take it (``Module.__new__`` has
    already given the layer its name)."""
    if "name" in kwargs and not accepts_name(init):
        kwargs = {k: v for k, v in kwargs.items() if k != "name"}
    return kwargs
