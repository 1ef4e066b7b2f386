"""Run tables: one row per run with an agent, a task and a 0/1 success column (METR-style).

METR's ``all_runs.jsonl`` (Kwa et al. 2025, "Measuring AI Ability to Complete Long Tasks", arXiv 2503.14499)
is the model: one JSON line per run with ``alias`` (agent), ``task_id`` and ``score_binarized`` (0/1). Those
are the default column names; any run table works by naming its columns. Rows can come from JSONL (plain or
gzip), CSV, Parquet or a pandas DataFrame.

Mapping to :class:`~agentstats.records.trial.Trial`:

* ``agent`` = ``agent_col``, ``task_id`` = ``task_col`` (kept as text), ``success`` = ``success_col``
  (accepted, and nothing else: the numbers ``0``/``1`` (``0.0``/``1.0``), JSON booleans, and the text
  ``0``/``1``, ``0.0``/``1.0``, ``true``/``false`` in any letter case; ``yes``, ``pass``, ``t``, ``off`` and the
  like are problems, not guesses);
* ``trial`` = the ``trial_col`` value when that column exists (default ``"trial"``), else the order of
  appearance within (agent, task), from 0. A ``run_id_col`` (default ``"run_id"``) is kept in ``meta`` and
  must be unique: a repeated run id is a duplicate;
* ``status`` from ``status_col`` (default ``"status"``) when present (``completed``, ``agent_error``,
  ``infra_error``); an ``infra_error`` row may leave success empty;
* every other column is kept in ``meta`` (for METR: ``score``, ``human_minutes``, ``task_family``,
  ``fatal_error_from`` ...). METR's ``fatal_error_from="usageLimits"`` rows are scored runs that hit their
  budget, so they stay ``completed`` with their score, as in METR's analysis.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from typing import Any

from agentstats.files.sniff import is_parquet, open_binary
from agentstats.io.detect import refuse_store_export, resolve_run_columns
from agentstats.io.jsonl import iter_jsonl
from agentstats.io.readers.counts import read_table
from agentstats.io.registry import register_format
from agentstats.records.problems import ProblemLog
from agentstats.records.trial import Status, Trial

__all__ = ["read_run_table", "read_runs", "runs_from_records", "runs_from_table_rows", "table_records"]

#: The options of :func:`agentstats.io.load_trials` a run table takes.
RUN_TABLE_OPTIONS = ("agent_col", "task_col", "success_col", "trial_col", "run_id_col", "status_col")

_TRUE = {"1", "1.0", "true"}
_FALSE = {"0", "0.0", "false"}
_STATUSES = {s.value for s in Status}


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _success(v: Any) -> bool | None:
    """0/1, bool, 0.0/1.0, or the text 0/1, 0.0/1.0, true/false -> bool; anything else -> None (a problem)."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalars
        v = v.item()
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        if v == 1:
            return True
        if v == 0:
            return False
        return None
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
    return None


def _as_int(v: Any) -> int | None:
    """Whole numbers (int, integral float, numpy integer, integer text) -> int; else None."""
    if isinstance(v, bool):
        return None
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if v.is_integer() else None
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return None
    return None


def _ident(v: Any) -> str | None:
    if isinstance(v, bool) or _is_missing(v):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    text = str(v)
    return text if text.strip() else None


def runs_from_records(
    records: Iterable[tuple[int, dict[str, Any]]],
    log: ProblemLog,
    *,
    agent_col: str = "alias",
    task_col: str = "task_id",
    success_col: str = "score_binarized",
    trial_col: str | None = "trial",
    run_id_col: str | None = "run_id",
    status_col: str | None = "status",
) -> list[Trial]:
    """Turn run-table rows into trials; problems (with the row's line/index and column) go to ``log``.

    Parameters
    ----------
    records : iterable of (location, dict)
        Rows with their 1-based line (JSONL/CSV) or 0-based row index (Parquet/DataFrame).
    log : ProblemLog
    agent_col, task_col, success_col : str
        Column names of agent, task and 0/1 success.
    trial_col, run_id_col, status_col : str or None
        Optional columns, used when present in a row.

    Returns
    -------
    list of Trial
        Valid rows in input order.
    """
    trials: list[Trial] = []
    next_trial: dict[tuple[str, str], int] = {}
    seen_key: dict[tuple[str, str, int], int] = {}
    seen_run: dict[str, int] = {}
    skip_meta = {agent_col, task_col, success_col, trial_col, status_col}
    validate = Trial.model_validate
    unit = log.unit
    for loc, row in records:
        n_before = len(log.problems)
        for col in (agent_col, task_col, success_col):
            if col not in row:
                log.add(loc, col, "missing required column")
        agent = _ident(row.get(agent_col))
        task = _ident(row.get(task_col))
        if agent_col in row and agent is None:
            log.add(loc, agent_col, f"agent must be a non-empty string or integer, got {row[agent_col]!r}")
        if task_col in row and task is None:
            log.add(loc, task_col, f"task must be a non-empty string or integer, got {row[task_col]!r}")
        status = Status.completed
        if status_col and status_col in row and not _is_missing(row[status_col]):
            raw = str(row[status_col]).strip().lower()
            if raw not in _STATUSES:
                log.add(
                    loc, status_col, f"status must be one of {sorted(_STATUSES)}, got {row[status_col]!r}"
                )
            else:
                status = Status(raw)
        success: bool | None = None
        if success_col in row:
            raw = row[success_col]
            if _is_missing(raw):
                if status != Status.infra_error:
                    log.add(
                        loc, success_col, "success is empty (only an infra_error run may have no outcome)"
                    )
            else:
                success = _success(raw)
                if success is None:
                    log.add(
                        loc, success_col, f"success must be 0/1 or true/false (any letter case), got {raw!r}"
                    )
        trial: int | None = None
        if trial_col and trial_col in row and not _is_missing(row[trial_col]):
            t = _as_int(row[trial_col])
            if t is None:
                log.add(loc, trial_col, f"trial must be an integer, got {row[trial_col]!r}")
            else:
                trial = t
        run_id = None
        if run_id_col and run_id_col in row and not _is_missing(row[run_id_col]):
            run_id = _ident(row[run_id_col])
            if run_id is not None and run_id in seen_run:
                first = seen_run[run_id]
                where = f"line {first}" if unit == "line" else f"{unit} {first}"
                log.add(loc, run_id_col, f"duplicate run id {run_id!r}, first seen at {where}")
        if len(log.problems) > n_before:
            continue
        assert agent is not None and task is not None  # a missing one is a problem above
        cell = (agent, task)
        if trial is None:
            trial = next_trial.get(cell, 0)
        next_trial[cell] = max(next_trial.get(cell, 0), trial + 1)
        key = (agent, task, trial)
        if key in seen_key:
            first = seen_key[key]
            where = f"line {first}" if unit == "line" else f"{unit} {first}"
            log.add(loc, "(agent, task_id, trial)", f"duplicate trial key {key!r}, first seen at {where}")
            continue
        seen_key[key] = loc
        if run_id is not None:
            seen_run[run_id] = loc
        meta = {k: v for k, v in row.items() if k not in skip_meta}
        meta["format"] = "runs"
        # fields are checked above, so this validation cannot fail
        trials.append(
            validate(
                {
                    "agent": agent,
                    "task_id": task,
                    "trial": trial,
                    "status": status,
                    "success": success,
                    "meta": meta,
                }
            )
        )
    return trials


def table_records(df: Any, *, line_offset: int | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of a DataFrame as ``(location, dict)`` with NaN as None.

    ``line_offset`` = 2 gives CSV line numbers (header on line 1); ``None`` gives 0-based row indices.
    """
    cols = [str(c) for c in df.columns]
    off = 0 if line_offset is None else line_offset
    for i, values in enumerate(df.itertuples(index=False, name=None)):
        yield i + off, {c: _plain(v) for c, v in zip(cols, values, strict=True)}


def _plain(v: Any) -> Any:
    """NaN/None -> None, numpy scalars -> Python scalars (so meta serializes to JSON)."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            v = v.item()
        except (ValueError, TypeError):
            return v
    return None if _is_missing(v) else v


def read_runs(
    path: str | os.PathLike,
    log: ProblemLog,
    *,
    agent_col: str | None = None,
    task_col: str | None = None,
    success_col: str | None = None,
    **optional_columns: Any,
) -> list[Trial]:
    """Read a JSONL run table (plain or gzip).

    Column names not given are resolved from the first row by
    :func:`agentstats.io.detect.resolve_run_columns` (METR's ``alias, task_id, score_binarized`` first, then
    ``agent, task, success``). ``optional_columns``: ``trial_col``, ``run_id_col``, ``status_col`` of
    :func:`runs_from_records`.
    """
    rows = list(iter_jsonl(path, log))
    return runs_from_table_rows(rows, log, agent_col, task_col, success_col, **optional_columns)


def runs_from_table_rows(
    rows: list[tuple[int, dict[str, Any]]],
    log: ProblemLog,
    agent_col: str | None,
    task_col: str | None,
    success_col: str | None,
    **optional_columns: Any,
) -> list[Trial]:
    """Resolve column names from the first row, then :func:`runs_from_records`."""
    first = set(rows[0][1]) if rows else None
    cols = resolve_run_columns(first, agent_col, task_col, success_col) or resolve_run_columns(
        None, agent_col, task_col, success_col
    )
    assert cols is not None
    return runs_from_records(rows, log, **cols, **optional_columns)


def read_run_table(
    src: Any,
    log: ProblemLog,
    *,
    agent_col: str | None = None,
    task_col: str | None = None,
    success_col: str | None = None,
    trial_col: str | None = "trial",
    run_id_col: str | None = "run_id",
    status_col: str | None = "status",
) -> list[Trial]:
    """Reader of the ``runs`` format: a run table as JSON lines, CSV, Parquet (plain or gzip) or a DataFrame.

    Column options as :func:`agentstats.io.load_trials` (names not given are found by
    :func:`agentstats.io.detect.resolve_run_columns`). A run-store Parquet export is refused as detection refuses it.

    Raises
    ------
    ValueError
        For a run-store Parquet export (export the run as JSONL instead).
    """
    opt = {"trial_col": trial_col, "run_id_col": run_id_col, "status_col": status_col}
    if isinstance(src, (str, os.PathLike)) and not _is_table_file(src):
        return read_runs(src, log, agent_col=agent_col, task_col=task_col, success_col=success_col, **opt)
    if isinstance(src, (str, os.PathLike)) and is_parquet(src):
        refuse_store_export(src)  # the format given explicitly: the same refusal as detection's
    df, offset = read_table(src, log, all_text=True)
    rows = [] if df is None else list(table_records(df, line_offset=offset))
    return runs_from_table_rows(rows, log, agent_col, task_col, success_col, **opt)


def _is_table_file(path: str | os.PathLike) -> bool:
    """Tell whether a file is a table: True for CSV / Parquet files (run tables in table form), False for JSONL."""
    if is_parquet(path):
        return True
    with open_binary(path) as fh:
        head = fh.read(4096).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return not head.startswith("{")


register_format("runs", read_run_table, aliases=("metr",), options=RUN_TABLE_OPTIONS)
