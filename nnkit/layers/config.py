"""``Configurable``: Keras's config protocol for every layer (``get_config`` /
``from_config``, and the build config of lazily built layers).

A layer describes itself by the arguments its constructor was called with: the
outermost constructor call of each instance is recorded (``__init_subclass__`` wraps
every ``__init__``), so every layer, user layers included, can be saved without
writing ``get_config`` — unless its state is not described by those arguments, when
it overrides :meth:`Configurable.get_config`. Every layer takes Keras's ``name=`` and
``trainable=`` keywords besides its own arguments (see :mod:`nnkit.layers.weights`).
"""

from __future__ import annotations

import functools
import inspect

from nnkit.layers import naming

__all__ = ["Configurable"]


def _parameters(init) -> tuple:
    try:
        return tuple(inspect.signature(init).parameters)
    except (TypeError, ValueError):
        return ()


class Configurable:
    """Mixin of :class:`~nnkit.layers.Module`: ``get_config``/``from_config`` (Keras)."""

    def __init_subclass__(cls, **kwargs) -> None:
        # Remember the arguments of the outermost constructor call of every instance.
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_records_config", False):
            return

        takes_trainable = "trainable" in _parameters(init)

        @functools.wraps(init)
        def __init__(self, *args, **kw):  # noqa: N807
            kw = naming.without_name(init, kw)  # Module.__new__ has taken the name
            # Keras's trainable= of every layer (set once the layer exists; saved apart)
            trainable = None if takes_trainable else kw.pop("trainable", None)
            if "_init_arguments" not in self.__dict__:
                self.__dict__["_init_arguments"] = (args, kw)
            init(self, *args, **kw)
            if trainable is not None:
                self.trainable = trainable

        __init__._records_config = True
        cls.__init__ = __init__

    def get_config(self) -> dict:
        """The arguments that rebuild this module with :meth:`from_config` (Keras).

        By default, the layer's ``name`` and the arguments its constructor was called with
        (defaults included); a module whose state is not described by them overrides
        this.

        Raises:
            NotImplementedError: if the constructor's arguments are unknown.

        Example:
            >>> config = nn.Dense(4, activation="relu").get_config()
            >>> config["units"], config["activation"]
            (4, 'relu')
            >>> nn.Dense.from_config(config).units
            4
        """
        recorded = self.__dict__.get("_init_arguments")
        if recorded is None:
            raise NotImplementedError(
                f"{type(self).__name__} cannot describe itself: define "
                "get_config() (and from_config() if needed)"
            )
        signature = inspect.signature(type(self).__init__)
        bound = signature.bind(self, *recorded[0], **recorded[1])
        bound.apply_defaults()
        config = {"name": self.name} if isinstance(getattr(self, "name", None), str) else {}
        for name, parameter in list(signature.parameters.items())[1:]:
            value = bound.arguments[name]
            if name == "name" and "name" in config:  # the name given, or the one chosen
                continue
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                config.update(value)
            else:
                config[name] = (
                    list(value) if parameter.kind is (inspect.Parameter.VAR_POSITIONAL) else value
                )
        return config

    @classmethod
    def from_config(cls, config: dict):
        """A new module from what :meth:`get_config` returned."""
        config = dict(config)
        positional = [
            name
            for name, p in inspect.signature(cls.__init__).parameters.items()
            if p.kind is inspect.Parameter.VAR_POSITIONAL
        ]
        args = config.pop(positional[0], []) if positional else []
        return cls(*args, **config)

    def get_build_config(self) -> dict | None:
        """The input shape a lazily built layer was built for (None if not lazy).

        Returns:
            ``{'input_shape': [...]}``, or None.
        """
        shape = self.__dict__.get("_build_shape")
        return None if shape is None else {"input_shape": list(shape)}

    def build_from_config(self, config: dict) -> None:
        """Build the weights for the saved input shape, as the first call did."""
        self.build(tuple(config["input_shape"]))
        self.built = True
        self.__dict__["_build_shape"] = tuple(config["input_shape"])
