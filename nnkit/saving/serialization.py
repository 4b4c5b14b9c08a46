"""Objects as JSON-able configs and back: Keras's ``serialize``/``deserialize`` protocol.

An object is saved as ``{"module", "class_name", "config"[, "registered_name",
"build_config"]}``: ``config`` is what its ``get_config()`` returns, and loading calls
``cls.from_config(config)``. A class is found, in this order, in the ``custom_objects``
given to the load (or a :func:`custom_object_scope`), among the classes registered with
:func:`register_serializable`, and among nnkit's own classes. Nothing else is ever
imported: a file cannot make ``load_model`` run code of a module it names.

Values inside a config are JSON values, tuples (kept as tuples), nnkit dtypes and
devices, nested serializable objects (e.g. the layers of a ``Sequential``) and functions
(nnkit's or registered ones).

This module imports only :mod:`nnkit.backends` (dtypes and devices), so every package
above :mod:`nnkit.io` may use it.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from nnkit.backends.device import Device, device
from nnkit.backends.dtypes import DType, to_dtype

__all__ = [
    "register_serializable",
    "get_registered_name",
    "get_registered_object",
    "custom_object_scope",
    "serialize",
    "deserialize",
    "SerializationError",
]

_REGISTRY: dict[str, Any] = {}
_NAMES: dict[Any, str] = {}
_SCOPE = threading.local()


class SerializationError(ValueError):
    """An object cannot be turned into a config, or a config into an object."""


def register_serializable(package: str = "Custom", name: str | None = None) -> Callable:
    """Register a user class (or function) so that saved models can rebuild it.

    Its registered name is ``'package>name'`` (``name`` defaults to the class's).

    Args:
        package: a namespace for the name.
        name: the name to save it under.

    Returns:
        A decorator that registers its argument under ``'package>name'`` and returns it
            unchanged.

    Raises:
        ValueError: if ``package`` holds a ``'>'``, or the name is taken by another object.

    Example:
        >>> import os, tempfile
        >>> @nnkit.saving.register_serializable(package="docstring_example")
        ... class Scale(nnkit.nn.Module):
        ...     def __init__(self, factor=2.0):
        ...         super().__init__()
        ...         self.factor = factor
        ...     def forward(self, x):
        ...         return x * self.factor
        >>> nnkit.saving.get_registered_name(Scale)
        'docstring_example>Scale'
        >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
        >>> nnkit.Sequential(nn.Linear(2, 2), Scale(3.0)).save(path)
        >>> nnkit.load_model(path)[1].factor
        3.0
    """
    if ">" in package:
        raise ValueError(f"register_serializable: package must not contain '>'; got {package!r}")

    def decorate(obj: Any) -> Any:
        key = f"{package}>{name or obj.__name__}"
        if key in _REGISTRY and _REGISTRY[key] is not obj:
            raise ValueError(
                f"register_serializable: {key!r} is already registered to {_REGISTRY[key]!r}"
            )
        if inspect.isclass(obj) and not callable(getattr(obj, "get_config", None)):
            raise ValueError(f"register_serializable: {obj.__name__} has no get_config()")
        _REGISTRY[key], _NAMES[obj] = obj, key
        return obj

    return decorate


#: Keras 3's name for :func:`register_serializable`.
register_keras_serializable = register_serializable


def get_registered_name(obj: Any) -> str:
    """The name ``obj`` is saved under: its registered name, else its own name.

    Args:
        obj: a class or function.

    Returns:
        The name, a string.
    """
    return _NAMES.get(obj, getattr(obj, "__name__", type(obj).__name__))


def get_registered_object(name: str, custom_objects: Mapping[str, Any] | None = None) -> Any:
    """The object registered (or given in ``custom_objects``/a scope) under ``name``.

    Args:
        name: the name (``'package>name'`` for a registered object).
        custom_objects: ``{name: object}`` searched first, then the active
            :func:`custom_object_scope` blocks, then the registry.

    Returns:
        The object, or None if ``name`` is unknown.
    """
    for source in (custom_objects or {}, *_scopes(), _REGISTRY):
        if name in source:
            return source[name]
    return None


@contextlib.contextmanager
def custom_object_scope(custom_objects: Mapping[str, Any]) -> Iterator[None]:
    """Make ``{name: class or function}`` known to every load inside the block.

    Args:
        custom_objects: ``{name: class or function}``.

    Example:
        >>> import os, tempfile
        >>> class Shift(nnkit.nn.Module):           # not registered
        ...     def __init__(self, offset=1.0):
        ...         super().__init__()
        ...         self.offset = offset
        ...     def forward(self, x):
        ...         return x + self.offset
        >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
        >>> nnkit.Sequential(nn.Linear(2, 2), Shift(0.5)).save(path)
        >>> with nnkit.saving.custom_object_scope({"Shift": Shift}):
        ...     model = nnkit.load_model(path)
        >>> model[1].offset
        0.5
    """
    stack = _scopes()
    stack.append(dict(custom_objects))
    try:
        yield
    finally:
        stack.pop()


def _scopes() -> list[dict[str, Any]]:
    if not hasattr(_SCOPE, "stack"):
        _SCOPE.stack = []
    return _SCOPE.stack


# --------------------------------------------------------------------- saving
def serialize(obj: Any) -> dict[str, Any]:
    """``obj`` (an object with ``get_config``) as a JSON-able dict.

    Args:
        obj: the object (a layer, loss, metric, optimizer, ...).

    Returns:
        ``{'module', 'class_name', 'config', 'registered_name'}`` with a JSON-able
            ``config``.

    Raises:
        SerializationError: if ``obj`` or a value of its config cannot be saved; the
            message names the object and the argument.

    Example:
        >>> config = nnkit.saving.serialize(nn.Dense(4, activation='relu'))
        >>> config['class_name'], config['config']['units']
        ('Dense', 4)
        >>> nnkit.saving.deserialize(config)
        Dense(units=4, activation=relu)
    """
    if not callable(getattr(obj, "get_config", None)):
        raise SerializationError(f"cannot save a {type(obj).__name__}: it has no get_config()")
    cls = type(obj)
    try:
        config = obj.get_config()
    except NotImplementedError as err:
        raise SerializationError(str(err)) from None
    if not isinstance(config, Mapping):
        raise SerializationError(
            f"{cls.__name__}.get_config() must return a dict; got {type(config).__name__}"
        )
    out = {
        "module": cls.__module__,
        "class_name": cls.__name__,
        "config": {str(k): _value(v, f"{cls.__name__}({k}=...)") for k, v in config.items()},
    }
    if cls in _NAMES:
        out["registered_name"] = _NAMES[cls]
    build = getattr(obj, "get_build_config", None)
    build_config = build() if callable(build) else None
    if build_config is not None:
        out["build_config"] = _value(build_config, f"{cls.__name__} build config")
    if getattr(obj, "trainable", True) is False:  # a frozen layer (Keras's flag)
        out["trainable"] = False
    return out


def _value(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [_value(v, where) for v in value]}
    if isinstance(value, list):
        return [_value(v, where) for v in value]
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise SerializationError(
                f"{where}: a dict with keys other than strings cannot be saved"
            )
        return {k: _value(v, where) for k, v in value.items()}
    kind = type(value).__name__
    if isinstance(value, DType):
        return {"__dtype__": str(value)}
    if isinstance(value, Device):
        return {"__device__": str(value)}
    if isinstance(value, np.generic):
        return value.item()
    if callable(getattr(value, "get_config", None)) and not inspect.isclass(value):
        return {"__object__": serialize(value)}
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        if value in _NAMES:
            return {"__function__": _NAMES[value]}
        if value.__module__ and value.__module__.startswith("nnkit."):
            return {"__function__": f"{value.__module__}:{value.__qualname__}"}
    raise SerializationError(
        f"{where}: a {kind} cannot be saved in a model's architecture (give a name, a "
        "number or a registered object; see nnkit.saving.register_serializable)"
    )


# -------------------------------------------------------------------- loading
def deserialize(config: Mapping[str, Any], custom_objects: Mapping[str, Any] | None = None) -> Any:
    """The object a :func:`serialize` dict describes.

    Args:
        config: a dict written by :func:`serialize`.
        custom_objects: ``{name: class or function}`` for user objects not registered.

    Returns:
        A new object, built by the class's ``from_config``.

    Raises:
        SerializationError: for a malformed config, or a class that is neither
            registered, given in ``custom_objects`` nor one of nnkit's; the message says
            how to make it known.
    """
    if not isinstance(config, Mapping) or not isinstance(config.get("class_name"), str):
        raise SerializationError(f"not a serialized object: {str(config)[:200]}")
    cls = _locate(config, custom_objects)
    kwargs = {k: _restore(v, custom_objects) for k, v in dict(config.get("config", {})).items()}
    try:
        obj = cls.from_config(kwargs)
    except (TypeError, ValueError) as err:
        raise SerializationError(
            f"cannot rebuild {config['class_name']} from its saved config: {err}"
        ) from None
    build_config = config.get("build_config")
    if build_config is not None and callable(getattr(obj, "build_from_config", None)):
        obj.build_from_config(_restore(build_config, custom_objects))
    if config.get("trainable") is False:
        obj.trainable = False
    return obj


# Where classes saved by an earlier nnkit now live: a file names the module a class was
# defined in when it was written (the models were in nnkit.layers before nnkit.models).
_MOVED = {
    "nnkit.layers.model": "nnkit.models.model",
    "nnkit.layers.container": "nnkit.models.sequential",
    "nnkit.layers.functional_model": "nnkit.models.functional",
}


def _locate(config: Mapping[str, Any], custom_objects: Mapping[str, Any] | None) -> Any:
    name, module = config["class_name"], str(config.get("module", ""))
    for key in (config.get("registered_name"), name):
        if key and (found := get_registered_object(key, custom_objects)) is not None:
            return found
    if module == "nnkit" or module.startswith("nnkit."):
        for candidate in filter(None, (module, _MOVED.get(module))):
            try:
                found = getattr(importlib.import_module(candidate), name, None)
            except ImportError:
                found = None
            if inspect.isclass(found) and found.__module__.startswith("nnkit"):
                return found
    raise SerializationError(
        f"Could not locate class {name!r} (saved from module {module!r}). Make sure custom "
        "classes are decorated with @nnkit.saving.register_serializable(), or pass them to "
        f"load_model(..., custom_objects={{{name!r}: {name}}})."
    )


def _restore(value: Any, custom_objects: Mapping[str, Any] | None) -> Any:
    if isinstance(value, list):
        return [_restore(v, custom_objects) for v in value]
    if not isinstance(value, Mapping):
        return value
    if "__tuple__" in value:
        return tuple(_restore(v, custom_objects) for v in value["__tuple__"])
    if "__object__" in value:
        return deserialize(value["__object__"], custom_objects)
    if "__dtype__" in value:
        try:
            return to_dtype(str(value["__dtype__"]))
        except TypeError as err:
            raise SerializationError(f"a saved config names {err}") from None
    if "__device__" in value:
        return device(str(value["__device__"]))
    if "__function__" in value:
        return _function(str(value["__function__"]), custom_objects)
    return {k: _restore(v, custom_objects) for k, v in value.items()}


def _function(name: str, custom_objects: Mapping[str, Any] | None) -> Any:
    found = get_registered_object(name, custom_objects)
    if found is not None:
        return found
    module, _, qualname = name.partition(":")
    if module.startswith("nnkit.") and qualname.isidentifier():
        try:
            found = getattr(importlib.import_module(module), qualname, None)
        except ImportError:
            found = None
        if callable(found):
            return found
    raise SerializationError(
        f"Could not locate function {name!r}: register it with "
        "@nnkit.saving.register_serializable() or pass it in "
        "custom_objects"
    )
