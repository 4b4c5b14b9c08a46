"""``nnkit.nn.functional``, resolved at first use.

Layers call functional ops as ``F.conv2d(...)``. Importing ``nnkit.nn.functional`` at
module level would import the ``nnkit.nn`` package, which itself imports
``nnkit.layers``: the cycle is broken by looking names up lazily (and caching them).
"""

from __future__ import annotations

import importlib


def __getattr__(name: str):
    fn = getattr(importlib.import_module("nnkit.nn.functional"), name)
    globals()[name] = fn
    return fn
