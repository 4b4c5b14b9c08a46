"""What ``nnkit train/evaluate/predict/summary`` do, as plain functions.

:mod:`nnkit.cli.app` parses the command line and calls these; they raise
:class:`~nnkit.cli.errors.CLIError` for anything the user can fix and print results to
stdout. Everything goes through nnkit's public API: ``Sequential``, ``Model.compile``,
``fit``, ``evaluate``, ``predict``, ``summary`` and :mod:`nnkit.io`.
"""

from __future__ import annotations

import contextlib
import io as _io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nnkit.cli import build
from nnkit.cli.config import Config, load_config
from nnkit.cli.datasets import Data, load_data, read_input
from nnkit.cli.errors import CLIError, ConfigError
from nnkit.cli.schema import CLASSIFICATION_LOSSES

__all__ = ["train", "evaluate", "predict", "summary"]

_OUTPUT_SUFFIXES = (".npy", ".csv")


def _format_logs(logs: dict[str, Any], prefix: str = "") -> str:
    """``loss: 0.1234 - accuracy: 0.9700`` (Keras's layout), names prefixed."""
    return " - ".join(f"{prefix}{name}: {float(value):.4f}" for name, value in logs.items())


def _communicator() -> Any:
    """This process's group: MPI under ``mpiexec -n N`` (N > 1), else a single process."""
    from nnkit import distributed

    try:
        return distributed.init()
    except RuntimeError as err:  # launched by mpiexec, but mpi4py is missing or mismatched
        raise CLIError(str(err)) from None


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
    import nnkit

    was_training = model.training
    model.eval()
    try:
        with nnkit.no_grad():
            model(nnkit.tensor(batch))
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
    import nnkit

    build.check_names(config.values)
    device = build.resolve_device(config["device"]) if on_device else None
    nnkit.manual_seed(config["seed"])
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
    model.compile(optimizer, config["loss"], metrics=config["metrics"])
    return optimizer


def _restore(path: Path, option: str, **targets: Any) -> dict[str, Any]:
    from nnkit import io

    if not path.is_file():
        raise ConfigError(option, f"file not found: {path}")
    try:
        if set(targets) == {"model"}:
            io.load_weights(path, targets["model"])
            return {}
        return io.load_checkpoint(path, **targets)
    except io.CheckpointError as err:  # not a checkpoint, damaged, or a section missing
        raise ConfigError(option, str(err)) from None
    except (ValueError, RuntimeError, KeyError) as err:
        text = " ".join(str(err).split())
        raise ConfigError(option, f"{path} does not fit this config: {text}") from None


def _test_logs(config: Config, model: Any, data: Data) -> None:
    """Print the loss and metrics on the test split (nothing if there is none)."""
    if data.x_test is None:
        return
    logs = model.evaluate(
        data.x_test, data.y_test, batch_size=config["data"]["batch_size"], verbose=0
    )
    print(f"{_format_logs(logs, 'test ')} ({len(data.x_test)} test samples)")


def _callbacks(config: Config, scheduler: Any, out_dir: Path) -> list[Any]:
    """The configured callbacks, plus the scheduler's and ``output.best``'s."""
    from nnkit.callbacks import LearningRateScheduler, ModelCheckpoint

    callbacks = build.build_callbacks(config.values, out_dir)
    output = config["output"]
    if scheduler is not None:
        callbacks.append(LearningRateScheduler(scheduler))
    if output["best"] is not None:
        monitor = output["monitor"] or (
            "val_loss" if config["data"]["validation_split"] else "loss"
        )
        callbacks.append(
            ModelCheckpoint(out_dir / output["best"], monitor=monitor, save_best_only=True)
        )
    return callbacks


def _resume_epoch(path: Path, run: _Run) -> int:
    """Restore model, optimizer and scheduler; the epoch to continue from."""
    info = _restore(
        path, "--resume", model=run.model, optimizer=run.optimizer, scheduler=run.scheduler
    )
    if info.get("epoch") is None:
        raise ConfigError("--resume", f"{path} records no epoch (was it written by nnkit train?)")
    return int(info["epoch"]) + 1


@dataclass
class _Run:
    """Everything ``train`` sets up before fitting."""

    config: Config
    model: Any
    data: Data
    optimizer: Any
    scheduler: Any
    callbacks: list[Any]
    out_dir: Path


def _setup(config: Config, *, dry_run: bool) -> _Run:
    """Build and compile the model, the scheduler and the callbacks (no training)."""
    model, data = _prepare(config, show_summary=dry_run)
    optimizer = _compile(config, model)
    scheduler = build.build_scheduler(config.values, optimizer)
    out_dir = Path(config["output"]["dir"])
    callbacks = _callbacks(config, scheduler, out_dir)
    return _Run(config, model, data, optimizer, scheduler, callbacks, out_dir)


def _fit(run: _Run, first: int, comm: Any) -> Any:
    """``model.fit`` from epoch ``first`` with the config's data and train settings."""
    data, train_config = run.config["data"], run.config["train"]
    run.out_dir.mkdir(parents=True, exist_ok=True)
    return run.model.fit(
        run.data.x_train,
        run.data.y_train,
        batch_size=data["batch_size"],
        epochs=train_config["epochs"],
        verbose=train_config["verbose"],
        callbacks=run.callbacks,
        validation_split=data["validation_split"],
        shuffle=data["shuffle"],
        initial_epoch=first,
        seed=run.config["seed"],
        distributed=comm,
    )


def _save(run: _Run, last_epoch: int) -> Path:
    """Write the final checkpoint, with the effective config as YAML text."""
    from nnkit import io

    path = run.out_dir / run.config["output"]["checkpoint"]
    io.save_checkpoint(
        path,
        model=run.model,
        optimizer=run.optimizer,
        scheduler=run.scheduler,
        epoch=last_epoch,
        config=run.config.text,
    )
    return path


def train(
    config_path: Path,
    overrides: Sequence[str] = (),
    *,
    resume: Path | None = None,
    device: str | None = None,
    dry_run: bool = False,
) -> None:
    """``nnkit train``: fit the configured model, save a checkpoint, print the metrics.

    Prints the last epoch's logs, the test split's loss and metrics (``test accuracy:
    0.97...``) and the checkpoint's path.

    Args:
        config_path: the YAML config.
        overrides: ``--set key.path=value`` strings.
        resume: a checkpoint written by ``nnkit train`` to continue from (model,
            optimizer and scheduler state; training restarts at its epoch + 1).
        device: replaces the config's ``device``.
        dry_run: validate, build the model on one batch and print its summary only.

    Under ``mpiexec -n N`` every process trains a replica on its shard of each batch
    (gradients averaged across processes; ``data.batch_size`` is the global batch) and
    rank 0 alone prints and writes the checkpoint.

    Raises:
        CLIError: for a config problem, a checkpoint that does not fit, or an
            ``mpiexec`` launch without mpi4py.
    """
    comm = _communicator()
    with _quiet_unless(comm.is_chief):
        _train(config_path, overrides, comm, resume=resume, device=device, dry_run=dry_run)


def _train(
    config_path: Path,
    overrides: Sequence[str],
    comm: Any,
    *,
    resume: Path | None,
    device: str | None,
    dry_run: bool,
) -> None:
    """``train`` on this process (its stdout already silenced unless it is rank 0)."""
    run = _setup(load_config(config_path, overrides, device=device), dry_run=dry_run)
    if dry_run:
        print(
            f"dry run: the config is valid ({len(run.data.x_train)} training samples); "
            "nothing was trained or written"
        )
        return
    first = _resume_epoch(resume, run) if resume else 0
    epochs = run.config["train"]["epochs"]
    if first >= epochs:
        print(f"nothing to train: the checkpoint has {first} epochs, train.epochs={epochs}")
        _test_logs(run.config, run.model, run.data)
        return
    _train_and_report(run, first, comm)


def _train_and_report(run: _Run, first: int, comm: Any) -> None:
    """Fit, save the checkpoint, print the last epoch's and the test split's metrics."""
    history = _fit(run, first, comm)
    if not comm.is_chief:
        return
    last = history.epoch[-1] if history.epoch else first - 1
    checkpoint = _save(run, last)
    final = {k: v[-1] for k, v in history.history.items()} if history.epoch else {}
    print(f"epoch {last + 1}/{run.config['train']['epochs']}: {_format_logs(final)}")
    _test_logs(run.config, run.model, run.data)
    print(f"checkpoint: {checkpoint}")


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
        _fit_input(x, data.x_train.shape[1:]), batch_size=config["data"]["batch_size"]
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
