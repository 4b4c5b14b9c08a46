"""``SyncBatchNorm``: batch normalisation over the whole global batch of a group of ranks.

In data-parallel training each rank sees only its shard of a batch; a plain
``BatchNorm`` normalises with the statistics of that shard, so N ranks do not train
the model one process would. ``SyncBatchNorm`` (torch's name and semantics) computes
the statistics of the *global* batch in training mode, per channel:

* forward, two collectives: the local sums and sample counts are all-reduced, giving
  the global mean; then the local sums of squared deviations from that mean (a second
  pass, as accurate as one process's two-pass variance), giving the biased variance
  that normalises. The running variance is updated with the unbiased one
  (``count / (count − 1)``), as ``BatchNorm`` does;
* backward, one collective: the per-channel sums of ``dy`` and ``dy · x̂`` (``x̂`` the
  normalised input, ``dy`` the gradient reaching it), from which each rank computes
  its input gradient with the global count.

A rank whose shard is empty (0 samples, the tail of an uneven dataset) still takes part
in every collective with zeros and returns an empty output. In eval mode, or without a
group of more than one rank, the layer is exactly a ``BatchNorm``.

The group is, in this order: the ``process_group`` given; the group of the
data-parallel ``Model.fit`` running the layer (set for the duration of the fit); the
``mpiexec`` job's (:func:`nnkit.distributed.init`); none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from nnkit.autograd.factories import tensor, zeros_like
from nnkit.autograd.function import Function, ShapeError
from nnkit.autograd.grad_mode import is_grad_enabled, no_grad
from nnkit.autograd.ops.joining import cat
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import float64
from nnkit.distributed.communicator import Communicator
from nnkit.distributed.launch import init, launched_world_size
from nnkit.layers.module import Module
from nnkit.layers.normalization import _BatchNorm

__all__ = ["SyncBatchNorm", "fit_group"]


def _reduced_dims(input: Tensor) -> tuple[int, ...]:
    return (0,) + tuple(range(2, input.ndim))


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    return t.reshape((1, -1) + (1,) * (ndim - 2))


class _SyncBatchNormFunction(Function):
    """x ↦ x̂ = (x − mean) / √(var + eps) with the group's statistics (no affine part).

    ``share`` (None, or this rank's weight in the gradient average that follows, see
    :func:`fit_group`) and ``stats`` (a list that receives the global mean, biased
    variance and count, for the running estimates) ride along as plain arguments.
    """

    @staticmethod
    def forward(ctx, input, comm, eps, share, stats):
        c, ndim = input.shape[1], input.ndim
        dims = _reduced_dims(input)
        local = input.numel() // c
        # The sums are accumulated in the input's dtype, reduced and divided in float64
        # (the count travels with them: one collective).
        packed = cat(
            [
                input.sum(dims).to(float64),
                tensor([float(local)], dtype=float64, device=input.device),
            ]
        )
        comm.allreduce_(packed)
        count = int(round(packed[c].item()))
        ctx.comm, ctx.count, ctx.share = comm, count, share
        if count == 0:  # every rank's shard is empty
            stats.extend([None, None, 0])
            return input.clone()
        if count == 1:  # the same on every rank: they all raise here
            raise ValueError(
                "SyncBatchNorm: expected more than 1 value per channel when training, got 1 "
                f"over the whole group of {comm.world_size} (this rank's input has shape "
                f"{tuple(input.shape)})"
            )
        mean64 = packed[:c] / count
        mean = mean64.to(input.dtype)
        centered = input - _channel_view(mean, ndim)
        squares = (centered * centered).sum(dims).to(float64)
        comm.allreduce_(squares)
        var64 = squares / count
        invstd = (var64 + eps).rsqrt().to(input.dtype)
        stats.extend([mean64, var64, count])
        ctx.save_for_backward(input, mean, invstd)
        return centered * _channel_view(invstd, ndim)

    @staticmethod
    def backward(ctx, grad_output):
        none = (None, None, None, None)
        if ctx.count == 0:
            return (grad_output,) + none
        input, mean, invstd = ctx.saved_tensors
        c, ndim, share = input.shape[1], input.ndim, ctx.share
        dims = _reduced_dims(input)
        with no_grad():
            g = grad_output.detach()
            xhat = (input.detach() - _channel_view(mean, ndim)) * _channel_view(invstd, ndim)
            packed = cat([g.sum(dims), (g * xhat).sum(dims)]).to(float64)
            if share is not None:  # Σ_r share_r · (sums of rank r): see fit_group
                packed.mul_(float(share)) if share else packed.zero_()
            ctx.comm.allreduce_(packed)
            if share is not None and not share:  # a rank that counts for nothing
                dx = zeros_like(g)
            else:
                scale = ctx.count * (1.0 if share is None else float(share))
                means = (packed / scale).to(g.dtype)
                dx = (
                    g - _channel_view(means[:c], ndim) - xhat * _channel_view(means[c:], ndim)
                ) * _channel_view(invstd, ndim)
        if is_grad_enabled():  # create_graph=True: dx may not be differentiated again
            dx = _NoDoubleBackward.apply(grad_output, input, (dx,))
        return (dx,) + none


class _NoDoubleBackward(Function):
    """Passes the input gradient of SyncBatchNorm through; differentiating it raises."""

    @staticmethod
    def forward(ctx, grad_output, input, result):
        return result[0]

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            "SyncBatchNorm does not support double backward (differentiating its input "
            "gradient again, e.g. for a gradient penalty), as torch's does not; use "
            "BatchNorm for that computation"
        )


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation with the statistics of the global batch over a group of ranks.

    Takes ``(N, C, *)`` inputs, like ``BatchNorm1d``/``BatchNorm2d``. In training mode,
    on a group of more than one rank, the per-channel mean and variance are those of
    the concatenation of every rank's input (see :mod:`nnkit.distributed.sync_batchnorm`);
    a rank with an empty input still joins the collectives. In eval mode, or without
    such a group, it is a ``BatchNorm``. Its state dict has BatchNorm's keys, so
    checkpoints load into either.

    Args:
        num_features: the number of channels C.
        eps: added to the variance for stability.
        momentum: the update factor of the running estimates (None: cumulative average).
        affine: learn γ (``weight``) and β (``bias``).
        track_running_stats: keep ``running_mean``, ``running_var``, ``num_batches_tracked``.
        process_group: the :class:`~nnkit.distributed.Communicator` to synchronise over;
            None for the group of the data-parallel ``fit`` running the layer, else the
            ``mpiexec`` job's (:func:`nnkit.distributed.init`), else none.

    Raises:
        TypeError: if ``process_group`` is not a Communicator.
        ValueError: for an input of fewer than 2 dimensions, or (training) one value per
            channel over the whole group.

    Example:
        >>> from nnkit.distributed import ThreadGroup
        >>> def forward(comm):                 # two ranks, as threads of one process
        ...     layer = SyncBatchNorm(1, process_group=comm)
        ...     x = nnkit.tensor([[0.0], [2.0]]) + 4.0 * comm.rank
        ...     return layer(x).detach().flatten()
        >>> ThreadGroup(2).run(forward)        # normalised over [0, 2, 4, 6]
        [tensor([-1.3416, -0.4472]), tensor([0.4472, 1.3416])]
    """

    _expected_dims = range(2, 65)  # (N, C, *): BatchNorm's forward checks membership
    _fit_group: Communicator | None = None
    _fit_share: Callable[[], Any] | None = None

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Communicator | None = None,
        *,
        device=None,
        dtype=None,
    ) -> None:
        if process_group is not None and not isinstance(process_group, Communicator):
            raise TypeError(
                "SyncBatchNorm: process_group must be an nnkit.distributed."
                f"Communicator or None; received {type(process_group).__name__}"
            )
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype
        )
        self.process_group = process_group

    def _group(self) -> Communicator | None:
        """The group to synchronise over, or None (a group of one counts as none)."""
        comm = self.process_group if self.process_group is not None else self._fit_group
        if comm is None:
            if launched_world_size() > 1:
                comm = init()
        return comm if comm is not None and comm.world_size > 1 else None

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim < 2:
            raise ValueError(
                f"SyncBatchNorm: expected at least 2D input, got input of shape "
                f"{tuple(input.shape)}"
            )
        comm = self._group() if self.training else None
        if comm is None:
            return super().forward(input)
        if input.shape[1] != self.num_features:
            raise ShapeError(
                f"SyncBatchNorm: expected {self.num_features} channels (dimension "
                f"1), got input of shape {tuple(input.shape)}"
            )
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / self.num_batches_tracked.item()
        share = self._fit_share() if comm is self._fit_group and self._fit_share else None
        stats: list = []
        out = _SyncBatchNormFunction.apply(input, comm, self.eps, share, stats)
        mean, var, count = stats
        if self.track_running_stats and count:
            with no_grad():  # BatchNorm's update, with the global statistics
                self.running_mean.mul_(1 - factor).add_(mean.to(self.running_mean.dtype) * factor)
                self.running_var.mul_(1 - factor).add_(
                    var.to(self.running_var.dtype) * (factor * count / (count - 1))
                )
        if self.weight is not None:
            out = out * _channel_view(self.weight, input.ndim)
        if self.bias is not None:
            out = out + _channel_view(self.bias, input.ndim)
        return out

    @classmethod
    def convert_sync_batchnorm(
        cls, module: Module, process_group: Communicator | None = None
    ) -> Module:
        """Replace every BatchNorm layer of ``module`` (recursively) with a SyncBatchNorm.

        As torch's: each new layer takes over the old one's parameters and buffers (the
        same tensors, so device, dtype, ``requires_grad`` and an optimizer built over
        them carry over), its settings and its training flag.

        Args:
            module: a module, or a BatchNorm layer itself.
            process_group: the group of every new layer (see the class).

        Returns:
            ``module`` with its BatchNorm children replaced, or the new layer if
            ``module`` is a BatchNorm.

        Example:
            >>> net = nnkit.nn.Sequential(nnkit.nn.Conv2d(1, 8, 3), nnkit.nn.BatchNorm2d(8))
            >>> SyncBatchNorm.convert_sync_batchnorm(net)[1]
            SyncBatchNorm(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
        """
        return cls._convert(module, process_group, {})

    @classmethod
    def _convert(
        cls, module: Module, process_group: Communicator | None, memo: dict[int, Module]
    ) -> Module:
        if id(module) in memo:  # a layer used twice is replaced by one new layer
            return memo[id(module)]
        output = module
        if isinstance(module, _BatchNorm):
            output = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
            )
            for name in ("weight", "bias"):
                if module._parameters.get(name) is not None:
                    output._parameters[name] = module._parameters[name]
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                output._buffers[name] = module._buffers.get(name)
            output.training = module.training
        memo[id(module)] = output
        for name, child in list(module._modules.items()):
            if child is not None:
                output._modules[name] = cls._convert(child, process_group, memo)
        return output

    def __deepcopy__(self, memo: dict) -> SyncBatchNorm:
        # A communicator is a handle on the group, shared by copies; a copy is not part
        # of the fit running this layer.
        for comm in (self.process_group, self._fit_group):
            if comm is not None:
                memo.setdefault(id(comm), comm)
        new = super().__deepcopy__(memo)
        new.__dict__.pop("_fit_group", None)
        new.__dict__.pop("_fit_share", None)
        return new


@contextlib.contextmanager
def fit_group(
    model: Module, comm: Communicator, share: Callable[[], Any] | None = None
) -> Iterator[None]:
    """Make ``comm`` the group of every SyncBatchNorm of ``model`` until the block ends.

    What the data-parallel ``Model.fit`` wraps its training in (a layer's own
    ``process_group`` still wins).

    Args:
        model: the replica of this rank.
        comm: the group of the fit.
        share: called at each training forward, returns this rank's weight in the
            gradient average that follows backward (its number of samples when the
            ranks' shards may be unequal: the averaged gradient is then
            ``Σ_r share_r · grad_r / Σ_r share_r``), or None for a plain mean. The input
            gradient is computed so that this weighted average is the gradient of the
            whole batch.
    """
    layers = [m for m in model.modules() if isinstance(m, SyncBatchNorm)]
    previous = [(m.__dict__.get("_fit_group"), m.__dict__.get("_fit_share")) for m in layers]
    for m in layers:
        m._fit_group, m._fit_share = comm, share
    try:
        yield
    finally:
        for m, (group, weight) in zip(layers, previous):
            m._fit_group, m._fit_share = group, weight
