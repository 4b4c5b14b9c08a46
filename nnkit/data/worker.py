"""Background loading: worker threads, the loading context and per-sample randomness.

Workers are daemon threads: NumPy releases the GIL while it copies and computes, and
threads need no pickling. Being daemons, a worker stuck in a dataset's
``__getitem__`` never keeps the process alive: Ctrl-C interrupts the main thread's wait
for a batch (a lock acquisition) and the process ends at once. Randomness used
while loading must come from :func:`sample_rng`, which depends only on the loader's
seed, the epoch and the sample index, never on which worker runs the sample; that
is what makes ``num_workers > 0`` give exactly the batches ``num_workers=0`` gives.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from nnkit.random import initial_seed

__all__ = ["WorkerError", "WorkerInfo", "get_worker_info", "sample_rng"]

_SAMPLE_STREAM = 0x5A3D  # separates per-sample streams from the shuffling stream
_local = threading.local()


class WorkerInfo(NamedTuple):
    """What a dataset can learn about the worker that is loading it.

    Attributes:
        id: the worker's number, ``0 <= id < num_workers``.
        num_workers: the loader's ``num_workers``.
        seed: the loader's seed.
        epoch: the epoch being loaded.
        dataset: the dataset being loaded.
    """

    id: int
    num_workers: int
    seed: int
    epoch: int
    dataset: Any


class WorkerError(RuntimeError):
    """An exception raised in a DataLoader worker, re-raised in the main thread.

    The original exception is chained as ``__cause__`` (its traceback shows the
    worker's frames); the message names the batch and its sample indices.
    """


class _Context(NamedTuple):
    seed: int
    epoch: int
    worker: WorkerInfo | None


def get_worker_info() -> WorkerInfo | None:
    """Information about the current DataLoader worker.

    Returns:
        A :class:`WorkerInfo` inside a worker thread while it loads a batch, and
        ``None`` elsewhere (in the main process, as in PyTorch).

    Example:
        >>> get_worker_info() is None
        True
    """
    context = getattr(_local, "context", None)
    return None if context is None else context.worker


def sample_rng(index: int, *, seed: int | None = None) -> np.random.Generator:
    """A random generator for one sample, for augmentation inside ``__getitem__``.

    While a :class:`~nnkit.data.DataLoader` loads (in any worker or in the main
    process), the generator depends on the loader's seed, the epoch and ``index``
    only, so loading is reproducible and independent of ``num_workers``; it changes
    between epochs. Outside a loader it depends on ``seed`` (default: the seed last
    given to ``nnkit.manual_seed``) and ``index``.

    Args:
        index: the sample's index in the dataset (non-negative).
        seed: overrides the seed (and ignores the epoch).

    Returns:
        A fresh ``numpy.random.Generator``.

    Raises:
        ValueError: if ``index`` is negative.

    Example:
        >>> bool(sample_rng(3, seed=0).random() == sample_rng(3, seed=0).random())
        True
    """
    index = int(index)
    if index < 0:
        raise ValueError(f"sample_rng: index must be non-negative, got {index}")
    context = getattr(_local, "context", None)
    if seed is not None:
        key = [int(seed), 0]
    elif context is not None:
        key = [context.seed, context.epoch]
    else:
        key = [initial_seed(), 0]
    return np.random.default_rng([*key, _SAMPLE_STREAM, index])


@contextmanager
def loading_context(seed: int, epoch: int, worker: WorkerInfo | None = None) -> Iterator[None]:
    """Make ``seed``/``epoch`` (and ``worker``) visible to the dataset while it loads."""
    previous = getattr(_local, "context", None)
    _local.context = _Context(seed, epoch, worker)
    try:
        yield
    finally:
        _local.context = previous


def current_worker_id() -> int:
    """This thread's worker number (0 outside worker threads)."""
    return getattr(_local, "worker_id", 0)


def _init_worker(counter: Iterator[int]) -> None:
    _local.worker_id = next(counter)


def _describe(indices: Any) -> str:
    values = np.asarray(indices).reshape(-1).tolist()
    shown = ", ".join(map(str, values[:8]))
    return f"[{shown}{', ...' if len(values) > 8 else ''}]"


def _failure(batch_index: int, indices: Any, exc: BaseException) -> WorkerError:
    where = f"batch {batch_index}"
    if indices is not None:
        where += f" (sample indices {_describe(indices)})"
    notes = "".join(f" {n}" for n in getattr(exc, "__notes__", ()) if n.startswith("(raised by"))
    return WorkerError(
        f"DataLoader worker raised {type(exc).__name__} while loading {where}: {exc}" + notes
    )


def iter_threaded(
    tasks: Iterator[tuple[int, np.ndarray]],
    fetch: Callable[[int, np.ndarray], Any],
    *,
    num_workers: int,
    prefetch: int,
) -> Iterator[Any]:
    """Run ``fetch(batch_index, indices)`` for each task in worker threads, in order.

    At most ``num_workers * prefetch`` batches are submitted but not yet consumed.
    A failure is re-raised as :class:`WorkerError` chained to the original.
    """
    pool = _DaemonPool(num_workers)
    pending: deque[tuple[int, np.ndarray, Future]] = deque()
    try:
        for batch_index, indices in tasks:
            pending.append((batch_index, indices, pool.submit(fetch, batch_index, indices)))
            if len(pending) >= num_workers * prefetch:
                yield _result(*pending.popleft())
        while pending:
            yield _result(*pending.popleft())
    finally:
        pool.shutdown()


class _DaemonPool:
    """Up to ``num_workers`` daemon threads running submitted calls in submission order.

    Unlike ``ThreadPoolExecutor``, whose threads the interpreter joins at exit, a
    daemon thread stuck in a dataset cannot keep the process from ending. Like it, a
    thread is started only when no started one is idle (fewer threads contend for the
    GIL when loading is cheap).
    """

    def __init__(self, num_workers: int) -> None:
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._futures: list[Future] = []
        self._idle = threading.Semaphore(0)
        self._counter = itertools.count()
        self._threads: list[threading.Thread] = []
        self._limit = num_workers

    def _run(self) -> None:
        _init_worker(self._counter)
        while (task := self._tasks.get()) is not None:
            future, fn, args = task
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # handed to the consumer
                    future.set_exception(exc)
            self._idle.release()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        future: Future = Future()
        self._futures.append(future)
        if len(self._futures) > 256:
            self._futures = [f for f in self._futures if not f.done()]
        self._tasks.put((future, fn, args))
        if not self._idle.acquire(timeout=0) and len(self._threads) < self._limit:
            thread = threading.Thread(
                target=self._run, daemon=True, name=f"nnkit-data_{len(self._threads)}"
            )
            thread.start()
            self._threads.append(thread)
        return future

    def shutdown(self) -> None:
        """Cancel what has not started; the threads end after their current call."""
        for future in self._futures:
            future.cancel()
        for _ in self._threads:
            self._tasks.put(None)


def _result(batch_index: int, indices: np.ndarray, future: Future) -> Any:
    try:  # the wait is a lock acquisition, which a signal (Ctrl-C) interrupts on POSIX
        return future.result()
    except Exception as exc:
        raise _failure(batch_index, indices, exc) from exc


def iter_background(batches: Iterator[Any], *, maxsize: int) -> Iterator[Any]:
    """Drain ``batches`` in one background thread, at most ``maxsize`` ahead, in order."""
    slots: queue.Queue = queue.Queue(maxsize)
    stop = threading.Event()
    thread = threading.Thread(
        target=_produce, args=(batches, slots, stop), daemon=True, name="nnkit-data-stream"
    )
    thread.start()
    try:
        for batch_index in itertools.count():
            kind, item = slots.get()
            if kind == "done":
                return
            if kind == "error":
                raise _failure(batch_index, None, item) from item
            yield item
    finally:
        stop.set()


def _produce(batches: Iterator[Any], slots: queue.Queue, stop: threading.Event) -> None:
    try:
        for batch in batches:
            if not _put(slots, ("batch", batch), stop):
                return
    except Exception as exc:  # noqa: BLE001 (re-raised in the consumer's thread)
        _put(slots, ("error", exc), stop)
        return
    _put(slots, ("done", None), stop)


def _put(slots: queue.Queue, item: tuple, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            slots.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False
