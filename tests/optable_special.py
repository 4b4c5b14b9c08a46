"""Op-table rows for nnkit/autograd/ops/special.py (see tests/opspec.py)."""

from __future__ import annotations

from tests.opspec import OpSpec

OPS: list[OpSpec] = []
