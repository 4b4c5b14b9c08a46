"""More ``torch.nn.functional`` ops: the pixel and channel shuffles, RMS, instance and
local response norms, and the bilinear map.

Shuffles are reshapes and permutations (their gradient is the inverse permutation); the
others are compositions of differentiable ops with torch's formulas.
"""

from __future__ import annotations

from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.ops._util import check_tensor
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.ops.norm import batch_norm

__all__ = [
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "rms_norm",
    "instance_norm",
    "local_response_norm",
    "bilinear",
]

_EPS = {
    "float16": 0.0009765625,
    "float32": 1.1920928955078125e-07,
    "float64": 2.220446049250313e-16,
}


def _factor(x, r, op, name):
    check_tensor(x, op)
    if x.ndim < 3:
        raise ValueError(f"{op}: expects an input of at least 3 dimensions, got {x.shape}")
    if not isinstance(r, int) or r <= 0:
        raise ValueError(f"{op}: {name} must be a positive int, got {r!r}")
    return x.shape[:-3], x.shape[-3:]


def pixel_shuffle(input, upscale_factor):
    """``(*, C * r**2, H, W)`` to ``(*, C, H * r, W * r)``: each group of ``r**2``
    channels becomes an ``r x r`` block of pixels (``r = upscale_factor``).

    Example:
        >>> F.pixel_shuffle(nnkit.arange(4).reshape(1, 4, 1, 1), 2).reshape(2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    batch, (c, h, w) = _factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    r = upscale_factor
    if c % (r * r):
        raise ValueError(
            f"pixel_shuffle: {c} channels do not divide by upscale_factor**2 = {r * r}"
        )
    nb = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """The inverse of :func:`pixel_shuffle`: ``(*, C, H * r, W * r)`` to
    ``(*, C * r**2, H, W)`` (``r = downscale_factor``).

    Example:
        >>> F.pixel_unshuffle(nnkit.arange(4).reshape(1, 1, 2, 2), 2).flatten()
        tensor([0, 1, 2, 3])
    """
    batch, (c, h, w) = _factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    r = downscale_factor
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: height {h} and width {w} must divide by {r}")
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """``(N, C, *)`` with its channels, seen as ``(groups, C / groups)``, transposed
    (as ShuffleNet).

    Example:
        >>> F.channel_shuffle(nnkit.arange(4).reshape(1, 4, 1), 2).flatten()
        tensor([0, 2, 1, 3])
    """
    check_tensor(input, "channel_shuffle")
    if input.ndim < 3:
        raise ValueError(f"channel_shuffle: expects (N, C, *) with 3+ dims, got {input.shape}")
    n, c, *rest = input.shape
    if not isinstance(groups, int) or groups <= 0 or c % groups:
        raise ValueError(f"channel_shuffle: {c} channels do not split into {groups} groups")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``input / sqrt(mean(input**2) + eps) * weight``, the mean over the trailing
    ``normalized_shape`` dimensions; ``eps`` defaults to the dtype's machine epsilon.

    Example:
        >>> F.rms_norm(nnkit.tensor([[3.0, 4.0]]), (2,), eps=0.0)
        tensor([[0.8485, 1.1314]])
    """
    check_tensor(input, "rms_norm")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    if tuple(input.shape[input.ndim - k :]) != tuple(normalized_shape) or k > input.ndim:
        raise ValueError(
            f"rms_norm: normalized_shape {tuple(normalized_shape)} is not the trailing "
            f"shape of input {input.shape}"
        )
    if eps is None:
        eps = _EPS.get(input.dtype.name, _EPS["float32"])
    dims = tuple(range(input.ndim - k, input.ndim))
    if not dims:
        out = input * ((input * input) + eps).rsqrt()
    else:
        out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Normalise each ``(sample, channel)`` of an ``(N, C, *)`` input over its spatial
    dimensions (the running statistics, when given, are used instead with
    ``use_input_stats=False``, else updated in place with the mean over the batch), then
    scale by ``weight`` and shift by ``bias`` (per channel), as torch.

    Example:
        >>> F.instance_norm(nnkit.tensor([[[1.0, 3.0]]])).flatten()
        tensor([-1.0000,  1.0000])
    """
    check_tensor(input, "instance_norm")
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expects (N, C, *) with 3+ dims, got {input.shape}")
    b, c = input.shape[:2]
    x = input.reshape(1, b * c, *input.shape[2:])

    def rep(t):
        return None if t is None else t.repeat(b)

    rm, rv = rep(running_mean), rep(running_var)
    out = batch_norm(x, rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    with no_grad():
        for buf, new in ((running_mean, rm), (running_var, rv)):
            if buf is not None and use_input_stats:
                buf.copy_(new.reshape(b, c).mean(0))
    return out.reshape(*input.shape)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``input / (k + alpha * mean(x**2 over size neighbouring channels)) ** beta`` for
    an ``(N, C, *)`` input (the window is zero-padded at the channel ends), as torch.

    Example:
        >>> x = nnkit.tensor([[[2.0], [0.0]]])
        >>> F.local_response_norm(x, 2, alpha=1.0, beta=1.0).flatten()
        tensor([0.6667, 0.0000])
    """
    check_tensor(input, "local_response_norm")
    if input.ndim < 3:
        raise ValueError(f"local_response_norm: expects 3+ dims (N, C, *), got {input.shape}")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = input * input
    front, back = size // 2, (size - 1) // 2
    zeros_f = sq.new_zeros((sq.shape[0], front, *sq.shape[2:]))
    zeros_b = sq.new_zeros((sq.shape[0], back, *sq.shape[2:]))
    padded = cat([zeros_f, sq, zeros_b], 1)
    total = padded.narrow(1, 0, c)
    for t in range(1, size):
        total = total + padded.narrow(1, t, c)
    return input / (total * (alpha / size) + k) ** beta


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``.

    Example:
        >>> F.bilinear(nnkit.tensor([[1.0, 2.0]]), nnkit.tensor([[3.0]]), nnkit.ones(1, 2, 1))
        tensor([[9.0]])
    """
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        check_tensor(t, "bilinear", name)
    if weight.ndim != 3 or input1.shape[:-1] != input2.shape[:-1]:
        raise ValueError(
            f"bilinear: expects input1 (*, i), input2 (*, j) and weight (o, i, j), got "
            f"{input1.shape}, {input2.shape}, {weight.shape}"
        )
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    out = ((x1 @ weight) * x2.unsqueeze(0)).sum(-1).transpose(0, 1)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, weight.shape[0])
