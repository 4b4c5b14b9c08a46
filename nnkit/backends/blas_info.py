"""Which BLAS kernels this process runs: kernel choices that pay on one CPU family and not
on another (:func:`nnkit.backends.rnn_common.row_blocks_pay`) ask here, and the
benchmarks print it beside their figures (compare figures only where it is the same).
"""

from __future__ import annotations

import ctypes

__all__ = ["openblas_core"]


def openblas_core(maps: str = "/proc/self/maps") -> str | None:
    """The kernel family (``'Haswell'``, ``'SkylakeX'``, ...) NumPy's OpenBLAS runs in
    this process, or None where that cannot be asked (another BLAS, not Linux)."""
    try:
        with open(maps) as f:
            paths = sorted(
                {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line},
                key=lambda p: "numpy" not in p,  # NumPy's own first
            )
        for path in paths:
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                         "openblas_get_corename64_", "openblas_get_corename"):  # fmt: skip
                fn = getattr(lib, name, None)
                if fn is not None:
                    fn.restype = ctypes.c_char_p
                    return fn().decode()
    except (OSError, AttributeError, UnicodeDecodeError):
        pass
    return None
