"""ONNX export (the optional extra ``onnx``: ``pip install 'nnkit[onnx]'``).

``nnkit.onnx.export(model, example_input, path)`` traces ``model`` in eval mode on
``example_input`` and writes an ONNX file that ONNX Runtime (or any ONNX runtime) runs:

    >>> import os, tempfile
    >>> import onnxruntime
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    >>> path = os.path.join(tempfile.mkdtemp(), "model.onnx")
    >>> nnkit.onnx.export(model, nnkit.randn(1, 4), path)
    >>> session = onnxruntime.InferenceSession(path)
    >>> x = nnkit.randn(5, 4)                       # the batch dimension is dynamic
    >>> out = session.run(None, {"input": x.numpy()})[0]
    >>> out.shape, np.allclose(out, model(x).detach().numpy(), atol=1e-6)
    ((5, 3), True)
"""

from nnkit.onnx._export import DEFAULT_OPSET, export
from nnkit.onnx._graph import UnsupportedOpError

__all__ = ["export", "UnsupportedOpError", "DEFAULT_OPSET"]
