"""Sphinx configuration of nnkit's documentation (API reference from the docstrings + guides).

Build: ``.venv/bin/sphinx-build -W --keep-going -b html docs docs/_build/html``
(``pip install -e ".[docs]"`` first). Optional packages are mocked, so the build needs
only nnkit's own dependencies.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

import nnkit  # noqa: E402

project = "nnkit"
author = "the nnkit authors"
copyright = "the nnkit authors"  # noqa: A001
release = nnkit.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "nnkit_api",
]

exclude_patterns = ["_build"]
templates_path: list[str] = []
html_static_path: list[str] = []
html_theme = "alabaster"
html_theme_options = {"description": "Keras-like neural networks on a define-by-run autograd"}

# Google-style docstrings only (napoleon), examples shown as doctest blocks.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# Attributes as fields of the class: no second entry beside the documented members.
napoleon_use_ivar = True

# Each object once, under its public name (see _ext/nnkit_api.py); signatures keep the
# annotations as written, and a method that overrides without a docstring of its own is
# not listed again with its parent's text.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_inherit_docstrings = False
# Optional dependencies: mocked, so the reference builds without them (and never imports
# a GPU or MPI runtime).
autodoc_mock_imports = ["mpi4py", "cupy", "cupyx", "onnx", "onnxruntime", "matplotlib"]

# Where an object is exported under several public names, the first module here that
# exports it is its home (explicit autoclass/autofunction/``:names:`` entries come first).
nnkit_api_priority = [
    "nnkit",
    "nnkit.linalg",
    "nnkit.special",
    "nnkit.signal.windows",
    "nnkit.autograd",
    "nnkit.nn.functional",
    "nnkit.nn",
    "nnkit.nn.init",
    "nnkit.nn.utils",
    "nnkit.optim",
    "nnkit.optim.lr_scheduler",
    "nnkit.optimizers",
    "nnkit.data",
    "nnkit.data.datasets",
    "nnkit.callbacks",
    "nnkit.metrics",
    "nnkit.training",
    "nnkit.saving",
    "nnkit.io",
    "nnkit.distributed",
    "nnkit.onnx",
    "nnkit.random",
]

# Section titles of the op families on the ops page (``:group-by-module:``), by the
# module's file stem; a family not named here is titled after its file.
nnkit_api_family_titles = {
    "arithmetic": "Arithmetic",
    "elementwise": "Unary elementwise math",
    "pointwise": "More elementwise ops",
    "special": "Special functions",
    "binary_math": "Binary elementwise math",
    "discrete": "Comparison, logic, bitwise and rounding",
    "selection": "Selection and clamping",
    "masking": "Masks and triangles",
    "reduction": "Reductions",
    "statistics": "Statistics and norms",
    "scan": "Cumulative scans",
    "ordering": "Sorting and ordering",
    "linalg": "Matrix products",
    "products": "More products",
    "diagonals": "Diagonals",
    "shape": "Shapes, views and broadcasting",
    "shaping": "More views and rearrangements",
    "joining": "Joining and splitting",
    "indexing": "Indexing, gather and scatter",
    "dim_index": "Selecting along a dimension",
    "inplace": "In-place ops",
    "activation": "Activations",
    "activation_extra": "More activations",
    "attention": "Attention",
    "conv": "Convolution",
    "loss": "Losses",
    "nn_misc": "Linear, dropout, embedding, padding",
    "norm": "Normalisation",
    "pool": "Pooling",
    "activation_inplace": "In-place activations",
    "adaptive_max": "Adaptive max pooling",
    "arrange": "Flips, splits and rearrangements",
    "conv_transpose": "Transposed convolution",
    "counting": "Counting, bucketing and set ops",
    "decomp": "Inverses, determinants, solves and factorizations",
    "distance": "Distances and similarities",
    "index_write": "Writes by index",
    "inplace_math": "In-place arithmetic and math",
    "interpolate": "Interpolation",
    "linalg_more": "Norms and composite linear algebra",
    "loss_extra": "More losses",
    "ctc": "Connectionist temporal classification",
    "loss_fused": "Fused cross-entropy",
    "nn_extra": "Shuffles, more norms, bilinear",
    "pool3d": "3-d pooling",
    "pool_more": "Power-average pooling and max unpooling",
    "random_ops": "Random sampling",
    "special_more": "More special functions",
    "special_extra": "Bessel, zeta, polygamma and incomplete gamma",
    "windows": "Window functions",
}
