"""Keras's merge layers: they take a *list* of tensors and return one.

``Concatenate(axis=-1)``, ``Add``, ``Subtract``, ``Multiply``, ``Average``,
``Maximum``, ``Minimum`` and ``Dot(axes, normalize=False)``, with Keras 3's semantics,
and their functional forms ``concatenate(inputs, axis=-1)``, ``add(inputs)``, ... which
build the layer and call it. They work on Tensors and, in a functional model, on
symbolic tensors.

Elementwise merges broadcast; inputs of different ranks are first expanded at axis 1
until they have the same rank (Keras's rule).

Example:
    >>> a, b = nnkit.Input((8,)), nnkit.Input((8,))
    >>> nnkit.nn.concatenate([a, b]).shape
    (None, 16)
    >>> nnkit.nn.Add()([nnkit.ones(2, 3), nnkit.ones(2, 3)]).tolist()
    [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nnkit.autograd.ops import cat
from nnkit.autograd.tensor import Tensor
from nnkit.layers.module import Module

__all__ = [
    "Concatenate",
    "Add",
    "Subtract",
    "Multiply",
    "Average",
    "Maximum",
    "Minimum",
    "Dot",
    "concatenate",
    "add",
    "subtract",
    "multiply",
    "average",
    "maximum",
    "minimum",
    "dot",
]


class _Merge(Module):
    """Base of the merge layers: checks that the input is a list of tensors."""

    _min_inputs = 1

    def forward(self, inputs: Sequence[Tensor]) -> Tensor:
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(
                "A merge layer should be called on a list of inputs. "
                f"Received: inputs={inputs!r} (not a list of tensors)"
            )
        if len(inputs) < self._min_inputs:
            raise ValueError(
                f"A `{type(self).__name__}` layer should be called on a list of at "
                f"least {self._min_inputs} inputs. Received {len(inputs)} inputs."
            )
        batch = {int(x.shape[0]) for x in inputs if x.ndim}
        if len(batch) > 1:
            raise ValueError(
                "Cannot merge tensors with different batch sizes. Received "
                f"tensors with shapes {[tuple(x.shape) for x in inputs]}"
            )
        return self._merge(list(inputs))

    def _merge(self, inputs: list[Tensor]) -> Tensor:
        raise NotImplementedError


class _Elementwise(_Merge):
    """An elementwise merge: broadcast, after expanding lower ranks at axis 1."""

    def _merge(self, inputs: list[Tensor]) -> Tensor:
        rank = max(x.ndim for x in inputs)
        expanded = []
        for x in inputs:
            while x.ndim < rank:
                x = x.unsqueeze(1)
            expanded.append(x)
        return self._combine(expanded)

    def _combine(self, inputs: list[Tensor]) -> Tensor:
        raise NotImplementedError


class Add(_Elementwise):
    """The sum of a list of tensors (Keras's ``Add``).

    Example:
        >>> x1, x2 = nnkit.ones(2, 3), nnkit.full((2, 3), 2.0)
        >>> x3 = nnkit.arange(6.0).reshape(2, 3)
        >>> Add()([x1, x2, x3]).tolist()     # x1 + x2 + x3
        [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]
    """

    def _combine(self, inputs: list[Tensor]) -> Tensor:
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out


class Subtract(_Elementwise):
    """``inputs[0] - inputs[1]``, for exactly two tensors (Keras's ``Subtract``).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> Subtract()([a, b]).tolist()
        [[-2.0, 3.0]]
    """

    _min_inputs = 2

    def _combine(self, inputs: list[Tensor]) -> Tensor:
        if len(inputs) != 2:
            raise ValueError(
                "A `Subtract` layer should be called on exactly 2 inputs. "
                f"Received: {len(inputs)} inputs"
            )
        return inputs[0] - inputs[1]


class Multiply(_Elementwise):
    """The elementwise product of a list of tensors (Keras's ``Multiply``).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> Multiply()([a, b]).tolist()
        [[3.0, 10.0]]
    """

    def _combine(self, inputs: list[Tensor]) -> Tensor:
        out = inputs[0]
        for x in inputs[1:]:
            out = out * x
        return out


class Average(_Elementwise):
    """The elementwise mean of a list of tensors (Keras's ``Average``).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> Average()([a, b]).tolist()
        [[2.0, 3.5]]
    """

    def _combine(self, inputs: list[Tensor]) -> Tensor:
        out = inputs[0]
        for x in inputs[1:]:
            out = out + x
        return out / len(inputs)


class Maximum(_Elementwise):
    """The elementwise maximum of a list of tensors (Keras's ``Maximum``).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> Maximum()([a, b]).tolist()
        [[3.0, 5.0]]
    """

    def _combine(self, inputs: list[Tensor]) -> Tensor:
        out = inputs[0]
        for x in inputs[1:]:
            out = out.maximum(x)
        return out


class Minimum(_Elementwise):
    """The elementwise minimum of a list of tensors (Keras's ``Minimum``).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> Minimum()([a, b]).tolist()
        [[1.0, 2.0]]
    """

    def _combine(self, inputs: list[Tensor]) -> Tensor:
        out = inputs[0]
        for x in inputs[1:]:
            out = out.minimum(x)
        return out


class Concatenate(_Merge):
    """The concatenation of a list of tensors along ``axis`` (Keras's ``Concatenate``).

    Args:
        axis: the axis to concatenate along (default: the last).

    Raises:
        ValueError: when the inputs' shapes differ other than along ``axis``.

    Example:
        >>> Concatenate(axis=-1)([nnkit.ones(2, 3), nnkit.zeros(2, 2)]).shape
        (2, 5)
    """

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self.axis = axis

    def _merge(self, inputs: list[Tensor]) -> Tensor:
        shapes = [tuple(x.shape) for x in inputs]
        ranks = {len(s) for s in shapes}
        axis = self.axis % len(shapes[0]) if shapes[0] else 0
        if len(ranks) != 1 or any(
            tuple(d for i, d in enumerate(s) if i != axis)
            != tuple(d for i, d in enumerate(shapes[0]) if i != axis)
            for s in shapes
        ):
            raise ValueError(
                "A `Concatenate` layer requires inputs with matching shapes "
                "except for the concatenation axis. Received: "
                f"input_shape={shapes}"
            )
        return cat(inputs, self.axis)

    def extra_repr(self) -> str:
        return f"axis={self.axis}"


def _l2_normalize(x: Tensor, axis: int) -> Tensor:
    # Keras's ops.normalize(order=2): x * rsqrt(max(sum(x**2), epsilon**2)), epsilon 1e-7
    square_sum = (x * x).sum(dim=axis, keepdim=True)
    return x * square_sum.clamp(min=1e-14).rsqrt()


def batch_dot(x: Tensor, y: Tensor, axes: Sequence[int]) -> Tensor:
    """Keras's ``batch_dot``: per sample, the dot product of ``x`` along ``axes[0]`` with
    ``y`` along ``axes[1]``; the result has ``x``'s other dimensions then ``y``'s (less
    its batch dimension), at least 2 dimensions.

    Raises:
        ValueError: for inputs of rank < 2, an axis 0, or sizes that do not match.
    """
    if x.ndim < 2 or y.ndim < 2:
        raise ValueError(
            "Cannot do batch_dot on inputs with rank < 2. Received inputs with "
            f"shapes {tuple(x.shape)} and {tuple(y.shape)}."
        )
    a0, a1 = axes[0] % x.ndim, axes[1] % y.ndim
    if 0 in (a0, a1):
        raise ValueError(
            "Cannot perform batch_dot over axis 0. If your inputs are not "
            "batched, add a dummy batch dimension to your inputs"
        )
    if x.shape[a0] != y.shape[a1]:
        raise ValueError(
            f"Cannot do batch_dot on inputs with shapes {tuple(x.shape)} and "
            f"{tuple(y.shape)} with axes={[a0, a1]}. x.shape[{a0}] != "
            f"y.shape[{a1}] ({x.shape[a0]} != {y.shape[a1]})."
        )
    x_rest = [d for i, d in enumerate(x.shape) if i != a0]
    y_rest = [d for i, d in enumerate(y.shape) if i not in (0, a1)]
    xm = x.movedim(a0, -1).reshape(x.shape[0], -1, x.shape[a0])  # (B, X, K)
    ym = y.movedim(a1, 1).reshape(y.shape[0], y.shape[a1], -1)  # (B, K, Y)
    out = xm.matmul(ym).reshape(tuple(x_rest + y_rest))
    return out.unsqueeze(-1) if out.ndim == 1 else out


class Dot(_Merge):
    """The per-sample dot product of two tensors along ``axes`` (Keras's ``Dot``).

    Args:
        axes: an axis for both inputs, or a pair ``(axis of the first, axis of the
            second)``; the batch axis 0 cannot be used.
        normalize: L2-normalise both inputs along those axes first (the result is then
            the cosine similarity).

    Raises:
        TypeError: for ``axes`` that are neither an int nor a pair.
        ValueError: for a pair that is not two ints, or inputs that are not exactly two.

    Example:
        >>> Dot(axes=1)([nnkit.ones(4, 3), nnkit.ones(4, 3)]).shape
        (4, 1)
    """

    _min_inputs = 2

    def __init__(self, axes: int | Sequence[int], normalize: bool = False) -> None:
        super().__init__()
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError(
                    "Invalid type for argument `axes`: it should be a list or an "
                    f"int. Received: axes={axes!r}"
                )
            if len(axes) != 2:
                raise ValueError(
                    "Invalid format for argument `axes`: it should contain two "
                    f"elements. Received: axes={axes!r}"
                )
            if not all(isinstance(a, int) for a in axes):
                raise ValueError(
                    "Invalid format for argument `axes`: list elements should be "
                    f"integers. Received: axes={axes!r}"
                )
        self.axes = axes
        self.normalize = normalize

    def _merge(self, inputs: list[Tensor]) -> Tensor:
        if len(inputs) != 2:
            raise ValueError(
                "A `Dot` layer should be called on exactly 2 inputs. Received: "
                f"{len(inputs)} inputs"
            )
        x1, x2 = inputs
        if isinstance(self.axes, int):
            axes = [self.axes % x1.ndim, self.axes % x2.ndim] if self.axes < 0 else [self.axes] * 2
        else:
            axes = [a % x.ndim if a < 0 else a for a, x in zip(self.axes, inputs)]
        if self.normalize:
            x1, x2 = _l2_normalize(x1, axes[0]), _l2_normalize(x2, axes[1])
        return batch_dot(x1, x2, axes)

    def extra_repr(self) -> str:
        return f"axes={self.axes}" + (", normalize=True" if self.normalize else "")


def concatenate(inputs: Sequence[Any], axis: int = -1, **kwargs: Any) -> Any:
    """``Concatenate(axis=axis, **kwargs)(inputs)``: Keras's functional form.

    Args:
        inputs: the tensors (or symbolic ``nnkit.Input`` tensors) to merge.
        axis: the axis to concatenate along.
        **kwargs: other layer arguments (``name``).

    Returns:
        The merged tensor (a symbolic tensor for symbolic inputs).

    Example:
        >>> concatenate([nnkit.ones(2, 3), nnkit.zeros(2, 1)]).shape
        (2, 4)
    """
    return Concatenate(axis=axis, **kwargs)(inputs)


def add(inputs: Sequence[Any], **kwargs: Any) -> Any:
    """``Add(**kwargs)(inputs)``: Keras's functional form of :class:`Add`.

    Args:
        inputs: the tensors (or symbolic ``nnkit.Input`` tensors) to merge.
        **kwargs: other layer arguments (``name``).

    Returns:
        The merged tensor (a symbolic tensor for symbolic inputs).

    Example:
        >>> add([nnkit.ones(2), nnkit.ones(2)]).tolist()
        [2.0, 2.0]
    """
    return Add(**kwargs)(inputs)


def subtract(inputs: Sequence[Any], **kwargs: Any) -> Any:
    """``Subtract(**kwargs)(inputs)``: Keras's functional form of :class:`Subtract`.

    Args:
        inputs: the tensors (or symbolic ``nnkit.Input`` tensors) to merge.
        **kwargs: other layer arguments (``name``).

    Returns:
        The merged tensor (a symbolic tensor for symbolic inputs).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> subtract([a, b]).tolist()
        [[-2.0, 3.0]]
    """
    return Subtract(**kwargs)(inputs)


def multiply(inputs: Sequence[Any], **kwargs: Any) -> Any:
    """``Multiply(**kwargs)(inputs)``: Keras's functional form of :class:`Multiply`.

    Args:
        inputs: the tensors (or symbolic ``nnkit.Input`` tensors) to merge.
        **kwargs: other layer arguments (``name``).

    Returns:
        The merged tensor (a symbolic tensor for symbolic inputs).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> multiply([a, b]).tolist()
        [[3.0, 10.0]]
    """
    return Multiply(**kwargs)(inputs)


def average(inputs: Sequence[Any], **kwargs: Any) -> Any:
    """``Average(**kwargs)(inputs)``: Keras's functional form of :class:`Average`.

    Args:
        inputs: the tensors (or symbolic ``nnkit.Input`` tensors) to merge.
        **kwargs: other layer arguments (``name``).

    Returns:
        The merged tensor (a symbolic tensor for symbolic inputs).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> average([a, b]).tolist()
        [[2.0, 3.5]]
    """
    return Average(**kwargs)(inputs)


def maximum(inputs: Sequence[Any], **kwargs: Any) -> Any:
    """``Maximum(**kwargs)(inputs)``: Keras's functional form of :class:`Maximum`.

    Args:
        inputs: the tensors (or symbolic ``nnkit.Input`` tensors) to merge.
        **kwargs: other layer arguments (``name``).

    Returns:
        The merged tensor (a symbolic tensor for symbolic inputs).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> maximum([a, b]).tolist()
        [[3.0, 5.0]]
    """
    return Maximum(**kwargs)(inputs)


def minimum(inputs: Sequence[Any], **kwargs: Any) -> Any:
    """``Minimum(**kwargs)(inputs)``: Keras's functional form of :class:`Minimum`.

    Args:
        inputs: the tensors (or symbolic ``nnkit.Input`` tensors) to merge.
        **kwargs: other layer arguments (``name``).

    Returns:
        The merged tensor (a symbolic tensor for symbolic inputs).

    Example:
        >>> a, b = nnkit.tensor([[1.0, 5.0]]), nnkit.tensor([[3.0, 2.0]])
        >>> minimum([a, b]).tolist()
        [[1.0, 2.0]]
    """
    return Minimum(**kwargs)(inputs)


def dot(
    inputs: Sequence[Any], axes: int | Sequence[int] = -1, normalize: bool = False, **kwargs: Any
) -> Any:
    """``Dot(axes=axes, normalize=normalize, **kwargs)(inputs)``: Keras's functional form.

    Args:
        inputs: two tensors.
        axes: the axis (or one per input) to take the dot product along.
        normalize: L2-normalise both inputs along ``axes`` first (cosine similarity).
        **kwargs: other layer arguments (``name``).

    Returns:
        The merged tensor (a symbolic tensor for symbolic inputs).

    Example:
        >>> dot([nnkit.tensor([[1.0, 2.0]]), nnkit.tensor([[3.0, 4.0]])], axes=1).tolist()
        [[11.0]]
    """
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
