"""``ThreadGroup``: N ranks as N threads of one process, for testing data parallelism.

The ranks share a list of slots and a barrier. An all-reduce is: each rank posts a
host copy of its tensor, waits for the others, reduces all the slots *in rank order*
(so every rank computes bit-identical results), waits again so that no rank reuses
its slot while another still reads it, then writes the result back. This is the
semantics of an MPI all-reduce without MPI, so the gradient-averaging and ``fit``
logic can be tested in one process; it is not meant to be fast.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from nnkit.backends import collective
from nnkit.distributed.communicator import Communicator

__all__ = ["ThreadGroup", "ThreadCommunicator"]


class ThreadGroup:
    """A group of ``world_size`` in-process ranks.

    Args:
        world_size: the number of ranks (threads).
        timeout: seconds a rank waits at a collective before the group is declared
            broken (a rank that never arrives is a bug; failing beats hanging).

    Raises:
        ValueError: if ``world_size`` is not a positive integer.

    Example:
        >>> def work(comm):
        ...     return comm.allreduce_scalar(comm.rank + 1)
        >>> ThreadGroup(3).run(work)
        [6.0, 6.0, 6.0]
    """

    def __init__(self, world_size: int, *, timeout: float = 60.0) -> None:
        if not isinstance(world_size, int) or world_size < 1:
            raise ValueError(
                f"ThreadGroup: world_size must be a positive integer; received {world_size!r}"
            )
        self.world_size = world_size
        self._barrier = threading.Barrier(world_size, timeout=timeout)
        self._slots: list[Any] = [None] * world_size

    def communicator(self, rank: int) -> ThreadCommunicator:
        """The communicator of rank ``rank`` (give each thread its own).

        Args:
            rank: the rank, in ``[0, world_size)``.

        Returns:
            A :class:`ThreadCommunicator`.
        """
        return ThreadCommunicator(self, rank)

    def run(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """Call ``fn(comm, *args)`` on one thread per rank and return the results by rank.

        Args:
            fn: called as ``fn(comm, *args)`` with each rank's communicator.
            *args: more arguments, the same for every rank.

        Returns:
            The results, indexed by rank.

        Raises:
            Exception: the first rank's exception, if any rank raised (the other ranks
                are released from their collectives with ``BrokenBarrierError``).
        """
        results: list[Any] = [None] * self.world_size
        errors: list[BaseException | None] = [None] * self.world_size

        def target(rank: int) -> None:
            try:
                results[rank] = fn(self.communicator(rank), *args)
            except BaseException as exc:  # re-raised in the caller's thread
                errors[rank] = exc
                self._barrier.abort()

        threads = [threading.Thread(target=target, args=(r,)) for r in range(self.world_size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        _raise_first(errors)
        return results

    def exchange(self, rank: int, value: Any) -> list[Any]:
        """Post ``value`` as rank ``rank``'s and return every rank's, once all posted.

        Args:
            rank: the posting rank.
            value: its value.

        Returns:
            The values of all ranks, indexed by rank.
        """
        self._slots[rank] = value
        self._barrier.wait()
        return list(self._slots)

    def wait(self) -> None:
        """Barrier across the group."""
        self._barrier.wait()


def _raise_first(errors: list[BaseException | None]) -> None:
    real = [e for e in errors if e is not None and not isinstance(e, threading.BrokenBarrierError)]
    first = real[0] if real else next((e for e in errors if e is not None), None)
    if first is not None:
        raise first


class ThreadCommunicator(Communicator):
    """Rank ``rank`` of a :class:`ThreadGroup`.

    Args:
        group: the group.
        rank: this thread's rank.
    """

    def __init__(self, group: ThreadGroup, rank: int) -> None:
        if not 0 <= rank < group.world_size:
            raise ValueError(f"rank {rank} is not in a group of {group.world_size}")
        self.group, self.rank, self.world_size = group, rank, group.world_size

    def barrier(self) -> None:
        """Wait for every thread of the group."""
        self.group.wait()

    def _allreduce_mat(self, mat: Any, op: str) -> None:
        buffers = self.group.exchange(self.rank, collective.host_buffer(mat))
        reduced = collective.reduce_host_buffers(buffers, op)
        self.group.wait()  # everyone has read every slot before anyone writes its tensor
        collective.commit_host_buffer(mat, reduced)

    def _broadcast_mat(self, mat: Any, root: int) -> None:
        buffers = self.group.exchange(self.rank, collective.host_buffer(mat))
        if self.rank != root:
            collective.commit_host_buffer(mat, buffers[root])
        self.group.wait()  # the root keeps its tensor unchanged until everyone has copied it
