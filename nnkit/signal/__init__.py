"""``nnkit.signal``: signal processing under ``torch.signal``'s names; for now the window
functions of :mod:`nnkit.signal.windows`."""

from __future__ import annotations

from nnkit.signal import windows

__all__ = ["windows"]
