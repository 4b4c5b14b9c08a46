"""Shared fixtures: the ``device`` fixture runs a test on every device present.

``NNKIT_TEST_DEVICE=simulated`` runs the ``cuda`` param on a simulated second device
(NumPy memory that refuses to mix with host arrays, ``tests/_simulated_device.py``)
instead of skipping it where there is no GPU.

A test that needs one of nnkit's installable dependencies (h5py, tqdm, typer,
scikit-learn, mpi4py) is reported as *skipped*, naming the package, when that package
is not installed (e.g. running the suite with a bare interpreter); every other import
error stays a failure.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import nnkit

_TEST_DEVICE = os.environ.get("NNKIT_TEST_DEVICE", "")
_session_patch = pytest.MonkeyPatch()


def pytest_configure(config):
    if _TEST_DEVICE == "simulated":
        from tests._simulated_device import install

        install(_session_patch)
    elif _TEST_DEVICE:
        raise pytest.UsageError(f"NNKIT_TEST_DEVICE={_TEST_DEVICE!r}: expected 'simulated'")


def pytest_unconfigure(config):
    _session_patch.undo()


def pytest_report_header(config):
    if _TEST_DEVICE == "simulated":
        return "nnkit: device 'cuda' is SIMULATED (NNKIT_TEST_DEVICE=simulated)"


_INSTALLABLE = {"h5py", "tqdm", "typer", "sklearn", "mpi4py", "yaml"}


def _missing_dependency(exc: BaseException | None) -> str | None:
    """The installable package whose absence caused ``exc`` (following causes), if any."""
    while exc is not None:
        name = (getattr(exc, "name", None) or "").split(".")[0]
        if (
            isinstance(exc, ImportError)
            and name in _INSTALLABLE
            and importlib.util.find_spec(name) is None
        ):
            return name
        exc = exc.__cause__ or exc.__context__
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    missing = _missing_dependency(call.excinfo.value) if call.excinfo else None
    if missing and report.failed:
        report.outcome = "skipped"
        report.longrepr = (
            str(item.path),
            item.location[1] or 0,
            f"Skipped: needs {missing}, which is not installed (pip install -e '.[dev]')",
        )


def _devices():
    devs = ["cpu"]
    if nnkit.cuda.is_available():
        devs.append("cuda")
    return devs


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """Each test taking ``device`` runs on the CPU and, where CuPy sees a GPU (or with
    ``NNKIT_TEST_DEVICE=simulated``), on CUDA."""
    if request.param not in _devices():
        pytest.skip("CUDA not available (needs CuPy and a GPU)")
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _seed():
    nnkit.manual_seed(0)
    yield
