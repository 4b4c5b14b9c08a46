"""Helpers of the Keras-style optimizers: Keras's automatic names and global-norm clipping."""

from __future__ import annotations

import numbers
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import nnkit
from nnkit.autograd.tensor import Tensor

__all__ = ["to_snake_case", "auto_name", "is_real", "global_norm", "clip_by_global_norm"]

_NAME_UIDS: defaultdict[str, int] = defaultdict(int)


def to_snake_case(name: str) -> str:
    """``'AdamW'`` → ``'adam_w'`` (``keras.src.utils.naming.to_snake_case``)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def auto_name(prefix: str) -> str:
    """Keras's ``auto_name``: ``'adam'``, then ``'adam_1'``, ``'adam_2'``, ..."""
    prefix = to_snake_case(prefix)
    uid = _NAME_UIDS[prefix]
    _NAME_UIDS[prefix] += 1
    return prefix if uid == 0 else f"{prefix}_{uid}"


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number (a bool is not)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def global_norm(value_list: Sequence[Tensor]) -> Tensor:
    """``sqrt(sum of every squared element)`` over all Tensors (Keras's ``global_norm``)."""
    squared = [(v * v).sum() for v in value_list if v is not None]
    device = squared[0].device
    return nnkit.stack([s.to(device) for s in squared]).sum().sqrt()


def clip_by_global_norm(value_list: Sequence[Tensor], clip_norm: float) -> list[Tensor]:
    """Scale all Tensors by ``clip_norm * min(1 / global_norm, 1 / clip_norm)``; a non-finite
    global norm makes the scale NaN (Keras's ``clip_by_global_norm``)."""
    use_norm = global_norm(value_list)
    scale_for_finite = use_norm.reciprocal().clamp(max=1.0 / clip_norm) * clip_norm
    scale = scale_for_finite + (use_norm - use_norm)
    return [v * scale.to(v.device).to(v.dtype) if v is not None else v for v in value_list]

