"""How config errors name keys, values and types: short, one-line, unambiguous."""

from __future__ import annotations

import datetime
import reprlib
from collections.abc import Sequence
from typing import Any

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
