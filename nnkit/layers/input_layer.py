"""``nnkit.Input`` and ``InputLayer``: the entry points of a functional model (Keras 3)."""

from __future__ import annotations

from typing import Any

from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import get_default_dtype, to_dtype
from nnkit.layers.module import Module
from nnkit.layers.symbolic import KerasHistory, KerasTensor, Node

__all__ = ["Input", "InputLayer"]


def _batch_shape(shape: Any, batch_size: int | None, batch_shape: Any) -> tuple:
    if shape is not None and batch_shape is not None:
        raise ValueError("You cannot pass both `shape` and `batch_shape` at the same time.")
    if batch_size is not None and batch_shape is not None:
        raise ValueError("You cannot pass both `batch_size` and `batch_shape` at the same time.")
    if shape is None and batch_shape is None:
        raise ValueError("You must pass a `shape` argument.")
    if batch_shape is None:
        shape = (shape,) if isinstance(shape, int) else shape
        try:
            batch_shape = (batch_size,) + tuple(shape)
        except TypeError:
            raise ValueError(f"Cannot convert '{shape!r}' to a shape.") from None
    dims = []
    for d in batch_shape:
        if d is not None and (isinstance(d, bool) or not isinstance(d, int) or d < 0):
            raise ValueError(
                f"Cannot convert '{tuple(batch_shape)!r}' to a shape: dimensions "
                "must be non-negative integers or None"
            )
        dims.append(d)
    return tuple(dims)


class InputLayer(Module):
    """The layer behind :func:`Input`: it holds the input's symbolic tensor and passes
    real inputs through unchanged. Appears first in a functional model's ``layers``.

    Args:
        shape: the shape of one sample (without the batch dimension).
        batch_size: a fixed batch size (default: unknown).
        dtype: the input's dtype (default: nnkit's default float dtype).
        batch_shape: the whole shape, batch dimension included (instead of ``shape``).
        name: the layer's (and its tensor's) name (default ``input_layer``,
            ``input_layer_1``, ...).
    """

    def __init__(
        self,
        shape: Any = None,
        batch_size: int | None = None,
        dtype: Any = None,
        batch_shape: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        self.batch_shape = _batch_shape(shape, batch_size, batch_shape)
        self.dtype = get_default_dtype() if dtype is None else to_dtype(dtype)
        tensor = KerasTensor(
            self.batch_shape, self.dtype, name=self.name, history=KerasHistory(self, 0, 0)
        )
        Node(self, (), {}, tensor)

    @property
    def output(self) -> KerasTensor:
        """The input's symbolic tensor."""
        return self._inbound_nodes[0].outputs

    def forward(self, x: Tensor) -> Tensor:
        return x

    def extra_repr(self) -> str:
        return f"batch_shape={self.batch_shape}, dtype={self.dtype}"


def Input(
    shape: Any = None,
    batch_size: int | None = None,
    dtype: Any = None,  # noqa: N802
    batch_shape: Any = None,
    name: str | None = None,
) -> KerasTensor:
    """A symbolic input tensor for a functional model (Keras 3's ``keras.Input``).

    Args:
        shape: the shape of one sample, without the batch dimension (``None`` for a
            dimension of unknown size, e.g. a sequence length).
        batch_size: a fixed batch size (default: unknown, ``None``).
        dtype: the dtype of the data (a name or an nnkit dtype; default float32, or
            nnkit's default float dtype). Token ids for an ``Embedding``: ``'int64'``.
        batch_shape: the whole shape including the batch dimension (instead of
            ``shape``/``batch_size``).
        name: the input's name (unique in a model; default ``input_layer``, ...).

    Returns:
        A :class:`~nnkit.layers.symbolic.KerasTensor` of shape
        ``(batch_size, *shape)``.

    Raises:
        ValueError: without a shape, or with both ``shape`` and ``batch_shape``.

    Example:
        >>> inputs = nnkit.Input(shape=(20,))
        >>> x = nnkit.nn.Dense(64, activation="relu")(inputs)
        >>> model = nnkit.Model(inputs, nnkit.nn.Dense(10)(x))
        >>> inputs.shape, x.shape
        ((None, 20), (None, 64))
    """
    return InputLayer(
        shape=shape, batch_size=batch_size, dtype=dtype, batch_shape=batch_shape, name=name
    ).output
