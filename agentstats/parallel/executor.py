"""The executor interface: ``executor=`` of every parallel entry point, chunking, and results in input order.

``executor`` is one of

* ``None`` or ``"local"`` (default): in this process, the same code path as a call without ``executor=``;
* ``"process"``: a :class:`concurrent.futures.ProcessPoolExecutor` of ``workers`` processes (default: the CPUs
  this process may use), started with ``spawn`` (a fork of a process holding PyTensor, numba or BLAS threads can
  deadlock), each limited to one BLAS / OpenMP thread as Ray limits its workers (the workers, not threads inside
  each, use the CPUs; :func:`_one_thread`), and shut down when the call ends;
* ``"ray"``: :class:`~agentstats.parallel.ray_executor.RayExecutor`, Ray tasks on the cluster at ``address``
  (default: a running one, else a local one started for the call and stopped after it); needs ``agentstats[ray]``;
* any :class:`concurrent.futures.Executor` (a thread pool, a process pool you keep, a Dask or Ray executor): used as
  it is and left running.

Determinism: results come back in input order (:func:`map_ordered`), and nothing here hands a worker a seed; a caller
that draws random numbers derives one seed per slice or chunk from its own seed
(:func:`agentstats.intervals.derive_seed`), never from which worker ran it or when it finished, so the same seed gives
the same numbers whatever the executor.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import math
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, get_args

from agentstats._util.options import option_name

__all__ = [
    "EXECUTOR_NAMES",
    "MAX_CHUNK",
    "MIN_CHUNK",
    "ByValue",
    "ExecutorLike",
    "ExecutorName",
    "as_finished",
    "chunk_slices",
    "executor_workers",
    "map_ordered",
    "resolve_executor",
]

#: The executors named by a string (``--executor`` on the command line).
ExecutorName = Literal["local", "process", "ray"]
EXECUTOR_NAMES: tuple[str, ...] = get_args(ExecutorName)
#: What ``executor=`` accepts.
ExecutorLike = ExecutorName | cf.Executor | None

#: Fewest and most items per chunk that :func:`chunk_slices` chooses by itself: below ``MIN_CHUNK`` the cost of
#: sending a chunk to a worker (pickling, a task) outweighs its work; above ``MAX_CHUNK`` one chunk's input and result
#: are held at once by a worker and the parent, and a lost worker repeats more work.
MIN_CHUNK = 500
MAX_CHUNK = 20_000


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _check_workers(workers: Any) -> int | None:
    if workers is None:
        return None
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"{option_name('workers').rstrip('=')} must be an integer >= 1, got {workers!r}")
    return workers


@contextlib.contextmanager
def resolve_executor(
    executor: ExecutorLike = None, *, workers: int | None = None, address: str | None = None
) -> Iterator[cf.Executor | None]:
    """Turn ``executor=`` into an executor for the duration of a ``with`` block (None: run in this process).

    Parameters
    ----------
    executor : None, "local", "process", "ray" or concurrent.futures.Executor
        Where the work runs (module docstring). An executor given is used as it is and not shut down.
    workers : int, optional
        Processes of ``"process"`` (default: the CPUs this process may use); CPUs of a local Ray cluster started for
        ``"ray"`` (default: all). Refused with ``None`` / ``"local"`` and with an executor instance (it has its own).
    address : str, optional
        Ray only: the cluster to connect to (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``).

    Yields
    ------
    concurrent.futures.Executor or None
        None for in-process work. An executor created here is shut down (a Ray cluster started here stopped) when
        the block ends, also on an error.

    Raises
    ------
    ValueError
        An unknown name, ``workers`` not an integer >= 1, or ``workers`` / ``address`` where they mean nothing.
    TypeError
        ``executor`` neither a name, None nor a ``concurrent.futures.Executor``.
    ImportError
        ``"ray"`` without Ray installed (the message names the extra ``agentstats[ray]``).
    """
    workers = _check_workers(workers)
    name = option_name("executor").rstrip("=")
    if isinstance(executor, cf.Executor):
        if workers is not None or address is not None:
            raise ValueError(f"{name}: an executor instance has its own workers and address; give neither "
                             f"{option_name('workers')} nor {option_name('address')}")
        yield executor
        return
    if executor is not None and not isinstance(executor, str):
        raise TypeError(f"{name} must be one of {list(EXECUTOR_NAMES)}, None or a concurrent.futures.Executor, "
                        f"got {type(executor).__name__}")
    if executor not in (None, *EXECUTOR_NAMES):
        raise ValueError(f"{name} must be one of {list(EXECUTOR_NAMES)} or a concurrent.futures.Executor, "
                         f"got {executor!r}")
    if address is not None and executor != "ray":
        raise ValueError(f"{option_name('address').rstrip('=')} is the Ray cluster's: it needs "
                         f"{option_name('executor', 'ray')}")
    if executor in (None, "local"):
        if workers is not None:
            raise ValueError(f"{option_name('workers').rstrip('=')} needs {option_name('executor', 'process')} "
                             f"or {option_name('executor', 'ray')}; in-process work has one worker")
        yield None
        return
    made: cf.Executor
    if executor == "process":
        made = cf.ProcessPoolExecutor(max_workers=workers or _cpus(), mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_one_thread)
    else:
        from agentstats.parallel.ray_executor import RayExecutor

        made = RayExecutor(address=address, num_cpus=workers)
    try:
        yield made
    finally:
        made.shutdown(wait=True, cancel_futures=True)


#: Thread-count variables a pool's worker sets to 1 (BLAS, OpenMP, numba), before it loads the libraries that read them.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def _one_thread() -> None:
    """Start of a process-pool worker: one BLAS / OpenMP / numba thread (N workers on N CPUs, not N x N threads)."""
    for name in _THREAD_VARIABLES:
        os.environ[name] = "1"
    try:  # libraries already loaded in the worker (by unpickling the first task's module) read no variable again
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scipy and PyMC
        pass


def executor_workers(executor: cf.Executor | None) -> int:
    """How many tasks ``executor`` runs at once: 1 for in-process work, else its worker count.

    Read from ``max_workers`` (:class:`~agentstats.parallel.ray_executor.RayExecutor`: the cluster's CPUs) or the
    standard pools' ``_max_workers``; an executor that tells neither counts as the CPUs of this machine.
    """
    if executor is None:
        return 1
    for attr in ("max_workers", "_max_workers"):
        value = getattr(executor, attr, None)
        if isinstance(value, int) and value >= 1:
            return value
    return _cpus()


def chunk_slices(n: int, workers: int = 1, chunk_size: int | None = None) -> list[slice]:
    """Cut ``n`` items into consecutive chunks, in order.

    Parameters
    ----------
    n : int
        Items (>= 0).
    workers : int
        Tasks run at once. Without ``chunk_size``, about four chunks per worker (so a slow chunk does not leave the
        others idle), each of :data:`MIN_CHUNK` to :data:`MAX_CHUNK` items, with one worker too: a single chunk of
        everything would be pickled whole by the parent and held whole, with its result, by the worker (1,000,000
        conversations took 15 GB in one worker).
    chunk_size : int, optional
        Items per chunk (the last may hold fewer).

    Returns
    -------
    list of slice
        Covering ``range(n)`` once, in order; empty when ``n`` is 0.

    Raises
    ------
    ValueError
        ``n`` < 0, ``workers`` < 1 or ``chunk_size`` < 1.
    """
    if n < 0 or workers < 1 or (chunk_size is not None and chunk_size < 1):
        raise ValueError(f"chunk_slices: need n >= 0, workers >= 1, chunk_size >= 1; got {n}, {workers}, {chunk_size}")
    if chunk_size is None:
        chunk_size = min(MAX_CHUNK, max(MIN_CHUNK, math.ceil(n / (4 * workers))))
    return [slice(start, min(start + chunk_size, n)) for start in range(0, n, chunk_size)]


def as_finished[T, R](
    fn: Callable[[T], R],
    items: Iterable[T],
    executor: cf.Executor | None,
    *,
    return_exceptions: bool = False,
) -> Iterator[tuple[int, R | BaseException]]:
    """Run ``fn`` on every item on ``executor``; yield ``(position, result)`` as each finishes.

    For callers that keep each result as it comes (a long simulation writing its rows, so a stopped run resumes);
    :func:`map_ordered` puts them back in input order.

    Parameters
    ----------
    fn : callable
        A function of one item that a worker can run: module level for a process pool (pickled by name; Ray pickles
        with cloudpickle, so a closure goes too).
    items : iterable
        The inputs; each is sent to a worker once (Ray re-runs a task whose worker died, ``max_retries``).
    executor : concurrent.futures.Executor or None
        None: one after another in this process, in input order.
    return_exceptions : bool
        False: the first exception to arrive is raised, after the tasks not yet started are cancelled. True: an item
        whose call raised (or whose worker was lost) yields the exception as its result, and the others go on.

    Yields
    ------
    (int, object)
        The item's position in ``items`` and its result.
    """
    items = list(items)
    if executor is None:
        for i, item in enumerate(items):
            try:
                result: Any = fn(item)
            except Exception as exc:
                if not return_exceptions:
                    raise
                result = exc
            yield i, result
        return
    futures = {executor.submit(fn, item): i for i, item in enumerate(items)}
    try:
        for future in cf.as_completed(futures):
            try:
                result = future.result()
            except Exception as exc:
                if not return_exceptions:
                    raise
                result = exc
            yield futures[future], result
    finally:  # raised, or the caller stopped early: nothing left running for nobody
        for future in futures:
            future.cancel()


def map_ordered[T, R](
    fn: Callable[[T], R],
    items: Iterable[T],
    executor: cf.Executor | None,
    *,
    return_exceptions: bool = False,
    on_done: Callable[[int], None] | None = None,
) -> list[R | BaseException]:
    """``[fn(item) for item in items]``, run on ``executor``, in the order of ``items`` whatever order they finish in.

    Parameters
    ----------
    fn, items, executor, return_exceptions
        As :func:`as_finished`.
    on_done : callable, optional
        Called with the number of items finished so far, as each finishes (progress lines).

    Returns
    -------
    list
        One result per item, in input order.
    """
    items = list(items)
    out: list[Any] = [None] * len(items)
    for done, (i, result) in enumerate(as_finished(fn, items, executor, return_exceptions=return_exceptions), 1):
        out[i] = result
        if on_done is not None:
            on_done(done)
    return out


class ByValue[V]:
    """An object sent to a worker by value: pickled with cloudpickle, so functions made inside functions go too.

    The standard pickle sends a function by its importable name, which a closure (a metric's method built by a
    factory, a lambda) does not have; Ray pickles with cloudpickle, process pools do not. Wrap what a task carries
    that may hold such functions; the worker calls :meth:`get`. Made once, sent with every task as bytes.
    """

    def __init__(self, obj: V) -> None:
        import cloudpickle

        self.blob = cloudpickle.dumps(obj)

    def get(self) -> V:
        """Return the object, unpickled (a copy, in a worker or here)."""
        import cloudpickle

        return cloudpickle.loads(self.blob)
