"""More normalisation layers: ``RMSNorm``, ``InstanceNorm1d/2d/3d``, ``LocalResponseNorm``."""

from __future__ import annotations

import numbers

from nnkit.autograd.factories import empty
from nnkit.autograd.ops.nn_extra import instance_norm, local_response_norm, rms_norm
from nnkit.autograd.tensor import Tensor
from nnkit.layers import initializers as init
from nnkit.layers.module import Module, Parameter
from nnkit.layers.normalization import _BatchNorm

__all__ = [
    "RMSNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LocalResponseNorm",
]


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dimensions.

    ``y = x / sqrt(mean(x**2) + eps) · γ``.

    Args:
        normalized_shape: the trailing shape to normalise over (int or tuple).
        eps: added to the mean square (default None: the dtype's machine epsilon).
        elementwise_affine: learn ``weight`` γ of shape ``normalized_shape`` (ones).

    Example:
        >>> RMSNorm(2)(nnkit.tensor([[3.0, 4.0]]))
        tensor([[0.8485, 1.1314]], grad_fn=<...>)
    """

    def __init__(
        self,
        normalized_shape,
        eps: float | None = None,
        elementwise_affine: bool = True,
        *,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """γ to 1."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class _InstanceNorm(_BatchNorm):
    """Instance normalisation: statistics per sample and channel over the spatial dims."""

    _nd = 0

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        *,
        device=None,
        dtype=None,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype
        )
        if affine and not bias:  # PyTorch's ``bias=False``: learn γ only
            del self.bias
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise ValueError(
                f"{type(self).__name__}: expected {nd + 1}D or {nd + 2}D input, got input of "
                f"shape {tuple(input.shape)}"
            )
        unbatched = input.ndim == nd + 1
        if unbatched:
            input = input.unsqueeze(0)
        output = instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return output.squeeze(0) if unbatched else output

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


_INSTANCE_DOC = """Instance normalisation of ``{shape}`` inputs (or unbatched, without ``N``).

    Each sample's channels are normalised over their {what}:
    ``y = (x − E[x]) / sqrt(Var[x] + eps) · γ + β``.

    Args:
        num_features: the number of channels C.
        eps: added to the variance for stability (default 1e-5).
        momentum: the update factor of the running estimates (default 0.1).
        affine: learn γ (``weight``, ones) and β (``bias``, zeros) (default False).
        track_running_stats: keep running estimates, used in eval mode (default False).
        bias: with ``affine``, also learn β (keyword only; default True).

    Example:
        >>> {example}
        {result}
    """


class InstanceNorm1d(_InstanceNorm):
    _nd = 1
    __doc__ = _INSTANCE_DOC.format(
        shape="(N, C, L)",
        what="length",
        example="InstanceNorm1d(1)(nnkit.tensor([[[1.0, 2.0, 3.0]]])).flatten()",
        result="tensor([-1.2247,  0.0000,  1.2247])",
    )


class InstanceNorm2d(_InstanceNorm):
    _nd = 2
    __doc__ = _INSTANCE_DOC.format(
        shape="(N, C, H, W)",
        what="height and width",
        example="InstanceNorm2d(3, affine=True)(nnkit.randn(2, 3, 4, 4)).shape",
        result="(2, 3, 4, 4)",
    )


class InstanceNorm3d(_InstanceNorm):
    _nd = 3
    __doc__ = _INSTANCE_DOC.format(
        shape="(N, C, D, H, W)",
        what="depth, height and width",
        example="InstanceNorm3d(3)(nnkit.randn(2, 3, 2, 4, 4)).shape",
        result="(2, 3, 2, 4, 4)",
    )


class LocalResponseNorm(Module):
    """Local response normalisation across channels (dimension 1).

    ``b_c = a_c / (k + alpha/n · Σ_{c' near c} a_{c'}**2) ** beta``, over ``n = size``
    neighbouring channels.

    Args:
        size: the number of neighbouring channels summed over.
        alpha: the multiplicative factor (default 1e-4).
        beta: the exponent (default 0.75).
        k: the additive factor (default 1.0).

    Example:
        >>> LocalResponseNorm(2)(nnkit.randn(1, 4, 3, 3)).shape
        (1, 4, 3, 3)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
