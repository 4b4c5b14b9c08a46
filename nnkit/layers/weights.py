"""``KerasWeights``: Keras's ``trainable`` flag and weight lists for every module, and
its ``training=`` call argument (:func:`call_in_mode`).

``layer.trainable = False`` freezes the layer and every layer inside it, as in Keras:
their parameters stop requiring grad (so ``fit`` and the optimizers leave them alone),
and a lazily built layer's parameters are made frozen when it is built later; ``True``
makes every parameter under it require grad again. Freezing a layer after the model's
optimizer has been built is what Keras asks of a new ``compile`` as well: the
optimizers skip parameters that have no gradient, so a frozen layer simply stops
changing, but a layer unfrozen after the first ``fit`` needs ``compile`` again to be
trained (the optimizer is built on the parameters trainable then).

``weights`` (answered where the module has no parameter, buffer, submodule or attribute
of that name of its own, as PyTorch code may) lists the module's weights, each once,
module by module (the module itself, then its children in order): each module's
parameters in registration order, then its floating-point persistent buffers
(BatchNorm's running mean and variance, Keras's moving statistics; not the integer
``num_batches_tracked``). ``trainable_weights`` are those parameters that require grad,
``non_trainable_weights`` the rest. ``get_weights()`` gives them as NumPy arrays and
``set_weights(arrays)`` assigns them in place, **in nnkit's layouts**, which are
PyTorch's (a ``Dense``/``Linear`` weight is ``(units, input_dim)``, Keras's kernel
``(input_dim, units)``): arrays move between nnkit models of one architecture, not to or
from Keras models.

``layer(x, training=True|False)`` runs that call in training or eval mode, as Keras's
``training`` call argument (:func:`call_in_mode`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

from nnkit.autograd.factories import tensor
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor

__all__ = ["KerasWeights", "WEIGHT_LISTS", "call_in_mode"]

#: Keras's weight lists, which ``Module.__getattr__`` answers by ``_weights_of_kind``.
WEIGHT_LISTS = frozenset({"weights", "trainable_weights", "non_trainable_weights"})


class KerasWeights:
    """Mixin of :class:`~nnkit.layers.Module` (see the module docstring)."""

    @property
    def trainable(self) -> bool:
        """Keras's flag: whether this layer's weights are trained (settable; setting it
        sets every layer inside too, as Keras does).

        Example:
            >>> model = nnkit.Sequential(nn.Dense(4), nn.Dense(2))
            >>> model.build((None, 3))
            >>> model.layers[0].trainable = False
            >>> [len(model.trainable_weights), len(model.non_trainable_weights)]
            [2, 2]
        """
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        value = bool(value)
        for module in self.modules():
            module.__dict__["_trainable"] = value
            for p in module._parameters.values():
                if p is not None and p.is_floating_point():
                    p.requires_grad_(value)

    def _weight_lists(self) -> list[Tensor]:
        weights: list[Tensor] = []
        seen: set[int] = set()
        for module in self.modules():
            own = [p for p in module._parameters.values() if p is not None]
            own += [
                b
                for name, b in module._buffers.items()
                if b is not None
                and b.is_floating_point()
                and name not in module._non_persistent_buffers
            ]
            for w in own:
                if id(w) not in seen:
                    seen.add(id(w))
                    weights.append(w)
        return weights

    def _weights_of_kind(self, kind: str) -> list[Tensor]:
        """``weights``, ``trainable_weights`` or ``non_trainable_weights`` (answered by
        ``Module.__getattr__``, so that a module's own parameter, buffer, submodule or
        attribute of that name, as PyTorch code may have, comes first)."""
        weights = self._weight_lists()
        if kind == "trainable_weights":
            return [w for w in weights if w.requires_grad]
        if kind == "non_trainable_weights":
            return [w for w in weights if not w.requires_grad]
        return weights

    def get_weights(self) -> list[np.ndarray]:
        """Keras's ``get_weights()``: copies of ``weights`` as NumPy arrays (nnkit's
        layouts: see the module docstring).

        Example:
            >>> layer = nn.Dense(2)
            >>> layer.build((None, 3))
            >>> [w.shape for w in layer.get_weights()]
            [(2, 3), (2,)]
        """
        return [w.detach().cpu().numpy().copy() for w in self._weight_lists()]

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Keras's ``set_weights(weights)``: assign ``weights`` in place, in order,
        from arrays (or Tensors) of their shapes, cast to their dtypes.

        Raises:
            ValueError: if the number of arrays or a shape does not match (naming the
                layer, as Keras does).
        """
        weights = list(weights)
        own = self._weight_lists()
        name = getattr(self, "name", type(self).__name__)
        if len(weights) != len(own):
            raise ValueError(
                f"You called `set_weights(weights)` on layer '{name}' with a weight list "
                f"of length {len(weights)}, but the layer was expecting {len(own)} weights."
            )
        values = []
        for w, value in zip(own, weights):
            array = value.detach().cpu().numpy() if isinstance(value, Tensor) else value
            array = np.asarray(array)
            if tuple(array.shape) != tuple(w.shape):
                raise ValueError(
                    f"Layer {name} weight shape {tuple(w.shape)} is not compatible with "
                    f"provided weight shape {tuple(array.shape)}."
                )
            values.append(array)
        with no_grad():
            for w, array in zip(own, values):
                w.copy_(tensor(array, dtype=w.dtype, device=w.device))


@functools.cache
def _takes_training(forward) -> bool:
    try:
        return "training" in inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False


def call_in_mode(module: Any, args: tuple, kwargs: dict) -> Any:
    """Keras's ``layer(x, training=True|False|None)``: the call runs with the module and
    every module inside it in that mode (dropout active or not, batch norm on batch or
    running statistics), each restored to its own mode afterwards; None leaves the modes
    as they are. A ``forward`` that takes ``training`` itself gets it too."""
    training = kwargs["training"]
    if not _takes_training(type(module).forward):
        kwargs = {k: v for k, v in kwargs.items() if k != "training"}
    if training is None:
        return module._call_impl(args, kwargs)
    saved = [(m, m.training) for m in module.modules()]
    module.train(bool(training))
    try:
        return module._call_impl(args, kwargs)
    finally:
        for m, mode in saved:
            m.__dict__["training"] = mode
