"""``Communicator``: the collectives data-parallel training needs, and the 1-process one.

A communicator is one rank's handle on a group of ``world_size`` processes (or
threads). Its collectives work in place on a Tensor's memory, outside autograd, like
``torch.distributed``'s: every rank must call the same collectives in the same order
with tensors of the same shape and dtype. Subclasses implement the three primitives
:meth:`Communicator._allreduce_mat`, :meth:`Communicator._broadcast_mat` and
:meth:`Communicator.barrier`; the Tensor-level methods and ``op='mean'`` are shared.
"""

from __future__ import annotations

import abc
from typing import Any

from nnkit.autograd import factories
from nnkit.autograd.grad_mode import no_grad
from nnkit.autograd.tensor import Tensor
from nnkit.backends.dtypes import float64
from nnkit.distributed.watchdog import check_timeout

__all__ = ["Communicator", "LocalCommunicator", "REDUCE_OPS"]

REDUCE_OPS = ("sum", "mean", "max", "min")


def _mat(tensor: Tensor) -> Any:
    """The Mat holding ``tensor``'s values (collectives write it outside autograd)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"collectives take an nnkit Tensor; got {type(tensor).__name__}")
    return tensor._impl.data


class Communicator(abc.ABC):
    """One rank of a group that all-reduces and broadcasts tensors.

    Attributes:
        rank: this process's (or thread's) index, ``0 <= rank < world_size``.
        world_size: the number of ranks.
        timeout: seconds a collective may wait for the other ranks before the whole job
            is aborted (:class:`~nnkit.distributed.MPICommunicator` enforces it; other
            communicators keep what is set and ignore it; None until set).

    Example:
        >>> from nnkit.distributed import ThreadGroup
        >>> def mean_grad(comm):
        ...     p = nnkit.zeros(2, requires_grad=True)
        ...     (p * (comm.rank + 1)).sum().backward()
        ...     return comm.allreduce_(p.grad, op="mean")   # the same on every rank now
        >>> ThreadGroup(2).run(mean_grad)
        [tensor([1.5000, 1.5000]), tensor([1.5000, 1.5000])]
    """

    rank: int = 0
    world_size: int = 1
    _timeout: float | None = None

    @property
    def timeout(self) -> float | None:
        """Seconds a collective may wait for the other ranks (see the class docstring)."""
        return self._timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._timeout = check_timeout(seconds)

    @property
    def is_chief(self) -> bool:
        """True on rank 0, the rank that prints and writes files."""
        return self.rank == 0

    def allreduce_(self, tensor: Tensor, op: str = "sum") -> Tensor:
        """Reduce ``tensor`` elementwise over all ranks and store the result on each.

        Args:
            tensor: the same shape and dtype on every rank; modified in place.
            op: ``'sum'``, ``'mean'`` (floating point only), ``'max'`` or ``'min'``.

        Returns:
            ``tensor``.

        Raises:
            ValueError: for an unknown ``op``, or ``'mean'`` of an integer tensor.
        """
        mat = _mat(tensor)
        if op not in REDUCE_OPS:
            raise ValueError(f"unknown reduce op {op!r}; expected one of {REDUCE_OPS}")
        if op == "mean" and not tensor.is_floating_point():
            raise ValueError(f"op='mean' needs a floating point tensor; got {tensor.dtype}")
        if self.world_size > 1:
            self._allreduce_mat(mat, "sum" if op == "mean" else op)
            if op == "mean":
                with no_grad():
                    tensor.data.div_(self.world_size)
        return tensor

    def broadcast_(self, tensor: Tensor, root: int = 0) -> Tensor:
        """Overwrite ``tensor`` on every rank with rank ``root``'s values.

        Args:
            tensor: the same shape and dtype on every rank; modified in place.
            root: the rank whose values are sent.

        Returns:
            ``tensor``.

        Raises:
            ValueError: if ``root`` is not a rank of the group.
        """
        mat = _mat(tensor)
        if not 0 <= root < self.world_size:
            raise ValueError(f"broadcast root {root} is not a rank of a group of {self.world_size}")
        if self.world_size > 1:
            self._broadcast_mat(mat, root)
        return tensor

    def allreduce_scalar(self, value: float, op: str = "sum") -> float:
        """Reduce one number over all ranks (float64 on the host).

        Args:
            value: this rank's number.
            op: as for :meth:`allreduce_`.

        Returns:
            The reduced value, the same on every rank.
        """
        packed = factories.tensor([float(value)], dtype=float64)
        return float(self.allreduce_(packed, op).item())

    def abort(self, code: int = 1) -> None:
        """End every process of the group at once with exit status ``code``.

        What a rank that failed alone calls, so that the others, waiting for it in a
        collective, do not wait forever. A single process just exits.

        Args:
            code: the exit status.
        """
        raise SystemExit(code)

    @abc.abstractmethod
    def barrier(self) -> None:
        """Wait until every rank has called ``barrier``."""

    @abc.abstractmethod
    def _allreduce_mat(self, mat: Any, op: str) -> None:
        """Reduce ``mat`` in place with ``'sum'``, ``'max'`` or ``'min'``."""

    @abc.abstractmethod
    def _broadcast_mat(self, mat: Any, root: int) -> None:
        """Overwrite ``mat`` in place with ``root``'s values."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rank={self.rank}, world_size={self.world_size})"


class LocalCommunicator(Communicator):
    """The group of one process: every collective leaves the tensor as it is.

    Example:
        >>> LocalCommunicator().allreduce_scalar(3.0)
        3.0
    """

    rank, world_size = 0, 1

    def barrier(self) -> None:
        """Nothing to wait for."""

    def _allreduce_mat(self, mat: Any, op: str) -> None:
        return None

    def _broadcast_mat(self, mat: Any, root: int) -> None:
        return None
