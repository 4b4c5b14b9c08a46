"""``Module``: the base of every layer (``Parameter`` lives in :mod:`nnkit.layers.parameter`).

The mechanics follow PyTorch's ``torch.nn.Module``: ordered ``_parameters``,
``_buffers`` and ``_modules`` dicts filled by ``__setattr__`` routing, dotted names
(``features.0.weight``), ``state_dict``/``load_state_dict``, ``train``/``eval`` and
``to(device|dtype)``. Keras's lazy ``build(input_shape)``: a layer whose ``built`` is
False creates its weights at its first call; :mod:`nnkit.layers.weights` adds Keras's
``trainable`` flag and weight lists.
"""

from __future__ import annotations

import copy
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator

import numpy as np

from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.layers import naming
from nnkit.layers.config import Configurable
from nnkit.layers.hook_handle import HookHandle as _HookHandle
from nnkit.layers.nest import flatten
from nnkit.layers.parameter import NotBuiltError, Parameter
from nnkit.layers.placement import Placement
from nnkit.layers.weights import WEIGHT_LISTS, KerasWeights, call_in_mode

__all__ = ["Module", "Parameter", "NotBuiltError"]

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _symbolic_argument(args: tuple, kwargs: dict) -> object | None:
    """The first KerasTensor among a call's (nested) arguments, known by ``_record_call``
    (:mod:`~nnkit.layers.symbolic` imports this module, for its operator layers)."""
    return next((x for x in flatten((args, kwargs)) if hasattr(type(x), "_record_call")), None)


def _addindent(text: str, spaces: int) -> str:
    return text.replace("\n", "\n" + " " * spaces)


def _check_name(name, kind: str, owner: "Module") -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
    if not name or "." in name:
        raise KeyError(f'{kind} name can\'t be empty or contain ".", got {name!r}')
    if hasattr(type(owner), name) and not isinstance(getattr(type(owner), name), property):
        raise KeyError(f"attribute '{name}' already exists on {type(owner).__name__}")


class Module(Configurable, Placement, KerasWeights):
    """Base class of every layer and model.

    A subclass creates its parameters and sub-modules in ``__init__`` (after calling
    ``super().__init__()``) and writes ``forward``. Layers whose weight shapes depend on
    the input (Keras style) set ``self.built = False`` and create them in
    ``build(input_shape)``, which runs at the first call.

    Attributes:
        training: whether the module is in training mode (see :meth:`train`).
        built: whether the weights exist (always True for eagerly built layers).
        name: Keras's layer name: ``name=`` given to any layer, else ``dense``,
            ``dense_1``, ... (:mod:`nnkit.layers.naming`); never a state_dict key here.

    Args:
        name: Keras's layer name; None gives the snake_case class name made unique.

    Example:
        >>> class MLP(Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc1 = nnkit.nn.Linear(4, 8)
        ...         self.fc2 = nnkit.nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.fc2(self.fc1(x).relu())
        >>> [name for name, _ in MLP().named_parameters()]
        ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    built = True
    _version = 1

    def __new__(cls, *args, **kwargs):
        # Keras's layer name, given (``name=``) or snake_case class name made unique;
        # taken before __init__ so that a layer is numbered before the layers it creates.
        module = super().__new__(cls)
        name = kwargs.get("name")
        module.__dict__["name"] = (
            naming.auto_name(cls.__name__) if name is None else naming.check_name(name)
        )
        return module

    def __init__(self, name: str | None = None) -> None:
        d = self.__dict__
        if name is not None:
            d["name"] = naming.check_name(name)
        elif "name" not in d:
            d["name"] = naming.auto_name(type(self).__name__)
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        """The computation of the module; every subclass overrides it."""
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ------------------------------------------------------------- calling
    def __call__(self, *args, **kwargs):
        if not isinstance(args[0] if args else None, Tensor):
            symbolic = _symbolic_argument(args, kwargs)
            if symbolic is not None:  # functional API: record a graph node
                return symbolic._record_call(self, args, kwargs)
        if kwargs and "training" in kwargs:  # Keras's layer(x, training=...)
            return call_in_mode(self, args, kwargs)
        return self._call_impl(args, kwargs)

    def _call_impl(self, args: tuple, kwargs: dict):
        if not self.built:
            self._build_from(args[0] if args else next(iter(kwargs.values()), None))
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                result = hook(self, args, out)
                if result is not None:
                    out = result
        return out

    def build(self, input_shape: tuple) -> None:
        """Create the weights that depend on the input shape (Keras lifecycle).

        Called once, at the first call, by layers whose ``built`` is False. Weights are
        created on the CPU in the default dtype and then moved to the input's device
        (and floating dtype).

        Args:
            input_shape: the shape of the first input, batch dimension included.
        """

    def _build_from(self, x) -> None:
        if not isinstance(x, Tensor):
            raise TypeError(
                f"{self._describe()} builds its weights from its first input, "
                f"which must be a Tensor, got {type(x).__name__}"
            )
        self.build(tuple(x.shape))
        self.built = True
        self.__dict__["_build_shape"] = tuple(x.shape)
        dtype = x.dtype if x.is_floating_point() else None
        self._apply(
            lambda t: t.to(device=x.device, dtype=dtype if t.is_floating_point() else None),
            recurse=False,
        )

    def _describe(self) -> str:
        return f"{self._get_name()}({self.extra_repr()})"

    def check_built(self) -> None:
        """Raise :class:`NotBuiltError`, naming the layer, if any sub-module is unbuilt.

        Optimizers, checkpoints and ``state_dict`` call this: an unbuilt layer has no
        weights yet, so they would silently miss them.
        """
        for name, module in self.named_modules():
            if not module.built:
                where = f" (layer '{name}' of {self._get_name()})" if name else ""
                raise NotBuiltError(
                    f"{module._describe()} has not been built yet: call the "
                    f"model on a batch first (or pass input_shape=...){where}"
                )

    def register_forward_pre_hook(self, hook: Callable) -> _HookHandle:
        """Run ``hook(module, args)`` before ``forward``; it may return new args."""
        handle = _HookHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook: Callable) -> _HookHandle:
        """Run ``hook(module, args, output)`` after ``forward``; it may return a new output."""
        handle = _HookHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    # -------------------------------------------------------- registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under ``name``.

        Raises:
            TypeError: if ``param`` is neither a Parameter nor None.
            KeyError: for an empty or dotted name, or one that is already an attribute.
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(name, "parameter", self)
        if name in self.__dict__ or name in self._buffers or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter "
                f"'{name}' (nnkit.nn.Parameter or None required)"
            )
        if param is not None and not self.__dict__.get("_trainable", True):
            param.requires_grad_(False)  # a frozen layer built later (see layers.weights)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (e.g. BatchNorm's running mean).

        Args:
            name: the attribute name.
            tensor: the buffer (or None).
            persistent: whether it is part of ``state_dict``.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(name, "buffer", self)
        if name in self.__dict__ or name in self._parameters or name in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer "
                f"'{name}' (Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under ``name`` (reachable as an attribute)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        _check_name(name, "module", self)
        if name in self.__dict__ and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, self._buffers, self._modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter "
                    f"'{name}' (nnkit.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, params, self._buffers)
            self._modules[name] = value
        elif "_modules" in d and name in self._modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module "
                    f"'{name}' (nnkit.nn.Module or None expected)"
                )
            self._modules[name] = None
        elif "_buffers" in d and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(Tensor or None expected)"
                )
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *dicts) -> None:
        for d in dicts:
            if name in d:
                del d[name]

    def __getattr__(self, name: str):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            store = d.get(key)
            if store is not None and name in store:
                return store[name]
        if name in ("input", "output") and d.get("_inbound_nodes"):  # Keras's layer.output
            found = getattr(d["_inbound_nodes"][0], f"{name}_tensors")
            return found[0] if len(found) == 1 else found
        if name in WEIGHT_LISTS and "_parameters" in d:  # Keras's (see layers.weights)
            return self._weights_of_kind(name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._buffers)
        return sorted(set(keys + list(self._modules)))

    # ------------------------------------------------------------ traversal
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, "Module"]]:
        """Yield ``(dotted_name, module)`` for this module and every descendant, once each."""
        memo = set() if memo is None else memo
        stack = [(prefix, self)]
        while stack:  # iterative pre-order: deep models never hit the recursion limit
            name, module = stack.pop()
            if remove_duplicate:
                if module in memo:
                    continue
                memo.add(module)
            yield name, module
            children = [
                (f"{name}.{k}" if name else k, m)
                for k, m in module._modules.items()
                if m is not None
            ]
            stack.extend(reversed(children))

    def modules(self) -> Iterator["Module"]:
        """Yield this module and every descendant."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """Yield ``(name, module)`` for the direct children."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator["Module"]:
        """Yield the direct children."""
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        seen = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for mod_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and value in seen):
                    continue
                seen.add(value)
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Yield ``(dotted_name, parameter)``; a parameter shared by two layers comes once.

        Raises:
            NotBuiltError: if a lazily built layer has not been called yet.
        """
        self.check_built()
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """An iterator over the parameters (for an optimizer), each once.

        Raises:
            NotBuiltError: if a lazily built layer has not been called yet.
        """
        return (param for _, param in self.named_parameters(recurse=recurse))

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """Yield ``(dotted_name, buffer)``."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Yield the buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target: str) -> "Module":
        """The descendant at dotted path ``target`` (``''`` is self)."""
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules:
                raise AttributeError(
                    f"{module._get_name()} has no submodule '{part}' (looking up '{target}')"
                )
            module = module._modules[part]
        return module

    # ----------------------------------------------------------- state dict
    def state_dict(
        self, *, prefix: str = "", keep_vars: bool = False
    ) -> "OrderedDict[str, Tensor]":
        """An ordered dict of every parameter and persistent buffer, by dotted name.

        Args:
            prefix: prepended to every key.
            keep_vars: return the Parameters themselves instead of detached tensors.

        Returns:
            ``OrderedDict`` mapping names such as ``'features.0.weight'`` to Tensors that
            share memory with the module's (detached unless ``keep_vars``).

        Raises:
            NotBuiltError: if a lazily built layer has not been called yet.
        """
        self.check_built()
        out = OrderedDict()
        for mod_prefix, module in self.named_modules(prefix=prefix, remove_duplicate=False):
            dot = f"{mod_prefix}." if mod_prefix else ""
            for name, p in module._parameters.items():
                if p is not None:
                    out[dot + name] = p if keep_vars else p.detach()
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent_buffers:
                    out[dot + name] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into this module's parameters and buffers.

        Values may be Tensors or NumPy arrays; they are copied in place (under
        ``no_grad``), so Parameter identity is kept and optimizers keep working.

        Args:
            state_dict: a mapping from dotted names to values.
            strict: require the keys to match exactly.

        Returns:
            ``IncompatibleKeys(missing_keys, unexpected_keys)``.

        Raises:
            RuntimeError: listing, in one message, every missing and unexpected key (when
                ``strict``) and every shape mismatch (always).
            NotBuiltError: if a lazily built layer has not been called yet.
        """
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched, pending = [], []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, (Tensor, np.ndarray, np.generic)):
                mismatched.append(
                    f'expected a Tensor or NumPy array for "{key}", got {type(value).__name__}'
                )
            elif tuple(value.shape) != tuple(target.shape):
                mismatched.append(
                    f"size mismatch for {key}: copying a param with shape "
                    f"{tuple(value.shape)} from checkpoint, the shape in current "
                    f"model is {tuple(target.shape)}"
                )
            else:
                pending.append((target, value))
        errors = list(mismatched)
        if strict and missing:
            errors.insert(
                0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + "."
            )
        if strict and unexpected:
            errors.insert(
                1 if strict and missing else 0,
                "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".",
            )
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors)
            )
        with no_grad():
            for target, value in pending:
                target.copy_(value)
        return IncompatibleKeys(missing, unexpected)

    # ---------------------------------------------------------------- modes
    def train(self, mode: bool = True) -> "Module":
        """Set training mode (dropout active, batch norm uses batch statistics)."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for module in self.modules():
            module.__dict__["training"] = mode
        return self

    def eval(self) -> "Module":
        """Set evaluation mode; same as ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set ``requires_grad`` on every parameter (e.g. to freeze a layer)."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to None, or to zeros in place)."""
        for _, p in self._named_members("_parameters", "", True):
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_()
                with no_grad():
                    p.grad.zero_()

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every descendant (children first), then on self; returns self.

        Example:
            >>> def init_weights(m):
            ...     if isinstance(m, nnkit.nn.Linear):
            ...         nnkit.nn.init.xavier_uniform_(m.weight)
            ...         nnkit.nn.init.zeros_(m.bias)
            >>> model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
            >>> model.apply(init_weights) is model
            True
            >>> model[2].bias.tolist()
            [0.0, 0.0]
        """
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def __deepcopy__(self, memo: dict) -> "Module":
        """``copy.deepcopy(module)``: fresh copies of every parameter and buffer.

        Parameters shared inside the module stay shared in the copy; gradients and
        hooks are not copied.
        """
        new = object.__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            if key == "_buffers":
                value = OrderedDict(
                    (k, None if b is None else memo.setdefault(id(b), b.detach().clone()))
                    for k, b in value.items()
                )
            elif key in ("_forward_pre_hooks", "_forward_hooks"):
                value = OrderedDict()
            else:
                value = copy.deepcopy(value, memo)
            new.__dict__[key] = value
        return new

    # ----------------------------------------------------------------- repr
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (override in layers)."""
        return ""

    def __repr__(self) -> str:
        lines = [line for line in [self.extra_repr()] if line]
        lines = lines[0].split("\n") if lines else []
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        if not self._modules and len(lines) <= 1:
            return f"{self._get_name()}({lines[0] if lines else ''})"
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"
