"""A captured run: opened in the store (or resumed), made current, ended with its metrics, read back.

::

    with agentstats.run("prompt-v2", store="agentstats.duckdb", metrics=["exact_match"]) as run:
        for task in tasks:
            app({"task_id": task.id, "query": task.question, "expected_answer": task.answer})
    run.result()

* :func:`run` (a context manager) or :func:`start_run` / :func:`end_run` (notebooks) open a run in the store; the
  decorators of :mod:`agentstats.capture.tracing` record the calls made while it is current
  (:mod:`agentstats.capture.recorder`).
* The outermost decorated call is one *message* of a *trial*. Ids come from fields of the state (the first mapping
  argument, or an object with these attributes): ``conversation_id`` groups the messages of one conversation into one
  trial, ``message_id`` names a message, ``task_id`` and ``trial`` give the trial's key (``task_id`` defaults to the
  conversation id, ``trial`` to the next free number for that task). Field names are configurable on the run.
* Records are buffered in memory and written in one transaction every ``flush_interval`` seconds or every
  ``flush_every`` node invocations, whichever comes first (and at the end, and on Ctrl-C or SIGTERM), so capture is
  cheap and ``kill -9`` loses at most that much. A run whose process died is marked ``interrupted`` when the store
  is next opened; ``run(name, resume=True)`` continues it.
* Metrics of the metric catalogue (:mod:`agentstats.metrics`) are computed at :func:`end_run` from the stored records
  (:mod:`agentstats.capture.scoring`); read them with :meth:`Run.result`, :meth:`Run.metric_result` and
  :meth:`Run.to_frame`.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from agentstats._util.signals import sigterm_exits
from agentstats.capture import openai_patch
from agentstats.capture.context import _NODE_METRICS
from agentstats.capture.recorder import Recorder
from agentstats.capture.results import RunResults, log_metric, read_table
from agentstats.capture.scoring import score_run
from agentstats.llm.pricing import DEFAULT_PRICES
from agentstats.metrics.registry import MetricSpec, resolve_metrics
from agentstats.store import DEFAULT_STORE, RunStore

__all__ = ["Run", "current_run", "end_run", "run", "start_run"]

_RUN: contextvars.ContextVar[Run | None] = contextvars.ContextVar("agentstats_run", default=None)
#: Runs started in this process and not ended, most recent last (seen by threads and other notebook cells).
_ACTIVE: list[Run] = []
#: Gives SIGTERM its default action back once no run is open (:func:`agentstats._util.signals.sigterm_exits`).
_UNDO_SIGTERM: Callable[[], None] = lambda: None  # noqa: E731


def current_run() -> Run | None:
    """Return the run that captures calls made here: this context's, else the latest one started in the process.

    Runs are found through a context variable (so concurrent asyncio tasks each see their own) and, for threads and
    notebook cells that do not inherit it, through the most recently started run of the process.
    """
    r = _RUN.get()
    if r is not None:
        return r
    return _ACTIVE[-1] if _ACTIVE else None


class Run(Recorder, RunResults):
    """A run being captured (see the module docstring); make one with :func:`run` or :func:`start_run`.

    Parameters
    ----------
    name : str
        Run name (unique in the store).
    store : str, PathLike or RunStore
        The store file (default ``agentstats.duckdb``) or an open store.
    agent : str, optional
        Agent name on the captured trials (default: the run name).
    description, tags, config, code_version
        Stored on the run. ``code_version`` defaults to the git commit of the working directory when there is one.
    metrics : sequence
        Application-level metrics: catalogue names (``exact_match``, ``faithfulness``, ``tool_calls`` ...; see
        :mod:`agentstats.capture.scoring`), :class:`~agentstats.metrics.Metric` objects, or functions
        ``(answer, expected)`` (:func:`agentstats.metrics.function_metric`).
    judge : Judge or str, optional
        Judge of the judge-based metrics (``answer_correctness``: a judge or ``"deterministic"`` / ``"openai"``;
        deterministic by default).
    resume : bool
        Continue a stored run of this name (interrupted, or completed) instead of refusing the name.
    replace : bool
        Replace a stored run of this name.
    conversation_field, message_field, task_field, trial_field, query_field, expected_field, answer_field : str
        Names of the state fields read for ids, the message text, the reference answer, and of the output field
        holding the answer when a node returns a mapping.
    prices : mapping, optional
        Model -> (input, output) US dollars per 1M tokens (default: the judge's price table).
    flush_interval : float
        Seconds between writes (0: after every outermost call).
    flush_every : int
        Also write once this many node invocations are buffered (default 1000), so that a fast application killed
        with ``kill -9`` loses at most this many records or ``flush_interval`` seconds of them, whichever is fewer.

    Raises
    ------
    StoreError
        The name is taken (and neither ``resume`` nor ``replace``), or the store cannot be opened.
    """

    def __init__(
        self,
        name: str,
        store: str | os.PathLike | RunStore = DEFAULT_STORE,
        *,
        agent: str | None = None,
        description: str | None = None,
        tags: Sequence[str] = (),
        config: dict[str, Any] | None = None,
        code_version: str | None = None,
        metrics: Sequence[MetricSpec] = (),
        judge: Any = None,
        resume: bool = False,
        replace: bool = False,
        conversation_field: str = "conversation_id",
        message_field: str = "message_id",
        task_field: str = "task_id",
        trial_field: str = "trial",
        query_field: str = "query",
        expected_field: str = "expected_answer",
        answer_field: str = "answer",
        prices: Mapping[str, tuple[float, float]] | None = None,
        flush_interval: float = 1.0,
        flush_every: int = 1000,
    ):
        self.name = name
        self.agent = agent or name
        self.metrics = resolve_metrics(list(metrics)) if metrics else []
        self.judge = judge
        self.fields = {"conversation": conversation_field, "message": message_field, "task": task_field,
                       "trial": trial_field, "query": query_field, "expected": expected_field,
                       "answer": answer_field}
        # the state fields read at every outermost call, in the order _open_message reads them
        self._id_fields = (conversation_field, task_field, trial_field, message_field, query_field, expected_field)
        self._answer_field = answer_field
        self.prices = dict(prices) if prices is not None else DEFAULT_PRICES
        self.flush_interval = flush_interval
        if flush_every < 1:
            raise ValueError(f"flush_every must be at least 1, not {flush_every}")
        self.flush_every = int(flush_every)
        self._own_store = not isinstance(store, RunStore)
        self.store = RunStore(store) if not isinstance(store, RunStore) else store
        self.path = self.store.path
        self.status = "running"
        self._frames: dict[str, pd.DataFrame] = {}
        try:
            if self.store.has_run(name) and resume:
                self.run_id = self.store.run_id(name)
                with self.store.transaction():
                    self.store.set_status(name, "running")
            else:
                with self.store.transaction():
                    self.run_id = self.store.create_run(
                        name, description=description, tags=tags, source="capture",
                        config={**(config or {}), "capture": self._settings(judge)},
                        code_version=code_version or _git_commit(), replace=replace,
                    )
            self._start_recording()
        except BaseException:
            if self._own_store:
                self.store.close()
            raise
        if "openai" in sys.modules:  # else patched at the first call made once the application imported it
            openai_patch._patch_openai()
        self._token: contextvars.Token[Run | None] | None = None

    def _settings(self, judge: Any) -> dict[str, Any]:
        """Return what the capture was given (stored in the run's ``config`` under ``capture``)."""
        return {"agent": self.agent, "metrics": [m.name for m in self.metrics],
                "judge": judge if judge is None or isinstance(judge, str) else type(judge).__name__,
                "fields": self.fields, "flush_interval": self.flush_interval,
                "flush_every": self.flush_every}

    def start(self) -> Run:
        """Make this the current run (what :func:`start_run` and ``with`` do).

        While a run is open, SIGTERM ends the process as Ctrl-C would (``SystemExit(143)``, where the program left
        SIGTERM's default action): the run's records are written and it is marked ``interrupted``.
        """
        global _UNDO_SIGTERM
        self._token = _RUN.set(self)
        if not _ACTIVE:
            _UNDO_SIGTERM = sigterm_exits()
        _ACTIVE.append(self)
        return self

    def end(self, status: str = "completed") -> Run:
        """Flush, compute the metrics (when ``status`` is ``completed``), set the run's status, close the store."""
        if self.status != "running":
            return self
        try:
            self.flush()
            if status == "completed":
                self.score()
            with self.store.transaction():
                self.store.set_status(self.name, status)
            self.status = status
        finally:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
                if not _ACTIVE:
                    _UNDO_SIGTERM()
            if self._token is not None:
                with contextlib.suppress(ValueError):
                    _RUN.reset(self._token)
                self._token = None
            if self._own_store:
                self.store.close()
        return self

    def score(self) -> None:
        """Compute the node and application metrics from the stored records (replacing earlier results).

        The node metrics are those of the decorators called in the run, and for a node name the run did not call (its
        records from before a resume), those of the newest live decorator of that name. See
        :func:`agentstats.capture.scoring.score_run`.
        """
        node_metrics = {n: ms for n, ms in self._node_metrics.items() if ms}
        node_fields = dict(self._node_fields)
        for n, ms, fs in list(_NODE_METRICS.values()):  # newest last: the newest decorator of a name not called
            if n not in self._node_metrics:
                if ms:
                    node_metrics[n] = ms
                if fs:
                    node_fields[n] = fs
        score_run(self.store, self.run_id, self.name, self.metrics, node_metrics, judge=self.judge,
                  fields=self.fields, node_fields=node_fields)
        if node_fields:  # kept with the run: load_trials(store, run=...) reads the nodes' roles the same way
            config = self.store.run_info(self.name).get("config") or {}
            capture = {**config.get("capture", {}), "node_fields": node_fields}
            with self.store.transaction():
                self.store.set_config(self.name, {**config, "capture": capture})

    def _frame(self, table: str) -> pd.DataFrame:
        """Return a table of this run: read live while running; once ended, read once from the store and kept.

        An ended run's tables are read when first asked for (an application that only captures pays nothing for
        them at the end, and a long run's tables are not held in memory unasked): from the caller's store when it
        is still open, else from the file, opened read-only for the read.
        """
        if table in self._frames:
            return self._frames[table]
        with self._lock:
            if self.status == "running":
                self.flush()
                return read_table(self.store, self.run_id, self.name, table)
            if not self._own_store and self.store.is_open():
                frame = read_table(self.store, self.run_id, self.name, table)
            else:
                with RunStore.reader(self.path) as store:
                    frame = read_table(store, self.run_id, self.name, table)
            self._frames[table] = frame
            return frame

    def log_metric(self, name: str, value: float, *, node: str | None = None, task_id: str | None = None,
                   trial: int | None = None, passed: bool | None = None) -> None:
        """Add a value computed outside agentstats to this run (IBM's ``log_custom_metrics``).

        Level ``node`` when ``node`` is given, ``conversation`` (the trial ``task_id``, ``trial``, default 0) when a
        task is, else ``run``; see :func:`agentstats.capture.results.log_metric` (errors raised there). Kept when
        the run's metrics are computed at its end.
        """
        with self._lock:
            if self.store.is_open():
                with self.store.transaction():
                    log_metric(self.store, self.run_id, name, value, node=node, task_id=task_id, trial=trial,
                               agent=self.agent, passed=passed)
            else:
                with RunStore(self.path) as st, st.transaction():
                    log_metric(st, self.run_id, name, value, node=node, task_id=task_id, trial=trial,
                               agent=self.agent, passed=passed)
            self._frames.pop("metric_results", None)

    def __enter__(self) -> Run:
        return self.start() if self._token is None else self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.end("completed")
        elif issubclass(exc_type, KeyboardInterrupt | SystemExit):
            self.end("interrupted")
        else:
            self.end("failed")

    def __repr__(self) -> str:
        return f"Run({self.name!r}, store={str(self.path)!r}, status={self.status!r})"



def _git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None



def run(name: str, store: str | os.PathLike | RunStore = DEFAULT_STORE, **options: Any) -> Run:
    """Open a captured run; use it as ``with agentstats.run("prompt-v2", store=...) as run:``.

    Leaving the block ends the run (:meth:`Run.end`): ``completed`` (metrics computed), ``interrupted`` on
    Ctrl-C, ``failed`` on another exception (records kept either way). Options: see :class:`Run`.
    """
    return Run(name, store, **options)


def _end_forgotten_runs() -> None:
    """At interpreter exit: write what runs never ended still buffer and mark them ``interrupted`` (resumable)."""
    for r in list(_ACTIVE):
        if r.status != "running":
            continue
        try:
            r.end("interrupted")
        except Exception as exc:  # at exit nothing may raise; say what was lost
            print(f"agentstats: run {r.name!r} was never ended and its last records could not be written to "
                  f"{r.path} ({type(exc).__name__}: {exc})", file=sys.stderr)
            continue
        print(f"agentstats: run {r.name!r} was never ended (end_run() or the end of its `with` block); its records "
              f"are written to {r.path} and it is marked interrupted: agentstats.run({r.name!r}, resume=True) "
              "continues it, and ending it computes its metrics", file=sys.stderr)


atexit.register(_end_forgotten_runs)


def start_run(name: str, store: str | os.PathLike | RunStore = DEFAULT_STORE, **options: Any) -> Run:
    """Open a captured run and make it current until :func:`end_run` (notebook style). Options: see :class:`Run`."""
    return Run(name, store, **options).start()


def end_run(run: Run | None = None, status: str = "completed") -> Run:
    """End ``run`` (default: the current one): flush, compute metrics, set its status, close the store.

    Raises
    ------
    RuntimeError
        When no run is open.
    """
    r = run or current_run()
    if r is None:
        raise RuntimeError("no run is open: start one with agentstats.start_run(name)")
    return r.end(status)

