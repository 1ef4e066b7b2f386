"""Counts tables: one row per (agent, task) with ``n`` trials and ``c`` successes (optional ``n_missing``).

Read from CSV (plain or gzip; parsed by pyarrow, with pandas as the fallback that names a malformed line),
Parquet, or a pandas DataFrame, and checked by the one counts validator,
:func:`agentstats.records.counts.check_counts` (vectorized: no Python object per row). Every problem is named with its
CSV line (header = line 1) or 0-based row index, and its column.
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from agentstats.files.sniff import STREAM_ERRORS, is_parquet, open_binary
from agentstats.io.detect import source_name
from agentstats.io.registry import register_format
from agentstats.records.counts import CountsProblem, check_counts, counts_frame
from agentstats.records.problems import ProblemLog

__all__ = ["read_counts_table", "read_table"]


def _read_csv_arrow(src: str | os.PathLike, text_columns: tuple[str, ...]) -> pd.DataFrame | None:
    """CSV through pyarrow (multi-threaded, typed columns); ``None`` when pyarrow cannot parse it."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    convert = pacsv.ConvertOptions(
        column_types={c: pa.string() for c in text_columns},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    try:
        with open_binary(src) as fh:
            table = pacsv.read_csv(fh, convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowTypeError, *STREAM_ERRORS, UnicodeDecodeError):
        return None
    df = table.to_pandas()
    df.columns = [str(c).strip() for c in df.columns]
    return df


def read_table(
    src: Any, log: ProblemLog, text_columns: tuple[str, ...] = (), *, all_text: bool = False
) -> tuple[pd.DataFrame | None, int | None]:
    """Read a CSV / Parquet file or take a DataFrame.

    Parameters
    ----------
    src : str, PathLike or pandas.DataFrame
    log : ProblemLog
        A file that cannot be read is one problem here.
    text_columns : tuple of str
        CSV columns to keep as text whatever they hold (agent and task names such as ``007``).
    all_text : bool
        Read every CSV cell as text (run tables, whose columns are interpreted row by row).

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
    if is_parquet(src):
        log.unit = "row"
        try:
            return pd.read_parquet(src), None
        except (ValueError, *STREAM_ERRORS) as exc:  # cut short or damaged (pyarrow.ArrowInvalid is a ValueError)
            log.add(None, None, f"not a readable Parquet file (cut short or damaged?): {exc}")
            return None, None
    df = None if all_text else _read_csv_arrow(src, text_columns)
    if df is not None:
        return df, 2
    # pyarrow refused the file: pandas names the line at fault
    try:
        with open_binary(src) as fh:
            df = pd.read_csv(fh, dtype=str, keep_default_na=True, skipinitialspace=True)
    except (pd.errors.ParserError, UnicodeDecodeError, *STREAM_ERRORS) as exc:
        log.add(None, None, f"cannot read as CSV: {exc}")
        return None, 2
    except pd.errors.EmptyDataError:
        log.add(None, None, "file is empty")
        return None, 2
    df.columns = [str(c).strip() for c in df.columns]
    return df, 2


def _message(p: CountsProblem, line_offset: int | None) -> str:
    if p.kind == "c_gt_n":
        return f"{p.column} = {p.detail}"
    if p.kind == "duplicate":
        assert p.first is not None
        first = f"line {p.first + line_offset}" if line_offset else f"row {p.first}"
        return f"{p.detail}, first at {first}"
    return p.detail


def read_counts_table(
    src: Any,
    log: ProblemLog,
    *,
    agent_col: str = "agent",
    task_col: str | None = None,
    n_col: str = "n",
    c_col: str = "c",
    n_missing_col: str = "n_missing",
) -> pd.DataFrame:
    """Read and check a counts table (CSV / Parquet / DataFrame); problems go to ``log``, bad rows are left out.

    Column options as :func:`agentstats.records.counts.check_counts`. Returns the valid rows in canonical form
    (:data:`agentstats.records.counts.COUNTS_COLUMNS`), ``attrs["source"]`` set.
    """
    text_cols = (agent_col, task_col) if task_col is not None else (agent_col, "task_id", "task")
    df, offset = read_table(src, log, text_columns=text_cols)
    if df is None:
        return counts_frame([], [], [], [], [])
    count_cols = tuple(c for c in (n_col, c_col, n_missing_col) if c in df.columns)
    if offset is not None and any(pd.api.types.is_float_dtype(df[c]) for c in count_cols):
        # pyarrow read some counts as floats ("2.5", or integers beyond int64 that a float would round):
        # read them again as text so that every value is judged exactly as written
        df, offset = read_table(src, log, text_columns=text_cols + count_cols)
        if df is None:
            return counts_frame([], [], [], [], [])
    check = check_counts(
        df, agent_col=agent_col, task_col=task_col, n_col=n_col, c_col=c_col, n_missing_col=n_missing_col
    )
    for p in check.problems:
        line = None if p.position is None else p.position + (offset or 0)
        log.add(line, p.column, _message(p, offset))
    out = check.counts
    out.attrs["source"] = source_name(src)
    return out


register_format("counts", read_counts_table, holds="counts", aliases=("csv", "parquet"))
