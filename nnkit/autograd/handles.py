"""The handle every ``register_*hook`` returns."""

from __future__ import annotations

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """Returned by ``register_*hook``; ``remove()`` unregisters the hook.

    Also a context manager: the hook is removed on leaving the ``with`` block.

    Example:
        >>> x = nnkit.tensor([1.0, 2.0], requires_grad=True)
        >>> seen = []
        >>> with x.register_hook(seen.append):
        ...     (x * 3).sum().backward()
        >>> seen[0].tolist()
        [3.0, 3.0]
        >>> (x * 3).sum().backward()  # removed: the hook no longer runs
        >>> len(seen)
        1
    """

    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks: list, fn) -> None:
        self._hooks = hooks
        self._fn = fn

    def remove(self) -> None:
        """Unregister the hook (a no-op when it is already gone)."""
        try:
            self._hooks.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
