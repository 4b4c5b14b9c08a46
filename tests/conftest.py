"""Shared fixtures: the ``device`` fixture runs a test on every device present."""

from __future__ import annotations

import numpy as np
import pytest

import nnkit


def _devices():
    devs = ["cpu"]
    if nnkit.cuda.is_available():
        devs.append("cuda")
    return devs


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """Each test taking ``device`` runs on the CPU and, where CuPy sees a GPU, on CUDA."""
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
