"""Every ``>>>`` example in nnkit's docstrings runs, one test per module.

The examples see ``nnkit``, ``nn`` (``nnkit.nn``), ``F`` (``nnkit.nn.functional``) and
``np`` already imported, and the random seed reset to 0. ``NORMALIZE_WHITESPACE`` and
``ELLIPSIS`` are on. Modules whose optional dependency is missing (``onnx``,
``mpi4py``, ``cupy``, ``matplotlib``) are skipped, naming it.

Run one module's examples with ``pytest tests/test_doctests.py -k special``.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import numpy as np
import pytest

import nnkit

_OPTIONS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _modules() -> list[str]:
    names = ["nnkit"]
    for info in pkgutil.walk_packages(nnkit.__path__, "nnkit."):
        if not info.name.endswith("__main__"):
            names.append(info.name)
    return sorted(names)


# Modules that import without their optional dependency but whose examples need it.
_NEEDS = {"nnkit.onnx": ("onnx", "onnxruntime")}


def _import(name: str):
    for prefix, packages in _NEEDS.items():
        if name == prefix or name.startswith(prefix + "."):
            for package in packages:
                if importlib.util.find_spec(package) is None:
                    pytest.skip(f"{name}'s examples need {package}, which is not installed")
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing = (exc.name or "").split(".")[0]
        if (
            missing
            and not missing.startswith("nnkit")
            and importlib.util.find_spec(missing) is None
        ):
            pytest.skip(f"{name} needs {missing}, which is not installed")
        raise


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = _import(name)
    tests = [
        t
        for t in doctest.DocTestFinder(exclude_empty=True).find(module, name)
        if t.examples and _defined_here(t, name)
    ]
    if not tests:
        pytest.skip(f"{name} has no examples")
    import nnkit.nn as nn
    import nnkit.nn.functional as F

    runner = doctest.DocTestRunner(optionflags=_OPTIONS)
    for test in tests:
        nnkit.manual_seed(0)
        test.globs.update({"nnkit": nnkit, "nn": nn, "F": F, "np": np})
        runner.run(test, out=_Collect.write)
    failed = runner.summarize(verbose=False).failed
    assert not failed, f"{failed} example(s) failed in {name}:\n" + _Collect.take()
    _Collect.take()


def _defined_here(test: doctest.DocTest, module_name: str) -> bool:
    """Whether the docstring belongs to the module itself (not one it re-exports)."""
    filename = test.filename or ""
    spec = importlib.util.find_spec(module_name)
    return spec is None or not spec.origin or filename == spec.origin


class _Collect:
    _parts: list[str] = []

    @classmethod
    def write(cls, text: str) -> None:
        cls._parts.append(text)

    @classmethod
    def take(cls) -> str:
        out, cls._parts = "".join(cls._parts), []
        return out
