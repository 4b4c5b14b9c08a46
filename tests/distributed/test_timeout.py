"""Collective timeouts: a rank that stops taking part (stuck, not crashed) ends the job.

The watchdog logic and the timeout settings are tested in this process (a fake MPI
stands in for mpi4py: MPI itself is only ever initialised in child processes); real
jobs run under ``mpiexec -n 2`` (skipped without mpi4py and mpiexec).
"""

from __future__ import annotations

import math
import threading
import time
import types

import numpy as np
import pytest

import nnkit
from nnkit.distributed import LocalCommunicator, init, launch
from nnkit.distributed import mpi as mpi_module
from nnkit.distributed.watchdog import (
    DEFAULT_TIMEOUT,
    TIMEOUT_ENV,
    Watchdog,
    check_timeout,
    resolve_timeout,
)

try:  # the mpiexec helpers of test_mpi (which skips itself without mpi4py)
    from .test_mpi import MPIEXEC, ROOT, run
except (ImportError, pytest.skip.Exception):
    MPIEXEC = ROOT = run = None

needs_mpiexec = pytest.mark.skipif(MPIEXEC is None, reason="mpi4py or mpiexec is missing")


class Recorder:
    """An ``on_timeout`` callback that records the messages and when they came."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.times: list[float] = []
        self.called = threading.Event()

    def __call__(self, message: str) -> None:
        self.messages.append(message)
        self.times.append(time.monotonic())
        self.called.set()


# ------------------------------------------------------------------ the watchdog
def test_a_collective_past_its_timeout_fires_once_with_one_line():
    record = Recorder()
    dog = Watchdog(0.3, record, prefix="[rank 0 of 2]")
    started = time.monotonic()
    dog.begin("allreduce (sum) of 12345 float32 values")
    assert record.called.wait(5)
    elapsed = record.times[0] - started
    assert 0.3 <= elapsed < 1.3, elapsed
    time.sleep(0.3)  # still in progress: no second call
    dog.end()
    dog.close()
    assert dog.fired and len(record.messages) == 1
    (message,) = record.messages
    assert "\n" not in message
    assert message.startswith(
        "[rank 0 of 2] allreduce (sum) of 12345 float32 values still "
        "waits for the other ranks after 0.3 s (timeout 0.3 s)"
    )
    for where in ("distributed.timeout", "timeout= of nnkit.distributed.init", TIMEOUT_ENV):
        assert where in message


def test_collectives_that_end_in_time_never_fire_however_long_the_run():
    record = Recorder()
    dog = Watchdog(0.2, record)
    for _ in range(8):  # 0.4 s inside collectives, 0.8 s in all: each one is short
        with dog.watch("barrier"):
            time.sleep(0.05)
        time.sleep(0.05)
    time.sleep(0.4)  # idle for twice the timeout: nothing is in progress
    dog.close()
    assert record.messages == [] and not dog.fired


def test_an_exception_inside_a_collective_ends_the_watch():
    record = Recorder()
    dog = Watchdog(0.1, record)
    with pytest.raises(RuntimeError), dog.watch("barrier"):
        raise RuntimeError("MPI error")
    time.sleep(0.3)
    dog.close()
    assert record.messages == []


def test_the_description_is_built_only_when_it_times_out():
    calls = []

    def describe():
        calls.append(1)
        return "broadcast from rank 0 of 3 float64 values"

    record = Recorder()
    dog = Watchdog(0.2, record)
    for _ in range(100):
        with dog.watch(describe):
            pass
    assert calls == []
    dog.begin(describe)
    assert record.called.wait(5)
    dog.close()
    assert calls == [1] and record.messages[0].startswith("broadcast from rank 0 of 3 float64")


def test_a_shorter_timeout_applies_to_the_collective_in_progress():
    record = Recorder()
    dog = Watchdog(600, record)
    dog.begin("barrier")
    time.sleep(0.2)
    set_at = time.monotonic()
    dog.timeout = 0.3
    assert record.called.wait(5)
    assert record.times[0] - set_at < 1.0  # woken by the change, not at the old deadline
    assert "(timeout 0.3 s)" in record.messages[0]
    dog.close()


def test_an_infinite_timeout_never_fires():
    record = Recorder()
    dog = Watchdog(math.inf, record)
    dog.begin("barrier")
    time.sleep(0.2)
    dog.end()
    dog.close()
    assert record.messages == [] and dog.timeout == math.inf


def test_close_ends_the_thread():
    dog = Watchdog(10, Recorder())
    with dog.watch("barrier"):
        pass
    thread = dog._thread
    assert thread is not None and thread.daemon and thread.is_alive()
    dog.close()
    assert not thread.is_alive()


# ------------------------------------------------------------------ timeout values
@pytest.mark.parametrize("bad", [0, -1, -0.5, math.nan, "10", True, None, [1]])
def test_invalid_timeouts_name_timeout(bad):
    with pytest.raises(ValueError, match=r"^timeout must be a positive number of seconds"):
        check_timeout(bad)
    with pytest.raises(ValueError, match="timeout"):
        Watchdog(bad, Recorder())


def test_valid_timeouts_are_floats():
    assert check_timeout(2) == 2.0 and isinstance(check_timeout(2), float)
    assert check_timeout(0.25) == 0.25 and check_timeout(math.inf) == math.inf
    assert resolve_timeout(np.float32(1.5)) == 1.5


def test_the_environment_sets_the_default(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert resolve_timeout() == DEFAULT_TIMEOUT == 1800.0
    for text, value in [("2.5", 2.5), (" 60 ", 60.0), ("1e3", 1000.0), ("", 1800.0)]:
        monkeypatch.setenv(TIMEOUT_ENV, text)
        assert resolve_timeout() == value
    assert resolve_timeout(7) == 7.0  # an explicit timeout wins


@pytest.mark.parametrize("text", ["abc", "0", "-3", "nan", "10s"])
def test_an_invalid_environment_value_names_the_variable(monkeypatch, text):
    monkeypatch.setenv(TIMEOUT_ENV, text)
    with pytest.raises(ValueError) as info:
        resolve_timeout()
    assert str(info.value) == (
        f"environment variable {TIMEOUT_ENV}={text!r}: expected a "
        "positive number of seconds (e.g. 600)"
    )


@pytest.fixture
def fresh_init(monkeypatch):
    for var in launch.MPI_SIZE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(launch, "_default", None)
    return monkeypatch


def test_init_keeps_the_timeout_on_the_communicator(fresh_init):
    comm = init(timeout=5)
    assert isinstance(comm, LocalCommunicator) and comm.timeout == 5.0
    assert init() is comm and comm.timeout == 5.0  # fit's init() keeps it
    assert init(timeout=9.5) is comm and comm.timeout == 9.5  # a new value updates it
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        init(timeout=0)
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        comm.timeout = -1
    assert comm.timeout == 9.5
    assert LocalCommunicator().timeout is None  # nothing set, nothing enforced


# ------------------------------------------------------------------ MPICommunicator
class FakeComm:
    """Rank 0 of 2 whose collectives block until ``Abort`` (the other rank never comes)."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.aborted: list[int] = []

    def Get_rank(self):  # noqa: N802  (mpi4py's names)
        return 0

    def Get_size(self):  # noqa: N802
        return 2

    def Allreduce(self, send, buffer, op=None):  # noqa: N802
        assert self.released.wait(10), "the watchdog never aborted"

    def Bcast(self, buffer, root=0):  # noqa: N802
        assert self.released.wait(10), "the watchdog never aborted"

    def Barrier(self):  # noqa: N802
        assert self.released.wait(10), "the watchdog never aborted"

    def Abort(self, code):  # noqa: N802  (the real one does not return)
        self.aborted.append(code)
        self.released.set()


def fake_mpi(thread_level: int):
    return types.SimpleNamespace(
        SUM="sum",
        MAX="max",
        MIN="min",
        IN_PLACE="in place",
        THREAD_MULTIPLE=3,
        Query_thread=lambda: thread_level,
    )


@pytest.fixture
def exits(monkeypatch):
    codes: list[int] = []
    monkeypatch.setattr(mpi_module.os, "_exit", codes.append)
    return codes


@pytest.mark.parametrize(
    ("collective", "description"),
    [
        (lambda c: c.allreduce_(nnkit.zeros(2, 3), op="max"), "allreduce (max) of 6 float32"),
        (
            lambda c: c.broadcast_(nnkit.zeros(4, dtype=nnkit.float64), root=1),
            "broadcast from rank 1 of 4 float64",
        ),
        (lambda c: c.barrier(), "barrier"),
    ],
)
def test_mpi_communicator_aborts_a_collective_past_its_timeout(
    monkeypatch, capsys, exits, collective, description
):
    monkeypatch.setattr(mpi_module, "import_mpi", lambda reason="": fake_mpi(3))
    fake = FakeComm()
    comm = mpi_module.MPICommunicator(fake, timeout=0.3)
    assert comm.timeout == 0.3
    started = time.monotonic()
    collective(comm)  # returns once the (fake) Abort released it
    elapsed = time.monotonic() - started
    comm._watchdog._thread.join(5)
    assert 0.3 <= elapsed < 2.0 and fake.aborted == [1] and exits == [1]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"[rank 0 of 2] {description}"), lines


def test_mpi_without_thread_multiple_exits_instead_of_calling_abort(monkeypatch, capsys, exits):
    monkeypatch.setattr(mpi_module, "import_mpi", lambda reason="": fake_mpi(1))
    fake = FakeComm()
    comm = mpi_module.MPICommunicator(fake, timeout=0.2)
    thread = threading.Thread(target=comm.barrier, daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while not exits and time.monotonic() < deadline:
        time.sleep(0.02)
    fake.released.set()
    thread.join(5)
    assert exits == [1] and fake.aborted == []
    assert "[rank 0 of 2] barrier still waits" in capsys.readouterr().err


def test_mpi_communicator_timeout_comes_from_the_environment(monkeypatch):
    monkeypatch.setattr(mpi_module, "import_mpi", lambda reason="": fake_mpi(3))
    monkeypatch.setenv(TIMEOUT_ENV, "42")
    comm = mpi_module.MPICommunicator(FakeComm())
    assert comm.timeout == 42.0
    comm.timeout = 3
    assert comm.timeout == 3.0 and comm._watchdog.timeout == 3.0
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        comm.timeout = "soon"
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=TIMEOUT_ENV):
        mpi_module.MPICommunicator(FakeComm())
    with pytest.raises(ValueError, match="^timeout must"):
        mpi_module.MPICommunicator(FakeComm(), timeout=-2)


# ------------------------------------------------------------------ the CLI
@pytest.mark.parametrize(
    ("overrides", "expected"),
    [([], None), (["distributed.timeout=7"], 7.0), (["distributed.timeout=0.5"], 0.5)],
)
def test_the_cli_passes_distributed_timeout_to_init(tmp_path, monkeypatch, overrides, expected):
    from nnkit import distributed
    from nnkit.cli.commands import _communicator
    from nnkit.cli.config import load_config
    from tests.cli.conftest import TINY, write_config

    seen = []
    monkeypatch.setattr(distributed, "init", lambda **kwargs: seen.append(kwargs) or "comm")
    config = load_config(write_config(tmp_path, TINY), overrides)
    assert _communicator(config) == "comm"
    # left null, None is passed: NNKIT_DISTRIBUTED_TIMEOUT if set, else 1800
    assert seen == [{"timeout": expected}]


def test_the_cli_reports_an_invalid_environment_timeout(tmp_path, monkeypatch):
    from nnkit.cli.commands import _communicator
    from nnkit.cli.config import load_config
    from nnkit.cli.errors import CLIError
    from tests.cli.conftest import TINY, write_config

    def init(**kwargs):
        raise ValueError(f"environment variable {TIMEOUT_ENV}='x': expected ...")

    monkeypatch.setattr(nnkit.distributed, "init", init)
    with pytest.raises(CLIError, match=TIMEOUT_ENV):
        _communicator(load_config(write_config(tmp_path, TINY)))


# ------------------------------------------------------------------ under mpiexec
STUCK_SCRIPT = """
import sys
import time
import nnkit

comm = nnkit.distributed.init(timeout=30)
comm.barrier()  # both ranks are up
comm.timeout = 1.5
x = nnkit.ones(5)
for _ in range(25):  # 2.5 s of collectives, each well under the 1.5 s timeout
    time.sleep(0.1)
    comm.allreduce_(x)
print(f"rank {comm.rank}: in step, sum {x[0].item():.0f}", flush=True)
assert nnkit.distributed.init(timeout=2) is comm and comm.timeout == 2.0
if comm.rank == 1:
    time.sleep(60)  # stuck, not crashed
comm.allreduce_(nnkit.zeros(12345))
print(f"rank {comm.rank}: not aborted", flush=True)
"""


@needs_mpiexec
def test_a_stuck_rank_ends_the_job_after_the_timeout(tmp_path):
    script = tmp_path / "stuck.py"
    script.write_text(STUCK_SCRIPT)
    started = time.monotonic()
    result = run([script], cwd=ROOT, n=2)
    elapsed = time.monotonic() - started
    print(f"mpiexec job with a stuck rank ended after {elapsed:.1f} s")
    assert elapsed < 20, elapsed  # rank 1 would sleep 60 s; the timeout is 2 s
    assert result.returncode != 0
    assert "rank 0: in step, sum 33554432" in result.stdout  # 2**25: 25 sums of 2 ranks
    assert "rank 1: in step, sum 33554432" in result.stdout
    assert "not aborted" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if "still waits" in line]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        "[rank 0 of 2] allreduce (sum) of 12345 float32 values still waits for the other "
        "ranks after 2."
    ), lines[0]
    assert "(timeout 2 s)" in lines[0] and TIMEOUT_ENV in lines[0]


@needs_mpiexec
def test_the_environment_timeout_under_mpiexec(tmp_path):
    script = tmp_path / "env.py"
    script.write_text(
        "import time, nnkit\n"
        "comm = nnkit.distributed.init()\n"
        "print(f'rank {comm.rank}: timeout {comm.timeout}', flush=True)\n"
        "if comm.rank == 1:\n"
        "    time.sleep(60)\n"
        "comm.barrier()\n"
    )
    started = time.monotonic()
    result = run([script], cwd=ROOT, n=2, env={TIMEOUT_ENV: "1.5"})
    elapsed = time.monotonic() - started
    print(f"mpiexec job with NNKIT_DISTRIBUTED_TIMEOUT=1.5 ended after {elapsed:.1f} s")
    assert elapsed < 20 and result.returncode != 0
    assert "rank 0: timeout 1.5" in result.stdout and "rank 1: timeout 1.5" in result.stdout
    lines = [line for line in result.stderr.splitlines() if "still waits" in line]
    assert len(lines) == 1 and lines[0].startswith("[rank 0 of 2] barrier still waits"), lines


CLI_SCRIPT = """
import sys
import time
import nnkit.distributed as distributed
from nnkit.cli.app import main

real_init = distributed.init


def init(*args, **kwargs):  # what nnkit train asks for; then rank 1 gets stuck
    comm = real_init(*args, **kwargs)
    print(f"rank {comm.rank}: init{kwargs} timeout {comm.timeout}", flush=True)
    if comm.rank == 1:
        def stuck(*args):
            time.sleep(60)
        comm._allreduce_mat = comm._broadcast_mat = stuck
    return comm


distributed.init = init
sys.argv = ["nnkit", *sys.argv[1:]]
main()
"""


@needs_mpiexec
def test_nnkit_train_under_mpiexec_uses_distributed_timeout(tmp_path):
    import yaml

    from tests.cli.conftest import TINY

    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "output": {"dir": str(tmp_path / "run")}}))
    script = tmp_path / "cli.py"
    script.write_text(CLI_SCRIPT)
    started = time.monotonic()
    result = run([script, "train", config, "--set", "distributed.timeout=2"], cwd=ROOT, n=2)
    elapsed = time.monotonic() - started
    print(f"nnkit train with a stuck rank ended after {elapsed:.1f} s")
    assert elapsed < 30 and result.returncode != 0, result.stdout + result.stderr
    assert "rank 1: init{'timeout': 2.0} timeout 2.0" in result.stdout  # rank 0's is silenced
    lines = [line for line in result.stderr.splitlines() if "still waits" in line]
    assert len(lines) == 1 and lines[0].startswith("[rank 0 of 2] "), result.stderr
    assert "(timeout 2 s)" in lines[0]
