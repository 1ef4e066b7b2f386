"""A ``concurrent.futures.Executor`` over Ray tasks: the same functions, on a Ray cluster (extra ``agentstats[ray]``).

:class:`RayExecutor` turns ``submit(fn, *args)`` into a Ray task and returns Ray's own ``concurrent.futures.Future``
of it (``ObjectRef.future()``), so everything written against the executor interface (:func:`map_ordered`,
``Executor.map``) runs unchanged on a laptop's local cluster or a remote one. A task whose worker process dies (a
node lost, the out-of-memory killer) is run again by Ray, up to ``max_retries`` times; an exception raised by the
function itself is not retried (it is the answer). Ray is imported when an executor is made, never before.

Why Ray tasks over chunks, and not ``ray.data`` ``map_batches``, for scoring: a chunk of trials goes to a worker as
the same Python objects (validated :class:`~agentstats.records.trial.Trial` records, their file and line kept for
messages) that the in-process path scores, and comes back as the same frame, so one code path gives the same numbers
on every executor. ``ray.data`` would carry trials and results through Arrow tables: conversations, tool-call
arguments and each metric's ``evidence`` are nested records of varying shape, which Arrow's schema inference either
refuses or fills with nulls, and reading the JSONL with ``ray.data.read_json`` would bypass the reader that names a
bad record's file, line and field. Tasks over chunks give the same parallelism (one task per chunk, as many at once
as the cluster has CPUs) without that second path.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable
from typing import Any

__all__ = ["DEFAULT_MAX_RETRIES", "RayExecutor", "import_ray"]

#: Times Ray re-runs a task whose worker died (not one whose function raised).
DEFAULT_MAX_RETRIES = 3


def import_ray() -> Any:
    """Import Ray, or say which extra installs it.

    Raises
    ------
    ImportError
        Ray not installed: ``pip install "agentstats[ray]"``.
    """
    try:
        import ray
    except ImportError as exc:
        raise ImportError('executor "ray" needs Ray: pip install "agentstats[ray]"') from exc
    return ray


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``fn(*args, **kwargs)`` inside a Ray worker."""
    return fn(*args, **kwargs)


class RayExecutor(cf.Executor):
    """Run callables as Ray tasks behind the ``concurrent.futures.Executor`` interface.

    Parameters
    ----------
    address : str, optional
        The cluster (``ray.init(address=...)``: ``"auto"``, ``"ray://host:10001"``). Default: the cluster this
        process is already connected to, else a local one started here (and stopped by :meth:`shutdown`).
    num_cpus : int, optional
        CPUs of a local cluster started here (default: all of the machine's).
    max_retries : int
        Times a task whose worker died is run again (default :data:`DEFAULT_MAX_RETRIES`).
    num_cpus_per_task : float
        CPUs each task reserves (default 1: one task per CPU at a time).
    init_options : dict, optional
        More keyword arguments of ``ray.init`` when this executor starts or joins the cluster.

    Attributes
    ----------
    max_workers : int
        Tasks the cluster runs at once: its CPUs divided by ``num_cpus_per_task`` (at least 1).

    Raises
    ------
    ImportError
        Ray not installed.
    RuntimeError
        Ray could not start or join the cluster (Ray's exception is the cause).
    """

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES, num_cpus_per_task: float = 1.0,
                 init_options: dict[str, Any] | None = None) -> None:
        ray = import_ray()
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                options["num_cpus"] = num_cpus
            try:
                ray.init(address=address, **(options | dict(init_options or {})))
            except Exception as exc:  # Ray's own error stays the cause; the user gets one line and where to look
                where = f"join the Ray cluster at {address}" if address else "start a local Ray cluster"
                first = (str(exc).splitlines() or [""])[0]
                raise RuntimeError(f"could not {where}: {type(exc).__name__}: {first} (busy machine, token "
                                   "authentication: docs/scaling.md, 'Failures')") from exc
            self._owns = True
        self._task = ray.remote(_call).options(max_retries=int(max_retries), num_cpus=num_cpus_per_task)
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        self.max_workers = max(1, int(cpus // num_cpus_per_task))
        self._refs: dict[int, Any] = {}
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        """Run ``fn(*args, **kwargs)`` as a Ray task; return its future (``ObjectRef.future()``).

        Raises
        ------
        RuntimeError
            After :meth:`shutdown`.
        """
        if self._closed:
            raise RuntimeError("cannot submit to a RayExecutor after shutdown")
        ref = self._task.remote(fn, args, kwargs)
        key = id(ref)
        self._refs[key] = ref  # until it finishes: shutdown cancels or waits for these
        future: cf.Future[Any] = ref.future()
        future.add_done_callback(lambda _done: self._refs.pop(key, None))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking tasks; cancel those not finished (``cancel_futures``); stop a cluster started here.

        ``wait``: wait for the submitted tasks first (skipped for cancelled ones).
        """
        if self._closed:
            return
        self._closed = True
        ray = self._ray
        pending = list(self._refs.values())
        if cancel_futures:
            for ref in pending:
                try:
                    ray.cancel(ref, force=False)
                except Exception:  # a finished task cannot be cancelled; nothing to do
                    pass
        elif wait and pending:
            ray.wait(pending, num_returns=len(pending))
        self._refs = {}
        if self._owns and ray.is_initialized():
            ray.shutdown()
