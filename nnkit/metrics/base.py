"""The :class:`Metric` base class, :class:`Mean`, :class:`Sum` and :class:`MeanMetricWrapper`.

A metric keeps its state in nnkit Tensors (``metric.variables``) and computes with
Tensor ops only. Every state variable of every built-in metric is a **sum over the
samples seen** (Keras's ``aggregation="sum"``): the state of two disjoint streams is
the elementwise sum of their states. That is what makes metrics mergeable
(:meth:`Metric.merge_state`) and what a data-parallel run relies on: all-reduce each
tensor of ``metric.variables`` with SUM, then call
``metric.stateless_result(reduced)`` (or assign them back with
``metric.set_variables(reduced)`` and call ``result()``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from nnkit.autograd.factories import as_tensor, tensor, zeros, zeros_like
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops import broadcast_to, where
from nnkit.autograd.tensor import Tensor
from nnkit.backends.check_kernels import check_class_ids as _check_class_ids
from nnkit.backends.dtypes import get_default_dtype, to_dtype
from nnkit.layers.naming import auto_name, to_snake_case

__all__ = [
    "Metric",
    "Mean",
    "Sum",
    "MeanMetricWrapper",
    "reduce_to_samplewise_values",
    "squeeze_or_expand_to_same_rank",
    "divide_no_nan",
    "to_snake_case",
]


def to_tensor(x: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``x`` (Tensor, array, list or number) as a detached Tensor, optionally cast/moved."""
    t = x.detach() if isinstance(x, Tensor) else as_tensor(x)
    if device is not None and t.device != device:
        t = t.to(device)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    return t


def check_class_ids(ids: Tensor, num_classes: int, what: str) -> None:
    """Raise a ValueError naming ``what`` when an id of the integer tensor ``ids`` lies
    outside ``[0, num_classes)``. The check is a kernel, not a read into Python: a step
    compiled by ``nnkit.compile`` repeats it at every replay."""
    message = f"{what}: target class ids must lie in [0, {num_classes}); got {{lo}}..{{hi}}"
    _check_class_ids(ids._impl.data, num_classes, message)


def divide_no_nan(num: Tensor, den: Tensor) -> Tensor:
    """``num / den``, and 0 where ``den == 0`` (no division by zero is performed).

    Args:
        num: the numerator.
        den: the denominator (broadcast with ``num``).

    Returns:
        The quotient, 0 where ``den == 0``.
    """
    zero = den == 0
    return where(zero, 0.0, num / where(zero, 1.0, den))


def squeeze_or_expand_to_same_rank(
    x1: Tensor, x2: Tensor, expand_rank_1: bool = True
) -> tuple[Tensor, Tensor]:
    """Keras's rule: when the ranks differ by one and the longer ends in 1, squeeze that
    dim (or, with ``expand_rank_1`` and the other of rank 1, expand the other).

    Args:
        x1: a tensor.
        x2: another tensor.
        expand_rank_1: expand a rank-1 tensor rather than squeeze the other.

    Returns:
        ``(x1, x2)``, adjusted.
    """
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2:
        return x1, x2
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = x2.unsqueeze(-1)
        else:
            x1 = x1.squeeze(-1)
    if r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = x1.unsqueeze(-1)
        else:
            x2 = x2.squeeze(-1)
    return x1, x2


def broadcast_weight(metric: Metric, weight: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``weight`` broadcast to ``shape``, or a ValueError naming the metric.

    Args:
        metric: the metric (named in the error).
        weight: the sample weights.
        shape: the values' shape.

    Returns:
        The broadcast weights.
    """
    try:
        return broadcast_to(weight, tuple(shape))
    except (ValueError, RuntimeError) as exc:
        raise ValueError(
            f"{type(metric).__name__} ({metric.name!r}): `sample_weight` of shape "
            f"{tuple(weight.shape)} cannot be broadcast to the values' shape {tuple(shape)}"
        ) from exc


def reduce_to_samplewise_values(
    metric: Metric, values: Tensor, sample_weight: Any, reduce_fn: Callable[..., Tensor]
) -> tuple[Tensor, Tensor | None]:
    """Keras's ``reduce_to_samplewise_values``: per-sample values (and weights).

    The weights are squeezed/expanded to the values' rank where they differ by a trailing
    1; values of higher rank than the weights are reduced (``reduce_fn``) over the extra
    trailing dims; the weights are broadcast and multiplied in; then both are reduced to
    one number per sample (dim 0).

    Args:
        metric: the metric (its dtype; named in errors).
        values: the values of a batch.
        sample_weight: weights broadcastable to ``values``, or None.
        reduce_fn: ``fn(tensor, dim=...)``, the reduction (sum or mean).

    Returns:
        ``(values, sample_weight)``: one value (and weight, or None) per sample.
    """
    values = values.to(metric.dtype) if values.dtype != metric.dtype else values
    if sample_weight is not None:
        sample_weight = to_tensor(sample_weight, metric.dtype, values.device)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        weight_ndim, values_ndim = sample_weight.ndim, values.ndim
        if values_ndim > weight_ndim:
            values = reduce_fn(values, dim=tuple(range(weight_ndim, values_ndim)))
        sample_weight = broadcast_weight(metric, sample_weight, values.shape)
        values = values * sample_weight
        if weight_ndim > 1:
            sample_weight = reduce_fn(sample_weight, dim=tuple(range(1, weight_ndim)))
    if values.ndim > 1:
        values = reduce_fn(values, dim=tuple(range(1, values.ndim)))
    return values, sample_weight


def _sum(t: Tensor, dim: tuple[int, ...]) -> Tensor:
    return t.sum(dim=dim)


def _mean(t: Tensor, dim: tuple[int, ...]) -> Tensor:
    return t.mean(dim=dim)


class Metric:
    """Encapsulates a metric's state and its update/result logic (Keras 3's ``Metric``).

    Subclasses create their state in ``__init__`` with :meth:`add_variable` and implement
    :meth:`update_state` (which returns nothing) and :meth:`result` (a 0-d Tensor, or a
    vector where a metric has one value per threshold/class). ``metric(y_true, y_pred)``
    is ``update_state`` followed by ``result`` (as in Keras 3: the value over everything
    seen so far, not over this call alone).

    Args:
        dtype: the dtype of the state and of the computations (a name or an nnkit
            dtype; default: nnkit's default float dtype). ``metric.dtype`` is its name.
        name: the metric's name (default: the snake_case class name, made unique).

    Distributed use: every state variable is a sum over samples. All-reduce (SUM) each
    tensor of ``metric.variables`` and pass the results to :meth:`stateless_result`, or
    merge metric objects with :meth:`merge_state`.

    Example:
        >>> class Positives(Metric):          # the number of positive predictions
        ...     def __init__(self, name="positives", dtype=None):
        ...         super().__init__(name=name, dtype=dtype)
        ...         self.add_variable((), name="count")
        ...     def update_state(self, y_true, y_pred, sample_weight=None):
        ...         self.count.add_(((nnkit.as_tensor(y_pred) > 0.5).float()).sum())
        ...     def result(self):
        ...         return self.count.clone()
        >>> m = Positives()
        >>> m.update_state(None, [0.9, 0.2, 0.7])
        >>> m.update_state(None, [0.6])
        >>> float(m.result())
        3.0
        >>> m.reset_state(); float(m.result())
        0.0
    """

    def __init__(self, dtype: Any = None, name: str | None = None) -> None:
        if name is not None and not isinstance(name, str):
            raise ValueError(
                f"{type(self).__name__}: argument `name` must be a string. Received: name={name!r}"
            )
        try:
            dt = get_default_dtype() if dtype is None else to_dtype(dtype)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{type(self).__name__}: invalid `dtype` argument. Received: dtype={dtype!r}"
            ) from exc
        if not dt.is_floating_point:
            raise ValueError(
                f"{type(self).__name__}: argument `dtype` must be a floating "
                f"point dtype. Received: dtype={dtype!r}"
            )
        self.name = name or auto_name(type(self).__name__)
        self._dtype = dt.name
        self._variable_names: list[str] = []

    # ----------------------------------------------------------------- state
    @property
    def dtype(self) -> str:
        """The name of the metric's dtype (``'float32'``), as Keras's ``metric.dtype``."""
        return self._dtype

    def add_variable(
        self,
        shape: Sequence[int] | int,
        initializer: str = "zeros",
        dtype: Any = None,
        aggregation: str = "sum",
        name: str | None = None,
    ) -> Tensor:
        """Create a zero-initialised state Tensor stored as the attribute ``name``.

        Only ``initializer="zeros"`` and ``aggregation="sum"`` exist: every state is a
        sum over samples (which is what makes states mergeable across ranks).

        Args:
            shape: the state's shape (an int for 1-d).
            initializer: ``'zeros'``.
            dtype: its dtype (None: the metric's).
            aggregation: ``'sum'``.
            name: the attribute name (a valid identifier; required).

        Returns:
            The new state Tensor.

        Raises:
            ValueError: for another initializer or aggregation, or a missing or invalid
                ``name``.
            RuntimeError: if ``super().__init__()`` was not called.
        """
        if not hasattr(self, "_variable_names"):
            raise RuntimeError(
                "You forgot to call `super().__init__()` in the `__init__()` "
                f"method of {type(self).__name__}. Go add it!"
            )
        if initializer != "zeros" or aggregation != "sum":
            raise ValueError(
                f"{type(self).__name__}: add_variable supports only "
                "initializer='zeros' and aggregation='sum'"
            )
        if not name or not name.isidentifier():
            raise ValueError(
                f"{type(self).__name__}: add_variable needs a `name` that is "
                f"a valid attribute name. Received: name={name!r}"
            )
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        value = zeros(shape, dtype=dtype or self._dtype)
        object.__setattr__(self, name, value)
        if name not in self._variable_names:
            self._variable_names.append(name)
        return value

    # Keras's backwards-compatible alias
    def add_weight(
        self,
        shape: Sequence[int] | int = (),
        initializer: str = "zeros",
        dtype: Any = None,
        name: str | None = None,
    ) -> Tensor:
        """Keras's older name of :meth:`add_variable` (same arguments, sum aggregation)."""
        return self.add_variable(shape, initializer, dtype=dtype, name=name)

    @property
    def variables(self) -> list[Tensor]:
        """The state Tensors, in creation order (empty until a lazily built metric —
        ``F1Score``, ``AUC(multi_label=True)`` without ``num_labels`` — has seen data)."""
        return [getattr(self, n) for n in self._variable_names]

    def set_variables(self, values: Sequence[Any]) -> None:
        """Replace the state by ``values`` (one per variable, same shapes).

        Args:
            values: the new state values (Tensors, arrays or numbers), in the order of
                :attr:`variables`.
        """
        values = list(values)
        if len(values) != len(self._variable_names):
            raise ValueError(
                f"{type(self).__name__}: expected {len(self._variable_names)} state values "
                f"(one per variable of `{type(self).__name__}().variables`), got {len(values)}"
            )
        news = [to_tensor(v, getattr(self, n).dtype) for n, v in zip(self._variable_names, values)]
        for name, new in zip(self._variable_names, news):  # all checked before any write
            old = getattr(self, name)
            if tuple(new.shape) != tuple(old.shape):
                raise ValueError(
                    f"{type(self).__name__}: state {name!r} has shape "
                    f"{tuple(old.shape)}, got a value of shape {tuple(new.shape)}"
                )
        with no_grad():
            for name, new in zip(self._variable_names, news):
                self._write(name, new)

    def _write(self, name: str, value: Tensor) -> None:
        """``state[name] = value`` in place (rebound only to move to another device): a
        step compiled by ``nnkit.compile`` holds the state tensors and replays writes."""
        cur = getattr(self, name)
        if cur.device != value.device:
            object.__setattr__(self, name, value.clone())
        else:
            cur.copy_(value)

    def _assign_add(self, name: str, delta: Tensor) -> None:
        """``state[name] += delta`` in place (first moved to ``delta``'s device if need be)."""
        cur = getattr(self, name)
        if cur.device != delta.device:
            cur = cur.to(delta.device)
            object.__setattr__(self, name, cur)
        if delta.dtype != cur.dtype:
            delta = delta.to(cur.dtype)
        with no_grad():
            cur.add_(delta.detach())

    def reset_state(self) -> None:
        """Zero every state variable, in place (called by ``fit`` at each epoch's start)."""
        with no_grad():
            for name in self._variable_names:
                getattr(self, name).zero_()

    def merge_state(self, metrics: Metric | Iterable[Metric]) -> None:
        """Add the states of ``metrics`` (same class and configuration) into this one.

        Afterwards ``result()`` is the value over the union of all the data seen.

        Args:
            metrics: a metric or an iterable of metrics.
        """
        others = [metrics] if isinstance(metrics, Metric) else list(metrics)
        for other in others:
            if type(other) is not type(self):
                raise ValueError(
                    f"{type(self).__name__}.merge_state: cannot merge a {type(other).__name__}"
                )
            mine_cfg, their_cfg = self.get_config(), other.get_config()
            mine_cfg.pop("name", None)
            their_cfg.pop("name", None)
            if mine_cfg != their_cfg:
                raise ValueError(
                    f"{type(self).__name__}.merge_state: configurations differ "
                    f"({mine_cfg} vs {their_cfg})"
                )
            mine, theirs = self.variables, other.variables
            if not theirs:  # an unbuilt metric has seen nothing
                continue
            if not mine:
                self._build_like(other)
                mine = self.variables
            if [tuple(v.shape) for v in mine] != [tuple(v.shape) for v in theirs]:
                raise ValueError(
                    f"{type(self).__name__}.merge_state: state shapes differ "
                    f"({[tuple(v.shape) for v in mine]} vs "
                    f"{[tuple(v.shape) for v in theirs]})"
                )
            for name, value in zip(self._variable_names, theirs):
                self._assign_add(name, value)

    def _build_like(self, other: Metric) -> None:
        """Build an unbuilt lazy metric with the state shapes of ``other``."""
        raise ValueError(f"{type(self).__name__}: cannot merge into an unbuilt metric")

    # --------------------------------------------------------- update / result
    def update_state(self, *args: Any, **kwargs: Any) -> None:
        """Accumulate statistics for the metric."""
        raise NotImplementedError

    def result(self) -> Tensor:
        """The current value, computed from the state."""
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        """``update_state(*args, **kwargs)`` then ``result()`` (Keras 3 semantics)."""
        if not hasattr(self, "_variable_names"):
            raise RuntimeError(
                "You forgot to call `super().__init__()` in the `__init__()` "
                f"method of {type(self).__name__}. Go add it!"
            )
        self.update_state(*args, **kwargs)
        return self.result()

    def _swap_state(self, values: Sequence[Any]) -> list[Tensor]:
        old = [v.clone() for v in self.variables]
        self.set_variables(values)
        return old

    def _restore_state(self, old: list[Tensor]) -> None:
        with no_grad():
            for i, name in enumerate(self._variable_names):
                # a lazy metric built during a stateless call keeps zero state of its own
                value = old[i] if i < len(old) else zeros_like(getattr(self, name))
                self._write(name, value)

    def stateless_result(self, metric_variables: Sequence[Any]) -> Tensor:
        """``result()`` computed from ``metric_variables`` instead of the own state
        (e.g. states all-reduced across ranks); the own state is left unchanged.

        Args:
            metric_variables: state values in the order of :attr:`variables`.

        Returns:
            What :meth:`result` would return for that state.
        """
        old = self._swap_state(metric_variables)
        try:
            return self.result()
        finally:
            self._restore_state(old)

    def stateless_update_state(
        self, metric_variables: Sequence[Any], *args: Any, **kwargs: Any
    ) -> list[Tensor]:
        """The state after ``update_state(*args)`` from ``metric_variables``; the own
        state is left unchanged.

        Args:
            metric_variables: state values in the order of :attr:`variables`.
            *args: the arguments of :meth:`update_state`.
            **kwargs: its keyword arguments.

        Returns:
            The new state values, in the order of :attr:`variables`.
        """
        old = self._swap_state(metric_variables)
        try:
            self.update_state(*args, **kwargs)
            return [v.clone() for v in self.variables]
        finally:
            self._restore_state(old)

    def stateless_reset_state(self) -> list[Tensor]:
        """Zero state values (the own state is left unchanged)."""
        return [zeros_like(v) for v in self.variables]

    # ------------------------------------------------------------ serialising
    def get_config(self) -> dict[str, Any]:
        """The constructor arguments, JSON-serialisable (Keras's ``get_config``)."""
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Metric:
        """A new metric from :meth:`get_config`'s dict."""
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"

    __str__ = __repr__

    # helpers for subclasses
    def _error(self, argument: str, message: str, value: Any) -> ValueError:
        return ValueError(
            f"{type(self).__name__}: invalid `{argument}` argument: {message}. "
            f"Received: {argument}={value!r}"
        )


class Sum(Metric):
    """The (weighted) sum of the given values.

    ``update_state(values, sample_weight=None)``: values ``[1, 3, 5, 7]`` give 16; with
    ``sample_weight=[1, 1, 0, 0]``, 4.

    Args:
        name: the metric's name (its key in the logs).
        dtype: the dtype of its state and result (default: nnkit's default float dtype).

    Example:
        >>> m = Sum(); m.update_state([1, 3, 5, 7]); float(m.result())
        16.0
    """

    def __init__(self, name: str = "sum", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.add_variable((), name="total")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        values = to_tensor(values, self.dtype)
        if values.numel() == 0:
            return
        values, _ = reduce_to_samplewise_values(self, values, sample_weight, _sum)
        self._assign_add("total", values.sum())

    def result(self) -> Tensor:
        return self.total.clone()


class Mean(Metric):
    """The (weighted) mean of the given values.

    ``update_state(values, sample_weight=None)``: values of rank > 1 are first averaged to
    one value per sample (dim 0); the mean is ``sum(w * v) / sum(w)``. Values ``[1, 3, 5,
    7]`` give 4; with ``sample_weight=[1, 1, 0, 0]``, 2. A 0-d value counts as one sample.
    State: ``total``, ``count``.

    Args:
        name: the metric's name (its key in the logs).
        dtype: the dtype of its state and result (default: nnkit's default float dtype).

    Example:
        >>> m = Mean(); m.update_state([1, 3, 5, 7]); float(m.result())
        4.0
    """

    def __init__(self, name: str = "mean", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.add_variable((), name="total")
        self.add_variable((), name="count")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        values = to_tensor(values, self.dtype)
        if values.numel() == 0:  # an empty batch (e.g. a rank's empty share) adds nothing
            return
        self._update_values(values, sample_weight)

    def _update_values(self, values: Tensor, sample_weight: Any) -> None:
        values, sample_weight = reduce_to_samplewise_values(self, values, sample_weight, _mean)
        self._assign_add("total", values.sum())
        if sample_weight is not None:
            self._assign_add("count", sample_weight.sum())
        else:
            n = values.shape[0] if values.ndim >= 1 else 1
            self._assign_add("count", tensor(float(n), dtype=self.dtype, device=values.device))

    def result(self) -> Tensor:
        return divide_no_nan(self.total, self.count)


class MeanMetricWrapper(Mean):
    """A :class:`Mean` of a per-sample function ``fn(y_true, y_pred, **kwargs)``.

    ``update_state(y_true, y_pred, sample_weight=None)`` evaluates ``fn`` (a Tensor of
    per-sample values, computed with Tensor ops) and averages it as :class:`Mean` does.
    ``fn`` may return ``(values, mask)``; masked-out entries then get weight 0.

    Args:
        fn: the per-sample metric function.
        name: the metric's name; dtype: its dtype.
        **kwargs: keyword arguments passed on to ``fn``.
    """

    def __init__(
        self, fn: Callable[..., Any], name: str | None = None, dtype: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(name=name or to_snake_case(getattr(fn, "__name__", "mean")), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def _inputs(self, y_true: Any, y_pred: Any) -> tuple[Tensor, Tensor]:
        y_pred = to_tensor(y_pred)
        y_true = to_tensor(y_true, device=y_pred.device)
        if y_pred.is_floating_point() and y_pred.dtype != self.dtype:
            y_pred = y_pred.to(self.dtype)
        return y_true, y_pred

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_true, y_pred = self._inputs(y_true, y_pred)
        if y_pred.numel() == 0:  # an empty batch (e.g. a rank's empty share) adds nothing
            return
        out = self._fn(y_true, y_pred, **self._fn_kwargs)
        mask = None
        if isinstance(out, tuple):
            out, mask = out
        if mask is not None:
            mask = mask.to(self.dtype)
            if sample_weight is None:
                sample_weight = mask
            else:
                sw = to_tensor(sample_weight, self.dtype, mask.device)
                mask, sw = squeeze_or_expand_to_same_rank(mask, sw)
                sample_weight = sw * mask
        self._update_values(out, sample_weight)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        if type(self) is MeanMetricWrapper:
            config = {**config, "fn": self._fn, **self._fn_kwargs}
        return config
