"""Saving whole models: architecture, weights, optimizer state and compile settings.

``model.save(path)`` writes one HDF5 file (atomically, never pickled) and
:func:`load_model` rebuilds the model from it in a fresh process: predictions are
bitwise equal and training continues where it stopped. Layers describe themselves with
``get_config()`` and are rebuilt with ``from_config()``; user classes are found through
:func:`register_serializable` or ``custom_objects``.

Example:
    >>> model.save("digits.h5")
    >>> model = nnkit.load_model("digits.h5")          # in another process
    >>> model.fit(x, y, epochs=1)                       # continues the optimizer's state
"""

from __future__ import annotations

import importlib
from typing import Any

from nnkit.saving.serialization import (
    SerializationError,
    custom_object_scope,
    deserialize,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    register_serializable,
    serialize,
)

__all__ = [
    "load_model",
    "register_serializable",
    "register_keras_serializable",
    "get_registered_name",
    "get_registered_object",
    "custom_object_scope",
    "serialize",
    "deserialize",
    "SerializationError",
]


def __getattr__(name: str) -> Any:
    # load_model reads checkpoints (nnkit.io): loaded on first use, so that every layer
    # of the library may import the serialization protocol above.
    if name == "load_model":
        return importlib.import_module("nnkit.saving.model_file").load_model
    raise AttributeError(f"module 'nnkit.saving' has no attribute '{name}'")
