"""``Sequential``: a Model whose layers run one after the other."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping

from nnkit.layers.container import _index
from nnkit.layers.module import Module
from nnkit.models.model import Model

__all__ = ["Sequential"]


class Sequential(Model):
    """Layers applied one after the other; the output of each is the input of the next.

    Accepts the layers as arguments (PyTorch), as one list (Keras) or as an
    ``OrderedDict`` of named layers. Layers are named ``'0'``, ``'1'``, ... unless named.

    Args:
        *args: the layers (Modules), one list or tuple of them, or one ``OrderedDict``
            of named layers.

    Example:
        >>> model = Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Dense(10))
        >>> model(nnkit.randn(2, 1, 8, 8)).shape
        (2, 10)
        >>> model = Sequential([nn.Dense(64, activation="relu"), nn.Dense(10)])   # Keras
        >>> model[0]          # the first layer
        Dense(units=64, activation=relu)
        >>> type(model[1:]).__name__, len(model[1:])
        ('Sequential', 1)
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


_SEQUENTIAL_INIT = Sequential.__init__.__wrapped__
