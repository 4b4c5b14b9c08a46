"""``Model``: a Module that is a whole network, the home of the Keras training API.

``compile``/``fit``/``evaluate``/``predict``/``save`` come from
:class:`nnkit.training.Trainer` (DESIGN §3, "Training"); this file adds ``build``,
``count_params``, ``to_json``, ``get_layer`` and :meth:`Model.summary` (laid out by
:mod:`nnkit.models.summary`). ``nnkit.Model(inputs, outputs)`` returns a functional
model (:class:`nnkit.models.functional.Functional`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from nnkit.autograd.factories import zeros
from nnkit.autograd.grad_mode import no_grad
from nnkit.backends.dtypes import int64
from nnkit.layers.embedding import Embedding
from nnkit.layers.module import Module
from nnkit.models.summary import listed_layers, print_summary, weight_counts
from nnkit.saving.serialization import serialize
from nnkit.training.trainer import Trainer

__all__ = ["Model"]


def functional_init_arguments(args: tuple, kwargs: dict) -> bool:
    """Whether ``Model(...)`` was given ``inputs`` and ``outputs`` (Keras's test)."""
    return (
        len(args) == 2
        or (len(args) == 1 and "outputs" in kwargs)
        or ("inputs" in kwargs and "outputs" in kwargs)
    )


class Model(Trainer, Module):
    """A network: subclass it (write ``__init__`` and ``forward``) or use ``Sequential``.

    A Model is a :class:`Module` with the Keras-style training API of
    :class:`~nnkit.training.Trainer` (``compile``, ``fit``, ``evaluate``, ``predict``,
    ``save``, ``save_weights``, ``load_weights``) and :meth:`summary`.

    Example:
        >>> class MLP(nnkit.Model):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.hidden = nn.Dense(16, activation="relu")
        ...         self.out = nn.Dense(3)
        ...     def forward(self, x):
        ...         return self.out(self.hidden(x))
        >>> model = MLP()
        >>> model.compile("adam", "cross_entropy", metrics=["accuracy"])
        >>> x, y = nnkit.randn(16, 4), nnkit.randint(0, 3, (16,))
        >>> history = model.fit(x, y, epochs=2, validation_split=0.25, verbose=0)
        >>> sorted(history.history)
        ['accuracy', 'loss', 'val_accuracy', 'val_loss']
        >>> model.predict(x[:2], verbose=0).shape
        (2, 3)
    """

    #: The class ``Model(inputs, outputs)`` returns; the subclass declared with
    #: ``graph_model=True`` (:class:`~nnkit.models.functional.Functional`, which
    #: ``nnkit.models`` always loads) sets it, so this module need not import its subclass.
    _graph_model: type | None = None

    def __init_subclass__(cls, graph_model: bool = False, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if graph_model:
            Model._graph_model = cls

    def __new__(cls, *args, **kwargs):
        # ``nnkit.Model(inputs, outputs)`` is a functional model, as in Keras 3
        if cls is Model and functional_init_arguments(args, kwargs):
            return cls._graph_model.__new__(cls._graph_model, *args, **kwargs)
        return super().__new__(cls, *args, **kwargs)

    def build(self, input_shape: tuple | list) -> None:
        """Build every lazily built layer for inputs of ``input_shape`` (Keras's ``build``).

        A batch of one zero sample runs through the model (in eval mode, without
        gradients), so ``count_params``, ``summary`` and ``load_weights`` work before any
        data is seen. A subclass that creates its layers in its own ``build`` (the lazy
        pattern, ``self.built = False``) overrides this.

        Args:
            input_shape: the input's shape, batch dimension included (``None`` or a
                number), e.g. ``(None, 20)``; a list of shapes for several inputs.

        Example:
            >>> model = nnkit.Sequential([nn.Dense(8), nn.Dense(2)])
            >>> model.build((None, 20))
            >>> model.count_params()          # (20 * 8 + 8) + (8 * 2 + 2)
            186
        """
        several = isinstance(input_shape, list) and all(
            isinstance(s, (tuple, list)) for s in input_shape
        )
        shapes = [tuple(s) for s in input_shape] if several else [tuple(input_shape)]
        device, dtype = self._target()
        first = next((m for m in self.modules() if not m._modules), None)
        if isinstance(first, Embedding):  # token ids, not features
            dtype = int64
        inputs = [
            zeros(tuple(1 if d is None else int(d) for d in shape), device=device, dtype=dtype)
            for shape in shapes
        ]
        self.built = True
        with self._mode(False), no_grad():
            self.forward(*inputs)
        self._sample_shape = shapes[0][1:]

    def count_params(self) -> int:
        """The number of weights (Keras's ``count_params``): the parameters and the
        non-trainable floating buffers, such as BatchNorm's running statistics.

        Raises:
            NotBuiltError: if a lazily built layer has not been built yet (call
                :meth:`build` or the model on a batch first).
        """
        self.check_built()
        counts = weight_counts(self)
        return counts["trainable"][0] + counts["non_trainable"][0]

    def to_json(self, **kwargs: Any) -> str:
        """Keras's ``to_json()``: the architecture (no weights) as a JSON string, which
        :func:`nnkit.saving.model_from_json` rebuilds; ``kwargs`` go to ``json.dumps``.

        Raises:
            SerializationError: if a layer cannot describe itself (see
                :func:`nnkit.saving.register_serializable`).
        """
        return json.dumps(serialize(self), **kwargs)

    def get_layer(self, name: str | None = None, index: int | None = None) -> Module:
        """A layer by name or by index in :attr:`layers` (Keras's ``get_layer``).

        A subclassed model's layers are its direct children (the layers held by a
        ``ModuleList``/``ModuleDict`` child included).

        Raises:
            ValueError: for both or neither of ``name`` and ``index``, an index out of
                range, or no layer of that name (the message lists the names).

        Example:
            >>> model = nnkit.Sequential([nn.Dense(64, name="hidden"), nn.Dense(10, name="out")])
            >>> model.build((None, 20))
            >>> model.get_layer("out").weight.shape
            (10, 64)
            >>> model.get_layer(index=0).name
            'hidden'
        """
        layers = listed_layers(self)
        if index is not None and name is not None:
            raise ValueError(
                f"Provide only a layer name or a layer index. Received: index={index}, name={name}."
            )
        if index is not None:
            if len(layers) <= index:
                raise ValueError(
                    f"Was asked to retrieve layer at index {index} but model only "
                    f"has {len(layers)} layers."
                )
            return layers[index]
        if name is not None:
            for layer in layers:
                if layer.name == name:
                    return layer
            raise ValueError(
                f"No such layer: {name}. Existing layers are: {[layer.name for layer in layers]}."
            )
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    def summary(
        self,
        input_shape: tuple | None = None,
        print_fn: Callable[[str], None] = print,
        *,
        line_length: int | None = None,
        positions: list[float] | None = None,
        expand_nested: bool = False,
        show_trainable: bool = False,
        layer_range: Any = None,
    ) -> None:
        """Print Keras 3's summary: each layer (``dense (Dense)``), its output shape and
        weight count (and what it is connected to, in a functional model that is not a
        chain), then the total, trainable, non-trainable and (after training started)
        optimizer parameter counts with their sizes (see :mod:`nnkit.models.summary`).

        Args:
            input_shape: for a Sequential or subclassed model, the shape of one input
                *without* the batch dimension; a batch of one zero sample is run through
                the model (in eval mode, without gradients) to find each layer's output
                shape and build lazy layers. Defaults to the shape ``fit``/``build`` saw.
                A functional model knows its shapes.
            print_fn: where each line goes (default ``print``).
            line_length: the table's width (Keras's default: 88, or 108 with the
                Connected to column).
            positions: the columns' right edges as fractions of ``line_length``.
            expand_nested: also list the layers of nested models, indented.
            show_trainable: add a column saying whether each layer is trainable.
            layer_range: ``(first, last)`` layer names (or regexes) to list only those.

        Example:
            >>> model = nnkit.Sequential(
            ...     [nn.Dense(64, activation="relu", name="hidden"), nn.Dense(10, name="logits")]
            ... )
            >>> model.build((None, 20))
            >>> model.summary()
            Model: "sequential..."
            ========================================================================================
            Layer (type)                           Output Shape                            Param #
            ========================================================================================
            hidden (Dense)                         (None, 64)                                1,344
            ----------------------------------------------------------------------------------------
            logits (Dense)                         (None, 10)                                  650
            ========================================================================================
             Total params: 1,994 (7.79 KB)
             Trainable params: 1,994 (7.79 KB)
             Non-trainable params: 0 (0.00 B)
        """
        if input_shape is None:
            input_shape = self.__dict__.get("_sample_shape")
        print_summary(
            self,
            input_shape,
            print_fn,
            line_length=line_length,
            positions=positions,
            expand_nested=expand_nested,
            show_trainable=show_trainable,
            layer_range=layer_range,
        )
