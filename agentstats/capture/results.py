"""A run's results read back, a stored run opened by name, values computed elsewhere logged into a run.

:class:`RunResults` reads the tables, :func:`open_run` opens a stored run by name, :func:`log_metric` logs a value
computed outside agentstats (IBM watsonx.gov's ``log_custom_metrics``).

::

    past = agentstats.open_run("prompt-v2", store="agentstats.duckdb")
    past.result(); past.metric_result("faithfulness", node="generator"); past.to_frame()
    past.log_metric("human_rating", 0.8, task_id="t3")

A logged value is a row of ``metric_results`` with ``detail = {"source": "log_metric"}``; scoring a run again (its
end, a resume) keeps these rows. Its level: ``node`` when a node is named, ``conversation`` when a task is named
(the trial's value), else ``run`` (one value for the whole run).
"""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path
from typing import Any

import pandas as pd

from agentstats.store import DEFAULT_STORE, RunStore

__all__ = ["LOGGED", "RunResults", "StoredRun", "log_metric", "open_run"]

#: ``detail`` of a logged row (:func:`log_metric`); scoring never deletes these rows.
LOGGED = '{"source":"log_metric"}'


class RunResults:
    """The read side of a run: :meth:`result`, :meth:`metric_result`, :meth:`to_frame` over its stored tables."""

    name: str

    def _frame(self, table: str) -> pd.DataFrame:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def to_frame(self) -> pd.DataFrame:
        """One row per node invocation (ids, node, latency, tokens, cost, error), with one column per node metric.

        Returns
        -------
        pandas.DataFrame
            Columns of ``node_invocations`` (``docs/store.md``) and the metric values of each invocation.
        """
        nodes = self._frame("node_invocations")
        metrics = self._frame("metric_results")
        per = metrics[(metrics["level"] == "node") & metrics["invocation_id"].notna()] if len(metrics) else metrics
        if len(per):
            wide = per.pivot_table(index="invocation_id", columns="metric", values="value", aggfunc="first")
            nodes = nodes.merge(wide, left_on="invocation_id", right_index=True, how="left")
        return nodes.drop(columns=["run_id"])

    def metric_result(self, name: str, node: str | None = None, level: str | None = None) -> pd.DataFrame:
        """Return the results of one metric: one row per scored node invocation, message or conversation.

        Parameters
        ----------
        name : str
        node : str, optional
            Only this node's invocations.
        level : {"node", "message", "conversation", "run"}, optional

        Raises
        ------
        KeyError
            When the run has no result for this metric (and node).
        """
        m = self._frame("metric_results")
        sel = m[m["metric"] == name]
        if node is not None:
            sel = sel[sel["node"] == node]
        if level is not None:
            sel = sel[sel["level"] == level]
        if sel.empty:
            known = sorted(set(zip(m["metric"], m["node"].fillna("(application)"), strict=True)))
            raise KeyError(f"no results for metric {name!r}" + (f" on node {node!r}" if node else "")
                           + f"; the run has: {known}")
        return sel.drop(columns=["run_id"]).reset_index(drop=True)

    def result(self) -> pd.DataFrame:
        """Summary per metric, level and node: records scored, mean value, share passed.

        Returns
        -------
        pandas.DataFrame
            Columns ``metric, level, node, n, mean, pass_rate`` (node empty for application metrics; ``n`` the
            records behind the mean), plus the outcome row ``metric="trials"``: ``n`` the trials with an outcome
            (success or failure: from ``set_outcome``, an error, or the application metrics), ``mean`` and
            ``pass_rate`` their success rate. Trials without an outcome are not counted (NaN when none has one).
        """
        m = self._frame("metric_results")
        if len(m):
            g = m.assign(node=m["node"].fillna(""), ok=m["passed"].astype(float))
            summary = g.groupby(["metric", "level", "node"], sort=True).agg(
                n=("value", "size"), mean=("value", "mean"), pass_rate=("ok", "mean")).reset_index()
        else:
            summary = pd.DataFrame(columns=["metric", "level", "node", "n", "mean", "pass_rate"])
        t = self._frame("trials")
        scored = t[t["outcome"].isin(["success", "failure"])]
        rate = (scored["outcome"] == "success").mean() if len(scored) else float("nan")
        row = pd.DataFrame([{"metric": "trials", "level": "trial", "node": "", "n": len(scored), "mean": rate,
                             "pass_rate": rate}])
        return pd.concat([summary, row], ignore_index=True) if len(summary) else row


def read_table(store: RunStore, run_id: int, name: str, table: str) -> pd.DataFrame:
    """Return one table of a run as :class:`RunResults` reads it (the trials without their records)."""
    if table == "trials":
        return store.con.execute(
            "SELECT agent, task_id, trial, status, outcome FROM trials WHERE run_id = ? ORDER BY seq",
            [run_id]).df()
    return store.frame(name, table)


class StoredRun(RunResults):
    """A run of a store, opened by name (:func:`open_run`): its results, read once when first asked for.

    Parameters
    ----------
    name : str
    store : str or PathLike
        The store file; it is opened read-only for each read (so a capture may be writing another run), and for
        writing by :meth:`log_metric` only.
    """

    def __init__(self, name: str, store: str | os.PathLike = DEFAULT_STORE) -> None:
        self.name, self.path = name, Path(store)
        if not self.path.is_file():
            raise FileNotFoundError(f"no run store at {self.path}")
        with RunStore.reader(self.path) as st:
            self.run_id = st.run_id(name)  # StoreError naming the runs there when there is no such run
            self.info = st.run_info(name)
        self._frames: dict[str, pd.DataFrame] = {}

    def _frame(self, table: str) -> pd.DataFrame:
        if table not in self._frames:
            with RunStore.reader(self.path) as st:
                self._frames[table] = read_table(st, self.run_id, self.name, table)
        return self._frames[table]

    def log_metric(self, name: str, value: float, *, node: str | None = None, task_id: str | None = None,
                   trial: int | None = None, agent: str | None = None, passed: bool | None = None) -> None:
        """Add a value computed outside agentstats to this run (see :func:`log_metric`)."""
        if agent is None:
            agent = (self.info.get("config") or {}).get("capture", {}).get("agent") or self.name
        with RunStore(self.path) as st, st.transaction():
            log_metric(st, self.run_id, name, value, node=node, task_id=task_id, trial=trial, agent=agent,
                       passed=passed)
        self._frames.pop("metric_results", None)

    def __repr__(self) -> str:
        return f"StoredRun({self.name!r}, store={str(self.path)!r}, status={self.info.get('status')!r})"


def open_run(name: str, store: str | os.PathLike = DEFAULT_STORE) -> StoredRun:
    """Open a stored run by name to read its results: ``result()``, ``metric_result()``, ``to_frame()``.

    Raises
    ------
    FileNotFoundError
        No store file at ``store``.
    StoreError
        No run of that name.
    """
    return StoredRun(name, store)


def log_metric(store: RunStore, run_id: int, name: str, value: float, *, node: str | None = None,
               task_id: str | None = None, trial: int | None = None, agent: str | None = None,
               passed: bool | None = None) -> None:
    """Write one value computed outside agentstats as a row of ``metric_results`` (kept when the run is rescored).

    Parameters
    ----------
    store : RunStore
        Open for writing (the caller's transaction, if any, holds the row).
    run_id : int
    name : str
        Metric name (a column of ``result()``).
    value : float
        A finite number.
    node : str, optional
        The node the value is about (level ``node``).
    task_id, trial, agent : optional
        The trial it is about (level ``conversation`` when ``node`` is not given); ``trial`` defaults to 0.
    passed : bool, optional
        Its verdict, when it has one.

    Raises
    ------
    ValueError
        A blank name or a value that is not a finite number.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"log_metric: the metric needs a non-empty name, got {name!r}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"log_metric: metric {name!r}: value must be a finite number, got {value!r}")
    level = "node" if node is not None else "conversation" if task_id is not None else "run"
    row: dict[str, list[Any]] = {
        "run_id": [run_id], "metric": [name], "level": [level], "node": [node], "agent": [agent],
        "task_id": [task_id], "trial": [trial if trial is not None or task_id is None else 0],
        "value": [float(value)], "passed": [passed], "detail": [LOGGED],
    }
    store.append_rows("metric_results", row)
