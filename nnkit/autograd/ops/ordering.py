"""Ops of issue 13 (ordering): forward and backward side by side, one op per function."""

from __future__ import annotations

__all__: list[str] = []

# Functions of __all__ that are not Tensor methods (their first argument is not a tensor).
NOT_METHODS: set[str] = set()
