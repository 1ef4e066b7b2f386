"""A run store's runs: names and ids, listing, status, deletion, and one run's rows as a table or a file.

:class:`RunCatalog` adds to the connection (:class:`agentstats.store.connection.StoreConnection`) what
``agentstats runs list|show|export|delete`` work on. Every table of :data:`TABLES` holds a ``run_id`` column.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agentstats.files.atomic import atomic_path
from agentstats.store.connection import StoreConnection, StoreError, _json, _now

__all__ = ["RUN_STATUSES", "TABLES", "RunCatalog", "file_sha256"]

#: What ``runs.status`` can hold.
RUN_STATUSES = ("running", "completed", "interrupted", "failed")
#: Tables holding a run's records (each has a ``run_id`` column), in the order they are exported and deleted.
TABLES = ("trials", "interactions", "tool_calls", "node_invocations", "metric_results", "judge_verdicts",
          "gate_decisions")


class RunCatalog(StoreConnection):
    """The runs of a store: look-up, listing, creation, status, deletion, export (see :class:`RunStore`)."""

    def run_id(self, run: str) -> int:
        """Return the id of the run named ``run``.

        Raises
        ------
        StoreError
            When no run has that name (the known names are listed).
        """
        row = self.con.execute("SELECT run_id FROM runs WHERE name = ?", [run]).fetchone()
        if row is None:
            names = [r[0] for r in self.con.execute("SELECT name FROM runs ORDER BY started_at").fetchall()]
            known = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "") if names else "none yet"
            raise StoreError(f"no run named {run!r} in {self.path} (runs: {known})")
        return int(row[0])

    def has_run(self, run: str) -> bool:
        """Tell whether a run named ``run`` exists."""
        return self.con.execute("SELECT count(*) FROM runs WHERE name = ?", [run]).fetchone()[0] > 0

    def runs(self) -> pd.DataFrame:
        """Every run with its trial count: one row per run, oldest first.

        Returns
        -------
        pandas.DataFrame
            Columns ``run_id, name, status, started_at, ended_at, source, description, tags, code_version,
            trials, agents, tasks``.
        """
        return self.con.execute(
            f"""SELECT r.run_id, r.name, {_seen_status("r")} AS status, r.started_at, r.ended_at, r.source,
                      r.description, r.tags, r.code_version, count(t.run_id) AS trials,
                      count(DISTINCT t.agent) AS agents,
                      count(DISTINCT t.task_id) AS tasks
               FROM runs r LEFT JOIN trials t USING (run_id)
               GROUP BY ALL ORDER BY r.started_at, r.run_id""", _me()
        ).df()

    def run_info(self, run: str) -> dict[str, Any]:
        """One run's row of ``runs`` as a dict (``config`` parsed), plus record counts per table."""
        rid = self.run_id(run)
        cur = self.con.execute(f"SELECT * REPLACE ({_seen_status('runs')} AS status) FROM runs WHERE run_id = ?",
                               [*_me(), rid])
        cols = [d[0] for d in cur.description]
        info = dict(zip(cols, cur.fetchone(), strict=True))
        if isinstance(info.get("config"), str):
            info["config"] = json.loads(info["config"])
        info["records"] = {
            t: int(self.con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [rid]).fetchone()[0])
            for t in TABLES
        }
        return info

    def create_run(
        self,
        name: str,
        *,
        description: str | None = None,
        tags: Sequence[str] = (),
        source: str | None = None,
        source_sha256: str | None = None,
        config: dict[str, Any] | None = None,
        code_version: str | None = None,
        status: str = "running",
        replace: bool = False,
    ) -> int:
        """Add a run (inside the caller's transaction if one is open); return its id.

        Raises
        ------
        StoreError
            When ``name`` is blank, or taken and ``replace`` is false.
        """
        if not isinstance(name, str) or not name.strip():
            raise StoreError(f"a run needs a non-empty name, got {name!r}")
        if status not in RUN_STATUSES:
            raise StoreError(f"run status must be one of {RUN_STATUSES}, got {status!r}")
        if self.has_run(name):
            if not replace:
                raise StoreError(
                    f"a run named {name!r} already exists in {self.path}; choose another name, delete it "
                    "(agentstats runs delete), or replace it (--replace; replace=True)"
                )
            self._delete(self.run_id(name))
        row = self.con.execute(
            """INSERT INTO runs (name, description, tags, source, source_sha256, config, started_at, status,
                                 code_version, pid, host)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING run_id""",
            [name, description, list(tags), source, source_sha256, _json(config or {}), _now(), status,
             code_version, os.getpid(), socket.gethostname()],
        ).fetchone()
        return int(row[0])

    def set_status(self, run: str, status: str) -> None:
        """Set a run's status (``completed``, ``interrupted``, ``failed`` also set ``ended_at``)."""
        if status not in RUN_STATUSES:
            raise StoreError(f"run status must be one of {RUN_STATUSES}, got {status!r}")
        rid = self.run_id(run)
        ended = None if status == "running" else _now()
        self.con.execute(
            "UPDATE runs SET status = ?, ended_at = ?, pid = ?, host = ? WHERE run_id = ?",
            [status, ended, os.getpid(), socket.gethostname(), rid],
        )

    def set_config(self, run: str, config: dict[str, Any]) -> None:
        """Replace a run's ``config`` (JSON) inside the caller's transaction if one is open."""
        self.con.execute("UPDATE runs SET config = ? WHERE run_id = ?", [_json(config), self.run_id(run)])

    def delete_run(self, run: str) -> dict[str, int]:
        """Delete a run and every record of it, in one transaction; return the rows deleted per table."""
        rid = self.run_id(run)
        with self.transaction():
            return self._delete(rid)

    def _delete(self, rid: int) -> dict[str, int]:
        deleted = {}
        for t in TABLES:
            deleted[t] = int(self.con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [rid]).fetchone()[0])
            self.con.execute(f"DELETE FROM {t} WHERE run_id = ?", [rid])
        self.con.execute("DELETE FROM runs WHERE run_id = ?", [rid])
        return deleted

    def frame(self, run: str, table: str = "trials") -> pd.DataFrame:
        """One table's rows for a run as a DataFrame (``record`` / JSON columns as text)."""
        if table not in TABLES:
            raise StoreError(f"table must be one of {TABLES}, got {table!r}")
        rid = self.run_id(run)
        order = {"trials": "seq", "node_invocations": "invocation_id"}.get(table)
        sql = f"SELECT * FROM {table} WHERE run_id = ?" + (f" ORDER BY {order}" if order else "")
        return self.con.execute(sql, [rid]).df()

    def export_parquet(self, run: str, path: str | os.PathLike, table: str = "trials") -> Path:
        """Write one table's rows of a run to Parquet with DuckDB's ``COPY``, atomically.

        Raises
        ------
        StoreError
            Unknown run or table.
        """
        if table not in TABLES:
            raise StoreError(f"table must be one of {TABLES}, got {table!r}")
        rid = self.run_id(run)
        order = {"trials": " ORDER BY seq", "node_invocations": " ORDER BY invocation_id"}.get(table, "")
        with atomic_path(path) as tmp:
            self.con.execute(
                f"COPY (SELECT * FROM {table} WHERE run_id = {rid}{order}) TO '{_sql_text(tmp)}' (FORMAT parquet)"
            )
        return Path(path)


def _me() -> list[Any]:
    """Return this process's pid and host, the parameters of :func:`_seen_status`."""
    return [os.getpid(), socket.gethostname()]


def _seen_status(table: str) -> str:
    """Return SQL for a run's status as a reader sees it: ``running`` only while its writing process lives.

    A process holding the store for writing excludes every other (DuckDB), so a reader that could open the store
    sees a ``running`` run of another process as what it is, ``interrupted``; the file itself is marked so the next
    time it is opened for writing (:meth:`agentstats.store.connection.StoreConnection.mark_interrupted`). Takes the
    parameters ``pid, host`` (:func:`_me`).
    """
    return (f"CASE WHEN {table}.status = 'running' AND NOT ({table}.pid IS NOT DISTINCT FROM ? AND "
            f"{table}.host IS NOT DISTINCT FROM ?) THEN 'interrupted' ELSE {table}.status END")


def _sql_text(path: str | os.PathLike) -> str:
    return str(path).replace("'", "''")


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
