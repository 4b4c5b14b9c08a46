"""Normalisation layers: ``BatchNorm1d``, ``BatchNorm2d`` and ``LayerNorm``."""

from __future__ import annotations

import numbers

from nnkit.autograd.factories import empty, ones, tensor, zeros
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import int64
from nnkit.layers import _functional as F
from nnkit.layers import initializers as init
from nnkit.layers.module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm"]


class _BatchNorm(Module):
    """Batch normalisation over the channel dimension (dimension 1).

    y = (x − E[x]) / √(Var[x] + eps) · γ + β, with batch statistics in training mode and
    the running estimates in eval mode. Running estimates are updated as
    ``running = (1 − momentum) · running + momentum · batch`` (the unbiased batch
    variance); ``momentum=None`` gives a cumulative average.

    Args:
        num_features: the number of channels C.
        eps: added to the variance for stability.
        momentum: the update factor of the running estimates (or None, see above).
        affine: learn γ (``weight``, ones) and β (``bias``, zeros).
        track_running_stats: keep ``running_mean``, ``running_var`` and
            ``num_batches_tracked`` buffers; without them batch statistics are always used.
    """

    _expected_dims: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features <= 0:
            raise ValueError(
                f"{type(self).__name__}: num_features must be a positive integer. "
                f"Received: num_features={num_features!r}"
            )
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean to 0, running variance to 1, batch count to 0."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        """Reset the running statistics, γ to 1 and β to 0."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._expected_dims:
            shapes = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(
                f"{type(self).__name__}: expected {shapes} input, got input of "
                f"shape {tuple(input.shape)}"
            )
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / self.num_batches_tracked.item()
        use_batch_stats = self.training or self.running_mean is None
        # Running estimates are updated only when training with tracking on.
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch_stats,
            factor,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` inputs (see ``_BatchNorm``).

    Example:
        >>> BatchNorm1d(100)(nnkit.randn(20, 100)).shape
        (20, 100)
    """

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` inputs, per channel (see ``_BatchNorm``).

    Example:
        >>> BatchNorm2d(16)(nnkit.randn(8, 16, 5, 5)).shape
        (8, 16, 5, 5)
    """

    _expected_dims = (4,)


class LayerNorm(Module):
    """Normalisation over the last ``len(normalized_shape)`` dimensions of each sample.

    y = (x − E[x]) / √(Var[x] + eps) · γ + β (biased variance), statistics per sample.

    Args:
        normalized_shape: the trailing shape to normalise over (an int or a tuple).
        eps: added to the variance for stability.
        elementwise_affine: learn γ (``weight``, ones) and β (``bias``, zeros).
        bias: learn β (when ``elementwise_affine``).

    Example:
        >>> LayerNorm(10)(nnkit.randn(20, 5, 10)).shape
        (20, 5, 10)
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(zeros(self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """γ to 1 and β to 0."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )
