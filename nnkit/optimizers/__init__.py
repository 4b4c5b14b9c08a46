"""Keras 3's optimizers (``nnkit.optimizers``): built without parameters, Keras's
arguments, defaults and update rules.

``Adam(learning_rate=1e-3)`` holds no variables until ``build(variables)`` (or the first
``apply_gradients``) binds it; each class transcribes Keras 3's (``keras/src/optimizers``)
formulas, quoted in its docstring. The same objects are :class:`nnkit.optim.Optimizer`
instances too (``zero_grad``, ``step``, ``state_dict``, ``param_groups[0]['lr']``), so
nnkit's ``fit``, learning-rate schedulers and checkpoints take them. The PyTorch-style
classes of :mod:`nnkit.optim` (PyTorch's arguments and rules) are separate.

Example:
    >>> model = nnkit.Sequential(nn.Linear(4, 2))
    >>> opt = nnkit.optimizers.Adam(learning_rate=1e-2, gradient_accumulation_steps=2)
    >>> model.compile(opt, "mse")
    >>> x, y = nnkit.randn(16, 4), nnkit.randn(16, 2)
    >>> _ = model.fit(x, y, batch_size=4, epochs=1, verbose=0)   # 4 batches
    >>> opt.iterations                     # one update per 2 batches, as in Keras
    2
    >>> nnkit.optimizers.get("adamw").weight_decay
    0.004
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nnkit.optimizers.adagrad import Adagrad
from nnkit.optimizers.adam import Adam
from nnkit.optimizers.adamw import AdamW
from nnkit.optimizers.base_optimizer import Optimizer
from nnkit.optimizers.rmsprop import RMSprop
from nnkit.optimizers.sgd import SGD
from nnkit.saving.serialization import deserialize as deserialize_object
from nnkit.saving.serialization import serialize as serialize_object

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "get",
    "serialize",
    "deserialize",
    "ALL_OBJECTS",
    "ALL_OBJECTS_DICT",
]

ALL_OBJECTS: tuple[type[Optimizer], ...] = (Optimizer, SGD, Adam, AdamW, RMSprop, Adagrad)

#: the built-in classes by lower-case name (names are matched case-insensitively)
ALL_OBJECTS_DICT: dict[str, type[Optimizer]] = {cls.__name__.lower(): cls for cls in ALL_OBJECTS}


def serialize(optimizer: Optimizer) -> dict[str, Any]:
    """The optimizer as ``{"module", "class_name", "config"[, "registered_name"]}``
    (Keras's ``serialize_keras_object`` layout; JSON-able, a schedule included when it
    has ``get_config`` or is a registered function).

    Args:
        optimizer: the optimizer.

    Returns:
        The dict; :func:`deserialize` rebuilds the optimizer (unbuilt) from it.

    Raises:
        ValueError: if ``optimizer`` is not an :class:`Optimizer`, or its config cannot
            be described.

    Example:
        >>> config = nnkit.optimizers.serialize(nnkit.optimizers.SGD(learning_rate=0.1))
        >>> config['class_name'], config['config']['learning_rate']
        ('SGD', 0.1)
        >>> type(nnkit.optimizers.deserialize(config)).__name__
        'SGD'
    """
    if not isinstance(optimizer, Optimizer):
        raise ValueError(f"serialize: expected a nnkit.optimizers.Optimizer, got {optimizer!r}")
    return serialize_object(optimizer)


def deserialize(
    config: Mapping[str, Any], custom_objects: Mapping[str, Any] | None = None
) -> Optimizer:
    """An optimizer from :func:`serialize`'s dict; built-in class names are matched
    case-insensitively (``'adam'``, ``'Adam'``), others are looked up in
    ``custom_objects`` and the classes registered with
    :func:`nnkit.saving.register_serializable`.

    Args:
        config: a dict written by :func:`serialize`.
        custom_objects: ``{class_name: class}`` for user optimizers.

    Returns:
        A new optimizer, not yet built.

    Raises:
        ValueError: for a malformed config or an unknown class.
    """
    if not isinstance(config, Mapping) or not isinstance(config.get("class_name"), str):
        raise ValueError(
            f"deserialize: expected a dict with 'class_name' and 'config'; got {config!r}"
        )
    config = dict(config)
    builtin = ALL_OBJECTS_DICT.get(config["class_name"].lower())
    if builtin is not None and not (custom_objects and config["class_name"] in custom_objects):
        config.update(class_name=builtin.__name__, module=builtin.__module__)
        config.pop("registered_name", None)
    config.setdefault("config", {})
    return deserialize_object(config, custom_objects)


def get(identifier: Any) -> Optimizer | None:
    """Resolve an optimizer identifier (Keras's ``keras.optimizers.get``).

    Args:
        identifier: None; a name (``'sgd'``, ``'adam'``, ``'adamw'``, ``'rmsprop'``,
            ``'adagrad'``, any case), which gives a new optimizer with Keras's defaults;
            a :func:`serialize` dict (``{"class_name": ..., "config": {...}}``); or an
            :class:`Optimizer` (returned as is).

    Returns:
        A new optimizer for a name or dict, ``identifier`` itself for an optimizer, None for
            None.

    Raises:
        ValueError: if the identifier cannot be interpreted.

    Example:
        >>> nnkit.optimizers.get('Adam')
        Adam(name='adam...', learning_rate=0.001, iterations=0, built=False)
        >>> nnkit.optimizers.get(None) is None
        True
    """
    if identifier is None:
        return None
    if isinstance(identifier, Mapping):
        obj = deserialize(identifier)
    elif isinstance(identifier, str):
        if identifier.lower() not in ALL_OBJECTS_DICT or identifier.lower() == "optimizer":
            names = sorted(ALL_OBJECTS_DICT.keys() - {"optimizer"})
            raise ValueError(
                f"Could not interpret optimizer identifier: {identifier!r}; valid "
                f"names are: {', '.join(names)}"
            )
        obj = deserialize({"class_name": identifier, "config": {}})
    else:
        obj = identifier
    if isinstance(obj, Optimizer):
        return obj
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")
