"""Detecting an input's format from its content (never only its name).

:func:`detect_format` asks, in order: the format registry's path detectors (a run store is recognised without opening
it, :mod:`agentstats.files.sniff`), the Parquet magic (a table), the registry's content detectors on the first
64 KiB, then the rules for the project's own records: a JSON array (trial records or tau-bench), JSON lines (trial
records or a run table, by a vote of the first records), anything else a CSV table (counts or runs, by its columns).
The formats themselves are listed in :mod:`agentstats.io.registry`; ``docs/data-format.md`` describes them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from agentstats._util.options import option_name, option_text
from agentstats.files.sniff import HEAD_BYTES, is_duckdb_file, is_parquet, read_head
from agentstats.io import registry

__all__ = [
    "DETECT_RECORDS",
    "RUN_COLUMN_CANDIDATES",
    "STORE_EXPORT_COLUMNS",
    "NotATableError",
    "UnknownShapeError",
    "detect_format",
    "head_records",
    "refuse_store_export",
    "resolve_run_columns",
    "source_name",
]

class UnknownShapeError(ValueError):
    """Valid JSON (so far) in a shape that no registered format reads: the message lists the formats.

    Attributes
    ----------
    keys : list of str
        The top-level keys seen (of the object, or of the array's first record).
    """

    def __init__(self, name: str, keys: list[str]):
        self.keys = keys
        known = ", ".join(registry.formats())
        super().__init__(
            f"{name}: JSON, but no known format matches (top-level keys: {', '.join(keys[:15]) or 'none'}). Formats "
            f"read: {known} (docs/data-format.md). To read it, convert it to the project's JSONL, one line per trial "
            "with agent, task_id, trial and success (true/false) or reward (docs/data-format.md, section 1), or "
            f"register a reader for it (agentstats.io.registry.register_format); {option_name('format')} names a "
            "format when detection is wrong")


def _keys_seen(text: str) -> list[str]:
    """Return the top-level keys of a JSON object (or of an array's first record) from the start of its text."""
    depth, keys = 0, []
    for m in re.finditer(r'[{}\[\]]|"((?:[^"\\]|\\.)*)"\s*:', text):
        tok = m.group(0)
        if tok in "{[":
            depth += 1
        elif tok in "}]":
            depth -= 1
            if depth <= 1 and text.lstrip()[0] == "[":
                break  # the end of the array's first record
        elif depth == (2 if text.lstrip()[0] == "[" else 1):
            keys.append(m.group(1))
    return keys


class NotATableError(ValueError):
    """A table (CSV, Parquet, DataFrame) whose columns are neither a counts table's nor a run table's.

    Attributes
    ----------
    columns : set of str
        The table's columns.
    """

    def __init__(self, message: str, columns: set[str]):
        super().__init__(message)
        self.columns = columns


#: Column names tried, in order, for a run table's agent, task and success columns when not given.
#: METR's names (``alias``, ``task_id``, ``score_binarized``) come first.
RUN_COLUMN_CANDIDATES = {
    "agent_col": ("alias", "agent"),
    "task_col": ("task_id", "task"),
    "success_col": ("score_binarized", "success"),
}


def resolve_run_columns(
    columns: set[str] | None,
    agent_col: str | None = None,
    task_col: str | None = None,
    success_col: str | None = None,
) -> dict[str, str] | None:
    """Run-table column names: the given ones, else the first of :data:`RUN_COLUMN_CANDIDATES` in ``columns``.

    Returns ``None`` when ``columns`` is given and some column is neither given nor found. With
    ``columns=None`` the missing ones fall back to the first candidate (METR's names).
    """
    given = {"agent_col": agent_col, "task_col": task_col, "success_col": success_col}
    out: dict[str, str] = {}
    for key, name in given.items():
        if name is not None:
            if columns is not None and name not in columns:
                return None
            out[key] = name
            continue
        found = [c for c in RUN_COLUMN_CANDIDATES[key] if columns is None or c in columns]
        if not found:
            return None
        out[key] = found[0]
    return out


def source_name(src: Any) -> str:
    """Display name of an input: a path as given, ``"<DataFrame>"``, or ``"<list>"``-style for other objects."""
    if isinstance(src, (str, os.PathLike)):
        return str(src)
    return "<DataFrame>" if hasattr(src, "columns") else f"<{type(src).__name__}>"


#: Columns of the run store's ``trials`` table, written by ``agentstats runs export --out FILE.parquet``: a Parquet
#: file holding them all is such an export (its trials are JSON in ``record``), not a run table.
STORE_EXPORT_COLUMNS = frozenset({"run_id", "seq", "agent", "task_id", "trial", "outcome", "record"})


def refuse_store_export(path: str | os.PathLike[str]) -> set[str]:
    """Return a Parquet file's column names; raise if it is a run-store export (:data:`STORE_EXPORT_COLUMNS`).

    Raises
    ------
    ValueError
        For a run-store export (the message says to export JSONL instead).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        cols = set(pq.read_schema(path).names)
    except (pa.ArrowInvalid, OSError) as exc:  # cut short or damaged: said with the file's name (exit 2)
        raise ValueError(f"{path}: not a readable Parquet file (cut short or damaged?): {exc}") from None
    if STORE_EXPORT_COLUMNS <= cols:
        raise ValueError(
            f"{path} is a run-store export (the trials table of `agentstats runs export ... --out FILE.parquet`, "
            "for analysis tools), not an input format; export the run as JSONL instead (agentstats runs export "
            "RUN --store STORE --out run.jsonl), which imports and loads again")
    return cols


def detect_format(
    src: Any,
    *,
    agent_col: str | None = None,
    task_col: str | None = None,
    success_col: str | None = None,
    counts_cols: tuple[str, str] | None = None,
) -> str:
    """Guess the format of a file or DataFrame from its content (not only its name).

    Parameters
    ----------
    src : path or pandas.DataFrame
    agent_col, task_col, success_col : str, optional
        Run-table column names, used to recognise a run table (default: see :func:`resolve_run_columns`); a given
        ``agent_col`` / ``task_col`` names a counts table's columns too.
    counts_cols : (str, str), optional
        A counts table's ``n`` and ``c`` column names (default ``("n", "c")``).

    Returns
    -------
    str
        A registered format's name (:func:`agentstats.io.registry.formats`).

    Raises
    ------
    ValueError
        When the content matches no known format (the message says what was seen), or is a run-store Parquet
        export (:data:`STORE_EXPORT_COLUMNS`; the message says to export JSONL instead).
    FileNotFoundError
        When ``src`` is a path that does not exist.
    """
    run_cols = (agent_col, task_col, success_col)
    if not isinstance(src, (str, os.PathLike)):
        cols = set(map(str, getattr(src, "columns", ())))
        if not cols:
            raise ValueError(f"cannot read {type(src).__name__}: pass a file path or a pandas DataFrame")
        return _table_kind(cols, run_cols, "<DataFrame>", counts_cols)
    path = Path(src)
    name = str(path)
    if not path.exists():
        if re.search(r"[*?\[]", name):  # a glob: a format of many files that says so from the pattern
            for fmt, sniff in registry.sniffers():
                try:
                    if sniff(path):
                        return fmt
                except OSError:
                    continue
            raise FileNotFoundError(f"no file matches {path} (a glob of a Parquet dataset's files, or no such file)")
        raise FileNotFoundError(f"no such file: {path}")
    if path.is_dir():
        for fmt, sniff in registry.sniffers():  # a folder format that says so from its path (tau2's "dir" results)
            try:
                if sniff(path):
                    return fmt
            except OSError:
                continue
        # a BFCL result root (<date>/result/<model>/ beside the gorilla_data_* questions)
        if any(d.is_dir() and (d / "result").is_dir() for d in path.iterdir()):
            return "bfcl"
        raise ValueError(f"{name} is a folder; give a file, or a BFCL result root (a folder holding "
                         "<date>/result/<model>/ and the gorilla_data_* questions) with --format bfcl, or a tau2 "
                         "results folder (results.json beside simulations/)")
    for fmt, sniff in registry.sniffers():  # before any byte is read: a run store this process holds
        if sniff(path):
            return fmt
    if is_duckdb_file(path):
        raise ValueError(f"{name} is a DuckDB file (a run store), but no installed format reads run stores: "
                         "reinstall agentstats (pip install 'agentstats[store]'), whose run store registers one")
    if is_parquet(path):
        return _table_kind(refuse_store_export(path), run_cols, name, counts_cols)
    head = read_head(path)
    for fmt, detector in registry.detectors():
        try:
            if detector(path, head):
                return fmt
        except RecursionError:  # nesting deeper than the parser goes is not this format's shape; the reader says so
            continue
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not text:
        raise ValueError(f"{name}: file is empty")
    if text[0] == "[":
        # tau-bench arrays carry a conversation under "traj"; our own trial arrays carry "agent".
        if '"traj"' in text:
            return "tau_bench"
        if '"agent"' in text:
            return "json"
        if '"task_id"' in text or not re.match(r"\[\s*\{", text):
            return "tau_bench"  # its reader locates what is wrong in each record
        raise UnknownShapeError(name, _keys_seen(text))
    if text[0] == "{":
        if text.split("\n", 1)[0].strip() == "{":  # one indented JSON object, of no format a detector knows
            raise UnknownShapeError(name, _keys_seen(text))
        lead = len(head.decode("utf-8", errors="replace")) - len(text)  # stripped BOM and blank lines
        skipped_lines = head.decode("utf-8", errors="replace")[:lead].count("\n")
        return _jsonl_kind(text, len(head) == HEAD_BYTES, run_cols, name, skipped_lines)
    # anything else: a CSV table
    header = text.split("\n", 1)[0].strip().lstrip("\ufeff")
    cols = {c.strip().strip('"') for c in header.split(",")}
    return _table_kind(cols, run_cols, name, counts_cols)


def head_records(head: bytes, limit: int = 100) -> list[dict[str, Any]]:
    """Return the JSON objects on the first lines of a JSON-lines head (at most ``limit``), for content detectors.

    Lines that do not parse, or hold no object, are left out; the last line of a head cut at 64 KiB is not read.
    Never raises.
    """
    lines = head.decode("utf-8", errors="replace").lstrip("\ufeff").split("\n")
    if len(head) == HEAD_BYTES and len(lines) > 1:
        lines = lines[:-1]
    out: list[dict[str, Any]] = []
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            out.append(rec)
            if len(out) >= limit:
                break
    return out


#: Records of a JSON-lines file read to decide between trial records and a run table (from its first 64 KiB).
DETECT_RECORDS = 100


def _jsonl_kind(text: str, cut: bool, run_cols: tuple[str | None, ...], name: str, lines_before: int = 0) -> str:
    """Decide between ``"jsonl"`` (trial records) and ``"runs"`` from the first records of a JSON-lines file.

    Each of the first :data:`DETECT_RECORDS` lines that is a JSON object votes: a trial record (``agent``,
    ``task_id``, ``trial``) for ``"jsonl"``, else a run-table row (:func:`resolve_run_columns`) for ``"runs"``;
    the majority wins, a tie goes to the trial records. So one odd record (a misspelled key on line 1) is reported
    by the reader of the format the other records have, with its line, instead of deciding the format against them.
    No line that parses: ``"jsonl"`` (its reader reports each malformed line with its number).

    ``cut``: ``text`` is the file's head cut at 64 KiB, so its last line may be incomplete (it does not vote).
    ``lines_before``: blank lines stripped before ``text`` (for the line numbers of the message).
    """
    lines = text.split("\n")
    if cut and len(lines) > 1:
        lines = lines[:-1]
    votes = {"jsonl": 0, "runs": 0}
    first: tuple[int, dict[str, Any]] | None = None
    read = objects = 0
    for number, line in enumerate(lines, lines_before + 1):
        line = line.strip()
        if not line:
            continue
        read += 1
        if read > DETECT_RECORDS:
            break
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):  # malformed JSON, an integer beyond Python's digit limit, deep nesting
            continue
        if not isinstance(rec, dict):
            continue
        first = first or (number, rec)
        objects += 1
        keys = set(rec)
        if {"agent", "task_id", "trial"} <= keys:
            votes["jsonl"] += 1
        elif resolve_run_columns(keys, *run_cols) is not None:
            votes["runs"] += 1
    if votes["runs"] > votes["jsonl"]:
        return "runs"
    if votes["jsonl"] or first is None:
        return "jsonl"
    number, rec = first
    keys = set(rec)
    if "traj" in keys:
        raise ValueError(
            f"{name}: looks like a single tau-bench record per line; tau-bench files are one JSON array "
            f"(give {option_name('format', 'tau_bench')} for the array file)"
        )
    raise ValueError(
        f"{name}: line {number} is a JSON object with keys {sorted(keys)[:12]}, which is neither a trial record "
        f"(needs agent, task_id, trial) nor a run table ({_run_cols_text(run_cols)})"
        + (f", and neither is any of the other {objects - 1} records read" if objects > 1 else "")
        + f"; give {option_name('format')} and, for run tables, {_run_col_options()}"
    )


def _run_cols_text(run_cols: tuple[str | None, ...]) -> str:
    parts = []
    for key, name in zip(("agent_col", "task_col", "success_col"), run_cols, strict=True):
        parts.append(name if name is not None else " or ".join(RUN_COLUMN_CANDIDATES[key]))
    return "columns " + ", ".join(parts)


def _run_col_options() -> str:
    """Name the run-table column options as the caller knows them: ``agent_col=, ...``, ``--columns agent=COL,...``."""
    python = ", ".join(option_name(key) for key in RUN_COLUMN_CANDIDATES)
    return option_text(cli="--columns agent=COL,task=COL,success=COL", python=python)


def _table_kind(cols: set[str], run_cols: tuple[str | None, ...], name: str,
                counts_cols: tuple[str, str] | None = None) -> str:
    n_col, c_col = counts_cols or ("n", "c")
    agent = run_cols[0] or "agent"
    task = {run_cols[1]} if run_cols[1] else {"task", "task_id"}
    if {n_col, c_col} <= cols and agent in cols and task & cols:
        return "counts"
    if resolve_run_columns(cols, *run_cols) is not None:
        return "runs"
    raise NotATableError(
        f"{name}: columns {sorted(cols)[:15]} are neither a counts table (agent, task or task_id, n, c) "
        f"nor a run table ({_run_cols_text(run_cols)}); give {option_name('format')} and the column names "
        f"({_run_col_options()})", cols)
