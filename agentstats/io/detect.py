"""Opening files (gzip by magic bytes) and detecting their format.

Formats (``format=`` in :func:`agentstats.io.load_trials`):

``"jsonl"``      the project's own trial records, one JSON object per line (``docs/data-format.md``);
``"json"``       the same records as one JSON array;
``"tau_bench"``  a tau-bench result file (JSON array of ``task_id, trial, reward, info, traj`` records);
``"runs"``       a run table, one run per JSON line / CSV row / Parquet row, with an agent, a task and a 0/1
                 success column (``"metr"`` is an alias: METR's column names are the defaults);
``"counts"``     a counts table (CSV / Parquet / DataFrame with ``agent, task|task_id, n, c[, n_missing]``);
``"duckdb"``     a run store (:mod:`agentstats.store`), read one run at a time (``run=``).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

from agentstats._util.options import option_name

__all__ = [
    "FORMATS",
    "RUN_COLUMN_CANDIDATES",
    "detect_format",
    "held_store",
    "is_duckdb_file",
    "is_gzip",
    "normalize_format",
    "open_text",
    "register_detector",
    "resolve_run_columns",
    "source_name",
]

#: Every input format: the built-in ones, then those added with :func:`agentstats.io.register_format`
#: (``fair_forge``, ``fai_jsonl``, ``bfcl``, once :mod:`agentstats.io` is imported).
FORMATS: list[str] = ["jsonl", "json", "tau_bench", "runs", "counts", "duckdb"]
_ALIASES = {
    "auto": "auto",
    "jsonl": "jsonl",
    "trials": "jsonl",
    "json": "json",
    "tau_bench": "tau_bench",
    "tau-bench": "tau_bench",
    "taubench": "tau_bench",
    "runs": "runs",
    "metr": "runs",
    "counts": "counts",
    "csv": "counts",
    "parquet": "counts",
    "duckdb": "duckdb",
    "store": "duckdb",
}

#: Content detectors added by importers (:func:`register_detector`): tried in order before the built-in rules.
_DETECTORS: list[tuple[str, Callable[[Path, bytes], bool]]] = []

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
#: A DuckDB database file has this magic at byte offset 8.
DUCKDB_MAGIC = b"DUCK"
_HEAD_BYTES = 1 << 16

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


def normalize_format(fmt: str) -> str:
    """Map a user-given format name (or alias) to one of :data:`FORMATS` or ``"auto"``.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.
    """
    key = str(fmt).strip().lower()
    if key not in _ALIASES:
        raise ValueError(
            f"unknown format {fmt!r}; use one of: auto, {', '.join(sorted(set(_ALIASES) - {'auto'}))}"
        )
    return _ALIASES[key]


def source_name(src: Any) -> str:
    """Display name of a path or a DataFrame."""
    if isinstance(src, (str, os.PathLike)):
        return str(src)
    return "<DataFrame>"


def register_detector(name: str, detector: Callable[[Path, bytes], bool]) -> None:
    """Let :func:`detect_format` recognise a format registered by an importer.

    Parameters
    ----------
    name : str
        The format name returned when ``detector`` says yes.
    detector : callable
        ``detector(path, head) -> bool``, where ``head`` is the first 64 KiB of the file (decompressed when
        gzip). It must be cheap and must not raise on content it does not recognise.
    """
    _DETECTORS[:] = [(n, d) for n, d in _DETECTORS if n != name]
    _DETECTORS.append((name, detector))


# Run store files this process has open, by (device, inode) -> number of open connections. DuckDB locks its file
# with fcntl, and POSIX drops *every* lock a process holds on a file when the process closes any descriptor of that
# file: reading a held store's first bytes with open() would let another process open it for writing while this one
# writes too. So whatever sniffs a file asks here first (agentstats.store.RunStore registers its connections).
_HELD: dict[tuple[int, int], int] = {}
_HELD_LOCK = threading.Lock()


def _file_key(path: str | os.PathLike) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def held_store(path: str | os.PathLike) -> bool:
    """Tell whether this process has the run store at ``path`` open (its bytes must then not be read directly).

    See the note on ``_HELD``: closing any descriptor of a file drops the process's DuckDB lock on it.
    """
    key = _file_key(path)
    return key is not None and key in _HELD


def hold_store(path: str | os.PathLike) -> tuple[int, int] | None:
    """Register one open connection to the store at ``path``; return the key to :func:`release_store` it with."""
    key = _file_key(path)
    if key is not None:
        with _HELD_LOCK:
            _HELD[key] = _HELD.get(key, 0) + 1
    return key


def release_store(key: tuple[int, int] | None) -> None:
    """Unregister one connection registered by :func:`hold_store`."""
    if key is None:
        return
    with _HELD_LOCK:
        left = _HELD.get(key, 0) - 1
        if left > 0:
            _HELD[key] = left
        else:
            _HELD.pop(key, None)


def _magic(path: Path, n: int = 4) -> bytes:
    if held_store(path):  # a run store this process holds: never open() it (see _HELD); its magic is known
        return (bytes(8) + DUCKDB_MAGIC)[:n]
    with open(path, "rb") as fh:
        return fh.read(n)


def is_duckdb_file(path: str | os.PathLike) -> bool:
    """Tell whether ``path`` is a DuckDB file: its magic bytes ``DUCK`` at offset 8 (not its name)."""
    return _magic(Path(path), 12)[8:] == DUCKDB_MAGIC


def is_gzip(path: str | os.PathLike) -> bool:
    """Tell whether the file starts with the gzip magic bytes ``1f 8b`` (whatever its suffix)."""
    return _magic(Path(path), 2) == GZIP_MAGIC


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open for reading bytes, decompressing gzip transparently (detected by magic bytes)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a data file")
    if is_gzip(path):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


def open_text(path: str | os.PathLike) -> IO[str]:
    """Open as UTF-8 text (BOM tolerated), decompressing gzip transparently."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="")


def _head(path: Path) -> bytes:
    with open_binary(path) as fh:
        try:
            return fh.read(_HEAD_BYTES)
        except (OSError, EOFError) as exc:  # truncated/corrupt gzip
            raise ValueError(f"{path}: cannot decompress: {exc}") from exc


#: Columns of the run store's ``trials`` table, written by ``agentstats runs export --to FILE.parquet``: a Parquet
#: file holding them all is such an export (its trials are JSON in ``record``), not a run table.
STORE_EXPORT_COLUMNS = frozenset({"run_id", "seq", "agent", "task_id", "trial", "outcome", "record"})


def refuse_store_export(path: str | os.PathLike[str]) -> set[str]:
    """Return a Parquet file's column names; raise if it is a run-store export (:data:`STORE_EXPORT_COLUMNS`).

    Raises
    ------
    ValueError
        For a run-store export (the message says to export JSONL instead).
    """
    import pyarrow.parquet as pq

    cols = set(pq.read_schema(path).names)
    if STORE_EXPORT_COLUMNS <= cols:
        raise ValueError(
            f"{path} is a run-store export (the trials table of `agentstats runs export ... --to FILE.parquet`, "
            "for analysis tools), not an input format; export the run as JSONL instead (agentstats runs export "
            "RUN --store STORE --to run.jsonl), which imports and loads again")
    return cols


def detect_format(
    src: Any,
    *,
    agent_col: str | None = None,
    task_col: str | None = None,
    success_col: str | None = None,
) -> str:
    """Guess the format of a file or DataFrame from its content (not only its name).

    Parameters
    ----------
    src : path or pandas.DataFrame
    agent_col, task_col, success_col : str, optional
        Run-table column names, used to recognise a run table (default: see :func:`resolve_run_columns`).

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    ValueError
        When the content matches no known format (the message says what was seen), or is a run-store Parquet
        export (:data:`STORE_EXPORT_COLUMNS`; the message says to export JSONL instead).
    """
    run_cols = (agent_col, task_col, success_col)
    if not isinstance(src, (str, os.PathLike)):
        cols = set(map(str, getattr(src, "columns", ())))
        if not cols:
            raise ValueError(f"cannot read {type(src).__name__}: pass a file path or a pandas DataFrame")
        return _table_kind(cols, run_cols, "<DataFrame>")
    path = Path(src)
    name = str(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if path.is_dir():
        # the one folder format: a BFCL result root (<date>/result/<model>/ beside the gorilla_data_* questions)
        if any(d.is_dir() and (d / "result").is_dir() for d in path.iterdir()):
            return "bfcl"
        raise ValueError(f"{name} is a folder; give a file, or a BFCL result root (a folder holding "
                         "<date>/result/<model>/ and the gorilla_data_* questions) with --format bfcl")
    if is_duckdb_file(path):
        return "duckdb"
    if _magic(path) == PARQUET_MAGIC:
        return _table_kind(refuse_store_export(path), run_cols, name)
    head = _head(path)
    for fmt, detector in _DETECTORS:
        if detector(path, head):
            return fmt
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not text:
        raise ValueError(f"{name}: file is empty")
    if text[0] == "[":
        # tau-bench arrays carry a conversation under "traj"; our own trial arrays carry "agent".
        if '"traj"' in text:
            return "tau_bench"
        if '"agent"' in text:
            return "json"
        return "tau_bench"
    if text[0] == "{":
        lead = len(head.decode("utf-8", errors="replace")) - len(text)  # stripped BOM and blank lines
        skipped_lines = head.decode("utf-8", errors="replace")[:lead].count("\n")
        return _jsonl_kind(text, len(head) == _HEAD_BYTES, run_cols, name, skipped_lines)
    # anything else: a CSV table
    header = text.split("\n", 1)[0].strip().lstrip("\ufeff")
    cols = {c.strip().strip('"') for c in header.split(",")}
    return _table_kind(cols, run_cols, name)


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
    """Name the run-table column options as the caller knows them (:func:`agentstats._util.options.option_name`)."""
    return ", ".join(option_name(key) for key in RUN_COLUMN_CANDIDATES)


def _table_kind(cols: set[str], run_cols: tuple[str | None, ...], name: str) -> str:
    if {"n", "c"} <= cols and ("agent" in cols) and ({"task", "task_id"} & cols):
        return "counts"
    if resolve_run_columns(cols, *run_cols) is not None:
        return "runs"
    raise ValueError(
        f"{name}: columns {sorted(cols)[:15]} are neither a counts table (agent, task or task_id, n, c) "
        f"nor a run table ({_run_cols_text(run_cols)}); give {option_name('format')} and the column names "
        f"({_run_col_options()})"
    )
