"""Counts tables: one row per (agent, task) with ``n`` trials and ``c`` successes (optional ``n_missing``).

Read from CSV (plain or gzip), Parquet, or a pandas DataFrame; validated row by row so that every problem is
named with its CSV line (header = line 1) or 0-based row index, and its column.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from agentstats.counts import counts_frame
from agentstats.io.detect import PARQUET_MAGIC, open_binary, source_name
from agentstats.io.errors import ProblemLog

__all__ = ["read_counts_table", "read_table", "validate_counts_frame"]


def read_table(src: Any, log: ProblemLog) -> tuple[pd.DataFrame | None, int | None]:
    """Read a CSV / Parquet file or take a DataFrame, all columns as given (CSV cells as text).

    Returns
    -------
    (DataFrame or None, line_offset)
        ``line_offset`` = 2 for CSV (row i is on line i + 2), ``None`` for Parquet/DataFrame (0-based row
        index; the log's unit is set to ``"row"``). ``None`` frame when the file could not be read (logged).
    """
    if isinstance(src, pd.DataFrame):
        log.unit = "row"
        return src, None
    if not isinstance(src, (str, os.PathLike)):
        raise TypeError(f"expected a file path or a pandas DataFrame, got {type(src).__name__}")
    with open(src, "rb") as fh:
        magic = fh.read(4)
    if magic == PARQUET_MAGIC:
        log.unit = "row"
        return pd.read_parquet(src), None
    try:
        with open_binary(src) as fh:
            df = pd.read_csv(fh, dtype=str, keep_default_na=True, skipinitialspace=True)
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, EOFError) as exc:
        log.add(None, None, f"cannot read as CSV: {exc}")
        return None, 2
    except pd.errors.EmptyDataError:
        log.add(None, None, "file is empty")
        return None, 2
    df.columns = [str(c).strip() for c in df.columns]
    return df, 2


def validate_counts_frame(
    df: pd.DataFrame,
    log: ProblemLog,
    *,
    line_offset: int | None,
    agent_col: str = "agent",
    task_col: str | None = None,
    n_col: str = "n",
    c_col: str = "c",
    n_missing_col: str = "n_missing",
) -> pd.DataFrame:
    """Check a counts table and return it in canonical form (see :data:`agentstats.counts.COUNTS_COLUMNS`).

    Checks: required columns present; agent and task non-empty; ``n``, ``c`` (and ``n_missing`` when
    present) integers (``3.0`` is accepted, ``2.5`` is not) and non-negative; ``c <= n``; each (agent, task)
    once. Rows with problems are logged (location, column, message) and left out.
    """
    cols = set(map(str, df.columns))
    if task_col is None:
        task_col = "task_id" if "task_id" in cols else "task"
    missing_cols = [c for c in (agent_col, task_col, n_col, c_col) if c not in cols]
    if missing_cols:
        for c in missing_cols:
            log.add(None, c, f"missing required column (columns are {sorted(cols)})")
        return counts_frame([], [], [], [], [])
    m = len(df)
    loc = np.arange(m) + (line_offset or 0)
    bad = np.zeros(m, dtype=bool)
    problems: list[tuple[int, str, str]] = []  # (row position, column, message)

    def as_text(v: Any) -> str | None:
        if v is None:
            return None
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        return str(v).strip()

    def ident(col: str) -> tuple[pd.Series, np.ndarray]:
        raw = df[col]
        text = raw.astype(object).where(raw.notna(), None).map(as_text)
        empty = text.isna() | (text == "")
        for i in np.flatnonzero(empty.to_numpy()):
            problems.append((i, col, "missing value"))
        return text, empty.to_numpy()

    agents, bad_a = ident(agent_col)
    tasks, bad_t = ident(task_col)
    bad |= bad_a | bad_t

    def count(col: str, required: bool) -> np.ndarray:
        if col not in cols:
            return np.zeros(m, dtype=np.int64)
        raw = df[col]
        num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        isna = raw.isna().to_numpy()
        for i in np.flatnonzero(isna):
            if required:
                problems.append((i, col, "missing value"))
        for i in np.flatnonzero(np.isnan(num) & ~isna):
            problems.append((i, col, f"not a number: {raw.iloc[i]!r}"))
        finite = ~np.isnan(num)
        nonint = finite & (np.mod(num, 1) != 0)
        for i in np.flatnonzero(nonint):
            problems.append((i, col, f"counts must be whole numbers, got {raw.iloc[i]!r}"))
        neg = finite & ~nonint & (num < 0)
        for i in np.flatnonzero(neg):
            problems.append((i, col, f"counts must be non-negative, got {raw.iloc[i]!r}"))
        ok = finite & ~nonint & ~neg
        if required:
            bad[~ok] = True
        else:
            bad[~ok & ~isna] = True
        return np.where(ok, num, 0).astype(np.int64)

    n = count(n_col, True)
    c = count(c_col, True)
    n_missing = count(n_missing_col, False)
    over = ~bad & (c > n)
    for i in np.flatnonzero(over):
        problems.append((i, c_col, f"more successes than trials: c = {c[i]} > n = {n[i]}"))
    bad |= over
    a_arr = agents.to_numpy()
    t_arr = tasks.to_numpy()
    seen: dict[tuple[str, str], int] = {}
    for i in range(m):
        if bad[i]:
            continue
        key = (a_arr[i], t_arr[i])
        if key in seen:
            first = loc[seen[key]]
            where = f"line {first}" if line_offset else f"row {first}"
            problems.append((i, f"({agent_col}, {task_col})", f"duplicate row for {key!r}, first at {where}"))
            bad[i] = True
        else:
            seen[key] = i
    for i, col, msg in sorted(problems, key=lambda p: p[0]):
        log.add(int(loc[i]), col, msg)
    keep = ~bad
    return counts_frame(list(a_arr[keep]), list(t_arr[keep]), n[keep], c[keep], n_missing[keep])


def read_counts_table(src: Any, log: ProblemLog, **columns: Any) -> pd.DataFrame:
    """Read and validate a counts table (CSV / Parquet / DataFrame); see :func:`validate_counts_frame`."""
    df, offset = read_table(src, log)
    if df is None:
        return counts_frame([], [], [], [], [])
    out = validate_counts_frame(df, log, line_offset=offset, **columns)
    out.attrs["source"] = source_name(src)
    return out
