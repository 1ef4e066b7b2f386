"""The project's own trial records: JSONL (one :class:`~agentstats.schema.Trial` per line) or a JSON array.

The record format is documented in ``docs/data-format.md`` and by :class:`agentstats.schema.Trial`.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentstats.io.detect import open_text
from agentstats.io.errors import ProblemLog
from agentstats.schema import Trial

__all__ = [
    "build_trials",
    "iter_json_array",
    "iter_jsonl",
    "read_json_trials",
    "read_jsonl_trials",
    "save_trials",
]


def iter_jsonl(path: str | os.PathLike, log: ProblemLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line (1-based numbers).

    Malformed JSON and non-object lines are recorded in ``log`` (field ``None``) and not yielded.
    """
    loads = json.loads
    with open_text(path) as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = loads(line)
                except json.JSONDecodeError as exc:
                    log.add(lineno, None, f"malformed JSON: {exc.msg} at column {exc.colno}")
                    continue
                if not isinstance(obj, dict):
                    log.add(lineno, None, f"expected a JSON object, got {type(obj).__name__}")
                    continue
                yield lineno, obj
        except (OSError, EOFError) as exc:  # truncated or corrupt gzip stream
            log.add(None, None, f"cannot read file (corrupt or truncated compression?): {exc}")
        except UnicodeDecodeError as exc:
            log.add(None, None, f"not UTF-8 text: {exc}")


def iter_json_array(path: str | os.PathLike, log: ProblemLog) -> Iterator[tuple[int, Any]]:
    """Yield ``(record_index, record)`` for each element of a JSON array (0-based indices).

    A file that is not valid JSON is one problem at the line where parsing failed; a top-level value that is
    not an array is one problem for the whole file.
    """
    try:
        with open_text(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        log.add(exc.lineno, None, f"malformed JSON: {exc.msg} at column {exc.colno}", unit="line")
        return
    except (OSError, EOFError) as exc:
        log.add(None, None, f"cannot read file (corrupt or truncated compression?): {exc}")
        return
    except UnicodeDecodeError as exc:
        log.add(None, None, f"not UTF-8 text: {exc}")
        return
    if not isinstance(data, list):
        log.add(None, None, f"expected a JSON array of records, got a JSON {type(data).__name__}")
        return
    yield from enumerate(data)


def build_trials(
    items: Iterable[tuple[int, Any]], log: ProblemLog, *, unit: str | None = None
) -> list[Trial]:
    """Validate records as :class:`Trial` and reject duplicate keys; problems go to ``log``.

    Parameters
    ----------
    items : iterable of (location, record)
        ``location`` is a line number or record index (see ``unit``); ``record`` a dict or a built Trial.
    log : ProblemLog
    unit : str, optional
        Unit of ``location`` (default: the log's unit).

    Returns
    -------
    list of Trial
        The valid records, in input order; for a duplicated ``(agent, task_id, trial)`` only the first.
    """
    trials: list[Trial] = []
    seen: dict[tuple[str, str, int], int] = {}
    validate = Trial.model_validate
    unit = unit or log.unit
    for loc, rec in items:
        if isinstance(rec, Trial):
            t = rec
        else:
            if not isinstance(rec, dict):
                log.add(loc, None, f"expected a JSON object, got {type(rec).__name__}", unit=unit)
                continue
            try:
                t = validate(rec)
            except ValidationError as exc:
                log.add_pydantic(loc, exc, unit=unit)
                continue
        key = t.key
        if key in seen:
            first = seen[key]
            where = f"line {first}" if unit == "line" else f"{unit} {first}"
            log.add(
                loc,
                "(agent, task_id, trial)",
                f"duplicate trial key {key!r}, first seen at {where}",
                unit=unit,
            )
            continue
        seen[key] = loc
        trials.append(t)
    return trials


def read_jsonl_trials(path: str | os.PathLike, log: ProblemLog) -> list[Trial]:
    """Read the project's JSONL (plain or gzip). Problems go to ``log`` (1-based line numbers)."""
    return build_trials(iter_jsonl(path, log), log, unit="line")


def read_json_trials(path: str | os.PathLike, log: ProblemLog) -> list[Trial]:
    """Read a JSON array of trial records. Problems go to ``log`` (0-based record indices)."""
    return build_trials(iter_json_array(path, log), log, unit="record")


def save_trials(trials: Iterable[Trial], path: str | os.PathLike) -> Path:
    """Write trials as the project's JSONL, one record per line (gzip when ``path`` ends in ``.gz``).

    Fields equal to their defaults are left out (they come back on reading), so ``load_trials`` on the
    written file returns equal :class:`Trial` objects.

    Parameters
    ----------
    trials : iterable of Trial
    path : str or PathLike

    Returns
    -------
    pathlib.Path
        The written file.
    """
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as fh:
        for t in trials:
            fh.write(t.model_dump_json(exclude_defaults=True))
            fh.write("\n")
    return path
