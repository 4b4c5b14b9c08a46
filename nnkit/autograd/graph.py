"""Graph utilities: hooks on saved tensors and graph inspection."""

from __future__ import annotations

from nnkit.autograd.grad_mode import state

__all__ = ["saved_tensors_hooks"]


class saved_tensors_hooks:
    """Context manager: every tensor an op saves for backward inside it goes through
    ``pack_hook(tensor) -> object``, and ``unpack_hook(object) -> tensor`` restores it
    when backward needs it.

    Args:
        pack_hook: called once per saved tensor at forward time.
        unpack_hook: called with what ``pack_hook`` returned, at backward time; must
            return a tensor with the same shape and values (up to its precision).

    Example:
        >>> with saved_tensors_hooks(lambda t: t.to(nnkit.float16),
        ...                          lambda t: t.to(nnkit.float32)):
        ...     y = (x * w).sum()
    """

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        state.saved_hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        state.saved_hooks.pop()
        return False
