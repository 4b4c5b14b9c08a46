"""Launch detection and the errors of an mpiexec launch without a usable mpi4py."""

from __future__ import annotations

import sys

import pytest

from nnkit.distributed import LocalCommunicator, init, launch, launched_world_size

from .conftest import mlp, problem

SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE")


@pytest.fixture
def clean_env(monkeypatch):
    for var in SIZE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(launch, "_default", None)
    return monkeypatch


@pytest.fixture
def no_mpi4py(clean_env):
    clean_env.setitem(sys.modules, "mpi4py", None)  # "import mpi4py" now raises ImportError
    return clean_env


@pytest.mark.parametrize("var", SIZE_VARS)
def test_launched_world_size_reads_the_launcher_env(clean_env, var):
    assert launched_world_size() == 1
    clean_env.setenv(var, "4")
    assert launched_world_size() == 4


def test_init_without_a_launcher_is_one_process(clean_env):
    comm = init()
    assert isinstance(comm, LocalCommunicator)
    assert init() is comm and init("local") is comm
    with pytest.raises(ValueError, match="unknown distributed backend 'nccl'"):
        init("nccl")


@pytest.mark.parametrize("var", ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"])
def test_init_under_mpiexec_without_mpi4py_says_how_to_install(no_mpi4py, var):
    no_mpi4py.setenv(var, "2")
    with pytest.raises(RuntimeError) as info:
        init()
    message = str(info.value)
    assert f"one of 2 processes started by mpiexec ({var}=2)" in message
    assert "pip install 'nnkit[distributed]'" in message


def test_fit_under_mpiexec_without_mpi4py_fails_clearly(no_mpi4py):
    no_mpi4py.setenv("PMI_SIZE", "2")
    with pytest.raises(RuntimeError, match=r"pip install 'nnkit\[distributed\]'"):
        mlp(0).fit(*problem(n=8), verbose=0)


def test_one_process_under_mpiexec_does_not_need_mpi4py(no_mpi4py):
    no_mpi4py.setenv("OMPI_COMM_WORLD_SIZE", "1")
    assert isinstance(init(), LocalCommunicator)
    mlp(0).fit(*problem(n=8), verbose=0)
