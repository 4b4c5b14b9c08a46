"""The ``nnkit`` typer app: argument parsing only; the work is in :mod:`nnkit.cli.commands`.

Nothing heavier than typer is imported here at module level: each command imports
:mod:`nnkit.cli.commands` (and through it the layers, optimizers, data and IO) when it
runs, so ``nnkit --version`` and ``nnkit --help`` answer at once (as MLX's
``__main__.py`` does). Importing the commands up front takes about 0.3 s more
(measured: ``nnkit --version`` 0.4 s, ``import nnkit.cli.commands`` 0.7 s).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import typer

from nnkit._version import __version__
from nnkit.backends.host_memory import keep_freed_memory
from nnkit.cli import process
from nnkit.cli.errors import CLIError

__all__ = ["app", "main"]

app = typer.Typer(
    name="nnkit",
    help="Train, evaluate and use nnkit models described by a YAML config.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

ConfigArg = Annotated[Path, typer.Argument(help="The run's YAML config.", show_default=False)]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY.PATH=VALUE",
        help="Override a config value (YAML-typed), e.g. --set train.epochs=2; repeatable.",
    ),
]
DeviceOpt = Annotated[
    str | None,
    typer.Option(help="Device to run on ('cpu', 'cuda', 'cuda:N'); replaces the config's device."),
]
CheckpointOpt = Annotated[
    Path, typer.Option(help="A checkpoint written by nnkit train.", show_default=False)
]


def _run(command: Callable[..., None], *args: Any, **kwargs: Any) -> None:
    """Call a command; a :class:`CLIError` becomes one line on stderr and its exit status
    (2 for a config error)."""
    try:
        command(*args, **kwargs)
    except CLIError as err:
        if str(err):  # an empty message: another rank of the job reports it
            typer.echo(str(err), err=True)
        raise typer.Exit(err.exit_code) from None


def _commands() -> ModuleType:
    """:mod:`nnkit.cli.commands`, imported when a command runs (see the module's doc)."""
    from nnkit.cli import commands  # start-up: loads the whole library

    return commands


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"nnkit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print nnkit's version."
        ),
    ] = False,
) -> None:
    """Train, evaluate and use nnkit models described by a YAML config."""


@app.command()
def train(
    config: ConfigArg,
    set_: SetOpt = None,
    resume: Annotated[
        str | None,
        typer.Option(
            metavar="auto|CKPT",
            help="Continue a run exactly where it stopped: 'auto' takes the newest verified "
            "checkpoint of the run folder (none: start fresh), or give a checkpoint file.",
        ),
    ] = None,
    device: DeviceOpt = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Validate, build the model on one batch, print its summary; train nothing.",
        ),
    ] = False,
    print_config: Annotated[
        bool,
        typer.Option(
            "--print-config",
            help="Print the resolved config (after --set) as YAML; do nothing else.",
        ),
    ] = False,
    allow_change: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-change",
            metavar="KEY",
            help="On --resume, accept a change of this config key (e.g. optimizer.lr); "
            "repeatable. Recorded in the run folder's changes.log.",
        ),
    ] = None,
) -> None:
    """Train the configured model in a resumable run folder; print the final metrics.

    Ctrl-C (or SIGTERM) finishes the current step, writes a checkpoint and prints the
    command that resumes the run; a second Ctrl-C aborts at once.
    """
    _run(
        _commands().train,
        config,
        set_ or [],
        resume=resume,
        device=device,
        dry_run=dry_run,
        print_config=print_config,
        allow_change=allow_change or [],
    )


@app.command()
def verify(
    checkpoint: Annotated[Path, typer.Argument(help="A checkpoint file.", show_default=False)],
) -> None:
    """Check a checkpoint's checksums: exit 0 if every dataset is intact, else 1."""
    _run(_commands().verify, checkpoint)


@app.command()
def evaluate(
    config: ConfigArg, checkpoint: CheckpointOpt, set_: SetOpt = None, device: DeviceOpt = None
) -> None:
    """Print the loss and metrics of a checkpoint on the config's test split."""
    _run(_commands().evaluate, config, checkpoint, set_ or [], device=device)


@app.command()
def predict(
    config: ConfigArg,
    checkpoint: CheckpointOpt,
    input: Annotated[
        Path,
        typer.Option(  # noqa: A002 (the option is --input)
            help="Samples to predict: .npy, .npz (array 'x') or .csv.", show_default=False
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            help="Write the raw outputs to this .npy or .csv file instead of printing "
            "one line per sample."
        ),
    ] = None,
    set_: SetOpt = None,
    device: DeviceOpt = None,
) -> None:
    """Print (or save) the model's predictions for the samples in a file."""
    _run(_commands().predict, config, checkpoint, input, output, set_ or [], device=device)


@app.command()
def export(
    config: ConfigArg,
    checkpoint: CheckpointOpt,
    output: Annotated[Path, typer.Option(help="The .onnx file to write.", show_default=False)],
    opset: Annotated[int | None, typer.Option(help="The ONNX opset (default 17).")] = None,
    set_: SetOpt = None,
) -> None:
    """Write the configured model with a checkpoint's weights as an ONNX file."""
    from nnkit.cli import export as exporting  # start-up: as _commands()

    _run(exporting.export, config, checkpoint, output, set_ or [], opset=opset)


@app.command()
def summary(config: ConfigArg, set_: SetOpt = None) -> None:
    """Print the configured model's layers, output shapes and parameter counts."""
    _run(_commands().summary, config, set_ or [])


def main() -> None:
    """The ``nnkit`` console script: the process is the run's, so malloc keeps the memory
    a step frees for the next (:func:`nnkit.backends.host_memory.keep_freed_memory`;
    ``NNKIT_KEEP_FREED_MEMORY=0`` leaves it as it is)."""
    process.ENDS_PROCESS = True
    if os.environ.get("NNKIT_KEEP_FREED_MEMORY", "1") != "0":
        keep_freed_memory()
    app(prog_name="nnkit")
