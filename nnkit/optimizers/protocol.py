"""The PyTorch-style side of the Keras-style optimizers: one parameter group, ``step()``,
``zero_grad()``, ``state_dict()``/``load_state_dict()``.

nnkit's training loop, its learning-rate schedulers (:mod:`nnkit.optim.lr_scheduler`),
``ReduceLROnPlateau``/``LearningRateScheduler`` and checkpoints (:mod:`nnkit.io`) speak
:class:`nnkit.optim.Optimizer`'s protocol. :class:`TorchProtocol` is that class's subclass
for the optimizers of :mod:`nnkit.optimizers`:

- ``param_groups`` is always one group, ``{'params': <the built variables>, 'lr': ...}``.
  For a float learning rate, ``param_groups[0]['lr']`` *is* the learning rate: writing it
  (a scheduler does) changes ``optimizer.learning_rate`` and the next update, and setting
  ``optimizer.learning_rate`` writes it. For a schedule, it shows the schedule's current
  value and must not be written (a ``TypeError`` at the next update says so).
- ``step()`` applies each bound parameter's ``.grad`` (parameters without one are skipped,
  as PyTorch does; with no gradient at all it does nothing and ``iterations`` stays).
- ``state_dict()`` is a nested dict of numbers, strings and Tensors that
  :func:`nnkit.io.save_checkpoint` stores and ``load_state_dict`` restores exactly::

      {'optimizer': class name, 'name': str, 'built': bool,
       'iterations': int (Keras's raw call counter ``_iterations``),
       'learning_rate': float, or None for a schedule,
       'param_group': {other keys of param_groups[0], e.g. a scheduler's 'initial_lr'},
       'variables': {state name: [one Tensor per variable, in build order]}}
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from nnkit.autograd.grad_mode import enable_grad, no_grad
from nnkit.backends.recording import opaque
from nnkit.optim.optimizer import Optimizer, _plain, _snapshot, _to_param_tensor

__all__ = ["TorchProtocol", "call_schedule", "schedule_takes_step"]


def schedule_takes_step(schedule: Callable) -> bool:
    """Whether a learning-rate callable takes the iteration count (Keras's
    ``LearningRateSchedule`` protocol) rather than no argument (Keras's plain callable).

    Args:
        schedule: the learning-rate callable.

    Returns:
        True if it takes a positional argument (or its signature is unknown).
    """
    try:
        signature = inspect.signature(schedule)
    except (TypeError, ValueError):
        return True
    positional = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
    )
    return any(p.kind in positional for p in signature.parameters.values())


def call_schedule(schedule: Callable, takes_step: bool, step: int) -> float:
    """The learning rate a schedule gives at ``step`` (a number, 0-d Tensor or array).

    Args:
        schedule: the learning-rate callable.
        takes_step: what :func:`schedule_takes_step` said of it.
        step: the iteration count.

    Returns:
        The learning rate, a float.
    """
    value = schedule(step) if takes_step else schedule()
    return float(value.item() if hasattr(value, "item") else value)


class TorchProtocol(Optimizer):
    """:class:`nnkit.optim.Optimizer`'s protocol for a Keras-style optimizer (a mixin base
    of :class:`nnkit.optimizers.Optimizer`; not made directly)."""

    # Set by nnkit.optimizers.Optimizer.
    built: bool
    name: str
    _iterations: int
    _trainable_variables: list
    _slots: dict

    def _init_protocol(self, learning_rate: Any) -> None:
        self.state: dict[Any, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = [{"params": [], "lr": 0.0}]
        self._schedule: Callable | None = None
        self._schedule_takes_step = False
        self._lr_shown: float | None = None
        self._set_learning_rate(learning_rate)
        self.defaults = {"lr": self.param_groups[0]["lr"]}

    # ---------------------------------------------------------- learning rate
    def _set_learning_rate(self, learning_rate: Any) -> None:
        if callable(learning_rate):
            self._schedule = learning_rate
            self._schedule_takes_step = schedule_takes_step(learning_rate)
            self._sync_lr()
            return
        if self._schedule is not None:
            raise TypeError(
                "This optimizer was created with a learning-rate schedule as its "
                "`learning_rate` constructor argument, hence its learning rate is not "
                "settable. If you need the learning rate to be settable, you should "
                "instantiate the optimizer with a float `learning_rate` argument."
            )
        if (
            isinstance(learning_rate, bool)
            or not isinstance(learning_rate, (int, float))
            and not hasattr(learning_rate, "__float__")
        ):
            raise TypeError(f"learning_rate must be a float or a callable; got {learning_rate!r}")
        self.param_groups[0]["lr"] = float(learning_rate)

    def _sync_lr(self) -> None:
        """Show a schedule's value at the current call count in ``param_groups[0]``."""
        if self._schedule is not None:
            self._lr_shown = call_schedule(
                self._schedule, self._schedule_takes_step, self._iterations
            )
            self.param_groups[0]["lr"] = self._lr_shown

    def _current_learning_rate(self) -> float:
        group = self.param_groups[0]
        if self._schedule is None:
            return float(group["lr"])
        if group["lr"] != self._lr_shown:
            raise TypeError(
                f"param_groups[0]['lr'] was set to {group['lr']!r}, but the learning rate of "
                f"{type(self).__name__} '{self.name}' is a schedule, which is not settable "
                "(a scheduler or callback cannot change it); give the optimizer a float "
                "learning_rate to let them."
            )
        return call_schedule(self._schedule, self._schedule_takes_step, self._iterations)

    def _after_apply(self) -> None:
        self._sync_lr()

    def _bind_params(self, variables: list) -> None:
        self.param_groups[0]["params"] = list(variables)
        self.state = {
            v: {name: slots[i] for name, slots in self._slots.items()}
            for i, v in enumerate(variables)
        }

    # ---------------------------------------------------------- torch protocol
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Not supported: a Keras-style optimizer is built once, on one list of variables.

        Args:
            param_group: ignored.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError(
            f"{type(self).__name__} (nnkit.optimizers) has a single parameter group, bound by "
            "build(variables); use nnkit.optim for several parameter groups"
        )

    @opaque  # nnkit.compile replays it live: the learning rate and iterations are read then
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Apply the ``.grad`` of every bound parameter that has one (one :meth:`apply`).

        Args:
            closure: optional callable that re-evaluates the model and returns the loss;
                it runs with grad enabled before the update.

        Returns:
            The closure's return value, or None.

        Raises:
            ValueError: if the optimizer is not built.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        if not self.built:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' is not built: call "
                "optimizer.build(list(model.parameters())) before step(), or use "
                "apply_gradients(zip(grads, variables)), which builds it"
            )
        pairs = [(p.grad, p) for p in self._trainable_variables if p.grad is not None]
        if pairs:
            self._apply_filtered([g for g, _ in pairs], [p for _, p in pairs])
        return loss

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state (see the module docstring for the layout): enough for
        :meth:`load_state_dict` to continue bit for bit. Tensors are detached clones."""
        group = self.param_groups[0]
        return {
            "optimizer": type(self).__name__,
            "name": self.name,
            "built": self.built,
            "iterations": self._iterations,
            "learning_rate": None if self._schedule is not None else float(group["lr"]),
            "param_group": {k: _snapshot(v) for k, v in group.items() if k not in ("params", "lr")},
            "variables": {
                name: [slot.detach().clone() for slot in slots]
                for name, slots in self._slots.items()
            },
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s state (possibly read back from a checkpoint, with
        NumPy arrays and scalars). Nothing changes if it does not fit.

        Raises:
            ValueError: if it comes from another optimizer class, one is built and the
                other not, or its state names, counts or shapes differ from this
                optimizer's (e.g. ``amsgrad`` or ``momentum`` set differently).
        """
        cls = type(self).__name__
        saved_name = _plain(state_dict.get("optimizer", cls))
        if saved_name != cls:
            raise ValueError(
                f"loaded state dict is for optimizer {saved_name}, but this optimizer is {cls}"
            )
        if "iterations" not in state_dict:
            raise ValueError(
                f"loaded state dict has no 'iterations': it is not the state of a "
                f"nnkit.optimizers.{cls}"
            )
        built = bool(_plain(state_dict.get("built", True)))
        if built != self.built:
            raise ValueError(
                f"loaded state dict is of a{'' if built else 'n un'} built {cls}, but this one "
                f"is {'' if self.built else 'not '}built"
                + ("; call optimizer.build(list(model.parameters())) first" if built else "")
            )
        saved = dict(state_dict.get("variables") or {})
        missing, unexpected = set(self._slots) - set(saved), set(saved) - set(self._slots)
        if missing or unexpected:
            raise ValueError(
                f"state of {cls} does not match: missing {sorted(missing)}, "
                f"unexpected {sorted(unexpected)}"
            )
        restored = {}
        for name, slots in self._slots.items():
            values = list(saved[name])
            if len(values) != len(slots):
                raise ValueError(
                    f"state '{name}' has {len(values)} entries in the loaded "
                    f"state dict, but the optimizer has {len(slots)} variables"
                )
            restored[name] = [_to_param_tensor(value, slot) for value, slot in zip(values, slots)]
            for i, (new, slot) in enumerate(zip(restored[name], slots)):
                if tuple(new.shape) != tuple(slot.shape):
                    raise ValueError(
                        f"state '{name}' of variable {i} has shape "
                        f"{tuple(new.shape)}, but the variable has shape "
                        f"{tuple(slot.shape)}"
                    )
        with no_grad():
            for name, slots in self._slots.items():
                for new, slot in zip(restored[name], slots):
                    slot.copy_(new)
        self._iterations = int(_plain(state_dict["iterations"]))
        group = self.param_groups[0]
        for key, value in dict(state_dict.get("param_group") or {}).items():
            if key not in ("params", "lr"):
                group[key] = _plain(value, like=group.get(key))
        lr = _plain(state_dict.get("learning_rate"))
        if lr is not None and self._schedule is None:
            group["lr"] = float(lr)
        self._sync_lr()
