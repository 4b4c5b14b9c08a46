"""The errors the command line reports as one line on stderr, exiting with status 2.

This module imports nothing, so the entry point can catch these errors without
loading the rest of nnkit.
"""

from __future__ import annotations

__all__ = ["CLIError", "ConfigError"]


class CLIError(Exception):
    """A problem the user can fix (bad config, missing file, unsupported setup).

    ``nnkit`` prints ``str(error)`` to stderr and exits with status 2, without a
    traceback.
    """

    def __str__(self) -> str:
        return f"error: {self.args[0]}" if self.args else "error"


class ConfigError(CLIError):
    """A problem with the config, an override or a file it names.

    Args:
        path: the key path (``'data.batch_size'``), or what else is at fault
            (``'--set'``, ``'--checkpoint'``); empty for the config as a whole.
        message: what is wrong, and where possible what would be right.

    Example:
        >>> str(ConfigError("train.epochs", "must be > 0; got 0"))
        'config error: train.epochs: must be > 0; got 0'
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(path, message)
        self.path, self.message = path, message

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"config error: {where}{self.message}"
