"""Hostile and malformed configs: one ``config error:`` line, exit 2, fast, small.

Alias bombs, deep nesting, oversized or non-UTF-8 files and values of the wrong type
(in the file or in ``--set``) must each end in one line on stderr naming the key path,
with exit status 2, within a second and without growing the process. The bomb and
nesting cases also run the installed ``nnkit`` in a child process whose peak memory is
measured (``RUSAGE_CHILDREN`` of an intermediate process that runs only that child).
"""
# ruff: noqa: E402  (the imports below need typer, skipped above when missing)

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("typer", reason="the CLI needs typer (pip install -e '.[dev]')")

from nnkit.cli.config import MAX_CONFIG_BYTES, MAX_DEPTH, MAX_VALUES
from tests.cli.conftest import TINY, write_config

# the bound on the CLI's own work (in process, imports done): the slowest case takes
# ~0.4 s alone and reached 1.01 s late in a loaded full run; a bomb takes far longer
SECONDS = 2.0
CHILD_SECONDS = 10.0  # the bound on a child process, interpreter start and imports included
EXTRA_MIB = 25  # the most a hostile config may add to the peak memory of a trivial error

HEAD = "data: {name: digits}\nmodel: {layers: [Flatten, {type: Dense, units: 10}]}\n"

# "Billion laughs": nine levels of ten aliases each, 10**9 strings if expanded.
BOMB_LEVELS = "".join(
    f"    - &{name} [{', '.join([f'*{prev}'] * 10)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)
BOMB = f"    - &a [{', '.join(['lol'] * 10)}]\n" + BOMB_LEVELS
BOMB_IN_OPTIMIZER = HEAD + "optimizer:\n  name: adam\n  weight_decay:\n" + BOMB
BOMB_IN_LAYER = (
    "data: {name: digits}\nmodel:\n  layers:\n    - Flatten\n    - type: Dense\n"
    "      units:\n" + BOMB.replace("    - ", "        - ")
)
# The same with merge keys: each mapping merges the previous one ten times.
MERGE_BOMB = (
    HEAD
    + "optimizer:\n  name: adam\n  betas:\n    - &m0 {k: 1}\n"
    + "".join(
        f"    - &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 10)}], k{i}: 1}}\n" for i in range(1, 9)
    )
)
DEEP = 100_000
DEEP_LIST = HEAD + "optimizer: {name: adam, lr: " + "[" * DEEP + "]" * DEEP + "}\n"
DEEP_PATH = "optimizer.lr" + "[0]" * (MAX_DEPTH - 2)  # the collection one level too deep

BOMB_MESSAGE = (
    "config error: optimizer.weight_decay[3][7]: the alias *c (1111 values) makes the "
    f"document larger than {MAX_VALUES} values (at line 9, column 39; each use of an "
    "alias counts as a copy)"
)
DEEP_MESSAGE = (
    f"config error: {DEEP_PATH}: nested more than {MAX_DEPTH} levels deep "
    f"(at line 3, column {29 + MAX_DEPTH - 2})"
)


def assert_one_line(result, expected: str) -> None:
    """Exit 2, nothing on stdout, exactly ``expected`` on stderr."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == expected + "\n"


@pytest.fixture
def timed_cli(cli):
    """``cli`` that also checks the invocation took less than ``SECONDS``."""
    import nnkit.callbacks  # noqa: F401  (what the commands import on first use, so that
    import nnkit.cli.commands  # noqa: F401  the bound is on the work, not on imports)
    import nnkit.optim.lr_scheduler  # noqa: F401
    import nnkit.training.compile_utils  # noqa: F401

    def invoke(*args):
        start = time.perf_counter()
        result = cli(*args)
        elapsed = time.perf_counter() - start
        assert elapsed < SECONDS, f"{elapsed:.2f} s: {result.output}"
        return result

    return invoke


# ------------------------------------------------------------- parsing limits
@pytest.mark.parametrize(
    "text, expected",
    [
        (BOMB_IN_OPTIMIZER, BOMB_MESSAGE),
        (
            BOMB_IN_LAYER,
            "config error: model.layers[1].units[3][7]: the alias *c (1111 values) makes "
            f"the document larger than {MAX_VALUES} values (at line 10, column 43; each use "
            "of an alias counts as a copy)",
        ),
        (
            MERGE_BOMB,
            "config error: optimizer.betas[4].<<[1]: the alias *m3 (3555 values) makes the "
            f"document larger than {MAX_VALUES} values (at line 10, column 22; each use of an "
            "alias counts as a copy)",
        ),
        (DEEP_LIST, DEEP_MESSAGE),
        (
            HEAD + "optimizer: " + "{a: " * 40_000 + "1" + "}" * 40_000 + "\n",
            f"config error: optimizer{'.a' * (MAX_DEPTH - 1)}: nested more than {MAX_DEPTH} "
            f"levels deep (at line 3, column {12 + 4 * (MAX_DEPTH - 1)})",
        ),
        (
            HEAD + "x: &a " + "[" * 20 + "]" * 20 + "\ny: " + "[" * 20 + "*a" + "]" * 20,
            f"config error: y{'[0]' * 20}: nested more than {MAX_DEPTH} levels deep (through "
            "the alias *a) (at line 4, column 24)",
        ),
        (  # HEAD and the keys before the list are 21 values, the list itself one more
            HEAD + "optimizer: {name: adam, lr: [" + "0, " * MAX_VALUES + "0]}\n",
            f"config error: optimizer.lr[{MAX_VALUES - 21}]: more than {MAX_VALUES} values in "
            f"one document (at line 3, column {30 + 3 * (MAX_VALUES - 21)})",
        ),
        (
            HEAD + "optimizer: {name: adam, lr: &r [1, *r]}\n",
            "config error: optimizer.lr[1]: the alias *r is used inside the value it names "
            "(at line 3, column 36; recursive structures are not allowed)",
        ),
        (
            HEAD + "optimizer: {name: adam, lr: [&r 1, &r 2]}\n",
            "config error: optimizer.lr[1]: duplicate anchor &r (at line 3, column 36; "
            "the first is at line 3)",
        ),
        (
            HEAD + "optimizer:\n  name: adam\n  lr: 0.1\n  lr: 0.2\n",
            "config error: optimizer.lr: duplicate key 'lr' (at line 6, column 3; the first "
            "is at line 5)",
        ),
        (
            HEAD + "seed: " + "9" * 5000 + "\n",
            f"config error: CONFIG: not valid YAML at line 3, column 7: cannot read "
            f"'{'9' * 27}...{'9' * 28}': Exceeds the limit (4300 digits) for integer string "
            "conversion: value has 5000 digits",
        ),
        (
            HEAD + "seed: 2024-13-01\n",
            "config error: CONFIG: not valid YAML at line 3, column 7: cannot read "
            "'2024-13-01': month must be in 1..12",
        ),
        (
            HEAD + "loss: \x00\n",
            "config error: CONFIG: not valid YAML at line 3, column 7: character #x0000: "
            "special characters are not allowed",
        ),
        (
            "--- 1\n--- 2\n",
            "config error: CONFIG: not valid YAML at line 2, column 1: expected a single "
            "document in the stream but found another document",
        ),
        (
            HEAD + 'optimizer: {name: adam, "odd\\nkey": 1}\n',
            "config error: optimizer.'odd\\nkey': Adam has no argument 'odd\\nkey' (expected "
            "one of: amsgrad, betas, eps, lr, maximize, weight_decay)",
        ),
    ],
    ids=[
        "bomb-in-optimizer",
        "bomb-in-layer",
        "merge-key-bomb",
        "deep-list",
        "deep-mapping",
        "deep-through-alias",
        "too-many-values",
        "recursive-alias",
        "duplicate-anchor",
        "duplicate-key",
        "huge-int",
        "bad-date",
        "nul-character",
        "two-documents",
        "odd-key",
    ],
)
def test_hostile_yaml(timed_cli, workdir, text, expected):
    (workdir / "hostile.yaml").write_text(text, encoding="utf-8")
    assert_one_line(timed_cli("train", "hostile.yaml"), expected)


def test_file_size_limit(timed_cli, workdir):
    big = workdir / "big.yaml"
    big.write_text(HEAD + "#" * (MAX_CONFIG_BYTES - len(HEAD) - 1) + "\n")
    assert big.stat().st_size == MAX_CONFIG_BYTES
    assert timed_cli("train", big, "--print-config").exit_code == 0  # at the limit: read
    with big.open("a") as file:
        file.write("\n")
    assert_one_line(
        timed_cli("train", big),
        f"config error: CONFIG: {big} is larger than {MAX_CONFIG_BYTES // 1024} KiB "
        "(a config holds settings, not data)",
    )


def test_non_utf8_file(timed_cli, workdir):
    (workdir / "latin1.yaml").write_bytes(HEAD.encode() + "# café\n".encode("latin-1"))
    assert_one_line(
        timed_cli("summary", "latin1.yaml"),
        "config error: CONFIG: latin1.yaml is not UTF-8 text: byte 0xe9 at line 3, "
        "column 6 (save it as UTF-8)",
    )


def test_anchors_within_the_limits_still_work(timed_cli, workdir):
    (workdir / "anchors.yaml").write_text(
        "data: {name: digits}\n"
        "model:\n"
        "  input_shape: [64]\n"
        "  layers:\n"
        "    - &hidden {type: Dense, units: 16, activation: relu}\n"
        "    - *hidden\n"
        "    - {<<: *hidden, units: 10, activation: null}\n"
    )
    result = timed_cli("summary", "anchors.yaml")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("Dense") == 3


# --------------------------------------------------------------- --set values
@pytest.mark.parametrize(
    "override, expected",
    [
        (
            "optimizer.lr=" + "[" * DEEP + "]" * DEEP,
            f"config error: optimizer.lr{'[0]' * (MAX_DEPTH - 2)}: nested more than "
            f"{MAX_DEPTH} levels deep (at line 1, column {MAX_DEPTH - 1})",
        ),
        (
            "optimizer.weight_decay=[&a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol], "
            + ", ".join(
                f"&{name} [{', '.join([f'*{prev}'] * 10)}]"
                for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
            )
            + "]",
            "config error: optimizer.weight_decay[3][7]: the alias *c (1111 values) makes the "
            f"document larger than {MAX_VALUES} values (at line 1, column 179; each use of an "
            "alias counts as a copy)",
        ),
        (
            "a" + ".a" * MAX_DEPTH + "=1",
            "config error: --set: 'a.a.a.a.a.a.a.a.a.a.a.a.a.a....a.a.a.a.a.a.a.a.a.a.a.a.a=1': "
            f"the key is more than {MAX_DEPTH} levels deep",
        ),
        (
            "optimizer.lr=" + "x" * (MAX_CONFIG_BYTES + 1),
            f"config error: --set optimizer.lr: longer than {MAX_CONFIG_BYTES // 1024} KiB",
        ),
    ],
    ids=["deep", "bomb", "deep-key", "long"],
)
def test_hostile_overrides(timed_cli, tiny_config, override, expected):
    assert_one_line(timed_cli("train", tiny_config, "--set", override), expected)


# ------------------------------------------------------------ argument types
@pytest.mark.parametrize(
    "override, expected",
    [
        (
            "optimizer.lr=fast",
            "config error: optimizer.lr: expected a number, got a string ('fast')",
        ),
        (
            "optimizer.weight_decay=true",
            "config error: optimizer.weight_decay: expected a number, got a boolean (True)",
        ),
        (
            "optimizer.betas=[0.9, fast]",
            "config error: optimizer.betas[1]: expected a number, got a string ('fast')",
        ),
        (
            "optimizer.betas=[0.9]",
            "config error: optimizer.betas: expected a list of 2 numbers, got a list ([0.9])",
        ),
        ("optimizer.lr=-1", "config error: optimizer: Adam(lr=-1): Invalid learning rate: -1"),
        (
            "model.layers[0].units=32.5",
            "config error: model.layers[0].units: expected an integer, got a number (32.5)",
        ),
        (
            "model.layers[0].use_bias=yes please",
            "config error: model.layers[0].use_bias: expected true or false, got a string "
            "('yes please')",
        ),
        (
            "model.layers[1].p=high",
            "config error: model.layers[1].p: expected a number, got a string ('high')",
        ),
        (
            "model.layers[0].kernel_initializer=[1]",
            "config error: model.layers[0].kernel_initializer: expected a string, got a list ([1])",
        ),
        (
            "scheduler.step_size=one",
            "config error: scheduler.step_size: expected an integer, got a string ('one')",
        ),
        (
            "scheduler={name: MultiStepLR, milestones: [1, two]}",
            "config error: scheduler.milestones[1]: expected an integer, got a string ('two')",
        ),
        (
            "scheduler={name: OneCycleLR, max_lr: [0.1, x], total_steps: 10}",
            "config error: scheduler.max_lr[1]: expected a number, got a string ('x')",
        ),
        (
            "scheduler.step_size=0",
            "config error: scheduler: StepLR(step_size=0, gamma=0.5): step_size must be a "
            "positive integer, but got 0",
        ),
        (
            "callbacks=[{type: EarlyStopping, patience: soon}]",
            "config error: callbacks[0].patience: expected an integer, got a string ('soon')",
        ),
        (
            "callbacks=[{type: CSVLogger, filename: 3}]",
            "config error: callbacks[0].filename: expected a string, got an integer (3)",
        ),
        (
            "callbacks=[{type: EarlyStopping, baseline: low}]",
            "config error: callbacks[0].baseline: expected a number or null, got a string ('low')",
        ),
    ],
)
@pytest.mark.parametrize("command", [("train", "--dry-run"), ("summary",)])
def test_argument_types_are_checked_before_anything_is_built(
    timed_cli, workdir, command, override, expected
):
    config = write_config(workdir, {**TINY, "model": {**TINY["model"], "input_shape": [64]}})
    assert_one_line(timed_cli(command[0], config, *command[1:], "--set", override), expected)


def test_lr_fast_in_the_file_prints_no_summary(timed_cli, workdir):
    config = write_config(workdir, {**TINY, "optimizer": {"name": "adam", "lr": "fast"}})
    for command in (["train", "--dry-run"], ["summary"], ["train"]):
        assert_one_line(
            timed_cli(command[0], config, *command[1:]),
            "config error: optimizer.lr: expected a number, got a string ('fast')",
        )


# ------------------------------------------- in a real process: time and memory
_MEASURE = """
import json, resource, subprocess, sys, time

def limit():  # a regression must fail the test, not take the machine's memory
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

start = time.perf_counter()
try:
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=30,
                          preexec_fn=limit)
    code, stdout, stderr = done.returncode, done.stdout, done.stderr
except subprocess.TimeoutExpired:
    code, stdout, stderr = "timeout", "", ""
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
peak_mib = peak / (1 << 20) if sys.platform == "darwin" else peak / 1024
print(json.dumps({"code": code, "stdout": stdout, "stderr": stderr,
                  "seconds": seconds, "peak_mib": peak_mib}))
"""


def _nnkit_command() -> list[str]:
    script = Path(sys.executable).with_name("nnkit")
    found = script if script.is_file() else shutil.which("nnkit")
    return [str(found)] if found else [sys.executable, "-m", "nnkit.cli"]


def _measure(*args: str, cwd: Path) -> dict:
    """Run ``nnkit *args`` in a child of a fresh process; its exit code, output, wall
    time and peak resident memory."""
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, *_nnkit_command(), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def baseline_mib(tmp_path_factory) -> float:
    """The peak memory of ``nnkit train`` reporting a one-character syntax error."""
    directory = tmp_path_factory.mktemp("baseline")
    (directory / "bad.yaml").write_text("data: [\n")
    run = _measure("train", "bad.yaml", cwd=directory)
    assert run["code"] == 2, run
    return run["peak_mib"]


@pytest.mark.parametrize(
    "text, expected",
    [(BOMB_IN_OPTIMIZER, BOMB_MESSAGE), (DEEP_LIST, DEEP_MESSAGE)],
    ids=["bomb", "deep"],
)
def test_real_process_fails_fast_in_little_memory(tmp_path, baseline_mib, text, expected):
    (tmp_path / "hostile.yaml").write_text(text)
    run = _measure("train", "hostile.yaml", cwd=tmp_path)
    assert run["code"] == 2, run
    assert run["stdout"] == "" and run["stderr"] == expected + "\n"
    assert run["seconds"] < CHILD_SECONDS, run
    assert run["peak_mib"] < baseline_mib + EXTRA_MIB, (run["peak_mib"], baseline_mib)
