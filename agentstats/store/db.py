"""The run store: one embedded DuckDB file (default ``agentstats.duckdb``) holding runs, their trials and captures.

:class:`RunStore` opens (or creates) the file, brings its schema up to date (:mod:`agentstats.store.schema`) and
offers the operations the rest of agentstats needs: import trials in one transaction
(:meth:`RunStore.import_trials`), read them back as the pipeline's objects (:meth:`RunStore.load_trials`,
:meth:`RunStore.counts`, the latter straight from SQL), list, show, export and delete runs. Every table can also be
read with plain SQL (``duckdb agentstats.duckdb``); ``docs/store.md`` documents them.

Reliability: each import or flush is one transaction, so a crash or ``kill -9`` loses at most what was being
written; a run left ``running`` by a process that died is marked ``interrupted`` the next time the file is opened
for writing, with every record it had flushed kept.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime as dt
import functools
import hashlib
import json
import os
import socket
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentstats.files.atomic import atomic_path
from agentstats.files.sniff import held_store, hold_store, is_duckdb_file, release_store
from agentstats.records.counts import counts_frame, counts_from_codes, grid_gaps
from agentstats.records.problems import LoadError, LoadWarning, Problem
from agentstats.records.trial import Trial
from agentstats.store.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "DEFAULT_STORE",
    "RUN_STATUSES",
    "TABLES",
    "ImportResult",
    "RunStore",
    "StoreError",
    "duckdb_module",
    "file_sha256",
    "is_store_file",
]

#: The store file used when none is named.
DEFAULT_STORE = "agentstats.duckdb"
#: What ``runs.status`` can hold.
RUN_STATUSES = ("running", "completed", "interrupted", "failed")
#: Tables holding a run's records (each has a ``run_id`` column), in the order they are exported and deleted.
TABLES = ("trials", "interactions", "tool_calls", "node_invocations", "metric_results", "judge_verdicts",
          "gate_decisions")
#: Trials written per transaction-internal batch when importing (bounded memory).
BATCH = 20_000
#: DuckDB's memory limit for a store connection (beyond it DuckDB spills to temporary files), so a large import
#: stays bounded; ``None`` keeps DuckDB's default (80% of the machine's memory).
MEMORY_LIMIT = "512MB"


class StoreError(ValueError):
    """A problem with the store file or a run in it (unknown run, name taken, file newer than this code)."""


class StoreConnectionError(StoreError):
    """The store is already open in this process with other settings (for writing, when read-only was asked)."""


def duckdb_module() -> Any:
    """Import ``duckdb`` or say how to install it.

    Raises
    ------
    ImportError
        When duckdb is missing, with the ``pip install 'agentstats[store]'`` line.
    """
    try:
        import duckdb
    except ImportError as exc:
        raise ImportError(
            "the run store needs DuckDB: pip install 'agentstats[store]' (or pip install duckdb)"
        ) from exc
    return duckdb


def is_store_file(path: Any) -> bool:
    """Tell whether ``path`` is a DuckDB file (by its magic bytes ``DUCK`` at offset 8, not by its name)."""
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        return False
    return is_duckdb_file(path)  # never opens a store this process holds (agentstats.files.sniff)


def _in_context(ctx: contextvars.Context, items: Iterator[Any]) -> Iterator[Any]:
    """Yield from ``items`` with each step run in ``ctx`` (whichever thread asks for the next item).

    Context variables (:func:`agentstats._util.options.option_style`) are per thread: a generator that another
    library's thread drives (DuckDB reading a :class:`pyarrow.RecordBatchReader`) would see their defaults.
    """
    try:
        while True:
            try:
                item = ctx.run(next, items)
            except StopIteration:
                return
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            ctx.run(close)

@dataclass(frozen=True)
class ImportResult:
    """What :meth:`RunStore.import_trials` did.

    Attributes
    ----------
    run : str
        Run name.
    run_id : int
    trials, interactions, tool_calls : int
        Rows written.
    unchanged : bool
        True when the same source (same SHA-256) was already imported under this name: nothing was written.
    skipped : list of Problem
        Bad records left out (``on_error="skip"`` imports of a file).
    notes : list of Problem
        Remarks of the reader on records it kept (e.g. what a format leaves out, a field that looks misspelled).
    """

    run: str
    run_id: int
    trials: int
    interactions: int
    tool_calls: int
    unchanged: bool = False
    skipped: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _json(v: Any) -> str | None:
    if v is None:
        return None
    return json.dumps(v, default=str, ensure_ascii=False)


class RunStore:
    """One store file, opened for reading and writing (or read only).

    Parameters
    ----------
    path : str or PathLike
        The DuckDB file; created (with its folder) when absent unless ``read_only``.
    read_only : bool
        Open without writing (several readers may share a file; a writer holds it alone).
    memory_limit : str or None
        DuckDB's memory limit (default :data:`MEMORY_LIMIT`); beyond it DuckDB spills to temporary files.

    Raises
    ------
    StoreError
        When the file is held by another process, is not a DuckDB file, or has a schema newer than this code.
    ImportError
        When duckdb is not installed.

    Notes
    -----
    DuckDB lets one process write a file at a time; a second writer gets a :class:`StoreError` naming the file.
    Use it as a context manager (``with RunStore(path) as store:``) or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike = DEFAULT_STORE, *, read_only: bool = False,
                 memory_limit: str | None = MEMORY_LIMIT):
        duckdb = duckdb_module()
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise FileNotFoundError(f"no run store at {self.path}")
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and self.path.stat().st_size and not is_store_file(self.path):
            raise StoreError(f"{self.path} is not a DuckDB file (a run store is one; name another path)")
        self._held: tuple[int, int] | None = None
        try:
            config = {"memory_limit": memory_limit} if memory_limit else {}
            self.con = duckdb.connect(str(self.path), read_only=read_only, config=config)
        except duckdb.IOException as exc:
            raise StoreError(f"cannot open the run store {self.path}: {exc}") from exc
        except duckdb.ConnectionException as exc:
            if not held_store(self.path):
                raise StoreError(f"cannot open the run store {self.path}: {exc}") from exc
            raise StoreConnectionError(
                f"cannot open the run store {self.path}{' read-only' if read_only else ''}: this process already has "
                "it open (a capture run or another RunStore) with other settings; read it through that store, or "
                "with RunStore.reader(path)") from exc
        self._held = hold_store(self.path)
        try:
            if read_only:
                self.version = self._version()
                if self.version != SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} has store schema version {self.version}; this agentstats reads version "
                        f"{SCHEMA_VERSION} (open it once for writing to migrate it)"
                        if self.version < SCHEMA_VERSION else self._newer_message(self.version)
                    )
            else:
                self.version = self._migrate()
                self.interrupted = self.mark_interrupted()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ file, schema, lifecycle

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with contextlib.suppress(Exception):
            self.con.close()
        release_store(self._held)
        self._held = None

    def is_open(self) -> bool:
        """Tell whether the connection is still open."""
        try:
            self.con.execute("SELECT 1")
        except duckdb_module().Error:
            return False
        return True

    @classmethod
    @contextlib.contextmanager
    def reader(cls, path: str | os.PathLike) -> Iterator[RunStore]:
        """Open a store for reading, closed at the end of the ``with`` block.

        Read-only, except when this process already has the file open for writing: DuckDB then refuses a read-only
        connection, and this one joins the open database instead.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        StoreError
            The file is not a run store, or another process holds it.
        """
        try:
            store = cls(path, read_only=True)
        except StoreConnectionError:
            store = cls(path)
        try:
            yield store
        finally:
            store.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _version(self) -> int:
        has = self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
        ).fetchone()
        if not has or not has[0]:
            return 0
        row = self.con.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _newer_message(self, version: int) -> str:
        return (
            f"{self.path} has store schema version {version}, newer than this agentstats knows ({SCHEMA_VERSION}); "
            "upgrade agentstats to read it"
        )

    def _migrate(self, upto: int = SCHEMA_VERSION) -> int:
        """Apply the missing migrations up to ``upto`` in one transaction; return the version reached."""
        version = self._version()
        if version > SCHEMA_VERSION:
            raise StoreError(self._newer_message(version))
        if version >= upto:
            return version
        with self.transaction():
            if version == 0:
                self.con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TIMESTAMPTZ)")
            for v in range(version + 1, upto + 1):
                for step in MIGRATIONS[v - 1]:
                    self.con.execute(step)
                self.con.execute("INSERT INTO schema_version VALUES (?, ?)", [v, _now()])
        return upto

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        """``BEGIN`` ... ``COMMIT``, or ``ROLLBACK`` on any exception (re-raised); yields the connection."""
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield self.con
        except BaseException:
            with contextlib.suppress(Exception):
                self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def mark_interrupted(self) -> list[str]:
        """Mark runs left ``running`` by a process that is gone as ``interrupted``; return their names.

        A run is gone when it was started on this host by a process that no longer exists, or by another
        process on any host (DuckDB lets one process write a file at a time, so a writer that held it is done).
        """
        rows = self.con.execute("SELECT run_id, name, pid, host FROM runs WHERE status = 'running'").fetchall()
        me, host = os.getpid(), socket.gethostname()
        stale = [(rid, name) for rid, name, pid, h in rows if not (pid == me and h == host)]
        if stale:
            with self.transaction():
                for rid, _ in stale:
                    self.con.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", [rid])
        return [name for _, name in stale]

    def _settle(self) -> None:
        """Finish a partly fetched result on the connection (DuckDB >= 2 refuses ``register`` until then)."""
        complete = getattr(self.con, "complete", None)
        if complete is not None:
            complete()

    # ------------------------------------------------------------------ runs

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
            """SELECT r.run_id, r.name, r.status, r.started_at, r.ended_at, r.source, r.description, r.tags,
                      r.code_version, count(t.run_id) AS trials, count(DISTINCT t.agent) AS agents,
                      count(DISTINCT t.task_id) AS tasks
               FROM runs r LEFT JOIN trials t USING (run_id)
               GROUP BY ALL ORDER BY r.started_at, r.run_id"""
        ).df()

    def run_info(self, run: str) -> dict[str, Any]:
        """One run's row of ``runs`` as a dict (``config`` parsed), plus record counts per table."""
        rid = self.run_id(run)
        cur = self.con.execute("SELECT * FROM runs WHERE run_id = ?", [rid])
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

    # ------------------------------------------------------------------ writing trials

    def import_trials(
        self,
        trials: Iterable[Trial | dict[str, Any]],
        run: str,
        *,
        source: str | None = None,
        source_sha256: str | None = None,
        description: str | None = None,
        tags: Sequence[str] = (),
        config: dict[str, Any] | None = None,
        code_version: str | None = None,
        replace: bool = False,
        batch_size: int = BATCH,
        locations: Sequence[int] | None = None,
        unit: str = "record",
        skip_duplicates: bool = False,
    ) -> ImportResult:
        """Import trials as a new run, all in one transaction: the run exists completely or not at all.

        Parameters
        ----------
        trials : iterable of Trial or dict
            Streamed in batches of ``batch_size`` (memory bounded by one batch); dicts are validated as
            :class:`~agentstats.records.trial.Trial`. An importer yields trials in the project's schema here.
        run : str
            Name of the new run.
        source : str, optional
            Where the trials came from (a file path, a format name).
        source_sha256 : str, optional
            Hash of the source file. Importing the same source again under the same name is a no-op
            (``ImportResult.unchanged``), so a rerun after a crash neither fails nor duplicates.
        description, tags, config, code_version
            Stored on the run.
        replace : bool
            Replace a run of the same name (else a taken name is an error).
        batch_size : int
        locations, unit : optional
            Where the i-th trial came from (``locations[i]``, e.g. its line with ``unit="line"``), for the message
            of a duplicated trial key; by default its 0-based position.
        skip_duplicates : bool
            Keep the first trial of a duplicated key and list the later copies in ``ImportResult.skipped`` (an
            import with ``on_error="skip"``), instead of refusing the import.

        Returns
        -------
        ImportResult

        Raises
        ------
        StoreError
            Name taken (and not ``replace``).
        LoadError
            A record that is not a valid trial, or a duplicated ``(agent, task_id, trial)`` key (record positions,
            0-based, named); the transaction is rolled back and the store is as before.
        Exception
            Whatever the ``trials`` iterable raises (an importer's located error); rolled back likewise.
        """
        if source_sha256 is not None and self.has_run(run) and not replace:
            row = self.con.execute(
                "SELECT source_sha256, status, run_id, config FROM runs WHERE name = ?", [run]
            ).fetchone()
            if row[0] == source_sha256 and row[1] == "completed":
                if json.loads(row[3] or "{}") != json.loads(_json(config or {}) or "{}"):
                    raise StoreError(
                        f"run {run!r} already holds {source or 'this file'}, imported with other options "
                        f"({row[3]}); import it under another name, or give --replace (replace=True) to import it "
                        "again with these")
                n = self.con.execute("SELECT count(*) FROM trials WHERE run_id = ?", [row[2]]).fetchone()[0]
                return ImportResult(run, int(row[2]), int(n), 0, 0, unchanged=True)
        with self.transaction():
            rid = self.create_run(
                run, description=description, tags=tags, source=source, source_sha256=source_sha256,
                config=config, code_version=code_version, status="running", replace=replace,
            )
            dropped: list[Problem] | None = [] if skip_duplicates else None
            written = self._write_trials(rid, trials, batch_size=batch_size, source=source or run,
                                         locations=locations, unit=unit, skipped=dropped)
            if not written[0]:  # rolled back: a run without trials is an input problem, never a result
                raise StoreError(f"nothing to import from {source or run}: no trial could be read from it")
            self.con.execute("UPDATE runs SET status = 'completed', ended_at = ? WHERE run_id = ?", [_now(), rid])
        return ImportResult(run, rid, *written, skipped=dropped or [])

    def append_trials(self, run: str, trials: Iterable[Trial | dict[str, Any]]) -> tuple[int, int, int]:
        """Add trials to an existing run in one transaction; return rows written (trials, interactions, calls).

        Raises
        ------
        LoadError
            As :meth:`import_trials`, including a key already stored in the run; nothing is written then.
        """
        rid = self.run_id(run)
        with self.transaction():
            return self._write_trials(rid, trials, batch_size=BATCH, source=run)

    def _write_trials(
        self, rid: int, trials: Iterable[Trial | dict[str, Any]], *, batch_size: int, source: str,
        locations: Sequence[int] | None = None, unit: str = "record", skipped: list[Problem] | None = None,
    ) -> tuple[int, int, int]:
        """Write trials in the caller's transaction as ONE streamed ``INSERT`` (memory bounded by one batch).

        The trials become Arrow record batches of ``batch_size`` rows, read by DuckDB from a
        :class:`pyarrow.RecordBatchReader` inside a single ``INSERT ... SELECT``: DuckDB writes the rows out as
        they arrive instead of holding a growing transaction in memory, which a sequence of per-batch ``INSERT``
        statements in one transaction does (measured in docs/benchmarks.md, "Run store"). Interactions and tool
        calls are then derived from the stored records in two more statements. Whatever the iterable raises is
        re-raised here after the statement (the caller's transaction then rolls back).

        A duplicated ``(agent, task_id, trial)`` key is an error naming both places (``locations[i]``, in ``unit``,
        is where the i-th trial came from: e.g. its line); with a ``skipped`` list, the later copies are removed
        instead and listed there, as an import with ``on_error="skip"`` skips any bad record.
        """
        import pyarrow as pa
        from pydantic import ValidationError

        start = self.con.execute("SELECT coalesce(max(seq) + 1, 0) FROM trials WHERE run_id = ?", [rid]).fetchone()[0]
        problems: list[Problem] = []
        raised: list[BaseException] = []
        written = [0]

        def batches() -> Iterator[pa.RecordBatch]:
            seq = int(start)
            batch = _Batch()
            try:
                for pos, rec in enumerate(trials):
                    if isinstance(rec, Trial):
                        t = rec
                    else:
                        try:
                            t = Trial.model_validate(rec)
                        except ValidationError as exc:
                            for err in exc.errors(include_url=False):
                                field = ".".join(str(x) for x in err.get("loc", ())) or None
                                problems.append(Problem(source, pos, field, err.get("msg", ""), "record"))
                            continue
                    if problems:  # the import will fail: validate the rest, write nothing more
                        continue
                    batch.add(rid, seq, t)
                    seq += 1
                    if batch.n >= batch_size:
                        written[0] += batch.n
                        yield batch.record_batch()
                        batch = _Batch()
            except GeneratorExit:
                raise
            except BaseException as exc:  # an importer's located error, KeyboardInterrupt: re-raised below
                raised.append(exc)
                if not isinstance(exc, LoadError):
                    return
                # the importer's own problems, raised after its last record: the rest of the trials is still
                # written (then rolled back), so that the duplicated keys are listed in the same error
            if batch.n and not problems:
                written[0] += batch.n
                yield batch.record_batch()

        # DuckDB pulls the batches on a thread of its own: run them in this caller's context, so that what the
        # importer raises is worded as the caller asked (option_style: the CLI's --skip-bad, not on_error=)
        reader = pa.RecordBatchReader.from_batches(_trial_schema(), _in_context(contextvars.copy_context(), batches()))
        self._settle()
        self.con.register("_agentstats_stream", reader)
        try:
            self.con.execute(
                f"INSERT INTO trials ({', '.join(_TRIAL_COLUMNS)}) SELECT * FROM _agentstats_stream"
            ).fetchall()
        finally:
            self.con.unregister("_agentstats_stream")
        if raised:
            exc = raised[0]
            if isinstance(exc, LoadError) and written[0]:
                # one error for the whole file: the importer's problems and the duplicated keys, in file order
                dup_problems = self._duplicates(rid, int(start), source, locations, unit, limit=True)[0]
                if dup_problems:
                    merged = sorted([*exc.problems, *dup_problems], key=lambda p: -1 if p.line is None else p.line)
                    raise LoadError(merged, exc.source, skippable=exc.skippable, hint=exc.hint) from None
            raise exc
        if problems:
            raise LoadError(problems, source, skippable=False)
        n_written = written[0]
        problems, drop, stored_before = self._duplicates(rid, int(start), source, locations, unit,
                                                          limit=skipped is None)
        if problems:
            if skipped is None or stored_before:
                raise LoadError(problems, source, skippable=False)
            # before the interactions and tool calls are derived (they are keyed by the trial key, not by seq)
            self.con.register("_agentstats_drop", pa.table({"seq": pa.array(drop, pa.int64())}))
            try:
                self.con.execute("DELETE FROM trials WHERE run_id = ? AND seq IN (SELECT seq FROM _agentstats_drop)",
                                 [rid])
            finally:
                self.con.unregister("_agentstats_drop")
            skipped.extend(problems)
            n_written -= len(drop)
            # the reader warned of its own skipped records before the keys were compared: say these too
            warnings.warn(
                f"{source}: skipped {len(drop)} record{'s' if len(drop) != 1 else ''} with a duplicated trial key "
                f"(see .skipped); first: {problems[0]}",
                LoadWarning,
                stacklevel=4,
            )
        totals = [n_written, 0, 0]
        if n_written:
            totals[1], totals[2] = self._derive(f"run_id = {int(rid)} AND seq >= {int(start)}")
        return totals[0], totals[1], totals[2]

    def _duplicates(
        self, rid: int, start: int, source: str, locations: Sequence[int] | None, unit: str, *, limit: bool,
    ) -> tuple[list[Problem], list[int], bool]:
        """Find the duplicated trial keys among the rows of run ``rid`` from ``seq >= start`` on, in SQL.

        Returns one problem per later copy (at ``locations[seq - start]`` in ``unit``, else at ``seq - start``),
        the ``seq`` of those copies, and whether a key was already stored before ``start``. ``limit``: at most 50
        keys (an error lists no more).
        """

        def where(i: int) -> int:
            return int(locations[i]) if locations is not None and 0 <= i < len(locations) else i

        dups = self.con.execute(
            f"""SELECT agent, task_id, trial, list(seq ORDER BY seq) FROM trials WHERE run_id = ?
               GROUP BY agent, task_id, trial HAVING count(*) > 1 ORDER BY min(seq)
               {'LIMIT 50' if limit else ''}""",
            [rid],
        ).fetchall()
        problems: list[Problem] = []
        drop: list[int] = []
        for a, t, k, seqs in dups:
            first = int(seqs[0]) - start
            seen = f"first seen at {unit} {where(first)}" if first >= 0 else "already stored in this run"
            for later in seqs[1:] if first >= 0 else seqs:
                problems.append(Problem(source, where(int(later) - start), "(agent, task_id, trial)",
                                        f"duplicate trial key {(a, t, int(k))!r}, {seen}", unit))
                drop.append(int(later))
        return problems, drop, any(int(seqs[0]) < start for *_, seqs in dups)

    def write_run(
        self,
        run: str,
        trials: Iterable[Trial | dict[str, Any]],
        rows: dict[str, dict[str, list[Any]]] | None = None,
        *,
        description: str | None = None,
        tags: Sequence[str] = (),
        source: str | None = None,
        source_sha256: str | None = None,
        config: dict[str, Any] | None = None,
        code_version: str | None = None,
    ) -> int:
        """Write a whole run in one transaction: the run, its trials, and rows of other tables; return its id.

        The run is ``completed`` when the transaction commits; a crash before that leaves nothing of it.

        Parameters
        ----------
        run : str
            Name of the new run (must not exist).
        trials : iterable of Trial or dict
            As :meth:`import_trials` (interactions and tool calls are derived from them).
        rows : dict, optional
            ``table -> columns`` (name -> values, equal lengths) for :data:`TABLES` other than ``trials``,
            ``interactions`` and ``tool_calls`` (``metric_results``, ``judge_verdicts``, ``gate_decisions``,
            ``node_invocations``); the ``run_id`` column is filled in.
        description, tags, source, source_sha256, config, code_version
            Stored on the run.

        Returns
        -------
        int
            The run's id.

        Raises
        ------
        StoreError
            A taken name, or an unknown or trial-derived table in ``rows``.
        LoadError
            As :meth:`import_trials`; nothing is written then.
        """
        derived = {"trials", "interactions", "tool_calls"}
        bad = sorted(t for t in rows or {} if t not in TABLES or t in derived)
        if bad:
            raise StoreError(f"write_run: rows for {bad}: give rows of {sorted(set(TABLES) - derived)}")
        with self.transaction():
            rid = self.create_run(run, description=description, tags=tags, source=source,
                                  source_sha256=source_sha256, config=config, code_version=code_version)
            self._write_trials(rid, trials, batch_size=BATCH, source=run)
            for table, columns in (rows or {}).items():
                n = len(next(iter(columns.values()))) if columns else 0
                self.append_rows(table, {"run_id": [rid] * n, **columns})
            self.con.execute("UPDATE runs SET status = 'completed', ended_at = ? WHERE run_id = ?", [_now(), rid])
        return rid

    def add_gate_decision(self, record: dict[str, Any], *, run: str | None = None) -> dict[str, Any]:
        """Append a gate decision record to ``gate_decisions``, carrying earlier sign-offs forward.

        Rows are never updated: each call inserts one. Sign-offs already stored for the same inputs (same
        ``config_sha256``, candidate and baseline ``sha256`` and calibration-set ``sha256``, on the same run) are
        put in front of the record's own ``sign_off`` entries (those not already there), so the newest row holds
        every sign-off, in order.

        Parameters
        ----------
        record : dict
            A gate decision record (:meth:`agentstats.gating.GateDecision.to_record`), with ``sign_off``.
        run : str, optional
            The run the decision is about (its ``run_id`` is stored); None: ``run_id`` is NULL.

        Returns
        -------
        dict
            The record as stored (with the merged ``sign_off`` list).

        Raises
        ------
        StoreError
            An unknown run, or a record that is not a gate decision record.
        """
        if not isinstance(record, dict) or not str(record.get("schema", "")).startswith("agentstats.gate/"):
            raise StoreError("add_gate_decision: not a gate decision record (schema agentstats.gate/...)")
        rid = self.run_id(run) if run is not None else None
        cand = (record.get("candidate") or {}).get("sha256")
        base = (record.get("baseline") or {}).get("sha256")
        calib = (record.get("judge_calibration") or {}).get("sha256")
        prior = self.con.execute(
            """SELECT record->'sign_off' FROM gate_decisions
               WHERE run_id IS NOT DISTINCT FROM ? AND record->>'config_sha256' = ?
                 AND record->'candidate'->>'sha256' = ? AND record->'baseline'->>'sha256' = ?
                 AND (record->'judge_calibration'->>'sha256') IS NOT DISTINCT FROM ?
               ORDER BY decided_at DESC LIMIT 1""",
            [rid, record.get("config_sha256"), cand, base, calib],
        ).fetchone()
        signed = json.loads(prior[0]) if prior and prior[0] else []
        for s in record.get("sign_off") or []:
            if s not in signed:
                signed.append(s)
        stored = {**record, "sign_off": signed}
        with self.transaction():
            self.append_rows("gate_decisions", {
                "run_id": [rid], "decided_at": [_now()], "decision": [str(record.get("decision"))],
                "config": [_json(record.get("config"))], "record": [_json(stored)],
            })
        return stored

    def gate_decisions(self, run: str | None = None) -> list[dict[str, Any]]:
        """Return the stored gate decision records, oldest first (one run's, or all), ``decided_at`` added to each."""
        if run is None:
            rows = self.con.execute("SELECT decided_at, record FROM gate_decisions ORDER BY decided_at").fetchall()
        else:
            rows = self.con.execute(
                "SELECT decided_at, record FROM gate_decisions WHERE run_id = ? ORDER BY decided_at",
                [self.run_id(run)],
            ).fetchall()
        return [{**json.loads(r), "decided_at": at.isoformat() if at is not None else None} for at, r in rows]

    def replace_trials(self, run_id: int, trials: Sequence[Trial] | Sequence[TrialRow], *, calls: bool = True
                       ) -> None:
        """Write trials of a run, replacing stored trials with the same keys (caller's transaction; live capture).

        A conversation captured over several calls is rewritten as it grows; ``seq`` of a replaced trial is kept.
        A handful of statements whatever the number of trials (the keys travel as one Arrow table).

        Parameters
        ----------
        run_id : int
            The run written to.
        trials : sequence of Trial or of TrialRow
            Validated trials, or rows already in the stored form (:data:`TrialRow`, as :func:`trial_row` makes
            them; live capture builds them without a pydantic round trip and is tested to write the same record).
        calls : bool
            False when the caller knows that no trial holds a tool call or an expected tool call: the statement
            that derives ``tool_calls`` (a second parse of every record) is then skipped.
        """
        import pyarrow as pa

        if not trials:
            return
        rows: list[TrialRow] = [t if isinstance(t, tuple) else trial_row(t) for t in trials]
        cols = [list(c) for c in zip(*rows, strict=True)]  # the TrialRow's columns
        keys = pa.table({"agent": cols[0], "task_id": cols[1], "trial": pa.array(cols[2], pa.int32())})
        self._settle()
        self.con.register("_agentstats_keys", keys)
        try:
            stored = {
                (a, k, int(n)): int(seq) for a, k, n, seq in self.con.execute(
                    """SELECT t.agent, t.task_id, t.trial, t.seq FROM trials t
                       JOIN _agentstats_keys k USING (agent, task_id, trial) WHERE t.run_id = ?""", [run_id]
                ).fetchall()
            }
            if stored:
                for table in ("trials", "interactions", "tool_calls"):
                    self.con.execute(
                        f"""DELETE FROM {table} t USING _agentstats_keys k WHERE t.run_id = ? AND t.agent = k.agent
                            AND t.task_id = k.task_id AND t.trial = k.trial""", [run_id])
        finally:
            self.con.unregister("_agentstats_keys")
        next_seq = int(self.con.execute(
            "SELECT coalesce(max(seq) + 1, 0) FROM trials WHERE run_id = ?", [run_id]).fetchall()[0][0])
        next_seq = max([next_seq, *(v + 1 for v in stored.values())])
        n = len(rows)
        if stored:
            seq_list = []
            for key in zip(cols[0], cols[1], cols[2], strict=True):
                seq = stored.get(key)
                if seq is None:
                    seq, next_seq = next_seq, next_seq + 1
                seq_list.append(seq)
            seqs = pa.array(seq_list, pa.int64())
        else:  # all new (a capture's usual flush): consecutive numbers
            seqs = pa.array(np.arange(next_seq, next_seq + n, dtype=np.int64))
        columns = {"run_id": pa.array(np.full(n, run_id, dtype=np.int32)), "seq": seqs,
                   **dict(zip(_TRIAL_COLUMNS[2:], cols, strict=True))}
        self._insert_trials(pa.table(columns))
        self._settle()
        self.con.register("_agentstats_seqs", pa.table({"seq": seqs}))
        try:
            self._derive(f"run_id = {int(run_id)} AND seq IN (SELECT seq FROM _agentstats_seqs)", calls=calls)
        finally:
            self.con.unregister("_agentstats_seqs")

    def append_rows(self, table: str, columns: dict[str, Any]) -> int:
        """Insert rows given as columns (name -> values or an Arrow array, equal lengths); return the row count."""
        import pyarrow as pa

        if table not in TABLES:
            raise StoreError(f"table must be one of {TABLES}, got {table!r}")
        n = len(next(iter(columns.values()))) if columns else 0
        if not n:
            return 0
        self._settle()
        self.con.register("_agentstats_rows", pa.table(columns))
        try:
            self.con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM _agentstats_rows")
        finally:
            self.con.unregister("_agentstats_rows")
        return n

    def _flush(self, batch: _Batch, totals: list[int], *, derive: bool = True) -> None:
        """Insert a batch of trials and (``derive``) their interactions and tool calls; add the rows to ``totals``."""
        import pyarrow as pa

        if not batch.n:
            return
        self._insert_trials(pa.table(batch.columns()))
        totals[0] += batch.n
        if derive:
            first, last = batch.rows[0][1], batch.rows[-1][1]
            n_int, n_calls = self._derive(f"run_id = {int(batch.rows[0][0])} AND seq BETWEEN {first} AND {last}")
            totals[1] += n_int
            totals[2] += n_calls

    def _insert_trials(self, table: Any) -> None:
        """Insert an Arrow table with the columns of :data:`_TRIAL_COLUMNS` into ``trials``."""
        self._settle()
        self.con.register("_agentstats_batch", table)
        try:
            self.con.execute(f"INSERT INTO trials ({', '.join(_TRIAL_COLUMNS)}) SELECT * FROM _agentstats_batch")
        finally:
            self.con.unregister("_agentstats_batch")

    def _derive(self, where: str, *, calls: bool = True) -> tuple[int, int]:
        """Fill ``interactions`` and (``calls``) ``tool_calls`` from the trials ``where`` selects; return rows."""
        n_int = self.con.execute(_DERIVE_INTERACTIONS.format(where=where)).fetchall()[0][0]
        n_calls = self.con.execute(_DERIVE_CALLS.format(where=where)).fetchall()[0][0] if calls else 0
        return int(n_int), int(n_calls)

    # ------------------------------------------------------------------ reading

    def iter_trials(self, run: str, *, batch_size: int = BATCH) -> Iterator[Trial]:
        """Yield the run's trials in the order they were written, as :class:`~agentstats.records.trial.Trial`."""
        rid = self.run_id(run)
        cur = self.con.cursor()
        try:
            cur.execute("SELECT record FROM trials WHERE run_id = ? ORDER BY seq", [rid])
            validate = Trial.model_validate_json
            while rows := cur.fetchmany(batch_size):
                for (record,) in rows:
                    yield validate(record)
        finally:
            cur.close()

    def trials(self, run: str) -> list[Trial]:
        """Return the run's trials as a list (``agentstats.load_trials(path, run=...)`` gives a ``TrialSet``)."""
        return list(self.iter_trials(run))

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
            from agentstats.records.counts import _unscored_message

            n = self.con.execute(
                "SELECT count(*) FROM trials WHERE run_id = ? AND outcome IS NULL", [rid]
            ).fetchone()[0]
            raise ValueError(_unscored_message(int(n), [((a, t, int(k)), "") for a, t, k in unscored]))
        cells = self.con.execute(
            """SELECT agent, task_id, count(*) AS total, count(*) FILTER (outcome <> 'missing') AS n,
                      count(*) FILTER (outcome = 'success') AS c, count(*) FILTER (outcome = 'missing') AS m,
                      max(trial) AS mx
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
        # codes by first appearance (as to_counts), outcome codes 0 failure, 1 success, 2 missing
        arrays = self.con.execute(
            """WITH t AS (SELECT seq, agent, task_id, trial, outcome FROM trials WHERE run_id = ?),
                    a AS (SELECT agent, row_number() OVER (ORDER BY min(seq)) - 1 AS code FROM t GROUP BY agent),
                    k AS (SELECT task_id, row_number() OVER (ORDER BY min(seq)) - 1 AS code FROM t GROUP BY task_id)
               SELECT a.code AS a, k.code AS t, t.trial AS k,
                      CASE t.outcome WHEN 'failure' THEN 0 WHEN 'success' THEN 1 ELSE 2 END AS o
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

    def frame(self, run: str, table: str = "trials") -> pd.DataFrame:
        """One table's rows for a run as a DataFrame (``record`` / JSON columns as text)."""
        if table not in TABLES:
            raise StoreError(f"table must be one of {TABLES}, got {table!r}")
        rid = self.run_id(run)
        order = {"trials": "seq", "node_invocations": "invocation_id"}.get(table)
        sql = f"SELECT * FROM {table} WHERE run_id = ?" + (f" ORDER BY {order}" if order else "")
        return self.con.execute(sql, [rid]).df()

    # ------------------------------------------------------------------ export

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

    def export_jsonl(self, run: str, path: str | os.PathLike) -> Path:
        """Write a run's trials as the project's JSONL (with its manifest), atomically; see ``save_trials``."""
        from agentstats.io.jsonl import save_trials

        self.run_id(run)
        return save_trials(self.iter_trials(run), path)


def _sql_text(path: str | os.PathLike) -> str:
    return str(path).replace("'", "''")


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


#: A trial as stored, less ``run_id`` and ``seq``: agent, task_id, trial, status, success, reward, outcome,
#: latency_s, input_tokens, output_tokens, cost_usd, record (the trial's JSON, ``exclude_defaults``).
TrialRow = tuple[str, str, int, str, bool | None, float | None, str | None, float | None, int | None, int | None,
                 float | None, str]

_TRIAL_COLUMNS = ("run_id", "seq", "agent", "task_id", "trial", "status", "success", "reward", "outcome",
                  "latency_s", "input_tokens", "output_tokens", "cost_usd", "record")


@functools.cache
def _trial_schema() -> Any:
    """Arrow schema of the streamed ``trials`` rows (every batch the same types, even when a column is all null)."""
    import pyarrow as pa

    types = {"run_id": pa.int32(), "seq": pa.int64(), "trial": pa.int32(), "success": pa.bool_(),
             "reward": pa.float64(), "latency_s": pa.float64(), "input_tokens": pa.int64(),
             "output_tokens": pa.int64(), "cost_usd": pa.float64()}
    return pa.schema([(c, types.get(c, pa.string())) for c in _TRIAL_COLUMNS])

# Interactions and tool calls are derived from the stored records in SQL (vectorized; one statement per write), so
# a trial costs Python only its validation, its outcome and its JSON. ``{where}`` selects the trials just written.
# The CTEs used twice are NOT MATERIALIZED: DuckDB would otherwise hold them (every record's JSON arrays) in memory
# for the whole statement, about 370 MB more at 1,000,000 trials; streamed, they are parsed twice instead.
# The interactions are read with one json_transform of the whole record (not of ``record->'interactions'``, which
# parses the record, writes the list out and parses it again): about 1 µs less per trial.
_DERIVE_INTERACTIONS = """
INSERT INTO interactions (run_id, agent, task_id, trial, idx, message_id, query, answer, expected_answer)
WITH base AS (SELECT run_id, agent, task_id, trial,
                     json_transform(record, '{{"interactions": [{{"id": "VARCHAR", "query": "VARCHAR",
                                    "answer": "VARCHAR", "expected_answer": "JSON"}}]}}').interactions AS its
              FROM trials WHERE {where}),
     x AS (SELECT run_id, agent, task_id, trial, unnest(its) AS it, generate_subscripts(its, 1) - 1 AS idx
           FROM base WHERE len(its) > 0)
SELECT run_id, agent, task_id, trial, idx, it.id, it.query, it.answer, it.expected_answer FROM x
"""
_DERIVE_CALLS = """
INSERT INTO tool_calls (run_id, agent, task_id, trial, interaction_idx, idx, kind, name, call_id, arguments, result,
                        parse_error)
WITH base AS NOT MATERIALIZED (SELECT run_id, agent, task_id, trial, CAST(record->'interactions' AS JSON[]) AS its,
                                     CAST(record->'expected_tool_calls' AS JSON[]) AS exp FROM trials WHERE {where}),
     its AS NOT MATERIALIZED (SELECT run_id, agent, task_id, trial, unnest(its) AS it,
                                     generate_subscripts(its, 1) - 1 AS ii FROM base WHERE len(its) > 0),
     lists AS (SELECT run_id, agent, task_id, trial, ii, 'call' AS kind, CAST(it->'tool_calls' AS JSON[]) AS cs
               FROM its
               UNION ALL
               SELECT run_id, agent, task_id, trial, ii, 'expected', CAST(it->'expected_tool_calls' AS JSON[])
               FROM its
               UNION ALL
               SELECT run_id, agent, task_id, trial, NULL, 'expected', exp FROM base),
     x AS (SELECT run_id, agent, task_id, trial, ii, kind, unnest(cs) AS c, generate_subscripts(cs, 1) - 1 AS j
           FROM lists WHERE len(cs) > 0)
SELECT run_id, agent, task_id, trial, ii, j, kind, c->>'name', c->>'id', coalesce(c->'arguments', '{{}}'),
       c->'result', c->>'parse_error'
FROM x
"""


def trial_row(t: Trial) -> TrialRow:
    """Return the stored row of a trial, without ``run_id`` and ``seq`` (see :data:`TrialRow`)."""
    u = t.usage
    return (t.agent, t.task_id, t.trial, t.status.value, t.success, t.reward, t.outcome(),
            u.latency_s if u else None, u.input_tokens if u else None, u.output_tokens if u else None,
            u.cost_usd if u else None, t.model_dump_json(exclude_defaults=True))


class _Batch:
    """Rows of one batch of trials (then one Arrow table)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    @property
    def n(self) -> int:
        return len(self.rows)

    def add(self, rid: int, seq: int, t: Trial) -> None:
        self.rows.append((rid, seq, *trial_row(t)))

    def columns(self) -> dict[str, list[Any]]:
        return {name: list(col) for name, col in zip(_TRIAL_COLUMNS, zip(*self.rows, strict=True), strict=True)}

    def record_batch(self) -> Any:
        """Return the rows as one Arrow record batch of :func:`_trial_schema` (types fixed, whatever the values)."""
        import pyarrow as pa

        return pa.RecordBatch.from_pydict(self.columns(), schema=_trial_schema())
