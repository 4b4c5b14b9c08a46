"""Helpers of the Keras-style optimizers: Keras's automatic names and global-norm clipping."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from nnkit.autograd.ops import stack
from nnkit.autograd.tensor import Tensor

__all__ = ["is_real", "global_norm", "clip_by_global_norm"]


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number (a bool is not).

    Args:
        value: any object.

    Returns:
        True for ints, floats and other ``numbers.Real`` except bools.
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def global_norm(value_list: Sequence[Tensor]) -> Tensor:
    """``sqrt(sum of every squared element)`` over all Tensors (Keras's ``global_norm``).

    Args:
        value_list: Tensors (None entries are skipped).

    Returns:
        A 0-d Tensor on the first Tensor's device.
    """
    squared = [(v * v).sum() for v in value_list if v is not None]
    device = squared[0].device
    return stack([s.to(device) for s in squared]).sum().sqrt()


def clip_by_global_norm(value_list: Sequence[Tensor], clip_norm: float) -> list[Tensor]:
    """Scale all Tensors by ``clip_norm * min(1 / global_norm, 1 / clip_norm)``; a non-finite
    global norm makes the scale NaN (Keras's ``clip_by_global_norm``).

    Args:
        value_list: Tensors (None entries are kept as None).
        clip_norm: the largest allowed global norm.

    Returns:
        New Tensors, scaled; the inputs are not modified.
    """
    use_norm = global_norm(value_list)
    scale_for_finite = use_norm.reciprocal().clamp(max=1.0 / clip_norm) * clip_norm
    scale = scale_for_finite + (use_norm - use_norm)
    return [v * scale.to(v.device).to(v.dtype) if v is not None else v for v in value_list]
