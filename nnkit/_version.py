"""nnkit's version, in the lowest layer so that every package can record it."""

__version__ = "0.1.0"
