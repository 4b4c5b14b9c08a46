"""``nnkit export``: the model a config describes, with a checkpoint's weights, as ONNX."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import nnkit.onnx as nnkit_onnx
from nnkit.autograd.factories import tensor
from nnkit.cli.commands import _prepare, _restore
from nnkit.cli.config import load_config
from nnkit.cli.errors import ConfigError, RunStopped

__all__ = ["export"]


def export(
    config_path: Path,
    checkpoint: Path,
    output_path: Path,
    overrides: Sequence[str] = (),
    *,
    opset: int | None = None,
) -> None:
    """Build the configured model, load ``checkpoint``'s weights and write ``output_path``.

    The model is traced on CPU on one batch of the config's data; its batch dimension
    is dynamic in the file.

    Raises:
        CLIError: for a config problem, a checkpoint that does not fit the model, a
            missing ``onnx`` package or a layer without an ONNX mapping.
    """
    if output_path.suffix.lower() != ".onnx":
        raise ConfigError("--output", f"{output_path}: expected a .onnx file name")
    config = load_config(config_path, overrides, device="cpu")
    model, data = _prepare(config)
    _restore(checkpoint, "--checkpoint", model=model)
    try:
        example = tensor(data.x_train[: config["data"]["batch_size"]])
        nnkit_onnx.export(model, example, output_path, opset=opset)
    except ImportError as err:
        raise RunStopped(f"nnkit export: {err}", 2) from None
    except nnkit_onnx.UnsupportedOpError as err:
        raise RunStopped(str(err), 1) from None
    print(
        f"wrote {output_path} (ONNX opset {opset or nnkit_onnx.DEFAULT_OPSET}, "
        f"input shape [batch, {', '.join(str(d) for d in example.shape[1:])}])"
    )
