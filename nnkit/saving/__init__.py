"""Saving whole models: architecture, weights, optimizer state and compile settings.

``model.save(path)`` writes one HDF5 file (atomically, never pickled) and
:func:`load_model` rebuilds the model from it in a fresh process: predictions are
bitwise equal and training continues where it stopped. Layers describe themselves with
``get_config()`` and are rebuilt with ``from_config()``; user classes are found through
:func:`register_serializable` or ``custom_objects``.

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
    >>> model = nnkit.Sequential(nn.Dense(8, activation="relu"), nn.Dense(3))
    >>> model.compile("adam", "cross_entropy", metrics=["accuracy"])
    >>> x, y = nnkit.randn(16, 4), nnkit.randint(0, 3, (16,))
    >>> _ = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    >>> model.save(path)
    >>> restored = nnkit.load_model(path)               # e.g. in another process
    >>> nnkit.equal(restored(x), model(x))
    True
    >>> _ = restored.fit(x, y, epochs=1, verbose=0)     # continues the optimizer's state
"""

from __future__ import annotations

from nnkit.saving.model_file import load_model, model_from_json
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
    "model_from_json",
    "register_serializable",
    "register_keras_serializable",
    "get_registered_name",
    "get_registered_object",
    "custom_object_scope",
    "serialize",
    "deserialize",
    "SerializationError",
]
