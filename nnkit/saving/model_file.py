"""One HDF5 file per model: what ``Model.save`` writes and :func:`load_model` reads.

The file is an ordinary nnkit checkpoint (:mod:`nnkit.io`: weights and optimizer state
as checksummed datasets) whose config text is JSON::

    {"format": "nnkit.model", "version": 1,
     "architecture": <serialize(model)>, "compile": <compile settings or null>}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import nnkit.optim as optim
from nnkit.io import load_checkpoint, read_checkpoint
from nnkit.io.errors import CheckpointError
from nnkit.saving.serialization import (
    SerializationError,
    _restore,
    _value,
    deserialize,
    get_registered_name,
    get_registered_object,
    serialize,
)

__all__ = ["model_config", "load_model", "model_from_json", "FORMAT"]

FORMAT = "nnkit.model"
VERSION = 1


def model_config(model: Any, compiled: Any) -> str:
    """The JSON text ``Model.save`` stores: the architecture and the compile settings.

    Args:
        model: the model.
        compiled: its :class:`~nnkit.training.compile_utils.CompileConfig`, or None.

    Returns:
        The JSON text (``format``, ``version``, ``architecture``, ``compile``).

    Raises:
        SerializationError: naming the layer or argument that cannot be described.
    """
    return json.dumps(
        {
            "format": FORMAT,
            "version": VERSION,
            "architecture": serialize(model),
            "compile": None if compiled is None else _compile_config(compiled),
        }
    )


def _compile_config(compiled: Any) -> dict[str, Any]:
    optimizer = compiled.optimizer
    if optimizer is None:  # compiled by name, never built: the name and lr are enough
        spec = compiled.optimizer_spec
        opt = {
            "name": spec if isinstance(spec, str) else get_registered_name(spec),
            "lr": compiled.lr,
        }
    elif callable(getattr(optimizer, "get_config", None)):  # nnkit.optimizers (Keras)
        opt = {"keras": serialize(optimizer), "built": bool(getattr(optimizer, "built", True))}
    else:
        opt = {
            "class_name": get_registered_name(type(optimizer)),
            "lr": optimizer.param_groups[0]["lr"],
        }
    losses = compiled.loss if isinstance(compiled.loss, list) else [compiled.loss]
    metrics: dict[str, list] = {"metrics": [], "weighted_metrics": []}
    for name, fn in compiled.metrics:
        weighted = getattr(fn, "weighted", False)
        identifier = getattr(fn, "identifier", fn)  # a stateful metric: what compile got
        entry = identifier if isinstance(identifier, str) else _callable(identifier, name)
        metrics["weighted_metrics" if weighted else "metrics"].append(entry)
    return {
        "optimizer": opt,
        "loss": [_callable(item) for item in losses],
        "several_losses": isinstance(compiled.loss, list),
        "loss_weights": compiled.loss_weights,
        **metrics,
    }


def _callable(fn: Any, name: str | None = None) -> Any:
    """A loss or metric: the name compile took it by, its serialized form (a
    configurable object, an nnkit or registered function), or the name to look up in
    ``custom_objects`` when loading."""
    if fn is None:
        return None
    if type(fn).__name__ == "NamedLoss":
        return fn.name
    if name is not None and getattr(fn, "__module__", "") == "nnkit.training.metrics":
        return name  # a metric compile resolves by this name
    try:
        return {"value": _value(fn, f"the {name or get_registered_name(fn)} of compile()")}
    except SerializationError:
        return {"name": name or get_registered_name(fn)}


def model_from_json(json_string: str, custom_objects: Mapping[str, Any] | None = None) -> Any:
    """Keras's ``model_from_json``: the model that ``model.to_json()`` describes, with
    fresh weights (built where the saved model was built).

    Args:
        json_string: what ``to_json()`` returned.
        custom_objects: ``{name: class or function}`` for user layers not registered.

    Returns:
        The model.

    Raises:
        SerializationError: if the string is not JSON or not a serialized model.

    Example:
        >>> model = nnkit.Sequential(nn.Dense(4, activation="relu"), nn.Dense(2))
        >>> model.build((None, 3))
        >>> twin = nnkit.saving.model_from_json(model.to_json())
        >>> [w.shape for w in twin.get_weights()] == [w.shape for w in model.get_weights()]
        True
    """
    try:
        config = json.loads(json_string)
    except (TypeError, json.JSONDecodeError) as err:
        raise SerializationError(f"model_from_json: not a JSON string ({err})") from None
    return deserialize(config, custom_objects)


def load_model(
    path: str | os.PathLike, custom_objects: Mapping[str, Any] | None = None, compile: bool = True
) -> Any:  # noqa: A002 (Keras's argument name)
    """Rebuild a model saved by ``model.save(path)``: architecture, weights and, with
    ``compile``, its compile settings and optimizer state.

    Args:
        path: the file.
        custom_objects: ``{name: class or function}`` for user layers, losses and
            metrics not registered with :func:`~nnkit.saving.register_serializable`.
        compile: compile the model as it was saved and restore the optimizer's state.

    Returns:
        The model, in training mode, on the CPU.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        CheckpointError: if the file is damaged, not an nnkit checkpoint, or was written
            without an architecture (by ``save_weights`` or ``nnkit train``: rebuild
            the model and use ``load_weights`` or ``nnkit.io.load_checkpoint``).
        SerializationError: for a class that cannot be found (the message says how to
            register it).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
        >>> model = nnkit.Sequential(nn.Dense(8, activation="relu"), nn.Dense(3))
        >>> model.compile("adam", "cross_entropy")
        >>> x, y = nnkit.randn(16, 4), nnkit.randint(0, 3, (16,))
        >>> _ = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
        >>> model.save(path)
        >>> loaded = nnkit.load_model(path)
        >>> loaded
        Sequential(
          (0): Dense(in_features=4, units=8, activation=relu)
          (1): Dense(in_features=8, units=3)
        )
        >>> bool((loaded.predict(x, verbose=0) == model.predict(x, verbose=0)).all())
        True
    """
    attrs = read_checkpoint(path, sections=[])["attrs"]
    text = attrs.get("config")
    try:
        saved = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        saved = None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise CheckpointError(
            f"{os.fspath(path)}: holds no model architecture (it was not "
            "written by Model.save); build the model in code and use "
            "model.load_weights(path) or nnkit.io.load_checkpoint(path, ...)"
        )
    model = deserialize(saved["architecture"], custom_objects)
    settings = saved.get("compile") if compile else None
    if settings is not None:
        _compile(model, settings, custom_objects)
    load_checkpoint(
        path,
        model=model,
        optimizer=None if settings is None else model.optimizer,
        restore_rng=False,
    )
    return model


def _compile(
    model: Any, settings: Mapping[str, Any], custom_objects: Mapping[str, Any] | None
) -> None:
    losses = [_resolve(item, custom_objects, "loss") for item in settings["loss"]]
    metrics = {
        key: [_resolve(item, custom_objects, "metric") for item in settings[key]]
        for key in ("metrics", "weighted_metrics")
    }
    loss = losses if settings["several_losses"] else losses[0]
    opt = settings["optimizer"]
    if "name" in opt:  # never built: compile by name, as it was
        model.compile(opt["name"], loss, settings["loss_weights"], lr=opt["lr"], **metrics)
        return
    trainable = [p for p in model.parameters() if p.requires_grad]  # not a frozen layer's
    if "keras" in opt:
        optimizer = deserialize(opt["keras"], custom_objects)
        if opt.get("built", True):  # compiled by name but never fitted: built on first fit
            optimizer.build(trainable)
    else:
        optimizer = _optimizer_class(opt["class_name"], custom_objects)(trainable, lr=opt["lr"])
    model.compile(optimizer, loss, settings["loss_weights"], **metrics)


def _resolve(item: Any, custom_objects: Mapping[str, Any] | None, kind: str) -> Any:
    if item is None or isinstance(item, str):
        return item
    if "value" in item:
        return _restore(item["value"], custom_objects)
    found = get_registered_object(item["name"], custom_objects)
    if found is None:
        raise SerializationError(
            f"Could not locate the {kind} {item['name']!r}: pass it in custom_objects or "
            "register it with @nnkit.saving.register_serializable() (or load_model(..., "
            "compile=False))"
        )
    return found


def _optimizer_class(name: str, custom_objects: Mapping[str, Any] | None) -> type:
    found = get_registered_object(name, custom_objects)
    if found is None:
        candidate = getattr(optim, name, None)
        if isinstance(candidate, type) and issubclass(candidate, optim.Optimizer):
            found = candidate
    if found is None:
        raise SerializationError(
            f"Could not locate the optimizer {name!r}: pass it in "
            "custom_objects or load_model(..., compile=False)"
        )
    return found
