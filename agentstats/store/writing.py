"""Writing trials to a run store: imports in one transaction, whole runs, live capture's rewrites, other rows.

:class:`TrialWriter` streams trials into ``trials`` as Arrow record batches read by one ``INSERT`` (memory bounded by
one batch), refuses duplicated ``(agent, task_id, trial)`` keys with both places named, and derives interactions and
tool calls in SQL (:mod:`agentstats.store.rows`). Each import is one transaction: the run exists completely or not at
all.
"""

from __future__ import annotations

import contextvars
import json
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentstats.records.problems import LoadError, LoadWarning, Problem
from agentstats.records.trial import Trial
from agentstats.store.connection import StoreError, _json, _now
from agentstats.store.rows import (
    DERIVE_CALLS,
    DERIVE_INTERACTIONS,
    TRIAL_COLUMNS,
    TrialBatch,
    TrialRow,
    trial_row,
    trial_schema,
)
from agentstats.store.runs import TABLES, RunCatalog

__all__ = ["BATCH", "ImportResult", "TrialWriter"]

#: Trials written per transaction-internal batch when importing (bounded memory).
BATCH = 20_000


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


class TrialWriter(RunCatalog):
    """Writing trials and rows to a store (see :class:`RunStore`)."""

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
            batch = TrialBatch()
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
                        batch = TrialBatch()
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
        reader = pa.RecordBatchReader.from_batches(trial_schema(), _in_context(contextvars.copy_context(), batches()))
        self._settle()
        self.con.register("_agentstats_stream", reader)
        try:
            self.con.execute(
                f"INSERT INTO trials ({', '.join(TRIAL_COLUMNS)}) SELECT * FROM _agentstats_stream"
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
                   **dict(zip(TRIAL_COLUMNS[2:], cols, strict=True))}
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

    def _insert_trials(self, table: Any) -> None:
        """Insert an Arrow table with the columns of :data:`TRIAL_COLUMNS` into ``trials``."""
        self._settle()
        self.con.register("_agentstats_batch", table)
        try:
            self.con.execute(f"INSERT INTO trials ({', '.join(TRIAL_COLUMNS)}) SELECT * FROM _agentstats_batch")
        finally:
            self.con.unregister("_agentstats_batch")

    def _derive(self, where: str, *, calls: bool = True) -> tuple[int, int]:
        """Fill ``interactions`` and (``calls``) ``tool_calls`` from the trials ``where`` selects; return rows."""
        n_int = self.con.execute(DERIVE_INTERACTIONS.format(where=where)).fetchall()[0][0]
        n_calls = self.con.execute(DERIVE_CALLS.format(where=where)).fetchall()[0][0] if calls else 0
        return int(n_int), int(n_calls)
