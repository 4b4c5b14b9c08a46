"""``Model``: a Module that is a whole network, the home of the Keras training API.

``compile``/``fit``/``evaluate``/``predict``/``save`` come from
:class:`nnkit.training.Trainer` (DESIGN §3, "Training"); this file adds
:meth:`Model.summary`.
"""

from __future__ import annotations

from collections.abc import Callable

from nnkit.autograd.factories import zeros
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import int64
from nnkit.layers.embedding import Embedding
from nnkit.layers.module import Module
from nnkit.training.trainer import Trainer

__all__ = ["Model"]


def _shape_of(out) -> str:
    if isinstance(out, Tensor):
        return str((None,) + tuple(out.shape[1:]))
    if isinstance(out, (tuple, list)) and out:
        return _shape_of(out[0])
    return "?"


class Model(Trainer, Module):
    """A network: subclass it (write ``__init__`` and ``forward``) or use ``Sequential``.

    A Model is a :class:`Module` with the Keras-style training API of
    :class:`~nnkit.training.Trainer` (``compile``, ``fit``, ``evaluate``, ``predict``,
    ``save``, ``save_weights``, ``load_weights``) and :meth:`summary`.

    Example:
        >>> class MLP(nnkit.Model):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.hidden, self.out = Dense(64, activation="relu"), Dense(10)
        ...     def forward(self, x):
        ...         return self.out(self.hidden(x))
        >>> model = MLP()
        >>> model.compile("adam", "cross_entropy", metrics=["accuracy"])
        >>> history = model.fit(x_train, y_train, epochs=5, validation_split=0.1)
    """

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
            >>> model = nnkit.Sequential([Dense(8), Dense(2)])
            >>> model.build((None, 20)); model.count_params()
            186
        """
        several = isinstance(input_shape, list) and all(
            isinstance(s, (tuple, list)) for s in input_shape)
        shapes = [tuple(s) for s in input_shape] if several else [tuple(input_shape)]
        device, dtype = self._target()
        first = next((m for m in self.modules() if not m._modules), None)
        if isinstance(first, Embedding):  # token ids, not features
            dtype = int64
        inputs = [zeros(tuple(1 if d is None else int(d) for d in shape), device=device,
                        dtype=dtype) for shape in shapes]
        self.built = True
        with self._mode(False), no_grad():
            self.forward(*inputs)
        self._sample_shape = shapes[0][1:]

    def count_params(self) -> int:
        """The number of parameters (Keras's ``count_params``).

        Raises:
            NotBuiltError: if a lazily built layer has not been built yet (call
                :meth:`build` or the model on a batch first).
        """
        self.check_built()
        return self._counts()[0]

    def summary(self, input_shape: tuple | None = None,
                print_fn: Callable[[str], None] = print) -> None:
        """Print a Keras-like table: each layer, its output shape and its parameter count.

        Args:
            input_shape: the shape of one input *without* the batch dimension; when
                given, a batch of one zero sample is run through the model (in eval mode,
                without gradients) to find each layer's output shape and build lazy layers.
                Defaults to the input shape ``fit`` saw, if any.
            print_fn: where each line goes (default ``print``).
        """
        shapes: dict[Module, str] = {}
        if input_shape is None:
            input_shape = self.__dict__.get("_sample_shape")
        if input_shape is not None:
            self._trace_shapes(tuple(input_shape), shapes)
        header = ("Layer (type)", "Output Shape", "Param #")
        rows = [(f"{name} ({type(m).__name__})", shapes.get(m, "?"), self._own_count(m))
                for name, m in self.named_modules() if name and not m._modules]
        widths = [max(len(r[i]) for r in rows + [header]) + 2 for i in range(2)]
        rule = "=" * (sum(widths) + max(len(r[2]) for r in rows + [header]))
        lines = [f'Model: "{self._get_name()}"', rule]
        lines += [r[0].ljust(widths[0]) + r[1].ljust(widths[1]) + r[2] for r in [header] + rows]
        lines.insert(3, rule)
        total, trainable = self._counts()
        if all(m.built for m in self.modules()):
            lines += [rule, f"Total params: {total:,}", f"Trainable params: {trainable:,}",
                      f"Non-trainable params: {total - trainable:,}", rule]
        else:
            lines += [rule, f"Total params: ? (built layers: {total:,}; call the model on a "
                      "batch or pass input_shape= to build the rest)", rule]
        for line in lines:
            print_fn(line)

    def _trace_shapes(self, input_shape: tuple, shapes: dict) -> None:
        handles = [m.register_forward_hook(lambda mod, args, out: shapes.__setitem__(
            mod, _shape_of(out))) for m in self.modules()]
        was_training = self.training
        try:
            self.eval()
            with no_grad():  # the probe batch goes where the (built) weights live
                dev = next((t.device for store in ("_parameters", "_buffers")
                            for _, t in self._named_members(store, "", True)), None)
                self(zeros((1,) + input_shape, device=dev))
        finally:
            self.train(was_training)
            for h in handles:
                h.remove()

    @staticmethod
    def _own_count(m: Module) -> str:
        if not m.built:
            return "? (unbuilt)"
        return f"{sum(p.numel() for p in m._parameters.values() if p is not None):,}"

    def _counts(self) -> tuple[int, int]:
        """Total and trainable parameter counts of the built layers."""
        params = list(self._named_members("_parameters", "", True))
        return (sum(p.numel() for _, p in params),
                sum(p.numel() for _, p in params if p.requires_grad))
