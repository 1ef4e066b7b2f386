"""Import a trials file into the run store (``agentstats import FILE --store S --store-run NAME``).

The project's JSONL is streamed record by record (memory bounded by one write batch); other formats are read with
:func:`agentstats.io.load_trials` and written the same way. Either way the whole import is one transaction: a record
with a problem (every problem listed with its file, line and field) or a crash leaves the store as it was.
"""

from __future__ import annotations

import dataclasses
import os
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from agentstats.io.detect import detect_format, source_name
from agentstats.io.jsonl import _accept, iter_jsonl_trials
from agentstats.io.registry import normalize_format
from agentstats.records.problems import OnError, Problem, ProblemLog
from agentstats.records.trial import Trial
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
    from agentstats.io.loaders import load_trials

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
