"""Import a trials file into the run store (``agentstats import FILE --store S --store-run NAME``).

The project's JSONL is streamed record by record (memory bounded by one write batch); other formats are read with
:func:`agentstats.io.load_trials` and written the same way. Either way the whole import is one transaction: a record
with a problem (every problem listed with its file, line and field) or a crash leaves the store as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from agentstats.files.sniff import check_readable_file
from agentstats.io.detect import detect_format, source_name
from agentstats.io.jsonl import _accept, iter_jsonl_trials
from agentstats.io.registry import normalize_format
from agentstats.records.problems import OnError, Problem, ProblemLog
from agentstats.records.trial import Trial
from agentstats.store.connection import StoreError, duckdb_module
from agentstats.store.db import RunStore
from agentstats.store.runs import file_sha256
from agentstats.store.writing import ImportResult

__all__ = ["import_file"]


def _stream_jsonl(path: str | os.PathLike, log: ProblemLog, skipped: list[Problem], lines: array) -> Iterator[Trial]:
    for lineno, t in iter_jsonl_trials(path, log):
        if _accept(t, lineno, log, "line"):
            lines.append(lineno)  # 8 bytes per trial: the line a duplicated key is reported at
            yield t
    # raises LoadError (on_error="raise") after the last line: the transaction rolls back
    skipped.extend(log.finish())


def import_file(
    store: RunStore,
    path: str | os.PathLike,
    *,
    run: str,
    format: str = "auto",
    description: str | None = None,
    tags: Sequence[str] = (),
    agent: str | None = None,
    replace: bool = False,
    on_error: OnError = "raise",
    **options: Any,
) -> ImportResult:
    """Import one file as the run ``run`` (see :meth:`RunStore.import_trials`).

    Parameters
    ----------
    store : RunStore
    path : str or PathLike
    run : str
        New run name.
    format : str
        As :func:`agentstats.io.load_trials` (``"auto"`` detects from the content).
    description, tags
        Stored on the run.
    agent : str, optional
        tau-bench files: the agent's name.
    replace : bool
        Replace a run of the same name.
    on_error : {"raise", "skip"}
        ``"skip"`` imports the valid records and leaves the bad ones out (a warning counts them).
    **options
        Passed to :func:`agentstats.io.load_trials` (run-table columns, a registered reader's options).

    Returns
    -------
    ImportResult
        ``unchanged`` when this same file (same SHA-256) is already the run ``run``; ``skipped``: the bad records
        left out with ``on_error="skip"`` (a :class:`~agentstats.records.problems.LoadWarning` counts them too).

    Raises
    ------
    LoadError
        Records with problems (file, line, field); nothing is written.
    StoreError
        The run name is taken.
    ValueError
        An undetectable or unknown format, or a run store given as the input.
    """
    check_readable_file(path)  # a named pipe would block forever
    name = source_name(path)
    fmt = normalize_format(format)
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "duckdb":
        raise ValueError(f"{name} is a run store itself; export a run from it as JSONL (agentstats runs export RUN "
                         f"--store {name} --out run.jsonl) to import it")
    sha = file_sha256(path) if os.path.isfile(path) else None
    if agent is not None:
        options["agent"] = agent
    # the options that shape the trials are part of the run's config: the same file imported again with other
    # options is not "already imported"
    config = {"format": fmt, **{k: v for k, v in options.items() if isinstance(v, str | int | float | bool | list)}}
    common: dict[str, Any] = {"source": name, "source_sha256": sha, "description": description, "tags": tags,
                              "config": config, "replace": replace}
    duckdb = duckdb_module()
    try:
        return _import(store, path, run, fmt, name, options, on_error, common)
    except duckdb.Error as exc:  # the transaction rolled back: nothing was written
        if not _out_of_memory(exc, duckdb):
            raise
    with _memory_raised(store, path):  # once more, with DuckDB's own limit (80% of the machine's memory)
        return _import(store, path, run, fmt, name, options, on_error, common)


def _import(store: RunStore, path: str | os.PathLike, run: str, fmt: str, name: str, options: dict[str, Any],
            on_error: OnError, common: dict[str, Any]) -> ImportResult:
    from agentstats.io.loaders import load_trials

    if fmt == "jsonl" and not options:
        log = ProblemLog(name, on_error, unit="line")
        skipped: list[Problem] = []
        lines = array("q")
        result = store.import_trials(_stream_jsonl(path, log, skipped, lines), run, locations=lines, unit="line",
                                     skip_duplicates=on_error == "skip", **common)
        return dataclasses.replace(result, skipped=skipped + result.skipped, notes=list(log.notes))
    trials = load_trials(path, fmt, on_error=on_error, **options)  # duplicated keys: problems of the reader
    result = store.import_trials(trials, run, **common)
    return dataclasses.replace(result, skipped=list(trials.skipped), notes=list(trials.notes))


@contextlib.contextmanager
def _memory_raised(store: RunStore, path: str | os.PathLike) -> Iterator[None]:
    """Run an import that ran out of DuckDB's memory again with DuckDB's default limit, then restore the store's.

    DuckDB parses a record's JSON with working memory of about 45 times its largest text field (a 10 MB answer
    needed more than the store's 512 MB), and holds an import's one transaction in memory: such an import is run
    once more at 80% of the machine's memory. When that is not enough either, a :class:`StoreError` names the file,
    its size and the limit, instead of DuckDB's out-of-memory error.
    """
    duckdb = duckdb_module()
    con = store.con
    before = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    con.execute("RESET memory_limit")
    try:
        yield
    except duckdb.Error as exc:
        if not _out_of_memory(exc, duckdb):
            raise
        now = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        size = os.path.getsize(path) if os.path.isfile(path) else 0
        raise StoreError(
            f"{source_name(path)} ({size / 2**20:,.0f} MiB) does not fit in memory ({now}, DuckDB's limit) during "
            "its import, which is one transaction; import it in parts (split the file), or read it directly "
            "(agentstats estimate / fit / report read the file itself)") from None
    finally:
        with contextlib.suppress(Exception):
            con.execute(f"SET memory_limit = '{before}'")


def _out_of_memory(exc: BaseException | None, duckdb: Any) -> bool:
    """Whether DuckDB's out-of-memory error is ``exc`` or what it followed (an aborted transaction's next error)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, duckdb.OutOfMemoryException):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False
