"""Real multi-process runs under ``mpiexec -n 2`` (skipped without mpi4py and mpiexec).

``pip install mpi4py mpich`` gives both (the ``mpich`` wheel puts ``mpiexec`` next to
the interpreter); ``.ci/run`` installs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.cli.conftest import TINY

from .conftest import assert_same, mlp, problem, weights

pytest.importorskip("mpi4py")  # the package only: MPI itself is initialised in the children
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec is not on PATH")
ROOT = Path(__file__).resolve().parents[2]


def run(args, cwd, n=None, env=None):
    command = ([MPIEXEC, "-n", str(n)] if n else []) + [sys.executable, *map(str, args)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def check(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return result


FIT_SCRIPT = """
import sys
import numpy as np
import nnkit
from tests.distributed.conftest import mlp, problem, weights

comm = nnkit.distributed.init()
model = mlp(7 + comm.rank)
x, y = problem(n=257)  # the last global batch of 16 holds 1 sample: rank 1's share is empty
history = model.fit(x, y, batch_size=16, epochs=2, seed=3, verbose=0)  # distributed: auto
np.savez(f"{sys.argv[1]}/rank{comm.rank}.npz", *weights(model),
         loss=np.array(history.history["loss"]), world=comm.world_size)
"""


def test_fit_under_mpiexec_matches_one_process(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(textwrap.dedent(FIT_SCRIPT))
    check(run([script, tmp_path], cwd=ROOT, n=2))
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in range(2)]
    assert [int(r["world"]) for r in ranks] == [2, 2]
    params = [[r[f"arr_{i}"] for i in range(4)] for r in ranks]
    assert_same(params[0], params[1])  # identical replicas
    reference = mlp(7)
    history = reference.fit(*problem(n=257), batch_size=16, epochs=2, seed=3, verbose=0)
    assert_same(params[0], weights(reference), atol=1e-6)
    np.testing.assert_allclose(ranks[0]["loss"], history.history["loss"], rtol=1e-5)


def test_cli_train_under_mpiexec(tmp_path):
    # 1293 training samples: 20 global batches of 64 split evenly over the 2 ranks, and a
    # last one of 13 split 7 + 6; nothing padded, each rank's gradient weighted by its share
    data = {**TINY["data"], "validation_split": 0.1}
    layers = [{"type": "Dense", "units": 32, "activation": "relu"}, {"type": "Dense", "units": 10}]
    config = {
        **TINY,
        "data": data,
        "model": {"layers": layers},
        "train": {"epochs": 2, "verbose": 2},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    parallel = check(
        run(["-m", "nnkit.cli", "train", path, "--set", "output.dir=mpi"], cwd=tmp_path, n=2)
    )
    check(run(["-m", "nnkit.cli", "train", path, "--set", "output.dir=one"], cwd=tmp_path))
    assert parallel.stdout.count("checkpoint: ") == 1  # rank 0 alone reports
    assert parallel.stdout.count("Epoch 2/2") == 1
    from nnkit import io

    a, b = (io.read_checkpoint(tmp_path / d / "last.h5") for d in ("mpi", "one"))
    for key, value in b["model"].items():
        np.testing.assert_allclose(a["model"][key], value, atol=1e-5, err_msg=key)


def test_mpi_seeing_fewer_processes_than_the_launcher_is_explained(tmp_path):
    result = run(
        ["-c", "import nnkit.distributed as d; d.init()"],
        cwd=tmp_path,
        env={"OMPI_COMM_WORLD_SIZE": "3"},
    )
    assert result.returncode != 0
    assert "mpiexec started 3 processes (OMPI_COMM_WORLD_SIZE=3) but MPI sees 1" in result.stderr


FAIL_SCRIPT = """
import nnkit
from nnkit.callbacks import Callback
from tests.distributed.conftest import mlp, problem

comm = nnkit.distributed.init()


class Boom(Callback):
    def on_train_batch_end(self, batch, logs=None):
        if comm.rank == 1 and batch == 2:
            raise RuntimeError(f"boom on rank {comm.rank}")


model = mlp(7)
x, y = problem(n=480)
model.fit(x, y, batch_size=12, epochs=1000, verbose=0, callbacks=[Boom()])
"""


def test_an_exception_on_one_rank_ends_the_whole_job(tmp_path):
    import time

    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent(FAIL_SCRIPT))
    started = time.monotonic()
    result = run([script], cwd=ROOT, n=2)
    assert time.monotonic() - started < 30  # not a hang: rank 0 waited in a collective
    assert result.returncode != 0
    output = result.stdout + result.stderr
    line = "[rank 1 of 2] RuntimeError: boom on rank 1 -- aborting the whole job"
    assert output.count(line) == 1 and "rank 0" not in output, output


def test_a_global_batch_not_divisible_by_the_ranks_is_a_config_error(tmp_path):
    config = tmp_path / "cfg.yaml"
    config.write_text(yaml.safe_dump({**TINY, "output": {"dir": str(tmp_path / "run")}}))
    result = run(
        ["-m", "nnkit.cli", "train", config, "--set", "data.batch_size=33"], cwd=tmp_path, n=2
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "config error: data.batch_size: 33 is the global batch, split over 2 processes: "
        "make it a multiple of 2 (e.g. 32, or 34)"
    )
