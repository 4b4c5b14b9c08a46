"""Reading, overriding and validating a run's YAML config (schema: :mod:`nnkit.cli`).

Every problem raises one :class:`ConfigError` naming the key path
(``model.layers[2].type``); the command line prints it and exits with status 2. The
result of :func:`load_config` is a plain dict with every default filled in.

Hostile files fail fast, in bounded memory, as such an error: the YAML is read by
:mod:`nnkit.cli.yaml_reader` within the limits :data:`MAX_CONFIG_BYTES`,
:data:`MAX_DEPTH` and :data:`MAX_VALUES`.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nnkit.cli import schema
from nnkit.cli.errors import ConfigError
from nnkit.cli.schema import REQUIRED, Field
from nnkit.cli.wording import _join, _quoted, _shown, _type_name
from nnkit.cli.yaml_reader import (
    MAX_CONFIG_BYTES,
    MAX_DEPTH,
    MAX_VALUES,
    _read_text,
    parse_yaml,
)

__all__ = [
    "ConfigError",
    "Config",
    "load_config",
    "apply_overrides",
    "validate",
    "did_you_mean",
    "parse_yaml",
    "MAX_CONFIG_BYTES",
    "MAX_DEPTH",
    "MAX_VALUES",
]


@dataclass
class Config:
    """A validated config.

    Attributes:
        values: the config as plain data, every default filled in.
        source: the YAML file it was read from.
    """

    values: dict[str, Any]
    source: Path

    @property
    def text(self) -> str:
        """The effective config (after overrides, with defaults) as YAML text."""
        return yaml.safe_dump(self.values, sort_keys=False)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]


def did_you_mean(name: Any, choices: Iterable[str]) -> str:
    """A ``" (did you mean 'x'?)"`` hint for a misspelt name, else the valid names."""
    choices = sorted(choices)
    lowered = {c.lower(): c for c in choices}
    match = lowered.get(str(name).lower())
    close = [match] if match else difflib.get_close_matches(str(name), choices, n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (expected one of: {', '.join(choices)})"


def load_config(
    path: str | Path, overrides: Sequence[str] = (), *, device: str | None = None
) -> Config:
    """Read a YAML config, apply ``--set`` overrides and validate it.

    Args:
        path: the YAML file.
        overrides: ``'key.path=value'`` strings; values are parsed as YAML.
        device: the ``--device`` option, which replaces ``device``.

    Returns:
        The validated :class:`Config`.

    Raises:
        ConfigError: for a missing or unreadable file, one over :data:`MAX_CONFIG_BYTES`
            or not UTF-8, bad YAML, YAML over the limits, a bad override or anything the
            schema rejects.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError("CONFIG", f"file not found: {path}")
    raw = parse_yaml(_read_text(path), "CONFIG")
    if not isinstance(raw, dict):
        raise ConfigError(
            "CONFIG",
            f"{path} must hold a mapping of sections (data, model, ...), not {_type_name(raw)}",
        )
    raw = apply_overrides(raw, overrides)
    if device is not None:
        raw["device"] = device
    return Config(validate(raw, default_dir=f"runs/{path.stem}"), path)


# ------------------------------------------------------------------- overrides
_TOKEN = re.compile(r"([A-Za-z_][\w-]*)((?:\[\d+\])*)$")


def _parse_key(key: str, override: str) -> list[str | int]:
    """``'model.layers[0].units'`` -> ``['model', 'layers', 0, 'units']``."""
    parts: list[str | int] = []
    for token in key.split("."):
        match = _TOKEN.match(token)
        if token.isdigit():
            parts.append(int(token))
        elif match:
            parts.append(match.group(1))
            parts += [int(i) for i in re.findall(r"\d+", match.group(2))]
        else:
            raise ConfigError(
                "--set",
                f"{_shown(override)}: bad key {_shown(key)} (expected a dotted "
                "path such as optimizer.lr or model.layers[0].units)",
            )
    if len(parts) > MAX_DEPTH:
        raise ConfigError(
            "--set", f"{_shown(override)}: the key is more than {MAX_DEPTH} levels deep"
        )
    return parts


def _child(node: Any, part: str | int, shown: str) -> Any:
    """Step into ``node[part]``, creating a missing mapping; ``shown`` names ``node``."""
    if isinstance(part, int):
        if not isinstance(node, list):
            raise ConfigError(shown, f"cannot index [{part}]: it is {_type_name(node)}")
        if part >= len(node):
            raise ConfigError(
                f"{shown}[{part}]", f"index out of range (the list has {len(node)} items)"
            )
        return node[part]
    if not isinstance(node, dict):
        raise ConfigError(shown, f"cannot set key '{part}': it is {_type_name(node)}")
    if node.get(part) is None:  # a missing or empty (null) section becomes a mapping
        node[part] = {}
    return node[part]


def _set_path(config: dict, parts: list[str | int], value: Any) -> None:
    """``config[parts[0]][parts[1]]... = value``."""
    node, shown = config, ""
    for part in parts[:-1]:
        node = _child(node, part, shown or "CONFIG")
        shown = _join(shown, part)
    last = parts[-1]
    _child(node, last, shown or "CONFIG")  # checks the container and an index's range
    node[last] = value


def apply_overrides(config: dict, overrides: Sequence[str]) -> dict:
    """A copy of ``config`` with ``--set key.path=value`` overrides applied.

    Missing mappings along the path are created (the schema then decides whether the
    new key is allowed); list items are addressed as ``layers[0]`` or ``layers.0``.

    Raises:
        ConfigError: for an override without ``=``, a malformed key, an index out of
            range or a path through a value that is not a mapping or list.
    """
    config = copy.deepcopy(config)
    for override in overrides:
        key, sep, text = override.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                "--set",
                f"{_shown(override)}: expected KEY.PATH=VALUE (e.g. --set train.epochs=2)",
            )
        parts = _parse_key(key.strip(), override)
        _set_path(config, parts, parse_yaml(text, f"--set {key.strip()}", at=parts))
    return config


# ------------------------------------------------------------------ validation
_KIND_TYPES = {
    "int": int,
    "float": (int, float),
    "bool": bool,
    "str": str,
    "list": list,
    "dict": dict,
    "null": type(None),
}
_KIND_NAMES = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "list": "a list",
    "dict": "a mapping",
    "null": "null",
}


def _check_value(path: str, value: Any, field: Field) -> Any:
    """The value if it has one of the field's types (ints become floats where a float
    is expected; a bool is never a number) and passes its check."""
    for kind in field.kinds:
        is_bool = isinstance(value, bool)
        if isinstance(value, _KIND_TYPES[kind]) and (kind == "bool" or not is_bool):
            value = float(value) if kind == "float" else value
            problem = field.check(value) if field.check and value is not None else None
            if problem:
                raise ConfigError(path, f"{problem}; got {_shown(value)}")
            return value
    expected = " or ".join(_KIND_NAMES[k] for k in field.kinds)
    raise ConfigError(path, f"expected {expected}, got {_type_name(value)} ({_shown(value)})")


def check_section(
    path: str,
    section: dict,
    table: dict[str, Field],
    *,
    extra: Iterable[str] = (),
    context: str = "",
) -> dict:
    """Validate one mapping against a table: no unknown keys, types, checks, defaults.

    Args:
        path: the section's key path (for messages).
        section: the mapping from the config.
        table: its allowed keys.
        extra: further keys allowed and passed through unchecked.
        context: added to an unknown key's message (``" for the csv dataset"``).

    Returns:
        A new dict: the table's keys (defaults filled in) and the extra keys present.

    Raises:
        ConfigError: naming the first unknown, missing or invalid key.
    """
    allowed = set(table) | set(extra)
    for key in section:
        if key not in allowed:
            raise ConfigError(
                _join(path, key),
                f"unknown key {_quoted(key)}{context}" + did_you_mean(key, allowed),
            )
    result = {}
    for key, field in table.items():
        if key in section:
            result[key] = _check_value(_join(path, key), section[key], field)
        elif field.default is REQUIRED:
            raise ConfigError(_join(path, key), "missing (required)")
        else:
            result[key] = copy.deepcopy(field.default)
    result.update({k: section[k] for k in extra if k in section})
    return result


def _named(path: str, value: Any, key: str) -> dict:
    """A ``{key: name, **kwargs}`` entry; a bare string is shorthand for ``{key: name}``."""
    if isinstance(value, str):
        return {key: value}
    if not isinstance(value, dict):
        raise ConfigError(
            path,
            f"expected a mapping with '{key}' (or just a name), "
            f"got {_type_name(value)} ({_shown(value)})",
        )
    if key not in value:
        raise ConfigError(_join(path, key), "missing (required)")
    if not isinstance(value[key], str):
        raise ConfigError(_join(path, key), f"expected a string, got {_type_name(value[key])}")
    return dict(value)


def _check_data(section: dict) -> dict:
    """The ``data`` section: its allowed keys depend on ``data.name``."""
    name = _check_value("data.name", section.get("name"), schema.DATA_COMMON["name"])
    if name not in schema.DATASETS:
        raise ConfigError(
            "data.name", f"unknown dataset '{name}'" + did_you_mean(name, schema.DATASETS)
        )
    return check_section(
        "data",
        section,
        {**schema.DATA_COMMON, **schema.DATASETS[name]},
        context=f" for the {name} dataset",
    )


def _check_model(section: dict) -> dict:
    """The ``model`` section: a non-empty list of layers and an optional input shape."""
    model = check_section("model", section, schema.MODEL)
    if not model["layers"]:
        raise ConfigError("model.layers", "must list at least one layer")
    model["layers"] = [
        _named(f"model.layers[{i}]", layer, "type") for i, layer in enumerate(model["layers"])
    ]
    shape = model["input_shape"]
    if shape is not None and not all(type(d) is int and d > 0 for d in shape):
        raise ConfigError(
            "model.input_shape",
            f"expected a list of positive integers (one "
            f"sample's shape, without the batch), got {_shown(shape)}",
        )
    return model


def _check_metrics(metrics: list | None) -> list[str]:
    for i, metric in enumerate(metrics or []):
        if not isinstance(metric, str):
            raise ConfigError(f"metrics[{i}]", f"expected a metric name, got {_shown(metric)}")
    return list(metrics or [])


def validate(raw: dict, *, default_dir: str = "runs/run") -> dict[str, Any]:
    """Check a whole config against the schema and fill in the defaults.

    Args:
        raw: the config as parsed from YAML (after overrides).
        default_dir: ``output.dir`` when the config gives none.

    Returns:
        The normalised config: every section present, names as ``{'name'/'type': ...}``
        mappings, numbers of float options as floats.

    Raises:
        ConfigError: naming the first invalid key.
    """
    top = check_section("", raw, schema.TOP)
    config = {
        "seed": top["seed"],
        "device": top["device"],
        "data": _check_data(top["data"]),
        "model": _check_model(top["model"]),
        "optimizer": _named("optimizer", top["optimizer"], "name"),
        "scheduler": None
        if top["scheduler"] is None
        else _named("scheduler", top["scheduler"], "name"),
        "loss": top["loss"],
        "metrics": _check_metrics(top["metrics"]),
        "train": check_section("train", top["train"] or {}, schema.TRAIN),
        "callbacks": [
            _named(f"callbacks[{i}]", cb, "type") for i, cb in enumerate(top["callbacks"] or [])
        ],
        "output": check_section("output", top["output"] or {}, schema.OUTPUT),
        "distributed": check_section("distributed", top["distributed"] or {}, schema.DISTRIBUTED),
    }
    if config["output"]["dir"] is None:
        config["output"]["dir"] = default_dir
    return config
