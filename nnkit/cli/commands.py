"""What ``nnkit train/evaluate/predict/summary`` do, as plain functions.

:mod:`nnkit.cli.app` parses the command line and calls these; they raise
:class:`~nnkit.cli.errors.CLIError` for anything the user can fix and print results to
stdout. Everything goes through nnkit's public API: ``Sequential``, ``Model.compile``,
``fit``, ``evaluate``, ``predict``, ``summary`` and :mod:`nnkit.io`.
"""

from __future__ import annotations

import contextlib
import io as _io
import shlex
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import nnkit.distributed as distributed
from nnkit.autograd.factories import tensor
from nnkit.autograd.grad_mode import no_grad
from nnkit.callbacks import (
    CSVLogger,
    History,
    LearningRateScheduler,
    ModelCheckpoint,
    NonFiniteLossError,
    TerminateOnNaN,
)
from nnkit.cli import build, process, run_folder
from nnkit.cli import resume as resuming
from nnkit.cli.config import Config, load_config
from nnkit.cli.datasets import Data, load_data, read_input
from nnkit.cli.errors import CLIError, ConfigError, RunStopped
from nnkit.cli.schema import CLASSIFICATION_LOSSES
from nnkit.io import CheckpointError, load_checkpoint, load_weights, verify_checkpoint
from nnkit.random import manual_seed
from nnkit.training import TrainingInterrupted, graceful_interrupts

__all__ = ["train", "evaluate", "predict", "summary", "verify"]

_OUTPUT_SUFFIXES = (".npy", ".csv")


def _format_logs(logs: dict[str, Any], prefix: str = "") -> str:
    """``loss: 0.1234 - accuracy: 0.9700`` (Keras's layout), names prefixed; a metric
    with several values shows their mean, as Keras's progress bar does."""
    return " - ".join(
        f"{prefix}{name}: {float(np.mean(value)):.4f}" for name, value in logs.items()
    )


def _communicator(config: Config) -> Any:
    """This process's group: MPI under ``mpiexec -n N`` (N > 1), else a single process.

    Its collectives time out after ``distributed.timeout`` seconds (the whole job is
    then aborted); left null, after ``NNKIT_DISTRIBUTED_TIMEOUT`` seconds if that is
    set, else 1800.
    """
    try:  # looked up on the package at call time (tests replace distributed.init)
        return distributed.init(timeout=config["distributed"]["timeout"])
    except (RuntimeError, ValueError) as err:  # launched by mpiexec, but mpi4py is missing
        raise CLIError(str(err)) from None  # or mismatched; a bad NNKIT_DISTRIBUTED_TIMEOUT


@contextlib.contextmanager
def _quiet_unless(chief: bool) -> Iterator[None]:
    """Silence stdout on every rank but 0, so a data-parallel run prints one report."""
    if chief:
        yield
        return
    with contextlib.redirect_stdout(_io.StringIO()):
        yield


def _sample_shape(config: Config, data: Data | None) -> tuple[int, ...]:
    """One sample's shape: the data's, checked against ``model.input_shape`` if given."""
    declared = config["model"]["input_shape"]
    if data is None:
        return tuple(declared)
    shape = data.x_train.shape[1:]
    if declared is not None and tuple(declared) != shape:
        raise ConfigError(
            "model.input_shape",
            f"{declared} does not match the data, whose samples have shape {list(shape)}",
        )
    return shape


def _build_lazy(model: Any, batch: np.ndarray) -> None:
    """Run one batch through the model (eval mode, no grad) to build its lazy layers."""
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            model(tensor(batch))
    except Exception as err:  # whatever the layer raised: the model does not fit the data
        raise ConfigError(
            "model",
            f"a batch of shape {list(batch.shape)} does not fit the "
            f"model: {type(err).__name__}: {err}",
        ) from None
    finally:
        model.train(was_training)


def _prepare(
    config: Config, *, with_data: bool = True, show_summary: bool = False, on_device: bool = True
) -> tuple[Any, Data | None]:
    """Check names, seed, build the model on one batch, move it to the config's device."""
    build.check_names(config.values)
    device = build.resolve_device(config["device"]) if on_device else None
    manual_seed(config["seed"])
    model = build.build_model(config["model"])
    data = load_data(config.values) if with_data else None
    shape = _sample_shape(config, data)
    if data is not None:
        _build_lazy(model, data.x_train[: config["data"]["batch_size"]])
    if show_summary:
        model.summary(input_shape=shape)
    return (model if device is None else model.to(device)), data


def _compile(config: Config, model: Any) -> Any:
    """``model.compile`` with the configured optimizer (over the built model), loss and
    metrics; returns the optimizer."""
    optimizer = build.build_optimizer(config.values, model)
    model.compile(
        optimizer,
        config["loss"],
        metrics=config["metrics"],
        jit_compile=config["train"]["jit_compile"],
    )
    return optimizer


def _restore(path: Path, option: str, **targets: Any) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(option, f"file not found: {path}")
    try:
        if set(targets) == {"model"}:
            load_weights(path, targets["model"])
            return {}
        return load_checkpoint(path, **targets)
    except CheckpointError as err:  # not a checkpoint, damaged, or a section missing
        raise ConfigError(option, str(err)) from None
    except (ValueError, RuntimeError, KeyError) as err:
        text = " ".join(str(err).split())
        raise ConfigError(option, f"{path} does not fit this config: {text}") from None


def _test_logs(config: Config, model: Any, data: Data) -> None:
    """Print the loss and metrics on the test split (nothing if there is none)."""
    if data.x_test is None:
        return
    logs = model.evaluate(
        data.x_test,
        data.y_test,
        batch_size=config["data"]["batch_size"],
        verbose=0,
        return_dict=True,
    )
    print(f"{_format_logs(logs, 'test ')} ({len(data.x_test)} test samples)")


def _callbacks(run: _Run, restore_from: Path | None, changes: dict[str, Any]) -> list[Any]:
    """The configured callbacks, then the scheduler's, ``output.best``'s, the NaN stop,
    the History and the run folder's writers, and the checkpoints last."""
    config, out_dir = run.config, run.out_dir
    callbacks = build.build_callbacks(config.values, out_dir)
    output = config["output"]
    if run.scheduler is not None:
        interval = build.scheduler_interval(config.values)
        callbacks.append(LearningRateScheduler(run.scheduler, interval=interval))
    if output["best"] is not None:
        monitor = output["monitor"] or (
            "val_loss" if config["data"]["validation_split"] else "loss"
        )
        callbacks.append(
            ModelCheckpoint(out_dir / output["best"], monitor=monitor, save_best_only=True)
        )
    if config["train"]["stop_on_nonfinite"]:
        callbacks.append(TerminateOnNaN(raise_error=True))
    history = History()
    optimizer_changes = {
        key.split(".", 1)[1]: new
        for key, (_, new) in changes.items()
        if key.startswith("optimizer.") and key != "optimizer.name"
    }
    callbacks += [
        history,
        CSVLogger(out_dir / "history.csv"),
        run_folder.RunFiles(history, out_dir / "history.json"),
        run_folder.RunCheckpoints(
            out_dir / "checkpoints",
            output["save_every"] or "epoch",
            output["keep"],
            restore_from,
            out_dir / output["checkpoint"],
            config.text,
            optimizer_changes,
        ),
    ]
    return callbacks


@dataclass
class _Run:
    """Everything ``train`` sets up before fitting."""

    config: Config
    model: Any
    data: Data
    optimizer: Any
    scheduler: Any
    out_dir: Path


def _setup(config: Config, *, dry_run: bool) -> _Run:
    """Build and compile the model and the scheduler (no training)."""
    model, data = _prepare(config, show_summary=dry_run)
    model = build.sync_batchnorm(config.values, model)
    optimizer = _compile(config, model)
    scheduler = build.build_scheduler(config.values, optimizer)
    return _Run(config, model, data, optimizer, scheduler, Path(config["output"]["dir"]))


def _fit(run: _Run, callbacks: list[Any], comm: Any) -> Any:
    """``model.fit`` with the config's data and train settings (a restore, if any, is
    done inside by the checkpoint callback)."""
    data, train_config = run.config["data"], run.config["train"]
    return run.model.fit(
        run.data.x_train,
        run.data.y_train,
        batch_size=data["batch_size"],
        epochs=train_config["epochs"],
        verbose=train_config["verbose"],
        callbacks=callbacks,
        validation_split=data["validation_split"],
        shuffle=data["shuffle"],
        seed=run.config["seed"],
        distributed=comm,
    )


def train(
    config_path: Path,
    overrides: Sequence[str] = (),
    *,
    resume: str | None = None,
    device: str | None = None,
    dry_run: bool = False,
    print_config: bool = False,
    allow_change: Sequence[str] = (),
) -> None:
    """``nnkit train``: fit the configured model, keeping a resumable run folder.

    Prints the last epoch's logs, the test split's loss and metrics (``test accuracy:
    0.97...``) and the files of the run folder (see :mod:`nnkit.cli.run_folder`).
    The first SIGINT or SIGTERM finishes the current step, writes a resumable
    checkpoint and exits 130 or 143 with the command that resumes; a second SIGINT
    aborts at once (the last complete checkpoint stays).

    Args:
        config_path: the YAML config.
        overrides: ``--set key.path=value`` strings.
        resume: ``'auto'`` (the newest verified checkpoint of the run folder, or a fresh
            start if there is none) or a checkpoint file; None starts fresh.
        device: replaces the config's ``device``.
        dry_run: validate, build the model on one batch and print its summary only.
        print_config: print the resolved config as YAML and do nothing else.
        allow_change: config keys (or key prefixes) that may differ from the resumed
            checkpoint's config.

    Under ``mpiexec -n N`` every process trains a replica on its shard of each batch
    (gradients averaged across processes; ``data.batch_size`` is the global batch) and
    rank 0 alone prints and writes the run folder.

    Raises:
        CLIError: for a config problem, a checkpoint that does not fit or a config
            changed on resume (exit 2), an interruption (exit 130/143), a non-finite loss
            (exit 1), or an ``mpiexec`` launch without mpi4py.
    """
    config = load_config(config_path, overrides, device=device)
    build.check_names(config.values)  # every name and argument type, before anything runs
    if print_config:
        print(config.text, end="")
        return
    comm = _communicator(config)
    try:
        with _quiet_unless(comm.is_chief):
            _train(
                config,
                comm,
                resume=resume,
                dry_run=dry_run,
                allow_change=allow_change,
                command=_resume_command(config_path, overrides, device),
            )
    except CLIError as stop:
        if comm.world_size > 1 and stop.exit_code == 1:
            # one rank's non-finite loss: the others wait in a collective; end them all
            print(f"[rank {comm.rank}] {stop}", file=sys.stderr)
            comm.abort(1)
        if not comm.is_chief:  # every rank stopped alike (a config error, a signal):
            raise RunStopped("", stop.exit_code) from None  # rank 0 reports it
        raise


def _resume_command(config_path: Path, overrides: Sequence[str], device: str | None) -> str:
    words = ["nnkit", "train", str(config_path)]
    for override in overrides:
        words += ["--set", override]
    if device is not None:
        words += ["--device", device]
    return shlex.join(words + ["--resume", "auto"])


def _train(
    config: Config,
    comm: Any,
    *,
    resume: str | None,
    dry_run: bool,
    allow_change: Sequence[str],
    command: str,
) -> None:
    """``train`` on this process (its stdout already silenced unless it is rank 0)."""
    batch = config["data"]["batch_size"]
    if batch % comm.world_size:
        fit = [b for b in range(batch - batch % comm.world_size, 0, -comm.world_size)][:1]
        raise ConfigError(
            "data.batch_size",
            f"{batch} is the global batch, split over "
            f"{comm.world_size} processes: make it a multiple of "
            f"{comm.world_size} (e.g. {fit[0] if fit else comm.world_size}, or "
            f"{batch - batch % comm.world_size + comm.world_size})",
        )
    out_dir = Path(config["output"]["dir"])
    restore_from = resuming.resume_point(resume, out_dir / "checkpoints")
    changes = {}
    if restore_from is not None:
        resuming.check_world_size(restore_from, comm)
        changes = resuming.check_changes(config, restore_from, allow_change)
    run = _setup(config, dry_run=dry_run)
    if dry_run:
        print(
            f"dry run: the config is valid ({len(run.data.x_train)} training samples); "
            "nothing was trained or written"
        )
        return
    callbacks = _callbacks(run, restore_from, changes)
    if not comm.is_chief:
        _fit_or_stop(run, callbacks, comm, command)
        return
    with run_folder.tee_output(out_dir / "train.log") as log:
        _open_run_folder(run, restore_from, changes)
        try:
            history = _fit_or_stop(run, callbacks, comm, command)
        except RunStopped as stop:  # printed by the caller; logged here
            log.write(f"{stop}\n")
            raise
        _report(run, history)


def _fit_or_stop(run: _Run, callbacks: list[Any], comm: Any, command: str) -> Any:
    """Fit under graceful signals; an interruption or a NaN loss becomes a
    :class:`RunStopped` with its message and exit status."""
    try:
        with graceful_interrupts(final=process.ENDS_PROCESS), resuming.warnings_as_lines():
            return _fit(run, callbacks, comm)
    except TrainingInterrupted as stop:
        where = (
            f"epoch {stop.epoch + 1}, step {stop.step + 1}"
            if stop.step >= 0
            else f"the end of epoch {stop.epoch + 1}"
        )
        raise RunStopped(
            f"Interrupted at {where}. Resume with: {command}", stop.exit_code
        ) from None
    except KeyboardInterrupt:
        raise RunStopped(
            f"Aborted: the last complete checkpoint is kept. Resume with: {command}", 130
        ) from None
    except NonFiniteLossError as err:
        raise RunStopped(
            f"{err}; no checkpoint holds non-finite weights (the newest in "
            f"{run.out_dir / 'checkpoints'} is the last finite state)",
            1,
        ) from None


def _open_run_folder(run: _Run, restore_from: Path | None, changes: dict) -> None:
    """Write ``config.yaml``; record accepted changes; set a fresh run's folder apart
    from a previous run's checkpoints."""
    out_dir = run.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    checkpoints = out_dir / "checkpoints"
    if restore_from is None:
        for name in ("history.csv", "history.json"):
            with contextlib.suppress(FileNotFoundError):
                (out_dir / name).unlink()
        if checkpoints.is_dir() and any(checkpoints.iterdir()):
            previous = out_dir / "checkpoints.previous"
            shutil.rmtree(previous, ignore_errors=True)
            checkpoints.rename(previous)
            print(f"note: a fresh run; the previous run's checkpoints are in {previous}")
    else:
        print(resuming.resume_line(restore_from, run.config["train"]["epochs"]))
    run_folder.write_atomic(out_dir / "config.yaml", run.config.text)
    if changes:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with open(out_dir / "changes.log", "a", encoding="utf-8") as log:
            for key, (old, new) in changes.items():
                log.write(f"{stamp} resume from {restore_from}: {key}: {old!r} -> {new!r}\n")
                print(f"accepted change (--allow-change): {key}: {old!r} -> {new!r}")


def _report(run: _Run, history: Any) -> None:
    """The last epoch's and the test split's metrics, then every file of the run."""
    output, out_dir = run.config["output"], run.out_dir
    epochs = run.config["train"]["epochs"]
    if history.epoch:
        final = {k: v[-1] for k, v in history.history.items()}
        print(f"epoch {history.epoch[-1] + 1}/{epochs}: {_format_logs(final)}")
    _test_logs(run.config, run.model, run.data)
    print(f"checkpoint: {out_dir / output['checkpoint']}")
    if output["best"] is not None:
        best = out_dir / output["best"]
        print(f"best: {best}" if best.exists() else "best: none saved")
    print(f"history: {out_dir / 'history.csv'}, {out_dir / 'history.json'}")
    print(run_folder.plot_curves(history.history, out_dir / "curves.png"))
    print(f"log: {out_dir / 'train.log'}")


def evaluate(
    config_path: Path, checkpoint: Path, overrides: Sequence[str] = (), *, device: str | None = None
) -> None:
    """``nnkit evaluate``: the loss and metrics of a checkpoint on the test split.

    Raises:
        CLIError: for a config problem, a config without a test split, or a checkpoint
            that does not fit the configured model.
    """
    config = load_config(config_path, overrides, device=device)
    model, data = _prepare(config)
    if data.x_test is None:
        raise ConfigError(
            "data.test_size",
            "no test split to evaluate on: set data.test_size > 0 (or a test file)",
        )
    _restore(checkpoint, "--checkpoint", model=model)
    _compile(config, model)
    _test_logs(config, model, data)


def _fit_input(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Reshape the samples to the model's input shape when only the layout differs."""
    size = int(np.prod(shape))
    if x.shape[1:] == shape:
        return x
    if x.ndim >= 1 and x.size and x.size % size == 0 and int(np.prod(x.shape[1:])) in (size, 1):
        return x.reshape((-1,) + shape)
    raise ConfigError(
        "--input",
        f"samples of shape {list(x.shape[1:])} do not fit the "
        f"model, which takes samples of shape {list(shape)}",
    )


def _print_predictions(outputs: np.ndarray, classify: bool) -> None:
    """One line per sample: the class for a classifier, else the output values."""
    if classify and outputs.ndim == 2:
        print("\n".join(str(int(label)) for label in outputs.argmax(axis=1)))
        return
    for row in outputs.reshape(len(outputs), -1):
        print(" ".join(f"{value:.6g}" for value in row))


def predict(
    config_path: Path,
    checkpoint: Path,
    input_path: Path,
    output_path: Path | None = None,
    overrides: Sequence[str] = (),
    *,
    device: str | None = None,
) -> None:
    """``nnkit predict``: the model's outputs for the samples in ``input_path``.

    With ``output_path`` (``.npy`` or ``.csv``) the raw outputs are written there;
    otherwise one line per sample is printed: the arg-max class for a classification
    loss, else the output values.

    Raises:
        CLIError: for a config problem, an unreadable input, samples of the wrong shape
            or a checkpoint that does not fit the configured model.
    """
    if output_path is not None and output_path.suffix.lower() not in _OUTPUT_SUFFIXES:
        raise ConfigError("--output", f"{output_path}: expected a .npy or .csv file name")
    config = load_config(config_path, overrides, device=device)
    x = read_input(str(input_path))
    model, data = _prepare(config)
    _restore(checkpoint, "--checkpoint", model=model)
    outputs = model.predict(
        _fit_input(x, data.x_train.shape[1:]), batch_size=config["data"]["batch_size"], verbose=0
    )
    if output_path is None:
        _print_predictions(outputs, config["loss"] in CLASSIFICATION_LOSSES)
    elif output_path.suffix.lower() == ".npy":
        np.save(output_path, outputs)
    else:
        np.savetxt(output_path, outputs.reshape(len(outputs), -1), delimiter=",", fmt="%.8g")
    if output_path is not None:
        print(
            f"wrote {len(outputs)} predictions of shape {list(outputs.shape[1:])} to {output_path}"
        )


def summary(config_path: Path, overrides: Sequence[str] = ()) -> None:
    """``nnkit summary``: the model's layers, output shapes and parameter counts.

    Uses ``model.input_shape`` when the config gives it, else one batch of the data.

    Raises:
        CLIError: for a config problem.
    """
    config = load_config(config_path, overrides)
    with_data = config["model"]["input_shape"] is None
    _prepare(config, with_data=with_data, show_summary=True, on_device=False)


def verify(path: Path) -> None:
    """``nnkit verify``: read every dataset of a checkpoint and check its checksum.

    Raises:
        RunStopped: (exit 1) naming the file and the damaged dataset.
        ConfigError: for a file that does not exist.
    """
    if not path.is_file():
        raise ConfigError("CHECKPOINT", f"file not found: {path}")
    try:
        summary = verify_checkpoint(path)
    except CheckpointError as err:
        raise RunStopped(f"damaged: {err}", 1) from None
    print(f"ok: {path} ({summary['datasets']} datasets, {summary['bytes']} bytes verified)")
