"""keep_freed_memory: the memory a step frees stays in the C heap (no page faults when the
next step takes it again); the ``nnkit`` console script sets it unless told not to."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from nnkit.backends import host_memory
from nnkit.cli import process

cli_app = importlib.import_module("nnkit.cli.app")  # (nnkit.cli.app is also the Typer app)

glibc = pytest.mark.skipif(host_memory._libc() is None, reason="glibc's malloc only")

# Three large arrays made and freed per step: glibc's default thresholds hand the top of
# the heap back to the system after each step, so the next step faults its pages in.
_STEPS = """
import resource, sys, numpy as np
if sys.argv[1] == "keep":
    from nnkit.backends.host_memory import keep_freed_memory
    assert keep_freed_memory()
def step():
    a = np.ones(5_000_000, np.float32); b = np.ones(5_000_000, np.float32)
    c = np.ones(3_000_000, np.float32); del a, b, c
for _ in range(3):
    step()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 10)
"""


def _faults_per_step(mode: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _STEPS, mode], capture_output=True, text=True, check=True
    )
    return float(out.stdout.split()[-1])


@glibc
def test_freed_memory_is_taken_again_without_page_faults():
    assert _faults_per_step("default") > 500  # ~1 400 pages of 4 KiB
    assert _faults_per_step("keep") < 50


def test_refuses_a_small_limit():  # (that it returns True on glibc: the child above)
    with pytest.raises(ValueError, match="at least 32 MiB"):
        host_memory.keep_freed_memory(1 << 20)


def test_without_glibc_nothing_is_changed(monkeypatch):
    monkeypatch.setattr(host_memory, "_libc", lambda: None)
    assert host_memory.keep_freed_memory() is False


@pytest.mark.parametrize("env, calls", [(None, 1), ("1", 1), ("0", 0)])
def test_console_script_keeps_freed_memory_unless_told_not_to(monkeypatch, env, calls):
    seen = []
    monkeypatch.setattr(process, "ENDS_PROCESS", False)  # restored after the test
    monkeypatch.setattr(cli_app, "keep_freed_memory", lambda: seen.append(True))
    monkeypatch.setattr(cli_app, "app", lambda prog_name: None)
    if env is None:
        monkeypatch.delenv("NNKIT_KEEP_FREED_MEMORY", raising=False)
    else:
        monkeypatch.setenv("NNKIT_KEEP_FREED_MEMORY", env)
    cli_app.main()
    assert len(seen) == calls
