"""Turning a validated config into nnkit objects through the public API.

Names are resolved against the public classes of :mod:`nnkit.layers`,
:mod:`nnkit.optim`, :mod:`nnkit.optim.lr_scheduler` and :mod:`nnkit.callbacks`; the
remaining keys of an entry are keyword arguments, checked against the class's signature
before it is called. Every failure is a :class:`~nnkit.cli.config.ConfigError` naming
the entry's key path.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from nnkit.cli.config import ConfigError, did_you_mean

__all__ = [
    "build_model",
    "check_compile",
    "check_names",
    "optimizer_spec",
    "build_optimizer",
    "build_scheduler",
    "scheduler_interval",
    "build_callbacks",
    "resolve_device",
]

# Public names of nnkit.layers that are not layers one stacks in a Sequential.
_NOT_LAYERS = {
    "Module",
    "Parameter",
    "NotBuiltError",
    "Model",
    "Sequential",
    "ModuleList",
    "ModuleDict",
}
# Public callbacks that fit adds itself, or that are bases.
_NOT_CALLBACKS = {"Callback", "CallbackList", "History", "ProgbarLogger"}
# Callback arguments that name files: relative paths are taken inside output.dir.
_PATH_ARGS = ("filepath", "filename", "backup_dir")


def _layer_classes() -> dict[str, type]:
    import nnkit.layers

    return {
        name: getattr(nnkit.layers, name)
        for name in nnkit.layers.__all__
        if name not in _NOT_LAYERS and not name.endswith("Loss")
    }


def _public_classes(module: Any, exclude: set[str]) -> dict[str, type]:
    return {
        name: getattr(module, name)
        for name in module.__all__
        if name not in exclude and isinstance(getattr(module, name), type)
    }


def _resolve(path: str, name: str, table: dict[str, Any], what: str) -> Any:
    if name not in table:
        raise ConfigError(path, f"unknown {what} '{name}'" + did_you_mean(name, table))
    return table[name]


def _tuples(value: Any) -> Any:
    """YAML lists become tuples (``kernel_size: [3, 3]``, ``betas: [0.9, 0.99]``)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _bind(path: str, cls: type, kwargs: dict[str, Any], leading: tuple = ()) -> None:
    """Check ``cls(*leading, **kwargs)`` against the signature without calling it."""
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in kwargs:
        if key not in names and not takes_any:
            raise ConfigError(
                f"{path}.{key}",
                f"{cls.__name__} has no argument '{key}'"
                + did_you_mean(key, names[len(leading) :]),
            )
    try:
        inspect.signature(cls).bind(*leading, **kwargs)
    except TypeError as err:
        raise ConfigError(path, f"{cls.__name__}: {err}") from None


def _call(path: str, cls: type, kwargs: dict[str, Any], leading: tuple = ()) -> Any:
    _bind(path, cls, kwargs, leading)
    try:
        return cls(*leading, **{k: _tuples(v) for k, v in kwargs.items()})
    except (TypeError, ValueError) as err:
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise ConfigError(path, f"{cls.__name__}({args}): {err}") from None


def _split_entry(entry: dict, key: str) -> tuple[str, dict]:
    kwargs = dict(entry)
    return kwargs.pop(key), kwargs


def build_model(model_config: dict) -> Any:
    """A :class:`~nnkit.Sequential` of ``model.layers`` (lazy layers not yet built).

    Raises:
        ConfigError: for an unknown layer type or arguments its class rejects.
    """
    from nnkit.layers import Sequential

    classes = _layer_classes()
    layers = []
    for i, entry in enumerate(model_config["layers"]):
        path = f"model.layers[{i}]"
        name, kwargs = _split_entry(entry, "type")
        cls = _resolve(f"{path}.type", name, classes, "layer")
        layers.append(_call(path, cls, kwargs))
    return Sequential(*layers)


def check_compile(config: dict) -> None:
    """Check ``loss`` and ``metrics`` against the names ``Model.compile`` accepts.

    Raises:
        ConfigError: naming the unknown loss or metric.
    """
    import nnkit.layers  # noqa: F401  (nnkit.training is imported through nnkit.layers)
    from nnkit.training.compile_utils import LOSSES
    from nnkit.training.metrics import METRICS

    _resolve("loss", config["loss"], LOSSES, "loss")
    for i, metric in enumerate(config["metrics"]):
        _resolve(f"metrics[{i}]", metric, METRICS, "metric")


def optimizer_spec(config: dict) -> tuple[type, dict[str, Any]]:
    """The optimizer class and its arguments (``lr`` defaulting to Keras's by name).

    Raises:
        ConfigError: for an unknown optimizer or an argument it does not take.
    """
    import nnkit.layers  # noqa: F401
    from nnkit.training.compile_utils import OPTIMIZERS

    name, kwargs = _split_entry(config["optimizer"], "name")
    cls, default_lr = _resolve("optimizer.name", name.lower(), OPTIMIZERS, "optimizer")
    kwargs.setdefault("lr", default_lr)
    _bind("optimizer", cls, kwargs, leading=([],))
    return cls, kwargs


def build_optimizer(config: dict, model: Any) -> Any:
    """The optimizer over the (built) model's parameters."""
    cls, kwargs = optimizer_spec(config)
    return _call("optimizer", cls, kwargs, leading=(list(model.parameters()),))


def _scheduler_class(config: dict) -> tuple[type, dict[str, Any]]:
    from nnkit.optim import lr_scheduler

    name, kwargs = _split_entry(config["scheduler"], "name")
    kwargs.pop("interval", None)  # when it steps: read by scheduler_interval, not the class
    classes = _public_classes(lr_scheduler, {"LRScheduler"})
    return _resolve("scheduler.name", name, classes, "scheduler"), kwargs


def scheduler_interval(config: dict) -> str:
    """``scheduler.interval``: ``'epoch'`` (the default) or ``'step'`` (every batch).

    Raises:
        ConfigError: for another value.
    """
    interval = (config["scheduler"] or {}).get("interval", "epoch")
    if interval not in ("epoch", "step"):
        raise ConfigError("scheduler.interval", f"must be 'epoch' or 'step'; got {interval!r}")
    return interval


def build_scheduler(config: dict, optimizer: Any) -> Any:
    """The learning-rate scheduler over ``optimizer`` (None when the config has none).

    Raises:
        ConfigError: for an unknown scheduler or arguments it rejects.
    """
    if config["scheduler"] is None:
        return None
    cls, kwargs = _scheduler_class(config)
    return _call("scheduler", cls, kwargs, leading=(optimizer,))


def _callback_classes() -> dict[str, type]:
    import nnkit.callbacks

    return _public_classes(nnkit.callbacks, _NOT_CALLBACKS)


def build_callbacks(config: dict, out_dir: Path) -> list[Any]:
    """The ``callbacks`` entries, file arguments resolved inside ``out_dir``.

    Raises:
        ConfigError: for an unknown callback type or arguments it rejects.
    """
    classes = _callback_classes()
    callbacks = []
    for i, entry in enumerate(config["callbacks"]):
        name, kwargs = _split_entry(entry, "type")
        cls = _resolve(f"callbacks[{i}].type", name, classes, "callback")
        for key in _PATH_ARGS:
            if isinstance(kwargs.get(key), str):
                kwargs[key] = str(out_dir / kwargs[key])
        callbacks.append(_call(f"callbacks[{i}]", cls, kwargs))
    return callbacks


def check_names(config: dict) -> None:
    """Resolve every name in the config and check every argument list, cheaply.

    Runs before any data is loaded, so a typo is reported at once. Optimizer and
    scheduler arguments are checked against the signatures; the objects themselves are
    made once the model is built.

    Raises:
        ConfigError: for the first unknown name or argument.
    """
    check_compile(config)
    optimizer_spec(config)
    if config["scheduler"] is not None:
        scheduler_interval(config)
        cls, kwargs = _scheduler_class(config)
        _bind("scheduler", cls, kwargs, leading=(None,))
    classes = _callback_classes()
    for i, entry in enumerate(config["callbacks"]):
        name, kwargs = _split_entry(entry, "type")
        _bind(
            f"callbacks[{i}]", _resolve(f"callbacks[{i}].type", name, classes, "callback"), kwargs
        )


def resolve_device(name: str) -> Any:
    """``nnkit.device(name)``; an unknown or unavailable device is a config error."""
    import nnkit

    try:
        return nnkit.device(name)
    except (ValueError, RuntimeError) as err:
        raise ConfigError("device", str(err)) from None
