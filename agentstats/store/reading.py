"""Reading a run store's trials back: as :class:`~agentstats.records.trial.Trial` records, or counted in SQL.

:meth:`TrialReader.counts` gives the table :func:`agentstats.records.counts.to_counts` gives, without a Python object
per trial; its outcome codes come from :data:`agentstats.records.trial.OUTCOME_CODE` through :func:`outcome_code_sql`,
the one SQL spelling of the code.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentstats.records.counts import _unscored_message, counts_frame, counts_from_codes
from agentstats.records.gaps import grid_gaps
from agentstats.records.trial import CODE_UNSCORED, OUTCOME_CODE, Trial
from agentstats.store.nodes import USAGE_KEYS, node_view
from agentstats.store.runs import RunCatalog
from agentstats.store.writing import BATCH

__all__ = ["TrialReader", "cell_counts_sql", "outcome_code_sql"]


def outcome_code_sql(column: str = "outcome") -> str:
    """Return the SQL ``CASE`` that codes a stored outcome label as :data:`~agentstats.records.trial.OUTCOME_CODE`.

    Generated from the constants (``'failure'`` 0, ``'success'`` 1, ``'missing'`` 2), so the store and Python share
    one code; ``NULL`` (a trial with no outcome yet) is :data:`~agentstats.records.trial.CODE_UNSCORED`.
    """
    whens = " ".join(f"WHEN '{label}' THEN {code}" for label, code in OUTCOME_CODE.items())
    return f"CASE {column} {whens} ELSE {CODE_UNSCORED} END"


def cell_counts_sql(code: str) -> str:
    """Return the SQL aggregates ``n, c, m`` (``n_missing``) of a cell from an outcome-code expression.

    ``n`` counts failures and successes, ``c`` successes, ``m`` missing trials, each code taken from
    :data:`~agentstats.records.trial.OUTCOME_CODE`: the one SQL spelling of the rule of
    :func:`agentstats.records.counts.counts_from_codes`, shared by the store and its Parquet datasets
    (:mod:`agentstats.store.dataset`). An unscored code (-1) is in none of them.
    """
    scored = ", ".join(str(OUTCOME_CODE[o]) for o in ("failure", "success"))
    return (f"count(*) FILTER ({code} IN ({scored})) AS n, count(*) FILTER ({code} = {OUTCOME_CODE['success']}) AS c, "
            f"count(*) FILTER ({code} = {OUTCOME_CODE['missing']}) AS m")


class TrialReader(RunCatalog):
    """Reading trials and counts from a store (see :class:`RunStore`)."""

    def iter_trials(self, run: str, *, batch_size: int = BATCH, nodes: bool = True) -> Iterator[Trial]:
        """Yield the run's trials in the order they were written, as :class:`~agentstats.records.trial.Trial`.

        A captured run's node invocations are given back as each interaction's ``nodes`` list (in invocation order;
        the records of :func:`agentstats.store.nodes.node_view`, with ``name``, ``invocation_id`` and
        ``parent_id``), so ``compute(trials, ..., level="node")`` scores them (``nodes=False`` leaves them out).
        """
        rid = self.run_id(run)
        by_message = self._node_views(rid) if nodes else {}
        cur = self.con.cursor()
        try:
            cur.execute("SELECT record FROM trials WHERE run_id = ? ORDER BY seq", [rid])
            validate = Trial.model_validate_json
            while rows := cur.fetchmany(batch_size):
                for (record,) in rows:
                    t = validate(record)
                    if by_message:
                        for it in t.interactions:
                            views = by_message.get((t.agent, t.task_id, t.trial, it.id))
                            if views:
                                setattr(it, "nodes", views)  # noqa: B010 -- an extra field, unknown to mypy
                    yield t
        finally:
            cur.close()

    def _node_views(self, rid: int) -> dict[tuple[str, str, int, str | None], list[dict[str, Any]]]:
        """Return a run's node invocations as node records, by (agent, task_id, trial, message_id)."""
        rows = self.con.execute(
            f"""SELECT agent, task_id, trial, message_id, node, invocation_id, parent_id, error_type, inputs,
                       outputs, {", ".join(USAGE_KEYS)}
                FROM node_invocations WHERE run_id = ? ORDER BY invocation_id""", [rid]).fetchall()
        if not rows:
            return {}
        config = self.con.execute("SELECT config FROM runs WHERE run_id = ?", [rid]).fetchone()[0]
        capture = (json.loads(config) if isinstance(config, str) else config or {}).get("capture", {})
        run_fields = capture.get("fields", {})
        base = {role: run_fields[opt] for role, opt in (("input", "query"), ("expected", "expected"),
                                                        ("output", "answer")) if opt in run_fields}
        per_node = capture.get("node_fields", {})
        out: dict[tuple[str, str, int, str | None], list[dict[str, Any]]] = {}
        for agent, task, k, mid, name, iid, parent, err, inputs, outputs, *usage in rows:
            view = node_view(json.loads(inputs) if inputs else {}, json.loads(outputs) if outputs else None,
                             {**base, **per_node.get(name, {})}, dict(zip(USAGE_KEYS, usage, strict=True)))
            view.update(name=name, invocation_id=int(iid), parent_id=parent, error_type=err)
            out.setdefault((agent, task, int(k), mid), []).append(view)
        return out

    def trials(self, run: str, *, nodes: bool = True) -> list[Trial]:
        """Return the run's trials as a list (``agentstats.load_trials(path, run=...)`` gives a ``TrialSet``)."""
        return list(self.iter_trials(run, nodes=nodes))

    def outcome_codes(self, run: str) -> pd.DataFrame:
        """Return each trial of a run with its outcome code, in the order written, coded in SQL.

        Returns
        -------
        pandas.DataFrame
            Columns ``agent, task_id, trial`` and ``code`` (int8: :data:`~agentstats.records.trial.OUTCOME_CODE`,
            :data:`~agentstats.records.trial.CODE_UNSCORED` for a trial with no outcome yet).
        """
        frame = self.con.execute(
            f"SELECT agent, task_id, trial, {outcome_code_sql()} AS code FROM trials WHERE run_id = ? ORDER BY seq",
            [self.run_id(run)],
        ).df()
        return frame.astype({"code": np.int8})

    def counts(self, run: str) -> pd.DataFrame:
        """Count a run per (agent, task) in SQL: the table :func:`agentstats.records.counts.to_counts` gives.

        Returns
        -------
        pandas.DataFrame
            Columns ``agent, task_id, n, c, n_missing``; ``attrs``: ``gaps``, ``source``, ``format="duckdb"``,
            ``skipped=[]``, ``excluded_agents=[]``.

        Raises
        ------
        ValueError
            When trials have no outcome yet (score them first), naming the first few.
        """
        rid = self.run_id(run)
        unscored = self.con.execute(
            "SELECT agent, task_id, trial FROM trials WHERE run_id = ? AND outcome IS NULL ORDER BY seq LIMIT 5",
            [rid],
        ).fetchall()
        if unscored:
            n = self.con.execute(
                "SELECT count(*) FROM trials WHERE run_id = ? AND outcome IS NULL", [rid]
            ).fetchone()[0]
            raise ValueError(_unscored_message(int(n), [((a, t, int(k)), "") for a, t, k in unscored]))
        cells = self.con.execute(
            f"""SELECT agent, task_id, count(*) AS total, {cell_counts_sql(outcome_code_sql())}, max(trial) AS mx
               FROM trials WHERE run_id = ? GROUP BY agent, task_id""",
            [rid],
        ).fetchnumpy()
        n_cells = len(cells["agent"])
        k = int(cells["mx"].max()) + 1 if n_cells else 0
        n_agents, n_tasks = len(set(cells["agent"])), len(set(cells["task_id"]))
        if n_cells and n_cells == n_agents * n_tasks and bool((cells["total"] == k).all()):
            # a complete agent x task x trial grid (keys are unique, so `total == k` means trials 0 .. k-1): no gaps
            out = counts_frame(cells["agent"], cells["task_id"], cells["n"], cells["c"], cells["m"])
            out.attrs["gaps"] = dataclasses.replace(
                grid_gaps(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), [], []),
                n_expected=k)
        elif n_cells:
            out = self._counts_with_gaps(rid)
        else:
            out = counts_frame([], [], [], [], [])
            out.attrs["gaps"] = None
        out.attrs.update(source=f"{self.path}:{run}", format="duckdb", skipped=[], excluded_agents=[])
        return out

    def _counts_with_gaps(self, rid: int) -> pd.DataFrame:
        """Count from every trial's codes (:func:`agentstats.records.counts.counts_from_codes`) and the grid gaps."""
        # agent and task codes by first appearance (as to_counts), outcome codes of OUTCOME_CODE
        arrays = self.con.execute(
            f"""WITH t AS (SELECT seq, agent, task_id, trial, outcome FROM trials WHERE run_id = ?),
                    a AS (SELECT agent, row_number() OVER (ORDER BY min(seq)) - 1 AS code FROM t GROUP BY agent),
                    k AS (SELECT task_id, row_number() OVER (ORDER BY min(seq)) - 1 AS code FROM t GROUP BY task_id)
               SELECT a.code AS a, k.code AS t, t.trial AS k, {outcome_code_sql("t.outcome")} AS o
               FROM t JOIN a USING (agent) JOIN k USING (task_id)""",
            [rid],
        ).fetchnumpy()
        agents = [r[0] for r in self.con.execute(
            "SELECT agent FROM trials WHERE run_id = ? GROUP BY agent ORDER BY min(seq)", [rid]).fetchall()]
        tasks = [r[0] for r in self.con.execute(
            "SELECT task_id FROM trials WHERE run_id = ? GROUP BY task_id ORDER BY min(seq)", [rid]).fetchall()]
        return counts_from_codes(
            np.asarray(arrays["a"], dtype=np.int64), np.asarray(arrays["t"], dtype=np.int64),
            np.asarray(arrays["k"], dtype=np.int64), np.asarray(arrays["o"], dtype=np.int8), agents, tasks,
        )

    def outcomes(self, run: str) -> dict[str, dict[str, int]] | None:
        """Return a run's outcomes per agent: trials counted (``n``), successes (``c``), missing (``n_missing``).

        None while some trial has no outcome yet (:meth:`counts` refuses them); ``{}`` for a run without trials.
        """
        try:
            counts = self.counts(run)
        except ValueError:
            return None
        by_agent = counts.groupby("agent")[["n", "c", "n_missing"]].sum()
        return {str(a): {k: int(v) for k, v in row.items()} for a, row in by_agent.iterrows()}

    def export(self, run: str, path: str | os.PathLike, *, table: str = "trials") -> Path:
        """Export a run as the file's suffix says, atomically: ``.parquet`` or ``.jsonl`` / ``.jsonl.gz``.

        Parquet holds one table of the run (:meth:`export_parquet`); JSONL the run's trials in the project's schema,
        with a manifest (:meth:`export_jsonl`), which reads back with ``agentstats.load``.

        Raises
        ------
        StoreError
            Another suffix, a table other than ``trials`` for JSONL, an unknown run or table.
        """
        from agentstats._util.options import option_name
        from agentstats.store.connection import StoreError

        name = Path(path).name.lower()
        if name.endswith(".parquet"):
            return self.export_parquet(run, path, table=table)
        if not name.endswith((".jsonl", ".jsonl.gz")):
            raise StoreError(f"{path}: export to a .parquet, .jsonl or .jsonl.gz file")
        if table != "trials":
            raise StoreError(f"{option_name('table', table)} applies to Parquet exports; JSONL holds the trials")
        return self.export_jsonl(run, path)

    def export_jsonl(self, run: str, path: str | os.PathLike) -> Path:
        """Write a run's trials as the project's JSONL (with its manifest), atomically; see ``save_trials``."""
        from agentstats.io.jsonl import save_trials

        self.run_id(run)
        return save_trials(self.iter_trials(run), path)
