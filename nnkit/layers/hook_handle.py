"""``HookHandle``: what ``Module.register_forward_*hook`` returns (PyTorch's
``RemovableHandle``)."""

from __future__ import annotations

__all__ = ["HookHandle"]


class HookHandle:
    """Returned by ``register_forward_*hook``; ``remove()`` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = HookHandle._next_id
        HookHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
