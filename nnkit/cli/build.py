"""Turning a validated config into nnkit objects through the public API.

Names are resolved against the public classes of :mod:`nnkit.layers`,
:mod:`nnkit.optim`, :mod:`nnkit.optim.lr_scheduler` and :mod:`nnkit.callbacks`; the
remaining keys of an entry are keyword arguments, checked against the class's signature
before it is called: the names, then each value's type against the parameter's
annotation (``int``, ``float`` (an int is accepted), ``bool``, ``str``, ``None``,
``os.PathLike`` as a string, ``tuple[...]``/``list[...]``/``Sequence[...]`` as a YAML
list, ``dict``/``Mapping`` as a mapping, and unions of these), or, for a parameter
without one, against a bool, float or str default. Annotations naming anything else
(``Callable``, ``Any``, a class) leave the value to the class. Every failure is a
:class:`~nnkit.cli.config.ConfigError` naming the entry's key path.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import nnkit.callbacks as callbacks_module
import nnkit.layers as layers_module
import nnkit.optimizers as keras_optimizers
from nnkit.autograd.factories import zeros
from nnkit.backends.device import device as as_device
from nnkit.cli.config import ConfigError, did_you_mean
from nnkit.cli.wording import _join, _quoted, _shown, _type_name
from nnkit.distributed import SyncBatchNorm
from nnkit.layers import Parameter
from nnkit.models import Sequential
from nnkit.optim import lr_scheduler
from nnkit.training.compile_utils import LOSSES, OPTIMIZERS
from nnkit.training.metrics import METRICS

__all__ = [
    "build_model",
    "sync_batchnorm",
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
    "ModuleList",
    "ModuleDict",
}
# Public callbacks that fit adds itself, or that are bases.
_NOT_CALLBACKS = {"Callback", "CallbackList", "History", "ProgbarLogger"}
# Callback arguments that name files: relative paths are taken inside output.dir.
_PATH_ARGS = ("filepath", "filename", "backup_dir")


def _layer_classes() -> dict[str, type]:
    return {
        name: getattr(layers_module, name)
        for name in layers_module.__all__
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
        raise ConfigError(path, f"unknown {what} {_quoted(name)}" + did_you_mean(name, table))
    return table[name]


# ---------------------------------------------------------- argument type checks
# A parameter's accepted YAML values, as alternatives: ('int',), ('float',), ('bool',),
# ('str',), ('null',), ('dict',) or ('list', items, each): a list of len(items) values
# matching items (tuple[X, Y]), or of any length whose values all match each (None:
# anything). A type of None accepts anything.
_Type = tuple | None

_SCALARS = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "PathLike": "str",
    "Path": "str",
    "PurePath": "str",
    "None": "null",
    "NoneType": "null",
    "dict": "dict",
    "Dict": "dict",
    "Mapping": "dict",
    "MutableMapping": "dict",
}
_LISTS = {"tuple", "Tuple", "list", "List", "Sequence", "MutableSequence", "Iterable",
          "Collection"}  # fmt: skip
_TOKENS = re.compile(r"\.\.\.|[A-Za-z_][\w.]*|\S")


class _Unknown(Exception):
    """An annotation the checks do not understand (its values are left to the class)."""


def _parse_type(text: str) -> _Type:
    """``'tuple[float, float] | None'`` -> the alternatives; None if not understood."""
    tokens = _TOKENS.findall(text)
    pos = 0

    def take(expected: str | None = None) -> str:
        nonlocal pos
        if pos >= len(tokens) or (expected and tokens[pos] != expected):
            raise _Unknown
        pos += 1
        return tokens[pos - 1]

    def union() -> tuple:
        alternatives = list(term())
        while pos < len(tokens) and tokens[pos] == "|":
            take("|")
            alternatives += term()
        return tuple(alternatives)

    def term() -> tuple:
        name = take().rsplit(".", 1)[-1]
        args: list = []
        if pos < len(tokens) and tokens[pos] == "[":
            take("[")
            args.append("..." if tokens[pos] == "..." else union())
            while tokens[pos] == ",":
                take(",")
                args.append(take("...") if tokens[pos] == "..." else union())
            take("]")
        if name in ("Optional", "Union") and args and "..." not in args:
            union_of = tuple(a for arg in args for a in arg)
            return union_of + ((("null",),) if name == "Optional" else ())
        if name == "Annotated" and args:
            return args[0]
        if name in _SCALARS:
            return ((_SCALARS[name],),)
        if name in _LISTS:
            if len(args) == 1 or (len(args) == 2 and args[1] == "..."):
                return (("list", None, args[0]),)
            if name in ("tuple", "Tuple") and args and "..." not in args:
                return (("list", tuple(args), None),)
            return (("list", None, None),)
        raise _Unknown  # Any, Callable, Literal, a class ...

    try:
        result = union()
    except (_Unknown, IndexError):
        return None
    return result if pos == len(tokens) else None


def _param_type(param: inspect.Parameter) -> _Type:
    """The YAML values a parameter accepts: from its annotation, else its default."""
    annotation, default = param.annotation, param.default
    if annotation is param.empty:
        simple = {bool: "bool", float: "float", str: "str"}.get(type(default))
        return ((simple,),) if simple else None
    if not isinstance(annotation, str):
        plain = type(annotation) is type  # int, os.PathLike; not list[int] or int | None
        annotation = annotation.__name__ if plain else inspect.formatannotation(annotation)
    alternatives = _parse_type(annotation.replace("typing.", "").replace("NoneType", "None"))
    if alternatives is not None and default is None:
        alternatives += (("null",),)
    return alternatives and tuple(dict.fromkeys(alternatives))


_NAMES = {"int": "an integer", "float": "a number", "bool": "true or false",
          "str": "a string", "null": "null", "dict": "a mapping"}  # fmt: skip
_PLURALS = {"int": "integers", "float": "numbers", "bool": "booleans", "str": "strings",
            "null": "nulls", "dict": "mappings"}  # fmt: skip


def _describe(alternative: tuple) -> str:
    """``('int',)`` -> ``'an integer'``; ``('list', (F, F), None)`` -> ``'a list of 2
    numbers'``."""
    if alternative[0] != "list":
        return _NAMES[alternative[0]]
    _, items, each = alternative
    specs = set(items) if items is not None else {each}
    spec = specs.pop() if len(specs) == 1 else None
    what = _PLURALS.get(spec[0][0]) if spec is not None and len(spec) == 1 else None
    if items is not None:
        return f"a list of {len(items)} {what or 'values'}"
    return f"a list of {what}" if what else "a list"


def _matches(value: Any, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    types = {"int": int, "float": (int, float), "str": str, "null": type(None),
             "dict": dict, "list": list}  # fmt: skip
    return isinstance(value, types[kind])


def _check_type(path: str, value: Any, alternatives: _Type) -> None:
    """Raise a :class:`ConfigError` at ``path`` unless ``value`` is one of the
    alternatives (a list's items are checked in turn, named ``path[i]``)."""
    if alternatives is None:
        return
    for alternative in alternatives:
        if not _matches(value, alternative[0]):
            continue
        if alternative[0] != "list":
            return
        _, items, each = alternative
        if items is not None and len(value) != len(items):
            break
        for i, item in enumerate(value):
            _check_type(_join(path, i), item, items[i] if items is not None else each)
        return
    expected = " or ".join(dict.fromkeys(_describe(a) for a in alternatives))
    raise ConfigError(path, f"expected {expected}, got {_type_name(value)} ({_shown(value)})")


def _tuples(value: Any) -> Any:
    """YAML lists become tuples (``kernel_size: [3, 3]``, ``betas: [0.9, 0.99]``)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _bind(path: str, cls: type, kwargs: dict[str, Any], leading: tuple = ()) -> None:
    """Check ``cls(*leading, **kwargs)`` against the signature without calling it: the
    argument names, then each value's type (see the module's docstring)."""
    params = inspect.signature(cls).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in kwargs:
        if key not in names and not takes_any:
            raise ConfigError(
                _join(path, key),
                f"{cls.__name__} has no argument {_quoted(key)}"
                + did_you_mean(key, names[len(leading) :]),
            )
    try:
        inspect.signature(cls).bind(*leading, **kwargs)
    except TypeError as err:
        raise ConfigError(path, f"{cls.__name__}: {err}") from None
    for key, value in kwargs.items():
        if key in params and params[key].kind is not params[key].VAR_KEYWORD:
            _check_type(_join(path, key), value, _param_type(params[key]))


def _arguments(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_shown(v)}" for k, v in kwargs.items())


def _call(
    path: str, cls: type, kwargs: dict[str, Any], leading: tuple = (), bind: Any = None
) -> Any:
    (bind or _bind)(path, cls, kwargs, leading)
    try:
        return cls(*leading, **{k: _tuples(v) for k, v in kwargs.items()})
    except (TypeError, ValueError) as err:
        raise ConfigError(path, f"{cls.__name__}({_arguments(kwargs)}): {err}") from None


def _try(path: str, cls: type, kwargs: dict[str, Any], leading: tuple) -> Any:
    """``cls(*leading, **kwargs)`` on stand-ins, to check the values before the real
    objects are made; whatever it raises is a :class:`ConfigError` at ``path``."""
    _bind(path, cls, kwargs, leading)
    try:
        return cls(*leading, **{k: _tuples(v) for k, v in kwargs.items()})
    except Exception as err:  # noqa: BLE001 (any refusal of these values is the config's)
        text = " ".join(str(err).split())
        raise ConfigError(path, f"{cls.__name__}({_arguments(kwargs)}): {text}") from None


def _split_entry(entry: dict, key: str) -> tuple[str, dict]:
    kwargs = dict(entry)
    return kwargs.pop(key), kwargs


def build_model(model_config: dict) -> Any:
    """A :class:`~nnkit.Sequential` of ``model.layers`` (lazy layers not yet built).

    Raises:
        ConfigError: for an unknown layer type or arguments its class rejects.
    """
    classes = _layer_classes()
    layers = []
    for i, entry in enumerate(model_config["layers"]):
        path = f"model.layers[{i}]"
        name, kwargs = _split_entry(entry, "type")
        cls = _resolve(f"{path}.type", name, classes, "layer")
        layers.append(_call(path, cls, kwargs, bind=_bind_layer))
    return Sequential(*layers)


def sync_batchnorm(config: dict, model: Any) -> Any:
    """``distributed.sync_batchnorm: true``: the model with every BatchNorm layer replaced
    by a :class:`~nnkit.distributed.SyncBatchNorm` (statistics of the global batch under
    ``mpiexec``; a plain BatchNorm in a single process), else ``model`` as it is."""
    if not (config.get("distributed") or {}).get("sync_batchnorm"):
        return model
    return SyncBatchNorm.convert_sync_batchnorm(model)


def check_compile(config: dict) -> None:
    """Check ``loss`` and ``metrics`` against the names ``Model.compile`` accepts.

    Raises:
        ConfigError: naming the unknown loss or metric.
    """
    _resolve("loss", config["loss"], LOSSES, "loss")
    for i, metric in enumerate(config["metrics"]):
        _resolve(f"metrics[{i}]", metric, METRICS, "metric")


def optimizer_spec(config: dict) -> tuple[type, dict[str, Any]]:
    """The optimizer class and its arguments (``lr`` defaulting to Keras's by name).

    Raises:
        ConfigError: for an unknown optimizer or an argument it does not take.
    """
    name, kwargs = _split_entry(config["optimizer"], "name")
    if kwargs.pop("keras", False) is True:  # nnkit.optimizers: Keras's arguments and rules
        table = {
            n.lower(): getattr(keras_optimizers, n)
            for n in keras_optimizers.__all__
            if n.lower() in OPTIMIZERS
        }
        cls = _resolve("optimizer.name", name.lower(), table, "optimizer")
        _bind("optimizer", cls, kwargs)
        return cls, kwargs
    cls, default_lr = _resolve("optimizer.name", name.lower(), OPTIMIZERS, "optimizer")
    kwargs.setdefault("lr", default_lr)
    _bind("optimizer", cls, kwargs, leading=([],))
    return cls, kwargs


def _keras_optimizer(config: dict) -> bool:
    return config["optimizer"].get("keras") is True


def build_optimizer(config: dict, model: Any) -> Any:
    """The optimizer over the (built) model's parameters."""
    cls, kwargs = optimizer_spec(config)
    trainable = [p for p in model.parameters() if p.requires_grad]  # not a frozen layer's
    if not _keras_optimizer(config):
        return _call("optimizer", cls, kwargs, leading=(trainable,))
    optimizer = _call("optimizer", cls, kwargs)
    optimizer.build(trainable)
    return optimizer


def _scheduler_class(config: dict) -> tuple[type, dict[str, Any]]:
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
        raise ConfigError(
            "scheduler.interval", f"must be 'epoch' or 'step'; got {_shown(interval)}"
        )
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
    classes = _public_classes(callbacks_module, _NOT_CALLBACKS)
    return {k: v for k, v in classes.items() if issubclass(v, callbacks_module.Callback)}


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

    Runs before the model is built and any data is loaded or anything printed, so a
    typo or a value of the wrong type (``lr: fast``) is reported at once. Layer and
    callback arguments are checked against the signatures (names and types); the
    optimizer and the scheduler are also made once over a stand-in parameter, so that
    values they refuse (``lr: -1``) are reported too. The real objects are made once
    the model is built.

    Raises:
        ConfigError: for the first unknown name or argument, or a value of the wrong
            type or refused by the optimizer or scheduler.
    """
    layers = _layer_classes()
    for i, entry in enumerate(config["model"]["layers"]):
        name, kwargs = _split_entry(entry, "type")
        path = f"model.layers[{i}]"
        _bind_layer(path, _resolve(f"{path}.type", name, layers, "layer"), kwargs)
    check_compile(config)
    cls, kwargs = optimizer_spec(config)
    stand_in = [Parameter(zeros(1))]
    if _keras_optimizer(config):
        optimizer = _try("optimizer", cls, kwargs, leading=())
        optimizer.build(stand_in)
    else:
        optimizer = _try("optimizer", cls, kwargs, leading=(stand_in,))
    if config["scheduler"] is not None:
        scheduler_interval(config)
        cls, kwargs = _scheduler_class(config)
        _try("scheduler", cls, kwargs, leading=(optimizer,))
    classes = _callback_classes()
    for i, entry in enumerate(config["callbacks"]):
        name, kwargs = _split_entry(entry, "type")
        _bind(
            f"callbacks[{i}]", _resolve(f"callbacks[{i}].type", name, classes, "callback"), kwargs
        )


#: The keywords every layer takes besides its own (Keras's): their expected types.
_LAYER_KEYWORDS = {"name": (str, "a string"), "trainable": (bool, "true or false")}


def _bind_layer(path: str, cls: type, kwargs: dict[str, Any], leading: tuple = ()) -> None:
    """:func:`_bind` for a layer, which also takes Keras's ``name`` and ``trainable``."""
    own = inspect.signature(cls).parameters
    for key, (kind, wanted) in _LAYER_KEYWORDS.items():
        if key in kwargs and key not in own and not isinstance(kwargs[key], kind):
            value = kwargs[key]
            raise ConfigError(
                _join(path, key), f"expected {wanted}, got {_type_name(value)} ({_shown(value)})"
            )
    own_kwargs = {k: v for k, v in kwargs.items() if k in own or k not in _LAYER_KEYWORDS}
    _bind(path, cls, own_kwargs, leading)


def resolve_device(name: str) -> Any:
    """``nnkit.device(name)``; an unknown or unavailable device is a config error."""
    try:
        return as_device(name)
    except (ValueError, RuntimeError) as err:
        raise ConfigError("device", str(err)) from None
