"""Containers: ``ModuleList`` and ``ModuleDict`` (``Sequential``, a Model, is in
:mod:`nnkit.models.sequential`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from nnkit.layers.module import Module

__all__ = ["ModuleList", "ModuleDict"]


def _index(idx: int, n: int, owner: str) -> int:
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {owner} of length {n}")
    return idx % n


class ModuleList(Module):
    """A list of modules, registered so that their parameters are found.

    Unlike a plain Python list, a ModuleList makes its members children of the module
    that holds it, so ``parameters()``, ``state_dict()``, ``to()`` and ``train()`` see
    them. It has no ``forward``: iterate over it in the owner's forward.

    Args:
        modules: the modules to start with.

    Example:
        >>> blocks = ModuleList([nn.Linear(8, 8) for _ in range(3)])
        >>> _ = blocks.append(nn.Linear(8, 2))   # returns the list, as in PyTorch
        >>> len(blocks), len(list(blocks.parameters()))
        (4, 8)
        >>> x = nnkit.randn(4, 8)
        >>> for block in blocks:
        ...     x = block(x)
        >>> x.shape
        (4, 2)
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def get_config(self) -> dict:
        """``{'modules': [...]}``: the modules it holds now."""
        return {"modules": list(self._modules.values())}

    def append(self, module: Module) -> "ModuleList":
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        """Append every module of ``modules``; returns self."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert ``module`` before position ``index`` (the rest are renumbered)."""
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        self.extend(items)

    def __getitem__(self, idx):
        """The module at ``idx``, or a new ModuleList of the modules in a slice."""
        items = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(items[idx])
        return items[_index(idx, len(items), "ModuleList")]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(idx, len(self._modules), "ModuleList")), module)

    def __delitem__(self, idx) -> None:
        items = list(self._modules.values())
        if isinstance(idx, slice):
            del items[idx]
        else:
            del items[_index(idx, len(items), "ModuleList")]
        self._modules.clear()
        self.extend(items)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            "ModuleList is a container, not a layer: iterate over it in your forward"
        )


class ModuleDict(Module):
    """An ordered dict of modules, registered so that their parameters are found.

    Args:
        modules: a mapping (or an iterable of ``(key, module)`` pairs) to start with.

    Example:
        >>> heads = ModuleDict({"cls": nn.Linear(8, 10), "box": nn.Linear(8, 4)})
        >>> features = nnkit.randn(2, 8)
        >>> heads["cls"](features).shape, list(heads.keys())
        ((2, 10), ['cls', 'box'])
        >>> [name for name, _ in heads.named_parameters()]
        ['cls.weight', 'cls.bias', 'box.weight', 'box.bias']
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def get_config(self) -> dict:
        """``{'modules': {...}}``: the modules it holds now, by name."""
        return {"modules": dict(self._modules)}

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def keys(self):
        """The keys, in insertion order."""
        return self._modules.keys()

    def items(self):
        """The ``(key, module)`` pairs, in insertion order."""
        return self._modules.items()

    def values(self):
        """The modules, in insertion order."""
        return self._modules.values()

    def pop(self, key: str) -> Module:
        """Remove and return the module under ``key``."""
        return self._modules.pop(key)

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def update(self, modules) -> None:
        """Add the ``(key, module)`` pairs of a mapping or an iterable of pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            "ModuleDict is a container, not a layer: index it in your forward"
        )
