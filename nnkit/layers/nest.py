"""Nested structures of lists, tuples and dicts (Keras's ``tree``): the arguments and
outputs of layer calls, which the functional API walks leaf by leaf."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["flatten", "map_structure", "pack_as"]


def flatten(struct: Any) -> list:
    """The leaves of nested lists/tuples/dicts, depth first; dicts in sorted key order
    (as Keras's ``tree.flatten``).

    Args:
        struct: a leaf, or lists/tuples/dicts of structures.

    Returns:
        The list of leaves.
    """
    out: list = []
    stack = [struct]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(item[k] for k in reversed(sorted(item)))
        else:
            out.append(item)
    return out


def map_structure(fn: Callable[[Any], Any], struct: Any) -> Any:
    """``struct`` with every leaf replaced by ``fn(leaf)`` (lists, tuples, named tuples
    and dicts keep their type).

    Args:
        fn: applied to each leaf.
        struct: the structure.

    Returns:
        A new structure of the same shape.
    """
    if isinstance(struct, dict):
        return type(struct)((k, map_structure(fn, v)) for k, v in struct.items())
    if isinstance(struct, tuple) and hasattr(struct, "_fields"):
        return type(struct)(*(map_structure(fn, v) for v in struct))
    if isinstance(struct, (list, tuple)):
        return type(struct)(map_structure(fn, v) for v in struct)
    return fn(struct)


def pack_as(struct: Any, leaves: list) -> Any:
    """``leaves`` (in :func:`flatten` order) put back into ``struct``'s shape.

    Args:
        struct: the structure whose shape is used (its leaves are ignored).
        leaves: the new leaves, as many as ``struct`` has.

    Returns:
        The new structure.
    """
    numbers = iter(range(len(leaves)))
    numbered = map_structure(lambda _: next(numbers), struct)
    rank = {n: i for i, n in enumerate(flatten(numbered))}
    return map_structure(lambda n: leaves[rank[n]], numbered)
