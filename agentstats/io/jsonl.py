"""The project's own trial records: JSONL (one :class:`~agentstats.records.trial.Trial` per line) or a JSON array.

The record format is documented in ``docs/data-format.md`` and by :class:`agentstats.records.trial.Trial`.
"""

from __future__ import annotations

import gzip
import json
import os
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from agentstats.files.atomic import atomic_write
from agentstats.files.manifest import HashingWriter, write_manifest
from agentstats.files.sniff import STREAM_ERRORS, open_binary, open_text
from agentstats.io.agents import AgentSelection
from agentstats.io.fastcounts import jsonl_counts
from agentstats.io.registry import register_format
from agentstats.records.counts import _unscored_message, counts_from_codes
from agentstats.records.problems import OnError, ProblemLog, json_error_text
from agentstats.records.trial import CODE_UNSCORED, OUTCOME_CODE, Trial, outcome_conflict, outcome_field_hints

__all__ = [
    "TrialTally",
    "build_trials",
    "count_jsonl_trials",
    "iter_json_array",
    "iter_jsonl",
    "iter_jsonl_trials",
    "jsonl_file_counts",
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
    text = text.rstrip("\r\n")  # a value cut short at the line's end is "at column <end>", not on a next line
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON: {json_error_text(exc.msg, exc.pos + 1)}"
    except RecursionError:
        return None, "JSON nested too deeply to read (beyond the parser's recursion limit)"
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        return None, f"malformed JSON: {exc}"


def _lines(path: str | os.PathLike, log: ProblemLog) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw bytes)`` of the non-blank lines; a corrupt gzip stream is one file problem."""
    with open_binary(path) as fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                if lineno == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                if raw.strip():
                    yield lineno, raw
        except STREAM_ERRORS as exc:  # truncated or corrupt gzip stream
            log.add(None, None, f"cannot read file (corrupt or truncated compression?): {exc}")


def _object(lineno: int, raw: bytes, log: ProblemLog) -> dict[str, Any] | None:
    obj, problem = parse_json_line(raw)
    if problem is not None:
        log.add(lineno, None, problem)
        return None
    if not isinstance(obj, dict):
        log.add(lineno, None, f"expected a JSON object, got {type(obj).__name__}")
        return None
    return obj


def iter_jsonl(path: str | os.PathLike, log: ProblemLog) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line (1-based numbers).

    Lines are read as bytes and decoded one by one (:func:`parse_json_line`): an undecodable byte, malformed
    JSON, a JSON value nested too deeply or a non-object line is recorded in ``log`` with its line number
    (field ``None``) and only that line is left out. A corrupt or truncated gzip stream is one problem for
    the whole file (the lines read before it are kept).
    """
    for lineno, raw in _lines(path, log):
        obj = _object(lineno, raw, log)
        if obj is not None:
            yield lineno, obj


def iter_jsonl_trials(path: str | os.PathLike, log: ProblemLog) -> Iterator[tuple[int, Trial]]:
    """Yield ``(line_number, Trial)`` for each line that is a valid trial record; problems go to ``log``.

    Each line is parsed and validated in one step by pydantic (``Trial.model_validate_json``). A line that
    step refuses as JSON, or that is not an object, is read again with :func:`parse_json_line` and
    ``Trial.model_validate``, which give the located messages (and accept what Python's JSON reader
    accepts, such as nesting deeper than pydantic's parser allows), so the result is exactly that of the
    two-step reading, only faster.
    """
    validate_json = Trial.model_validate_json
    for lineno, raw in _lines(path, log):
        try:
            yield lineno, validate_json(raw)
            continue
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            if not any(e.get("type") == "json_invalid" or not e.get("loc") for e in errors):
                log.add_pydantic(lineno, exc)
                continue
        obj = _object(lineno, raw, log)
        if obj is None:
            continue
        try:
            yield lineno, Trial.model_validate(obj)
        except ValidationError as exc:
            log.add_pydantic(lineno, exc)
        except RecursionError:
            log.add(lineno, None, "record nested too deeply to validate")


def iter_json_array(path: str | os.PathLike, log: ProblemLog) -> Iterator[tuple[int, Any]]:
    """Yield ``(record_index, record)`` for each element of a JSON array (0-based indices).

    A file that is not valid JSON is one problem at the line where parsing failed; a top-level value that is
    not an array is one problem for the whole file.
    """
    try:
        with open_text(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        log.add(exc.lineno, None, f"malformed JSON: {json_error_text(exc.msg, exc.colno)}", unit="line",
                whole_file=True)  # one JSON array: no element is read past the error
        return
    except STREAM_ERRORS as exc:
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
    items: Iterable[tuple[int, Any]], log: ProblemLog, *, unit: str | None = None, prefix: str = ""
) -> list[Trial]:
    """Validate records as :class:`Trial` and reject duplicate keys; problems go to ``log``.

    Parameters
    ----------
    items : iterable of (location, record)
        ``location`` is a line number or record index (see ``unit``); ``record`` a dict or a built Trial.
    log : ProblemLog
    unit : str, optional
        Unit of ``location`` (default: the log's unit).
    prefix : str
        Put before each validation problem: readers that convert another format say so (``"(converted trial) "``),
        so a problem reads as one of the converted record, not of the input's own fields.

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
                log.add_pydantic(loc, exc, prefix=prefix, unit=unit)
                continue
            except RecursionError:
                log.add(loc, None, "record nested too deeply to validate", unit=unit)
                continue
        if not _accept(t, loc, log, unit):
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
        log.locations[key] = (unit, loc)
        trials.append(t)
    return trials


def _accept(t: Trial, loc: int, log: ProblemLog, unit: str) -> bool:
    """Check beyond the schema: a success/reward contradiction is a problem, a misspelled outcome field a note."""
    conflict = outcome_conflict(t)
    if conflict is not None:
        log.add(loc, "success", conflict, unit=unit)
        return False
    if t.outcome() is None:
        for field, guess in outcome_field_hints((t.__pydantic_extra__ or {}).keys()):
            log.note(loc, field, f"unknown field {field!r}: did you mean {guess!r}? (this trial has no outcome)",
                     unit=unit)
    return True


class TrialTally:
    """Counts trials record by record without keeping them: the bounded-memory way to counts.

    Feed it validated trials with :meth:`add`; :meth:`counts` checks duplicate keys (problems at their lines,
    first record kept, as :func:`build_trials`), applies an agent selection and returns the counts table.
    Memory: five machine integers per trial and one entry per distinct agent and task.
    """

    def __init__(self, log: ProblemLog, unit: str | None = None):
        self.log = log
        self.unit = unit or log.unit
        self.agents: dict[str, int] = {}
        self.tasks: dict[str, int] = {}
        self._a = array("q")
        self._t = array("q")
        self._k = array("q")
        self._loc = array("q")
        self._out = array("b")
        self.n_unscored = 0
        self.unscored: list[tuple[tuple[str, str, int], str]] = []

    def add(self, loc: int, t: Trial) -> None:
        """Count one valid trial found at ``loc``."""
        if not _accept(t, loc, self.log, self.unit):
            return
        out = t.outcome()
        if out is None:
            self.n_unscored += 1
            if len(self.unscored) < 5:
                hints = outcome_field_hints((t.__pydantic_extra__ or {}).keys())
                self.unscored.append((t.key, "".join(f" (it has a field {f!r}: did you mean {g!r}?)"
                                                     for f, g in hints)))
            code = CODE_UNSCORED
        else:
            code = OUTCOME_CODE[out]
        self._a.append(self.agents.setdefault(t.agent, len(self.agents)))
        self._t.append(self.tasks.setdefault(t.task_id, len(self.tasks)))
        self._k.append(t.trial)
        self._loc.append(loc)
        self._out.append(code)

    def counts(self, selection: AgentSelection | None = None, source: str = "") -> pd.DataFrame:
        """Finish: log duplicate keys, then the counts of the trials kept (``attrs``: ``gaps``, ``excluded_agents``).

        Raises
        ------
        ValueError
            When trials have no outcome (named, with field hints) or an ``agents`` entry matches no agent.
        """
        a = np.frombuffer(self._a, dtype=np.int64) if len(self._a) else np.zeros(0, np.int64)
        t = np.frombuffer(self._t, dtype=np.int64) if len(self._t) else np.zeros(0, np.int64)
        k = np.frombuffer(self._k, dtype=np.int64) if len(self._k) else np.zeros(0, np.int64)
        loc = np.frombuffer(self._loc, dtype=np.int64) if len(self._loc) else np.zeros(0, np.int64)
        out = np.frombuffer(self._out, dtype=np.int8) if len(self._out) else np.zeros(0, np.int8)
        keep = np.ones(len(a), dtype=bool)
        if len(a):
            dup = pd.DataFrame({"a": a, "t": t, "k": k}).duplicated(keep="first").to_numpy()
            if dup.any():
                keys = pd.DataFrame({"a": a, "t": t, "k": k, "loc": loc})
                first_of = keys.groupby(["a", "t", "k"])["loc"].transform("first")
                a_names, t_names = list(self.agents), list(self.tasks)
                for i in np.flatnonzero(dup):
                    key = (a_names[a[i]], t_names[t[i]], int(k[i]))
                    first = int(first_of.iloc[i])
                    where = f"line {first}" if self.unit == "line" else f"{self.unit} {first}"
                    self.log.add(int(loc[i]), "(agent, task_id, trial)",
                                 f"duplicate trial key {key!r}, first seen at {where}", unit=self.unit)
                    if out[i] == CODE_UNSCORED:
                        self.n_unscored -= 1
                keep &= ~dup
        self.skipped = self.log.finish(kept=int(keep.sum()))
        if self.n_unscored:
            message = _unscored_message(self.n_unscored, self.unscored)
            if self.log.notes:
                shown = "\n  ".join(str(p) for p in self.log.notes[:10])
                more = f"\n  ... and {len(self.log.notes) - 10} more" if len(self.log.notes) > 10 else ""
                message += f"\nFields that look like misspelled outcome fields:\n  {shown}{more}"
            raise ValueError(message)
        a_names = list(self.agents)
        excluded: list[str] = []
        if selection is not None and keep.any():
            present = {a_names[i] for i in np.unique(a[keep])}
            kept = selection.keep(present, source)
            excluded = sorted(present - kept)
            keep &= np.isin(a, [i for i, name in enumerate(a_names) if name in kept])
        a, t, k, out = a[keep], t[keep], k[keep], out[keep]
        a, agents = _recode(a, a_names)
        t, tasks = _recode(t, list(self.tasks))
        counts = counts_from_codes(a, t, k, out, agents, tasks)
        counts.attrs["excluded_agents"] = excluded
        return counts


def _recode(codes: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Codes and names restricted to the codes present (order of names kept)."""
    if not len(codes):
        return codes, []
    present, inverse = np.unique(codes, return_inverse=True)
    return inverse.astype(np.int64), [names[i] for i in present]


def read_jsonl_trials(path: str | os.PathLike, log: ProblemLog) -> list[Trial]:
    """Read the project's JSONL (plain or gzip). Problems go to ``log`` (1-based line numbers)."""
    return build_trials(iter_jsonl_trials(path, log), log, unit="line")


def count_jsonl_trials(
    path: str | os.PathLike, log: ProblemLog, selection: AgentSelection | None = None
) -> pd.DataFrame:
    """Count the project's JSONL per (agent, task), record by record, keeping no trial in memory.

    Same checks and problems as :func:`read_jsonl_trials` followed by :func:`agentstats.records.counts.to_counts`;
    ``log.finish()`` is called (raise or warn per its policy) and its problems are in ``attrs["skipped"]``.
    """
    tally = TrialTally(log, unit="line")
    for lineno, t in iter_jsonl_trials(path, log):
        tally.add(lineno, t)
    counts = tally.counts(selection, log.source)
    counts.attrs["skipped"] = tally.skipped
    return counts


def read_json_trials(path: str | os.PathLike, log: ProblemLog) -> list[Trial]:
    """Read a JSON array of trial records. Problems go to ``log`` (0-based record indices)."""
    return build_trials(iter_json_array(path, log), log, unit="record")


def save_trials(trials: Iterable[Trial], path: str | os.PathLike) -> Path:
    """Write trials as the project's JSONL, one record per line (gzip when ``path`` ends in ``.gz``).

    Fields equal to their defaults are left out (they come back on reading), so ``load_trials`` on the
    written file returns equal :class:`Trial` objects. The file is written atomically: to a temporary file
    in the same directory, renamed over ``path`` only when complete (an interrupted or failed write leaves
    the previous file as it was). A manifest ``<path>.manifest.json`` (record count, size, SHA-256;
    :mod:`agentstats.files.manifest`) is written beside it, so a reader can tell the complete file from a
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


def jsonl_file_counts(path: Any, name: str, on_error: OnError, options: dict[str, Any]) -> pd.DataFrame | None:
    """Count a trials JSONL file without keeping a :class:`Trial` per line (the ``jsonl`` format's counts path).

    A flat file is counted by :func:`agentstats.io.fastcounts.jsonl_counts` (pyarrow, vectorised checks), any other
    record by record (:func:`count_jsonl_trials`). ``None`` (read the trials instead) for a DataFrame or options
    other than ``agents``.
    """
    if not isinstance(path, (str, os.PathLike)) or set(options) - {"agents"}:
        return None
    selection = AgentSelection.parse(options.get("agents"))
    counts = jsonl_counts(path, agents=selection)
    if counts is not None:
        counts.attrs.update(source=name, format="jsonl", skipped=[])
        return counts
    counts = count_jsonl_trials(path, ProblemLog(name, on_error), selection)
    counts.attrs.update(source=name, format="jsonl")
    return counts


register_format("jsonl", read_jsonl_trials, aliases=("trials",), options=(), counts=jsonl_file_counts, locates=True)
register_format("json", read_json_trials, options=(), locates=True)
