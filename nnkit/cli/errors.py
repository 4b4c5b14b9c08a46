"""The errors the command line reports as one line on stderr, exiting with status 2.

This module imports nothing, so the entry point can catch these errors without
loading the rest of nnkit.
"""

from __future__ import annotations

__all__ = ["CLIError", "ConfigError", "RunStopped"]


class CLIError(Exception):
    """A problem the user can fix (bad config, missing file, unsupported setup).

    ``nnkit`` prints ``str(error)`` to stderr and exits with status 2, without a
    traceback.
    """

    exit_code = 2

    def __str__(self) -> str:
        return f"error: {self.args[0]}" if self.args else "error"


class RunStopped(CLIError):
    """A run that ended before its last epoch: interrupted, or a non-finite loss.

    Args:
        message: the line printed to stderr, as is.
        exit_code: the process's exit status (130 for SIGINT, 143 for SIGTERM, 1 for a
            non-finite loss).
    """

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.args[0]


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
