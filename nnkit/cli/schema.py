"""The config schema as tables: every section's allowed keys, types and defaults.

Validation (:mod:`nnkit.cli.config`) walks these tables; adding an option is one row.
Sections whose extra keys are keyword arguments of a class (layers, ``optimizer``,
``scheduler``, ``callbacks``) list only their fixed keys here; the arguments are checked
against the class's signature when it is resolved (:mod:`nnkit.cli.build`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REQUIRED",
    "Field",
    "TOP",
    "DATA_COMMON",
    "DATASETS",
    "MODEL",
    "TRAIN",
    "DISTRIBUTED",
    "OUTPUT",
    "CLASSIFICATION_LOSSES",
]

REQUIRED: Any = object()
"""The default of a key that the config must give."""


def _positive(value: Any) -> str | None:
    return None if value > 0 else "must be > 0"


def _non_negative(value: Any) -> str | None:
    return None if value >= 0 else "must be >= 0"


def _fraction(value: Any) -> str | None:
    return None if 0 <= value < 1 else "must be in [0, 1)"


def _verbosity(value: Any) -> str | None:
    return None if value in (0, 1, 2) else "must be 0 (silent), 1 (progress bar) or 2 (a line)"


def _jit_choice(value: Any) -> str | None:
    return None if value in (True, False, "auto") else "must be true, false or auto"


def _file_name(value: Any) -> str | None:
    return None if value and "/" not in value and "\\" not in value else "must be a file name"


@dataclass(frozen=True)
class Field:
    """One key of a section.

    Attributes:
        kinds: the YAML types allowed: ``'int'``, ``'float'`` (an int is accepted),
            ``'bool'``, ``'str'``, ``'list'``, ``'dict'``, ``'null'``.
        default: the value when the key is absent; :data:`REQUIRED` if it must be given.
        check: ``value -> error text or None``, run after the type check.
    """

    kinds: tuple[str, ...]
    default: Any = REQUIRED
    check: Callable[[Any], str | None] | None = None


TOP: dict[str, Field] = {
    "seed": Field(("int",), 0),
    "device": Field(("str",), "cpu"),
    "data": Field(("dict",)),
    "model": Field(("dict",)),
    "optimizer": Field(("dict", "str"), "adam"),
    "scheduler": Field(("dict", "str", "null"), None),
    "loss": Field(("str",), "cross_entropy"),
    "metrics": Field(("list", "null"), None),
    "train": Field(("dict",), None),
    "callbacks": Field(("list", "null"), None),
    "output": Field(("dict",), None),
    "distributed": Field(("dict",), None),
}

DATA_COMMON: dict[str, Field] = {
    "name": Field(("str",)),
    "batch_size": Field(("int",), 32, _positive),
    "shuffle": Field(("bool",), True),
    "validation_split": Field(("float",), 0.0, _fraction),
    "test_size": Field(("float",), 0.2, _fraction),
}

# Per dataset: the options besides DATA_COMMON (``test_size`` is unused by the file
# datasets when ``test_path``/``test_images`` is given).
DATASETS: dict[str, dict[str, Field]] = {
    "digits": {"scale": Field(("bool",), True), "flatten": Field(("bool",), True)},
    "moons": {
        "n_samples": Field(("int",), 500, _positive),
        "noise": Field(("float",), 0.1, _non_negative),
    },
    "spirals": {
        "n_samples": Field(("int",), 300, _positive),
        "n_classes": Field(("int",), 3, _positive),
        "noise": Field(("float",), 0.2, _non_negative),
    },
    "csv": {
        "path": Field(("str",)),
        "test_path": Field(("str", "null"), None),
        "target": Field(("int", "str"), -1),
        "header": Field(("bool", "str"), "infer"),
        "delimiter": Field(("str",), ","),
    },
    "npz": {
        "path": Field(("str",)),
        "test_path": Field(("str", "null"), None),
        "x_key": Field(("str",), "x"),
        "y_key": Field(("str",), "y"),
    },
    "idx": {
        "images": Field(("str",)),
        "labels": Field(("str",)),
        "test_images": Field(("str", "null"), None),
        "test_labels": Field(("str", "null"), None),
        "scale": Field(("bool",), True),
        "flatten": Field(("bool",), True),
    },
}

MODEL: dict[str, Field] = {
    "layers": Field(("list",)),
    "input_shape": Field(("list", "null"), None),
}

TRAIN: dict[str, Field] = {
    "epochs": Field(("int",), 10, _positive),
    "verbose": Field(("int",), 2, _verbosity),
    # stop with exit 1 at the first NaN/inf loss (no checkpoint of non-finite weights)
    "stop_on_nonfinite": Field(("bool",), True),
    # Model.compile's jit_compile: auto compiles the training step where safe and
    # worthwhile (the results are the same bit for bit either way)
    "jit_compile": Field(("bool", "str"), "auto", _jit_choice),
}

DISTRIBUTED: dict[str, Field] = {
    # under mpiexec: BatchNorm layers use the statistics of the whole global batch
    "sync_batchnorm": Field(("bool",), False),
    # seconds a rank waits in a collective for the others before the job is aborted
    # (null: $NNKIT_DISTRIBUTED_TIMEOUT, else 1800)
    "timeout": Field(("float", "null"), None, _positive),
}

OUTPUT: dict[str, Field] = {
    "dir": Field(("str", "null"), None),
    "checkpoint": Field(("str",), "last.h5", _file_name),
    "best": Field(("str", "null"), None),
    "monitor": Field(("str", "null"), None),
    # resumable checkpoints in <dir>/checkpoints: every N steps (null: every epoch), the
    # newest `keep` generations kept
    "save_every": Field(("int", "null"), None, _positive),
    "keep": Field(("int",), 2, _positive),
}

# Losses whose targets are class indices: integral float labels are cast to int64, and
# ``predict`` prints the arg-max class.
CLASSIFICATION_LOSSES = frozenset({"cross_entropy", "sparse_categorical_crossentropy", "nll"})
