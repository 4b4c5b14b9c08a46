"""Reading a config's YAML text within limits.

Hostile files fail fast, in bounded memory, as such an error: the config file is read
only up to :data:`MAX_CONFIG_BYTES` and must be UTF-8; while the YAML is composed,
collections nested more than :data:`MAX_DEPTH` levels deep and documents of more than
:data:`MAX_VALUES` values are refused, every use of an alias (``*name``) counting as a
copy of what it names (so an "alias bomb" is refused as soon as its count passes the
limit, never expanded); aliases inside the value they name (recursive structures),
duplicate keys and duplicate anchors are refused too. ``--set`` values obey the same
limits, counted from the depth of their key.

Every problem raises one :class:`~nnkit.cli.errors.ConfigError` naming the key path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, ScalarNode

from nnkit.cli.errors import ConfigError
from nnkit.cli.wording import _path_text, _quoted, _shown

__all__ = ["parse_yaml", "MAX_CONFIG_BYTES", "MAX_DEPTH", "MAX_VALUES"]

MAX_CONFIG_BYTES = 256 * 1024
"""The largest config file read (about 100 times the commented examples)."""
MAX_DEPTH = 32
"""The deepest nesting of collections, counted from the top-level mapping (a config
needs about 6: ``optimizer.betas`` is at 3)."""
MAX_VALUES = 10_000
"""The most values (scalars and collections) one YAML document may hold, each use of an
alias counting as many as the value it names."""


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
