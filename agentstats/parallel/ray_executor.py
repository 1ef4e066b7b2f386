"""A ``concurrent.futures.Executor`` over Ray tasks: the same functions, on a Ray cluster (extra ``agentstats[ray]``).

:class:`RayExecutor` turns ``submit(fn, *args)`` into a Ray task and returns Ray's own ``concurrent.futures.Future``
of it (``ObjectRef.future()``), so everything written against the executor interface (:func:`map_ordered`,
``Executor.map``) runs unchanged on a laptop's local cluster or a remote one. A task whose worker process dies (a
node lost, the out-of-memory killer) is run again by Ray, up to ``max_retries`` times; an exception raised by the
function itself is not retried (it is the answer). Ray is imported when an executor is made, never before.

Two ways to run work on the cluster, for two kinds of input:

* trials already in memory (:func:`agentstats.metrics.compute`, ``executor="ray"``): Ray tasks over chunks, through
  ``submit``. A chunk of trials goes to a worker as the same Python objects (validated
  :class:`~agentstats.records.trial.Trial` records, their file and line kept for messages) that the in-process path
  scores, and comes back as the same frame. ``ray.data`` would have to carry those trials through Arrow tables:
  conversations, tool-call arguments and each metric's ``evidence`` are nested records of varying shape, which
  Arrow's schema inference refuses or fills with nulls;
* trials in files, one shard per file (:func:`agentstats.metrics.compute_files`): ``ray.data`` over the shards,
  through :meth:`RayExecutor.map_batches`. Each row of the Ray Dataset is one shard's *descriptor* (its position and
  the pickled task: a path, a format, the metrics), never its trials; the worker reads the file with agentstats' own
  reader (``ray.data.read_json`` would bypass the reader that names a bad record's file, line and field) and sends
  back one row, its position and its result pickled in a binary column. So nothing nested meets Arrow's schema
  inference, the driver never holds the trials, and the result is exactly the worker's (attributes included).
"""

from __future__ import annotations

import concurrent.futures as cf
import warnings
from collections.abc import Callable, Sequence
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


class _Raised:
    """An exception a task of :meth:`RayExecutor.map_batches` raised, as its result (told apart from a returned one)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _portable(exc: Exception) -> BaseException:
    """Return ``exc`` if it pickles back as itself, else a ``RuntimeError`` naming its type and message."""
    import cloudpickle

    try:
        cloudpickle.loads(cloudpickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


def _call_rows(batch: Any, fn: Callable[[Any], Any]) -> Any:
    """Run ``fn`` on each row's item (the ``map_batches`` function of :meth:`RayExecutor.map_batches`), pickled back."""
    import cloudpickle

    results = []
    for blob in batch["item"]:
        try:
            result: Any = fn(cloudpickle.loads(blob))
        except Exception as exc:  # the item's answer: sent back, raised in input order by the caller
            result = _Raised(_portable(exc))
        results.append(cloudpickle.dumps(result))
    return batch[["position"]].assign(result=results)


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
        self._max_retries = int(max_retries)
        self._cpus_per_task = num_cpus_per_task
        self._task = ray.remote(_call).options(max_retries=self._max_retries, num_cpus=num_cpus_per_task)
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

    def map_batches(self, fn: Callable[[Any], Any], items: Sequence[Any], *,
                    return_exceptions: bool = False) -> list[Any]:
        """``[fn(item) for item in items]`` as a ``ray.data`` job: one row per item, ``map_batches`` of one row each.

        ``ray.data.from_items`` makes one block per item (a row: the item's position and the item pickled with
        cloudpickle); ``map_batches(batch_size=1, batch_format="pandas")`` runs ``fn`` on each in a Ray task, as many
        at once as the cluster has CPUs (``num_cpus_per_task`` each), and returns a row of the position and the result
        pickled (a binary column: whatever ``fn`` returns, nested or not, crosses Arrow unchanged). No shuffle: the
        job runs with ``DataContext.execution_options.preserve_order`` set (restored after), and the results are put
        back by their positions, never by arrival. A task whose worker dies is run again (``max_retries`` of this
        executor; Ray Data's own default is to retry forever), so a killed worker loses and duplicates nothing.

        Parameters
        ----------
        fn : callable
            A function of one item (pickled by Ray with cloudpickle; module-level functions go by name).
        items : sequence
            The inputs, each sent to one task; keep them small (a path and options, not the data).
        return_exceptions : bool
            False: the exception of the first item in input order that raised is raised (after every item ran).
            True: such an item's result is its exception. An exception that cannot be pickled back comes as a
            ``RuntimeError`` naming its type and message.

        Returns
        -------
        list
            ``len(items)`` results, in input order.

        Raises
        ------
        RuntimeError
            After :meth:`shutdown`.
        ray.exceptions.RayError
            A task that failed past ``max_retries`` (its worker kept dying): the job stops.
        """
        if self._closed:
            raise RuntimeError("cannot run map_batches on a RayExecutor after shutdown")
        if not items:
            return []
        import cloudpickle

        data = self._ray.data
        context = data.DataContext.get_current()
        before = context.execution_options.preserve_order
        context.execution_options.preserve_order = True
        try:
            rows = [{"position": i, "item": cloudpickle.dumps(item)} for i, item in enumerate(items)]
            ds = data.from_items(rows, override_num_blocks=len(rows))
            with warnings.catch_warnings():
                # Ray 2.60 deprecates map_batches' **ray_remote_args (removal planned for 2.64) and names no parameter
                # in their place for max_retries; without it Ray Data retries a task whose worker dies forever
                warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
                ds = ds.map_batches(_call_rows, fn_args=(fn,), batch_size=1, batch_format="pandas",
                                    num_cpus=self._cpus_per_task, max_retries=self._max_retries)
            out = ds.take_all()
        finally:
            context.execution_options.preserve_order = before
        results: list[Any] = [None] * len(items)
        seen: set[int] = set()
        for row in out:
            position = int(row["position"])
            if position in seen:  # pragma: no cover - Ray Data returns each row once
                raise RuntimeError(f"ray.data returned item {position} twice")
            seen.add(position)
            results[position] = cloudpickle.loads(row["result"])
        if len(seen) != len(items):  # pragma: no cover - a job that lost rows raises instead
            raise RuntimeError(f"ray.data returned {len(seen)} of {len(items)} results")
        if not return_exceptions:
            for r in results:
                if isinstance(r, _Raised):
                    raise r.error
        return [r.error if isinstance(r, _Raised) else r for r in results]

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
