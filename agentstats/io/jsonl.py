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

from agentstats.io.atomic import atomic_write
from agentstats.io.detect import open_binary, open_text
from agentstats.io.errors import ProblemLog
from agentstats.io.manifest import HashingWriter, write_manifest
from agentstats.schema import REWARD_TOL, Trial, outcome_field_hints

__all__ = [
    "build_trials",
    "iter_json_array",
    "iter_jsonl",
    "outcome_conflict",
    "parse_json_line",
    "read_json_trials",
    "read_jsonl_trials",
    "save_trials",
]


_BOM = b"\xef\xbb\xbf"


def parse_json_line(raw: bytes) -> tuple[Any, str | None]:
    """Decode one JSONL line: ``(object, None)``, or ``(None, problem)`` when it cannot be read.

    Each line is decoded on its own, so one bad byte costs one line. Problems: not UTF-8 (byte and column
    named), malformed JSON, nesting too deep for the parser, numbers beyond the parser's limits.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {exc.start + 1} ({exc.reason})"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return None, "JSON nested too deeply to read (beyond the parser's recursion limit)"
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        return None, f"malformed JSON: {exc}"


def iter_jsonl(path: str | os.PathLike, log: ProblemLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line (1-based numbers).

    Lines are read as bytes and decoded one by one (:func:`parse_json_line`): an undecodable byte, malformed
    JSON, a JSON value nested too deeply or a non-object line is recorded in ``log`` with its line number
    (field ``None``) and only that line is left out. A corrupt or truncated gzip stream is one problem for
    the whole file (the lines read before it are kept).
    """
    with open_binary(path) as fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                if lineno == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                if not raw.strip():
                    continue
                obj, problem = parse_json_line(raw)
                if problem is not None:
                    log.add(lineno, None, problem)
                    continue
                if not isinstance(obj, dict):
                    log.add(lineno, None, f"expected a JSON object, got {type(obj).__name__}")
                    continue
                yield lineno, obj
        except (OSError, EOFError) as exc:  # truncated or corrupt gzip stream
            log.add(None, None, f"cannot read file (corrupt or truncated compression?): {exc}")


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
    except RecursionError:
        log.add(None, None, "JSON nested too deeply to read (beyond the parser's recursion limit)")
        return
    except ValueError as exc:
        log.add(None, None, f"malformed JSON: {exc}")
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
            except RecursionError:
                log.add(loc, None, "record nested too deeply to validate", unit=unit)
                continue
        conflict = outcome_conflict(t)
        if conflict is not None:
            log.add(loc, "success", conflict, unit=unit)
            continue
        if t.outcome() is None:
            for field, guess in outcome_field_hints((t.__pydantic_extra__ or {}).keys()):
                log.note(loc, field, f"unknown field {field!r}: did you mean {guess!r}? (this trial has no outcome)",
                         unit=unit)
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


def outcome_conflict(t: Trial) -> str | None:
    """Say why a trial's ``success`` contradicts its ``reward``, or return ``None`` when they agree.

    A contradiction is ``success: true`` with reward 0, or ``success: false`` with reward 1 (each within
    :data:`agentstats.schema.REWARD_TOL`). A partial reward (strictly between 0 and 1) contradicts nothing: it
    is a separate metric. Trials written by :func:`agentstats.scoring.score_trials` (marked ``scoring_source``)
    hold the scored ``success`` beside the benchmark's ``reward`` on purpose and are not checked.
    """
    if t.success is None or t.reward is None or "scoring_source" in (t.__pydantic_extra__ or {}):
        return None
    is_one = abs(t.reward - 1.0) <= REWARD_TOL
    is_zero = abs(t.reward) <= REWARD_TOL
    if (t.success and is_zero) or (not t.success and is_one):
        return (
            f"success is {str(t.success).lower()} but reward is {t.reward:g}: the two contradict each other "
            "(reward 1 is a success, 0 a failure); drop one or make them agree"
        )
    return None


def read_jsonl_trials(path: str | os.PathLike, log: ProblemLog) -> list[Trial]:
    """Read the project's JSONL (plain or gzip). Problems go to ``log`` (1-based line numbers)."""
    return build_trials(iter_jsonl(path, log), log, unit="line")


def read_json_trials(path: str | os.PathLike, log: ProblemLog) -> list[Trial]:
    """Read a JSON array of trial records. Problems go to ``log`` (0-based record indices)."""
    return build_trials(iter_json_array(path, log), log, unit="record")


def save_trials(trials: Iterable[Trial], path: str | os.PathLike) -> Path:
    """Write trials as the project's JSONL, one record per line (gzip when ``path`` ends in ``.gz``).

    Fields equal to their defaults are left out (they come back on reading), so ``load_trials`` on the
    written file returns equal :class:`Trial` objects. The file is written atomically: to a temporary file
    in the same directory, renamed over ``path`` only when complete (an interrupted or failed write leaves
    the previous file as it was). A manifest ``<path>.manifest.json`` (record count, size, SHA-256;
    :mod:`agentstats.io.manifest`) is written beside it, so a reader can tell the complete file from a
    truncated copy.

    Parameters
    ----------
    trials : iterable of Trial
    path : str or PathLike
        Its directory must exist.

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    OSError
        When the directory is not writable or the disk is full; ``path`` is then left as it was.
    """
    path = Path(path)
    records = 0
    with atomic_write(path, "wb") as raw:
        sink = HashingWriter(raw)
        if path.name.endswith(".gz"):
            # mtime 0 and no file name in the header: the same trials give the same bytes
            out: Any = gzip.GzipFile(filename="", mode="wb", fileobj=sink, mtime=0)
        else:
            out = sink
        try:
            for t in trials:
                out.write(t.model_dump_json(exclude_defaults=True).encode("utf-8") + b"\n")
                records += 1
        finally:
            if out is not sink:
                out.close()  # writes the gzip trailer into sink (does not close it)
    write_manifest(path, records=records, nbytes=sink.bytes, sha256=sink.sha256.hexdigest())
    return path
