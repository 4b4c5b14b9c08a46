"""Reading, overriding and validating a run's YAML config (schema: :mod:`nnkit.cli`).

Every problem raises one :class:`ConfigError` naming the key path
(``model.layers[2].type``); the command line prints it and exits with status 2. The
result of :func:`load_config` is a plain dict with every default filled in.

Hostile files fail fast, in bounded memory, as such an error: the config file is read
only up to :data:`MAX_CONFIG_BYTES` and must be UTF-8; while the YAML is composed,
collections nested more than :data:`MAX_DEPTH` levels deep and documents of more than
:data:`MAX_VALUES` values are refused, every use of an alias (``*name``) counting as a
copy of what it names (so an "alias bomb" is refused as soon as its count passes the
limit, never expanded); aliases inside the value they name (recursive structures),
duplicate keys and duplicate anchors are refused too. ``--set`` values obey the same
limits, counted from the depth of their key.
"""

from __future__ import annotations

import copy
import datetime
import difflib
import re
import reprlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, ScalarNode

from nnkit.cli import schema
from nnkit.cli.errors import ConfigError
from nnkit.cli.schema import REQUIRED, Field

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

MAX_CONFIG_BYTES = 256 * 1024
"""The largest config file read (about 100 times the commented examples)."""
MAX_DEPTH = 32
"""The deepest nesting of collections, counted from the top-level mapping (a config
needs about 6: ``optimizer.betas`` is at 3)."""
MAX_VALUES = 10_000
"""The most values (scalars and collections) one YAML document may hold, each use of an
alias counting as many as the value it names."""


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


_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-3`` as a float (YAML 1.2; PyYAML says str), and
    enforces :data:`MAX_DEPTH` and :data:`MAX_VALUES` while it composes the document.

    The limits are checked node by node before a node is composed (an alias before it
    is used), so nothing larger or deeper than the limits is ever built; a breach is a
    :class:`ConfigError` naming the key path inside the document (prefixed by ``at``,
    the key path of a ``--set`` value) and the line.
    """

    def __init__(self, text: str, where: str, at: Sequence[str | int] = ()) -> None:
        super().__init__(text)
        self._where = where
        self._path: list[str | int] = list(at)  # the key path of the node being composed
        self._base = len(self._path)  # collections enclosing the document
        self._open: list[list] = []  # [size, height, {key: mark}] per collection open
        self._opening: set[str] = set()  # anchors of the collections still open
        self._stats: dict[str, tuple[int, int]] = {}  # anchor -> (size, height)
        self._values = 0  # values composed, an alias counting as its node's size

    def _error(self, message: str, mark: Any, note: str = "") -> ConfigError:
        line = f"at line {mark.line + 1}, column {mark.column + 1}"
        where = _path_text(self._path) or self._where
        return ConfigError(where, f"{message} ({line}{'; ' + note if note else ''})")

    def _add(self, size: int, height: int, mark: Any, alias: str | None = None) -> None:
        """Count ``size`` more values of nesting ``height`` at the current place."""
        if self._base + len(self._open) + height > MAX_DEPTH:
            through = f" (through the alias *{alias})" if alias else ""
            raise self._error(f"nested more than {MAX_DEPTH} levels deep{through}", mark)
        self._values += size
        if self._values > MAX_VALUES:
            if alias:
                raise self._error(
                    f"the alias *{alias} ({size} values) makes the document larger than "
                    f"{MAX_VALUES} values",
                    mark,
                    "each use of an alias counts as a copy",
                )
            raise self._error(f"more than {MAX_VALUES} values in one document", mark)
        if self._open:
            self._open[-1][0] += size
            self._open[-1][1] = max(self._open[-1][1], height)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if index is None:  # the document, or a mapping's key: no step in the key path
            return self._compose(parent, index)
        self._path.append(index if isinstance(index, int) else _key_step(index))
        try:
            return self._compose(parent, index)
        finally:
            self._path.pop()

    def _compose(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        mark, anchor = event.start_mark, event.anchor
        if isinstance(parent, MappingNode) and isinstance(index, ScalarNode):
            self._check_duplicate(index)
        if isinstance(event, AliasEvent):
            if anchor in self._opening:
                raise self._error(
                    f"the alias *{anchor} is used inside the value it names",
                    mark,
                    "recursive structures are not allowed",
                )
            if anchor in self._stats:  # else PyYAML's "found undefined alias"
                self._add(*self._stats[anchor], mark, alias=anchor)
            return super().compose_node(parent, index)
        if anchor is not None and anchor in self.anchors:
            first = self.anchors[anchor].start_mark.line + 1
            raise self._error(f"duplicate anchor &{anchor}", mark, f"the first is at line {first}")
        if not isinstance(event, (SequenceStartEvent, MappingStartEvent)):
            self._add(1, 0, mark)
            node = super().compose_node(parent, index)
            if anchor is not None:
                self._stats[anchor] = (1, 0)
            return node
        self._add(1, 1, mark)
        self._open.append([1, 0, {}])
        if anchor is not None:
            self._opening.add(anchor)
        node = super().compose_node(parent, index)
        size, height, _ = self._open.pop()
        if anchor is not None:
            self._opening.discard(anchor)
            self._stats[anchor] = (size, height + 1)
        if self._open:  # the parent counted this collection as 1 value of height 1
            self._open[-1][0] += size - 1
            self._open[-1][1] = max(self._open[-1][1], height + 1)
        return node

    def _check_duplicate(self, key: ScalarNode) -> None:
        """Refuse a key given twice in one mapping (PyYAML would keep the last)."""
        if key.tag == _MERGE_TAG:
            return
        seen = self._open[-1][2]
        first = seen.setdefault((key.tag, key.value), key.start_mark)
        if first is not key.start_mark:
            raise self._error(
                f"duplicate key {_quoted(key.value)}",
                key.start_mark,
                f"the first is at line {first.line + 1}",
            )

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as err:  # e.g. a 5000-digit int, a 13th month
            problem = str(err).split("; use sys.")[0]  # not Python's advice on int digits
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {_shown(node.value)}: {problem}", node.start_mark
            ) from None


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$"),
    list("-+0123456789."),
)


def _yaml_problem(err: yaml.YAMLError, text: str) -> str:
    """A YAML error as ``at line L, column C: problem``, on one line."""
    mark = getattr(err, "problem_mark", None)
    if isinstance(err, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, err.position) + 1
        column = err.position - (text.rfind("\n", 0, err.position) + 1) + 1
        char = err.character if isinstance(err.character, int) else ord(err.character)
        return f" at line {line}, column {column}: character #x{char:04x}: {err.reason}"
    at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    if context and problem.startswith("but "):  # "expected a single document ... but found"
        problem = f"{context} {problem}"
    return f"{at}: {' '.join(problem.split())}"


def _key_step(key: Any) -> str:
    """A mapping key's node as a step of the key path (``'?'`` for a complex key)."""
    return key.value if isinstance(key, ScalarNode) else "?"


def parse_yaml(text: str, where: str, *, at: Sequence[str | int] = ()) -> Any:
    """Parse YAML text within the limits (:data:`MAX_DEPTH`, :data:`MAX_VALUES`).

    Args:
        text: the YAML text (at most :data:`MAX_CONFIG_BYTES` characters).
        where: what to name in a syntax error (``'CONFIG'``, ``'--set train.epochs'``).
        at: the key path the parsed value goes to (for a ``--set`` value): it names
            where a limit is exceeded, and its length counts towards :data:`MAX_DEPTH`.

    Raises:
        ConfigError: for invalid YAML at ``where``; for text over the limits at the key
            path of the offending value.
    """
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(where, f"longer than {MAX_CONFIG_BYTES // 1024} KiB")
    try:
        loader = _Loader(text, where, at)  # checks the characters
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise ConfigError(where, "not valid YAML" + _yaml_problem(err, text)) from None
    except RecursionError:  # not expected within MAX_DEPTH; never a traceback
        raise ConfigError(where, f"nested more than {MAX_DEPTH} levels deep") from None


def _read_text(path: Path) -> str:
    """The file's text: at most :data:`MAX_CONFIG_BYTES` bytes of UTF-8."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as err:
        raise ConfigError("CONFIG", f"cannot read {path}: {err.strerror or err}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            "CONFIG",
            f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KiB "
            "(a config holds settings, not data)",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise ConfigError(
            "CONFIG",
            f"{path} is not UTF-8 text: byte 0x{data[err.start]:02x} at line {line}, "
            f"column {column} (save it as UTF-8)",
        ) from None


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


_TYPE_NAMES = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "a mapping",
    type(None): "null",
    datetime.date: "a date",
    datetime.datetime: "a timestamp",
    bytes: "binary data",
    set: "a set",
    tuple: "a list of pairs",
}


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 60
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 8, 8, 4


def _shown(value: Any) -> str:
    """``repr(value)`` cut to a short line (long strings and lists are elided)."""
    return _REPR.repr(value)


def _key_text(key: Any) -> str:
    """A key as written in a key path: itself, or its short repr if it is odd."""
    text = str(key)
    simple = isinstance(key, str) and text.isprintable() and 0 < len(text) <= 60
    return text if simple and not set(text) & set(".[]'") else _shown(key)


def _quoted(key: Any) -> str:
    """``'key'`` for a message (``unknown key 'trian'``), on one short line."""
    text = _key_text(key)
    return f"'{text}'" if text == str(key) else text


def _join(path: str, key: Any) -> str:
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{path}[{key}]"
    return f"{path}.{_key_text(key)}" if path else _key_text(key)


def _path_text(parts: Sequence[Any]) -> str:
    """``['model', 'layers', 0]`` -> ``'model.layers[0]'``."""
    path = ""
    for part in parts:
        path = _join(path, part)
    return path


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
