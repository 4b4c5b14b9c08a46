"""Fractional max pooling layers over :func:`nnkit.nn.functional.fractional_max_pool2d`
and ``3d``."""

from __future__ import annotations

from nnkit.autograd.ops import fractional_pool as _fp
from nnkit.autograd.tensor import Tensor
from nnkit.layers.module import Module

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class _FractionalMaxPool(Module):
    _nd = 2

    def __init__(
        self,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples=None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if output_ratio is not None:
            ratios = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,)
            if not all(0 < r < 1 for r in ratios):
                raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor):
        fn = _fp.fractional_max_pool2d if self._nd == 2 else _fp.fractional_max_pool3d
        return fn(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPool):
    """2-d fractional max pooling (:func:`nnkit.nn.functional.fractional_max_pool2d`):
    windows of ``kernel_size`` at pseudo-random fractional strides, drawn per call
    unless ``_random_samples`` is given.

    Args:
        kernel_size: the window, an int or ``(kh, kw)``.
        output_size: the output ``(Ho, Wo)`` (or an int), or None.
        output_ratio: ``(rh, rw)`` in ``(0, 1)`` instead of ``output_size`` (exactly one
            of the two must be given).
        return_indices: also return the indices of the maxima.
        _random_samples: fixed ``(N, C, 2)`` samples (a buffer), or None.

    Example:
        >>> pool = FractionalMaxPool2d(2, output_ratio=0.5)
        >>> pool(nnkit.randn(1, 3, 8, 8)).shape
        (1, 3, 4, 4)
    """

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPool):
    """3-d fractional max pooling (:func:`nnkit.nn.functional.fractional_max_pool3d`);
    arguments as :class:`FractionalMaxPool2d`, with three sizes and ``(N, C, 3)``
    samples.

    Example:
        >>> FractionalMaxPool3d(2, output_size=(2, 3, 3))(nnkit.randn(1, 2, 4, 5, 6)).shape
        (1, 2, 2, 3, 3)
    """

    _nd = 3
