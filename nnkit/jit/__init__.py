"""Compiled steps: :func:`nnkit.compile` records a step's Mat kernel calls and replays
them (see :mod:`nnkit.backends.recording` for the program it records)."""

from nnkit.jit.compiler import CompiledFunction, compile

__all__ = ["CompiledFunction", "compile"]
