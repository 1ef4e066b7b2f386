"""Where work runs: in this process (the default), in a process pool, on a Ray cluster, or on any executor.

One owner for every parallel entry point (scoring's :func:`agentstats.metrics.compute`, :func:`agentstats.fit_many`,
the validation simulations): :func:`resolve_executor` turns ``executor=`` into a ``concurrent.futures.Executor``
(or None for in-process), :func:`chunk_slices` cuts work into batches and :func:`map_ordered` runs a function over
them and returns the results in input order, whatever order the workers finish in (:func:`as_finished` yields each
as it comes, for a caller that saves as it goes). The Ray adapter
(:class:`~agentstats.parallel.ray_executor.RayExecutor`, extra ``agentstats[ray]``) is imported only when asked for.
"""

from __future__ import annotations

from agentstats.parallel.executor import (
    EXECUTOR_NAMES,
    ByValue,
    ExecutorLike,
    ExecutorName,
    as_finished,
    chunk_slices,
    executor_workers,
    map_ordered,
    resolve_executor,
)

__all__ = [
    "EXECUTOR_NAMES",
    "ByValue",
    "ExecutorLike",
    "ExecutorName",
    "as_finished",
    "chunk_slices",
    "executor_workers",
    "map_ordered",
    "resolve_executor",
]
