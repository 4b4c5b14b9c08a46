"""The optimizer base class: parameter groups, the update loop and checkpoint state.

The split follows Chainer's ``UpdateRule`` and MLX's ``init_single``/``apply_single``:
:class:`Optimizer` owns everything that is the same for every algorithm (groups,
validation, iterating parameters under ``no_grad``, step counting, ``state_dict``), and a
subclass writes only :meth:`Optimizer._init_state` and :meth:`Optimizer._update`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from nnkit.autograd.factories import tensor
from nnkit.autograd.grad_mode import enable_grad, no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.backends.recording import opaque

__all__ = ["Optimizer", "ParamsT"]

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]]

# Hyper-parameters that must be >= 0, with the wording PyTorch uses in its errors.
_NON_NEGATIVE = {
    "lr": "learning rate",
    "eps": "epsilon value",
    "weight_decay": "weight_decay value",
    "momentum": "momentum value",
    "alpha": "alpha value",
    "lr_decay": "lr_decay value",
    "initial_accumulator_value": "initial_accumulator_value value",
}


class ParamsTypeError(TypeError, ValueError):
    """Raised when ``params`` is not an ordered collection of Tensors or dicts.

    It is both a ``TypeError`` (what PyTorch raises) and a ``ValueError`` (what the rest of
    nnkit raises for bad optimizer input), like NumPy's ``AxisError``.
    """


class Optimizer:
    """Base class of all optimizers.

    Parameters are kept in ``param_groups``, a list of dicts that each hold ``'params'``
    (a list of Tensors) and that group's hyper-parameters; keys missing from a group are
    filled from ``defaults``. Per-parameter state (step count, moment buffers) lives in
    ``state``, a dict keyed by the parameter object itself.

    :meth:`step` runs, for every parameter that has a gradient, under ``nnkit.no_grad()``::

        state = state or {'step': 0, **_init_state(p, group)}
        state['step'] += 1
        g = -p.grad if maximize else p.grad
        g = g + weight_decay * p          (unless the algorithm decouples weight decay)
        _update(p, g, state, group)       (in place on p's storage)

    Args:
        params: an iterable of Tensors, or of dicts defining parameter groups (each with a
            ``'params'`` key and optional per-group hyper-parameters).
        defaults: the default hyper-parameters of every group.

    Raises:
        ValueError: for an empty parameter list, a parameter given twice, a parameter that
            does not require grad or is not a leaf, or an invalid hyper-parameter.
        TypeError: for ``params`` given as a set or a single Tensor (the error is also a
            ValueError).

    Example:
        >>> model = nn.Linear(4, 2)
        >>> x, y = nnkit.randn(8, 4), nnkit.randn(8, 2)
        >>> opt = nnkit.optim.SGD(model.parameters(), lr=0.1)
        >>> opt.zero_grad()
        >>> F.mse_loss(model(x), y).backward()
        >>> opt.step()
        >>> opt.param_groups[0]["lr"], len(opt.param_groups[0]["params"])
        (0.1, 2)
    """

    # Set by optimizers (AdamW) that apply weight decay to the parameter, not the gradient.
    _decoupled_weight_decay = False
    # Every per-parameter state entry a subclass may keep besides 'step'.
    _state_names: tuple[str, ...] = ()

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self._validate(defaults)
        self.defaults = dict(defaults)
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, (set, frozenset)) or _is_tensor(params):
            raise ParamsTypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a parameter group, e.g. a layer unfrozen during fine-tuning.

        Args:
            param_group: a dict with ``'params'`` (a Tensor or an ordered iterable of
                Tensors) and optional hyper-parameters overriding ``defaults``.

        Raises:
            ValueError: if the group has no ``'params'``, repeats a parameter, shares one
                with another group, holds a parameter that does not require grad, or sets
                an invalid hyper-parameter.
            TypeError: if ``'params'`` is a set or holds something that is not a Tensor.
        """
        if not isinstance(param_group, dict):
            raise ParamsTypeError(
                f"param_group must be a dict, but got {type(param_group).__name__}"
            )
        if "params" not in param_group:
            raise ValueError("param_group must have a 'params' key")
        params = param_group["params"]
        if isinstance(params, (set, frozenset)):
            raise ParamsTypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got set"
            )
        params = [params] if _is_tensor(params) else list(params)
        for p in params:
            _check_param(p)
        self._check_unique(params)
        group = {**self.defaults, **param_group, "params": params}
        self._validate(group)
        self.param_groups.append(group)

    def _check_unique(self, params: list[Tensor]) -> None:
        seen: dict[Tensor, None] = {}
        for p in params:
            if p in seen:
                raise ValueError(
                    f"a parameter of shape {tuple(p.shape)} appears more than once in the "
                    "parameter group"
                )
            seen[p] = None
        for group in self.param_groups:
            if any(q in seen for q in group["params"]):
                raise ValueError("some parameters appear in more than one parameter group")

    def _validate(self, group: dict[str, Any]) -> None:
        """Checks a group's hyper-parameters; subclasses extend it with their own rules."""
        for key, label in _NON_NEGATIVE.items():
            if key in group and not 0.0 <= group[key]:
                raise ValueError(f"Invalid {label}: {group[key]}")
        for i, beta in enumerate(group.get("betas", ())):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of all optimized parameters.

        Args:
            set_to_none: set ``p.grad = None`` (the default, which frees memory and lets
                :meth:`step` skip the parameter) instead of filling the gradient with zeros.
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                with no_grad():
                    grad = p.grad.detach() if p.grad.grad_fn is not None else p.grad
                    grad.zero_()
                p.grad = grad

    @opaque  # nnkit.compile replays it live: the learning rate and step counts are read then
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one optimization step on every parameter that has a gradient.

        Args:
            closure: optional callable that re-evaluates the model and returns the loss; it
                runs with grad enabled before the update.

        Returns:
            The closure's return value, or None.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if params:
                    states = [self._param_state(p, group) for p in params]
                    self._foreach(params, states, group)
        return loss

    def _param_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        """``p``'s state (its buffers allocated on first use), its step count advanced."""
        state = self.state.get(p)
        if state is None:
            state = self.state[p] = {"step": 0, **self._init_state(p, group)}
        state["step"] += 1
        return state

    def _foreach(
        self, params: list[Tensor], states: list[dict[str, Any]], group: dict[str, Any]
    ) -> None:
        """Updates every parameter of ``group`` that has a gradient, and its state, in
        place; runs under ``no_grad``. The built-in optimizers override it with one
        kernel call per group (:mod:`nnkit.backends.optim_kernels`); this default calls
        :meth:`_update` per parameter with the (negated, weight-decayed) gradient."""
        for p, state in zip(params, states):
            grad = -p.grad if group.get("maximize", False) else p.grad
            if group.get("weight_decay", 0) and not self._decoupled_weight_decay:
                grad = grad + p * group["weight_decay"]
            self._update(p, grad, state, group)

    def _init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        """Returns the initial state buffers of ``p`` (the base class adds ``'step'``)."""
        return {}

    def _update(
        self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]
    ) -> None:
        """Updates ``p`` and its ``state`` in place from ``grad`` (see :meth:`_foreach`)."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """Returns the optimizer state in PyTorch's layout, plus the optimizer class name.

        Returns:
            ``{'optimizer': class name, 'state': {index: {'step': int, buffer: Tensor}},
            'param_groups': [{hyper-parameters..., 'params': [index, ...]}]}``, where the
            index counts parameters across groups in order and buffers are detached clones.
        """
        index: dict[Tensor, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(p, len(index)) for p in group["params"]]
            groups.append(packed)
        state = {
            i: {k: _snapshot(v) for k, v in self.state[p].items()}
            for p, i in index.items()
            if p in self.state
        }
        return {"optimizer": type(self).__name__, "state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores state saved by :meth:`state_dict`, so that a run continues bit-for-bit.

        Buffers may be Tensors or NumPy arrays; they are copied to each parameter's dtype
        and device. Group hyper-parameters are taken from ``state_dict``; the parameters
        are this optimizer's own, matched to the saved ones by position.

        Args:
            state_dict: a dict returned by :meth:`state_dict` (possibly round-tripped
                through a checkpoint file).

        Raises:
            ValueError: if the state dict comes from another optimizer class, or its group
                count, parameter counts, state entries or buffer shapes do not match.
        """
        saved_name = _plain(state_dict.get("optimizer", type(self).__name__))
        if saved_name != type(self).__name__:
            raise ValueError(
                f"loaded state dict is for optimizer {saved_name}, "
                f"but this optimizer is {type(self).__name__}"
            )
        groups = self._load_groups(state_dict["param_groups"])
        params = {
            i: p
            for group, saved in zip(self.param_groups, state_dict["param_groups"])
            for i, p in zip((int(_plain(i)) for i in saved["params"]), group["params"])
        }
        group_of = {p: g for g in groups for p in g["params"]}
        state = {}
        for key, saved in state_dict["state"].items():
            i = int(_plain(key))
            if i not in params:
                raise ValueError(
                    f"loaded state dict has state for parameter {i}, "
                    "which is in none of its parameter groups"
                )
            state[params[i]] = self._load_param_state(i, params[i], saved, group_of[params[i]])
        self.param_groups = groups
        self.state = state

    def _load_groups(self, saved_groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has {len(saved_groups)} parameter groups, "
                f"but the optimizer has {len(self.param_groups)}"
            )
        groups = []
        for n, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"parameter group {n} has {len(saved['params'])} parameters in the loaded "
                    f"state dict, but {len(group['params'])} in the optimizer"
                )
            new = {k: _plain(v, like=group.get(k)) for k, v in saved.items() if k != "params"}
            new["params"] = group["params"]
            self._validate(new)
            groups.append(new)
        return groups

    def _load_param_state(
        self, i: int, p: Tensor, saved: dict[str, Any], group: dict[str, Any]
    ) -> dict[str, Any]:
        with no_grad():
            required = {"step", *self._init_state(p, group)}
        unexpected = set(saved) - {"step", *self._state_names}
        missing = required - set(saved)
        if unexpected or missing:
            raise ValueError(
                f"state of parameter {i} does not match {type(self).__name__}: "
                f"missing {sorted(missing)}, unexpected {sorted(unexpected)}"
            )
        state = {"step": int(_plain(saved["step"]))}
        for name in sorted(set(saved) - {"step"}):
            state[name] = _to_param_tensor(saved[name], p)
            if tuple(state[name].shape) != tuple(p.shape):
                raise ValueError(
                    f"state '{name}' of parameter {i} has shape {tuple(state[name].shape)}, "
                    f"but the parameter has shape {tuple(p.shape)}"
                )
        return state


def mats(tensors: list[Any]) -> list[Any]:
    """The Mats (array handles) of ``tensors``, None kept: the operands of a kernel."""
    return [None if t is None else t._impl.data for t in tensors]


def _is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


def _check_param(p: Any) -> None:
    if not _is_tensor(p):
        raise ParamsTypeError(
            f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}"
        )
    if not p.requires_grad:
        raise ValueError(
            f"optimizer got a parameter of shape {tuple(p.shape)} that does not "
            "require grad; pass only trainable parameters"
        )
    if not p.is_leaf:
        raise ValueError("can't optimize a non-leaf Tensor")


def _snapshot(value: Any) -> Any:
    return value.detach().clone() if _is_tensor(value) else value


def _plain(value: Any, like: Any = None) -> Any:
    """Turns NumPy scalars/arrays and bytes (as checkpoint loaders give them) into Python."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(like, tuple) and isinstance(value, list):
        value = tuple(value)
    return value


def _to_param_tensor(value: Any, p: Tensor) -> Tensor:
    if _is_tensor(value):
        return value.detach().to(p.device).to(p.dtype).clone()
    return tensor(value, dtype=p.dtype, device=p.device)
