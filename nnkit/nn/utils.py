"""``nnkit.nn.utils``: gradient clipping and parameter/vector conversion."""

from __future__ import annotations

import math
from collections.abc import Iterable

from nnkit.autograd.factories import tensor
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops import cat, stack
from nnkit.autograd.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _as_list(parameters) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Iterable[Tensor] | Tensor,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale the gradients in place so that their joint norm is at most ``max_norm``.

    The norm is taken over all gradients together, as if concatenated into one vector:
    total = (Σ ‖gᵢ‖ₚᵖ)^(1/p) (the maximum ``|g|`` for ``norm_type=inf``). When total exceeds
    ``max_norm``, every gradient is multiplied by ``max_norm / (total + 1e-6)``.

    Args:
        parameters: a Tensor or an iterable of Tensors whose ``.grad`` is clipped.
        max_norm: the largest allowed norm.
        norm_type: p (``float('inf')`` for the max norm).
        error_if_nonfinite: raise if the total norm is NaN or infinite.

    Returns:
        The total norm before clipping (a 0-d Tensor).

    Raises:
        RuntimeError: if ``error_if_nonfinite`` and the norm is not finite.

    Example:
        >>> w = nnkit.tensor([3.0, 4.0], requires_grad=True)
        >>> (w * w).sum().backward()                       # grad = 2w = [6, 8], norm 10
        >>> nnkit.nn.utils.clip_grad_norm_([w], max_norm=1.0).item()
        10.0
        >>> w.grad                                          # now of norm 1 (up to 1e-6)
        tensor([0.6000, 0.8000])
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        if math.isinf(norm_type):
            norms = [g.detach().abs().amax() for g in grads]
            total = stack([n.to(grads[0].device) for n in norms]).amax()
        else:
            norms = [g.detach().abs().pow(norm_type).sum() for g in grads]
            total = stack([n.to(grads[0].device) for n in norms]).sum().pow(1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from "
                "`parameters` is non-finite, so it cannot be clipped. To "
                "disable this error and scale the gradients by the non-finite "
                "norm anyway, set `error_if_nonfinite=False`"
            )
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device).to(g.dtype))
    return total


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float) -> None:
    """Clamp every gradient in place to [−clip_value, clip_value].

    Args:
        parameters: a Tensor or an iterable of Tensors whose ``.grad`` is clamped
            (those without a gradient are skipped).
        clip_value: the largest allowed absolute value.

    Example:
        >>> w = nnkit.tensor([1.0, -1.0], requires_grad=True)
        >>> (w * nnkit.tensor([5.0, 0.5])).sum().backward()
        >>> nnkit.nn.utils.clip_grad_value_(w, 1.0)
        >>> w.grad
        tensor([1.0000, 0.5000])
    """
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one 1-d tensor.

    Args:
        parameters: the tensors, in order.

    Returns:
        A 1-d tensor of ``sum(p.numel())`` elements (part of the autograd graph).

    Example:
        >>> nnkit.nn.utils.parameters_to_vector(nn.Linear(3, 2).parameters()).shape
        (8,)
    """
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into the parameters, in place.

    Args:
        vec: a 1-d tensor with as many elements as all parameters together.
        parameters: the tensors to overwrite, in the order of
            :func:`parameters_to_vector`.

    Raises:
        ValueError: if ``vec`` is not 1-d or its size is not the parameters' total
            (checked before anything is written).

    Example:
        >>> layer = nn.Linear(2, 1)
        >>> nnkit.nn.utils.vector_to_parameters(nnkit.tensor([1.0, 2.0, 3.0]), layer.parameters())
        >>> layer.weight.tolist(), layer.bias.tolist()
        ([[1.0, 2.0]], [3.0])
    """
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if vec.ndim != 1 or vec.numel() != total:
        raise ValueError(
            f"vector_to_parameters: vec must be a 1-d tensor of {total} elements (the "
            f"parameters' total); got shape {tuple(vec.shape)}"
        )
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[offset : offset + n].reshape(p.shape))
            offset += n
