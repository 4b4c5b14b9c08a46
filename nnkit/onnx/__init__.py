"""ONNX export (the optional extra ``onnx``: ``pip install 'nnkit[onnx]'``).

``nnkit.onnx.export(model, example_input, path)`` traces ``model`` in eval mode on
``example_input`` and writes an ONNX file that ONNX Runtime (or any ONNX runtime) runs:

    >>> nnkit.onnx.export(model, nnkit.randn(1, 64), "model.onnx")
"""

from nnkit.onnx._export import DEFAULT_OPSET, export
from nnkit.onnx._graph import UnsupportedOpError

__all__ = ["export", "UnsupportedOpError", "DEFAULT_OPSET"]
