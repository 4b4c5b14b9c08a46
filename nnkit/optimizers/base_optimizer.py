"""Keras 3's optimizer base class for nnkit Tensors, speaking PyTorch's protocol too.

:class:`Optimizer` transcribes ``keras/src/optimizers/base_optimizer.py`` (Keras 3's
``BaseOptimizer``): an optimizer is made without variables, bound to them by
:meth:`Optimizer.build` (or by the first :meth:`Optimizer.apply_gradients`), and one call
of :meth:`Optimizer.apply` does, under ``nnkit.no_grad()``::

    grads <- grads / loss_scale_factor                    if loss_scale_factor
    if gradient_accumulation_steps = N:
        if (_iterations + 1) % N == 0:                    (every N-th call)
            grads <- (grads + accumulators) / N;  update(grads);  accumulators <- 0
        else:
            accumulators <- accumulators + grads          (no update)
    else:
        update(grads)
    EMA of the variables                                  if use_ema
    _iterations <- _iterations + 1

    update(grads):
        grads <- clip(grads)                  (clipnorm, global_clipnorm or clipvalue)
        var   <- var - var * weight_decay * lr   for every var   if weight_decay is not None
        update_step(grad, var, lr)            the algorithm (SGD, Adam, ...)

where ``lr`` is the learning rate at ``_iterations`` (before the increment) and
``iterations`` is ``_iterations // N`` (``_iterations`` without accumulation): it counts
applied updates, and Adam's bias correction uses ``iterations + 1``.

For nnkit's training loop, schedulers and checkpoints, the same object is an
:class:`nnkit.optim.Optimizer`: ``zero_grad()``, ``step()`` (applies each bound
parameter's ``.grad``), ``state_dict()``/``load_state_dict()`` and one parameter group,
``param_groups[0]``, whose ``'lr'`` is the learning rate (see
:mod:`nnkit.optimizers.protocol`).
"""

from __future__ import annotations

import functools
import numbers
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from nnkit.autograd.factories import as_tensor, tensor, zeros_like
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import float32, int64
from nnkit.layers.naming import auto_name
from nnkit.optimizers.protocol import TorchProtocol
from nnkit.optimizers.transforms import GradientTransforms
from nnkit.optimizers.utils import is_real
from nnkit.saving.serialization import deserialize

__all__ = ["Optimizer"]


@functools.cache
def _update_step_owner(cls: type) -> type:
    """The class that defines ``cls``'s ``update_step`` (see
    :meth:`Optimizer._update_all`)."""
    return next(c for c in cls.__mro__ if "update_step" in vars(c))


class Optimizer(GradientTransforms, TorchProtocol):
    """Base class of the Keras-style optimizers (Keras 3's ``keras.optimizers.Optimizer``).

    A subclass sets its hyper-parameters after ``super().__init__(...)``, creates its
    per-variable state in :meth:`build_slots` with :meth:`add_optimizer_variables`, and
    writes :meth:`update_step` with nnkit Tensor ops, in place (it runs under
    ``no_grad``), as Keras's ``update_step`` does. The built-in algorithms also define
    ``_update_fused``: the same operations for every variable at once, as one in-place
    kernel (:mod:`nnkit.backends.optim_kernels`), which runs instead wherever their own
    ``update_step`` is the one in use (a subclass that overrides it runs its own).

    Args:
        learning_rate: a float, or a schedule: a callable given the iteration count
            (Keras's ``LearningRateSchedule`` protocol, ``schedule(step)``) or a callable
            with no arguments (Keras's plain callable).
        weight_decay: if set, decoupled weight decay: ``var -= var * weight_decay * lr``
            before each update.
        clipnorm: clip each gradient to this L2 norm.
        clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
        global_clipnorm: clip all gradients together to this global L2 norm.
        use_ema: keep an exponential moving average of the variables.
        ema_momentum: the EMA's momentum, in [0, 1].
        ema_overwrite_frequency: overwrite the variables with their EMA every this many
            iterations (None: only :meth:`finalize_variable_values` does).
        loss_scale_factor: the gradients are divided by it (:meth:`scale_loss`
            multiplies the loss by it).
        gradient_accumulation_steps: an int >= 2: update once every this many calls,
            on the mean of the gradients since the last update.
        name: the optimizer's name (default: the snake_case class name, made unique).

    Raises:
        ValueError: for an unknown argument, several clip options, an invalid
            learning rate, ``gradient_accumulation_steps`` or EMA argument.

    Example:
        >>> class SignSGD(Optimizer):          # var <- var - lr * sign(grad)
        ...     def update_step(self, gradient, variable, learning_rate):
        ...         variable.sub_(gradient.sign() * learning_rate)
        >>> w = nnkit.tensor([1.0, -2.0])
        >>> opt = SignSGD(learning_rate=0.1)
        >>> opt.apply_gradients([(nnkit.tensor([0.5, -3.0]), w)])
        1
        >>> w
        tensor([ 0.9000, -1.9000])
    """

    def __init__(
        self,
        learning_rate: Any,
        weight_decay: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        global_clipnorm: float | None = None,
        use_ema: bool = False,
        ema_momentum: float = 0.99,
        ema_overwrite_frequency: int | None = None,
        loss_scale_factor: float | None = None,
        gradient_accumulation_steps: int | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs.pop("decay", None) is not None:
            warnings.warn(
                "Argument `decay` is no longer supported and will be ignored.", stacklevel=2
            )
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        self.name = auto_name(type(self).__name__) if name is None else name
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.global_clipnorm = global_clipnorm
        self.clipvalue = clipvalue
        self.use_ema = use_ema
        self.loss_scale_factor = loss_scale_factor
        self.gradient_accumulation_steps = gradient_accumulation_steps
        if gradient_accumulation_steps and not (
            isinstance(gradient_accumulation_steps, numbers.Integral)
            and gradient_accumulation_steps >= 2
        ):
            raise ValueError(
                "`gradient_accumulation_steps` must be an integer >= 2. "
                f"Received: gradient_accumulation_steps="
                f"{gradient_accumulation_steps}"
            )
        if use_ema:
            if ema_momentum > 1 or ema_momentum < 0:
                raise ValueError(
                    "`ema_momentum` must be in the range [0, 1]. "
                    f"Received: ema_momentum={ema_momentum}"
                )
            if ema_overwrite_frequency and (
                not isinstance(ema_overwrite_frequency, int) or ema_overwrite_frequency < 1
            ):
                raise ValueError(
                    "`ema_overwrite_frequency` must be an integer >= 1 or None. "
                    f"Received: ema_overwrite_frequency={ema_overwrite_frequency}"
                )
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        if sum(a is not None for a in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(
                "Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be "
                f"set. Received: clipnorm={clipnorm}, clipvalue={clipvalue}, "
                f"global_clipnorm={global_clipnorm}"
            )
        self.built = False
        self._iterations = 0
        self._trainable_variables: list[Tensor] = []
        self._trainable_variables_indices: dict[Tensor, int] = {}
        self._slots: dict[str, list[Tensor]] = {}
        self._slot_groups: list[tuple[str, ...]] = []
        self._exclude_from_weight_decay: set[Tensor] = set()
        if not (callable(learning_rate) or is_real(learning_rate)):
            raise ValueError(
                "Argument `learning_rate` should be float, or a callable (that takes in the "
                "current iteration value and returns the corresponding learning rate value). "
                f"Received instead: learning_rate={learning_rate}"
            )
        self._init_protocol(learning_rate)

    # ------------------------------------------------------------- properties
    @property
    def iterations(self) -> int:
        """The number of updates applied: calls of :meth:`apply`, divided (rounding down)
        by ``gradient_accumulation_steps`` when gradients are accumulated."""
        if self.gradient_accumulation_steps:
            return self._iterations // self.gradient_accumulation_steps
        return self._iterations

    @property
    def learning_rate(self) -> float:
        """The learning rate now: the float (``param_groups[0]['lr']``), or the schedule's
        value at the current call count. Setting a float keeps ``param_groups[0]['lr']``
        in sync; setting a callable makes it the schedule.

        Raises:
            TypeError: when setting a float on an optimizer whose learning rate is a
                schedule (as Keras).
        """
        return self._current_learning_rate()

    @learning_rate.setter
    def learning_rate(self, learning_rate: Any) -> None:
        self._set_learning_rate(learning_rate)

    @property
    def variables(self) -> list[Tensor]:
        """Keras's ``optimizer.variables``: the iteration count (int64) and the learning
        rate (float32, absent for a schedule) as fresh 0-d Tensors, then the optimizer's
        state Tensors in the order Keras creates them (EMA averages, gradient
        accumulators, then the algorithm's, interleaved per variable)."""
        out = [tensor(self._iterations, dtype=int64)]
        if self._schedule is None:
            out.append(tensor(self.param_groups[0]["lr"], dtype=float32))
        return out + self._slot_tensors()

    def _slot_tensors(self) -> list[Tensor]:
        n = len(self._trainable_variables)
        return [
            self._slots[name][i] for group in self._slot_groups for i in range(n) for name in group
        ]

    # ------------------------------------------------------------------ build
    def build(self, variables: Iterable[Tensor]) -> None:
        """Bind the optimizer to ``variables`` and create its state (Keras's ``build``).

        Building again on the same list (the same Tensors, in the same order) does
        nothing.

        Args:
            variables: the Tensors to optimize (e.g. ``list(model.parameters())``):
                floating-point leaf Tensors, each once.

        Raises:
            ValueError: if already built on a different list, or a variable is not a
                floating-point leaf Tensor or appears twice.
        """
        if isinstance(variables, Tensor):
            raise TypeError("build() takes a list of Tensors, not a single Tensor")
        variables = list(variables)
        if self.built:
            if len(variables) == len(self._trainable_variables) and all(
                a is b for a, b in zip(variables, self._trainable_variables)
            ):
                return
            raise ValueError(
                f"{type(self).__name__} '{self.name}' is already built on "
                f"{len(self._trainable_variables)} variables and cannot be built again on a "
                f"different list of {len(variables)}. When working with a new set of "
                "variables, create a new optimizer."
            )
        for v in variables:
            if not isinstance(v, Tensor):
                raise TypeError(f"an optimizer can only update Tensors, got {type(v).__name__}")
            if not v.is_leaf or not v.is_floating_point():
                raise ValueError(
                    f"an optimizer can only update floating-point leaf Tensors; "
                    f"got one of shape {tuple(v.shape)} and dtype {v.dtype}"
                )
        indices: dict[Tensor, int] = {}
        for i, v in enumerate(variables):
            if v in indices:
                raise ValueError(
                    f"a variable of shape {tuple(v.shape)} appears more than once "
                    "in the list given to build()"
                )
            indices[v] = i
        self._trainable_variables_indices = indices
        self._trainable_variables = variables[:]
        with no_grad():
            if self.use_ema:
                self._model_variables_moving_average = self.add_optimizer_variables(
                    variables, "average"
                )
            if self.gradient_accumulation_steps:
                self._accumulated_gradients = self.add_optimizer_variables(
                    variables, "gradient_accumulator"
                )
            self.build_slots(variables)
        self.built = True
        self._bind_params(variables)

    def build_slots(self, variables: list[Tensor]) -> None:
        """Create the algorithm's per-variable state (a subclass's part of Keras's
        ``build``), with :meth:`add_optimizer_variables`."""

    def add_optimizer_variables(
        self,
        variables: Sequence[Tensor],
        name: str | Sequence[str],
        initializer: float | Sequence[float] = 0.0,
    ) -> Any:
        """One state Tensor per variable and name, each like its variable and filled with
        the initializer (Keras's ``add_optimizer_variables``; created interleaved per
        variable, as Keras does).

        Args:
            variables: the model variables.
            name: a slot name, or several.
            initializer: the initial value, or one per name.

        Returns:
            A list of Tensors (one name), or a tuple of such lists (several names).
        """
        names = [name] if isinstance(name, str) else list(name)
        inits = (
            list(initializer)
            if isinstance(initializer, (list, tuple))
            else [initializer] * len(names)
        )
        if len(names) != len(inits):
            raise ValueError(
                "The number of provided names must match the number of provided "
                f"initializers. Received name='{name}', initializer='{initializer}'"
            )
        lists: tuple[list[Tensor], ...] = tuple([] for _ in names)
        with no_grad():
            for v in variables:
                for slots, init in zip(lists, inits):
                    slot = zeros_like(v)
                    if init != 0:
                        slot.fill_(init)
                    slots.append(slot)
        for slot_name, slots in zip(names, lists):
            if slot_name in self._slots:
                raise ValueError(f"optimizer state '{slot_name}' already exists")
            self._slots[slot_name] = slots
        self._slot_groups.append(tuple(names))
        return lists[0] if isinstance(name, str) else lists

    def _get_variable_index(self, variable: Tensor) -> int:
        return self._trainable_variables_indices[variable]

    def _check_variables_are_known(self, variables: Iterable[Tensor]) -> None:
        for v in variables:
            if v not in self._trainable_variables_indices:
                raise ValueError(
                    f"Unknown variable of shape {tuple(v.shape)}. This optimizer can only be "
                    "called for the variables it was originally built with. When working "
                    "with a new set of variables, you should recreate a new optimizer "
                    "instance."
                )

    # ------------------------------------------------------------------ apply
    def update_step(self, gradient: Tensor, variable: Tensor, learning_rate: float) -> None:
        """Update ``variable`` (and its state) in place from ``gradient``."""
        raise NotImplementedError

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Any, Tensor]]) -> int:
        """Apply ``(gradient, variable)`` pairs (Keras's ``apply_gradients``).

        Returns:
            The call count ``_iterations`` after the call (Keras returns that variable).
        """
        pairs = list(grads_and_vars)
        if pairs:
            grads, variables = zip(*pairs)
            self.apply(list(grads), list(variables))
        return self._iterations

    def apply(
        self, grads: Sequence[Any], trainable_variables: Sequence[Tensor] | None = None
    ) -> None:
        """Update the variables from ``grads`` (Keras's ``apply``).

        Args:
            grads: one gradient per variable (Tensors or arrays; None skips a variable,
                with a warning as in Keras).
            trainable_variables: the variables, in the order of ``grads`` (builds the
                optimizer on them if it is not built); None: those it was built with.

        Raises:
            ValueError: if ``grads`` does not match the variables, a variable is unknown,
                or every gradient is None.
        """
        grads = list(grads)
        if len(grads) == 0:
            return
        if trainable_variables is None:
            if not self.built:
                raise ValueError(
                    "When passing `grads` without `variables`, the optimizer must "
                    "already be built on a list of variables. Call "
                    "`optimizer.build(trainable_variables)` first."
                )
            if len(grads) != len(self._trainable_variables):
                raise ValueError(
                    "When passing `grads` as a list of gradient tensors, the gradients must "
                    f"match `optimizer.variables` one-to-one. Received a list of {len(grads)} "
                    f"gradients, but the optimizer is tracking "
                    f"{len(self._trainable_variables)} trainable variables."
                )
            variables = self._trainable_variables
        else:
            variables = list(trainable_variables)
            if len(variables) != len(grads):
                raise ValueError(f"got {len(grads)} gradients for {len(variables)} variables")
            if not self.built:
                self.build(variables)
            self._check_variables_are_known(variables)
        grads, variables = self._filter_empty_gradients(grads, variables)
        self._apply_filtered(grads, variables)

    def _filter_empty_gradients(self, grads: list, variables: list) -> tuple[list, list]:
        kept = [(g, v) for g, v in zip(grads, variables) if g is not None]
        if not kept:
            raise ValueError("No gradients provided for any variable.")
        if len(kept) < len(grads):
            missing = [self._get_variable_index(v) for g, v in zip(grads, variables) if g is None]
            warnings.warn(
                f"Gradients do not exist for variables {missing} (by position in "
                "the list the optimizer was built with) when minimizing the loss. "
                "If using `model.compile()`, did you forget to provide a `loss` "
                "argument?",
                stacklevel=3,
            )
        return [g for g, _ in kept], [v for _, v in kept]

    def _apply_filtered(self, grads: list, variables: list[Tensor]) -> None:
        """Keras's ``apply`` after its checks: no gradient is None here."""
        with no_grad():
            grads = [self._as_gradient(g, v) for g, v in zip(grads, variables)]
            if self.loss_scale_factor is not None:
                grads = [g / self.loss_scale_factor for g in grads]
            self._backend_apply_gradients(grads, variables)
        self._iterations += 1
        self._after_apply()

    @staticmethod
    def _as_gradient(grad: Any, variable: Tensor) -> Tensor:
        if isinstance(grad, Tensor):
            g, v = grad._impl.data, variable._impl.data
            if g.same_kind_as(v) and g.device == v.device:  # the usual case, checked once
                return grad.detach()
            grad = grad.detach()
            if grad.device != variable.device:
                grad = grad.to(variable.device)
            if grad.dtype != variable.dtype:
                grad = grad.to(variable.dtype)
        else:
            grad = tensor(grad, dtype=variable.dtype, device=variable.device)
        if tuple(grad.shape) != tuple(variable.shape):
            raise ValueError(
                f"a gradient of shape {tuple(grad.shape)} was given for a variable "
                f"of shape {tuple(variable.shape)}"
            )
        return grad

    def _backend_apply_gradients(self, grads: list[Tensor], variables: list[Tensor]) -> None:
        steps = self.gradient_accumulation_steps
        if steps:
            acc_grads = [
                self._accumulated_gradients[self._get_variable_index(v)] for v in variables
            ]
            if (self._iterations + 1) % steps == 0:
                grads = [(g + acc_g) / steps for g, acc_g in zip(grads, acc_grads)]
                self._update(grads, variables)
                for acc_g in self._accumulated_gradients:
                    acc_g.zero_()
            else:
                for g, acc_g in zip(grads, acc_grads):
                    acc_g.copy_(g + acc_g)
        else:
            self._update(grads, variables)
        if self.use_ema:
            self._update_model_variables_moving_average(self._trainable_variables)
            if (
                self.ema_overwrite_frequency
                and (self.iterations + 1) % self.ema_overwrite_frequency == 0
            ):
                self._overwrite_model_variables_with_average_value(self._trainable_variables)

    def _update(self, grads: list[Tensor], variables: list[Tensor]) -> None:
        """Clipping, weight decay and the algorithm's step, at the current learning rate."""
        learning_rate = self._current_learning_rate()
        grads = self._clip_gradients(grads)
        self._apply_weight_decay(variables, learning_rate)
        self._update_all(grads, variables, learning_rate)

    #: Whether the algorithm's one-kernel form (``_update_fused``) runs where it has one
    #: (tests set it False on an instance to compare it with ``update_step``).
    _fused = True

    def _update_all(self, grads: list[Tensor], variables: list[Tensor], learning_rate) -> None:
        """The algorithm's step for every variable: where the class that defines the
        :meth:`update_step` in use also defines ``_update_fused(params, grads, slot,
        learning_rate)``, that (one in-place kernel over every variable, bitwise
        ``update_step``'s values and versions, from :mod:`nnkit.backends.optim_kernels`):
        it gets the variables' and gradients' Mats and ``slot(tensors)``, the Mats of a
        per-variable state list in the variables' order; else :meth:`update_step` one by
        one, so a subclass that overrides ``update_step`` runs its own."""
        fused = vars(_update_step_owner(type(self))).get("_update_fused")
        if fused is None or not self._fused:
            for grad, var in zip(grads, variables):
                self.update_step(grad, var, learning_rate)
            return
        index = [self._get_variable_index(v) for v in variables]

        def slot(tensors: list[Tensor]) -> list:
            return [tensors[k]._impl.data for k in index]

        params = [v._impl.data for v in variables]
        fused(self, params, [g._impl.data for g in grads], slot, learning_rate)

    # --------------------------------------------------------------- weights
    def set_weights(self, weights: Sequence[Any]) -> None:
        """Assign :attr:`variables` from arrays, in that order (Keras's ``set_weights``).

        Raises:
            ValueError: if the optimizer is not built or a shape does not match.
        """
        if not self.built:
            raise ValueError(
                "You are calling `set_weights()` on an optimizer that has not yet "
                "been built. Please call `optimizer.build(trainable_variables)` "
                "to create the optimizer weights before calling `set_weights()`."
            )
        weights = list(weights)
        head = 1 if self._schedule is not None else 2
        slots = self._slot_tensors()
        for i, (slot, weight) in enumerate(zip(slots, weights[head:])):
            if tuple(getattr(weight, "shape", ())) != tuple(slot.shape):
                raise ValueError(
                    f"Optimizer variable {head + i} has shape {tuple(slot.shape)} "
                    f"not compatible with provided weight shape "
                    f"{tuple(getattr(weight, 'shape', ()))}."
                )
        if weights:
            self._iterations = int(_item(weights[0]))
        if head == 2 and len(weights) > 1:
            lr, shown = float(_item(weights[1])), self.variables[1].item()
            if lr != shown:  # keep the float64 rate when only its float32 copy came back
                self.param_groups[0]["lr"] = lr
        with no_grad():
            for slot, weight in zip(slots, weights[head:]):
                slot.copy_(as_tensor(weight, dtype=slot.dtype, device=slot.device))
        self._after_apply()

    # ---------------------------------------------------------------- config
    def get_config(self) -> dict[str, Any]:
        """The constructor arguments (Keras's ``get_config``); a schedule is given as is
        (``nnkit.saving.serialize`` describes it when it has ``get_config``)."""
        return {
            "name": self.name,
            "learning_rate": self._schedule
            if self._schedule is not None
            else self.param_groups[0]["lr"],
            "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm,
            "global_clipnorm": self.global_clipnorm,
            "clipvalue": self.clipvalue,
            "use_ema": self.use_ema,
            "ema_momentum": self.ema_momentum,
            "ema_overwrite_frequency": self.ema_overwrite_frequency,
            "loss_scale_factor": self.loss_scale_factor,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: Any = None) -> Optimizer:
        """An optimizer from :meth:`get_config`'s dict (a schedule may be given as a
        serialized dict, as Keras's ``from_config`` accepts)."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = deserialize(config["learning_rate"], custom_objects)
        return cls(**config)

    def __repr__(self) -> str:
        lr = self._schedule if self._schedule is not None else self.param_groups[0]["lr"]
        return (
            f"{type(self).__name__}(name={self.name!r}, learning_rate={lr!r}, "
            f"iterations={self.iterations}, built={self.built})"
        )


def _item(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
