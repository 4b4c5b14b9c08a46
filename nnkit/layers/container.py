"""Containers: ``Sequential`` (a Model), ``ModuleList`` and ``ModuleDict``."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from nnkit.layers.model import Model
from nnkit.layers.module import Module

__all__ = ["Sequential", "ModuleList", "ModuleDict"]


def _index(idx: int, n: int, owner: str) -> int:
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {owner} of length {n}")
    return idx % n


class Sequential(Model):
    """Layers applied one after the other; the output of each is the input of the next.

    Accepts the layers as arguments (PyTorch), as one list (Keras) or as an
    ``OrderedDict`` of named layers. Layers are named ``'0'``, ``'1'``, ... unless named.

    Example:
        >>> model = Sequential(Conv2d(1, 8, 3), ReLU(), Flatten(), Dense(10))
        >>> model = Sequential([Dense(64, activation="relu"), Dense(10)])
        >>> model[0]          # the first layer; model[1:] is a Sequential
    """

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], Mapping):
            for name, module in args[0].items():
                self.add_module(name, module)
            return
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        for module in args:
            self.append(module)

    def get_config(self) -> dict:
        """``{'layers': [...]}`` (and their names unless ``'0'``, ``'1'``, ...); a subclass
        with its own constructor describes itself by that constructor's arguments."""
        if getattr(type(self).__init__, "__wrapped__", None) is not _SEQUENTIAL_INIT:
            return super().get_config()
        names = list(self._modules)
        config = {"layers": list(self._modules.values())}
        if names != [str(i) for i in range(len(names))]:
            config["names"] = names
        return config

    @classmethod
    def from_config(cls, config: dict) -> Sequential:
        """A Sequential from :meth:`get_config`'s dict."""
        if getattr(cls.__init__, "__wrapped__", None) is not _SEQUENTIAL_INIT:
            return super().from_config(config)
        layers, names = config["layers"], config.get("names")
        return cls(OrderedDict(zip(names, layers))) if names else cls(list(layers))

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def append(self, module: Module) -> "Sequential":
        """Add ``module`` at the end; returns self."""
        if not isinstance(module, Module):
            raise TypeError(f"Sequential takes Modules, got {type(module).__name__}")
        self.add_module(str(len(self._modules)), module)
        return self

    def add(self, layer: Module) -> None:
        """Keras spelling of :meth:`append`."""
        self.append(layer)

    def extend(self, modules: Iterable[Module]) -> "Sequential":
        """Append every module of ``modules``; returns self."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        """Insert ``module`` before position ``index`` (layers are renumbered)."""
        items = list(self._modules.values())
        n = len(items)
        if not -n <= index <= n:
            raise IndexError(f"index {index} is out of range for Sequential of length {n}")
        items.insert(index % (n + 1) if index < 0 else index, module)
        self._renumber(items)
        return self

    def pop(self, index: int = -1) -> Module:
        """Remove and return the layer at ``index`` (the rest are renumbered)."""
        module = self[index]
        del self[index]
        return module

    def _renumber(self, items: list) -> None:
        self._modules.clear()
        for module in items:
            self.append(module)

    def __getitem__(self, idx):
        """The layer at ``idx``, or a new Sequential of the layers in a slice."""
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        return items[_index(idx, len(items), "Sequential")][1]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self._modules), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        items = list(self._modules.values())
        if isinstance(idx, slice):
            del items[idx]
        else:
            del items[_index(idx, len(items), "Sequential")]
        self._renumber(items)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    @property
    def layers(self) -> list[Module]:
        """The layers, in order (Keras name)."""
        return list(self._modules.values())


class ModuleList(Module):
    """A list of modules, registered so that their parameters are found.

    Unlike a plain Python list, a ModuleList makes its members children of the module
    that holds it, so ``parameters()``, ``state_dict()``, ``to()`` and ``train()`` see
    them. It has no ``forward``: iterate over it in the owner's forward.

    Args:
        modules: the modules to start with.

    Example:
        >>> blocks = ModuleList([Linear(8, 8) for _ in range(3)])
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
        >>> heads = ModuleDict({"cls": Linear(8, 10), "box": Linear(8, 4)})
        >>> heads["cls"](features)
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
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
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


_SEQUENTIAL_INIT = Sequential.__init__.__wrapped__
