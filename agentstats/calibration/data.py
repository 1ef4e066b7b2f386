"""The calibration set: judge verdicts next to human (gold) labels, one JSON object per line.

Format (JSONL, UTF-8; ``.gz`` read transparently)::

    {"item_id": "q17", "metric": "answer_relevance", "verdict": true, "gold": false}
    {"item_id": "q17", "metric": "helpfulness", "verdict": 4, "gold": 3}
    {"item_id": "q18", "metric": "answer_relevance", "verdict": null, "gold": true}

* ``item_id`` (string or integer) and ``metric`` (string) identify an item; a pair may appear once.
* ``verdict`` is what the judge said, ``gold`` the human label. Within one metric both are booleans (binary: pass /
  fail) or both integers (ordinal scores such as 1-5).
* ``verdict: null`` is a judge that gave no verdict (``judge_missing``): the item is counted apart and left out of
  every agreement figure, never scored as a failure. A ``gold`` label is required.

:func:`load_calibration` reads every line, collects every problem with its line and field, and raises one
:class:`agentstats.records.problems.TrialLoadError` listing them all (or skips the bad lines with ``on_error="skip"``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from agentstats.io.detect import open_binary
from agentstats.io.jsonl import parse_json_line
from agentstats.records.problems import OnError, Problem, ProblemLog, TrialLoadError

__all__ = ["CALIBRATION_COLUMNS", "calibration_frame", "load_calibration"]

#: Columns of a calibration frame, in order.
CALIBRATION_COLUMNS = ("item_id", "metric", "verdict", "gold", "line")


def _kind(value: Any) -> str | None:
    """``"binary"`` for a boolean, ``"ordinal"`` for an integer, None for anything else (null included)."""
    if isinstance(value, bool):
        return "binary"
    if isinstance(value, int):
        return "ordinal"
    return None


def _check_records(records: list[tuple[int, Any]], log: ProblemLog) -> pd.DataFrame:
    """Validate ``(line, object)`` pairs into a frame; problems go to ``log``."""
    rows: list[dict[str, Any]] = []
    for line, obj in records:
        if not isinstance(obj, dict):
            log.add(line, None, f"expected a JSON object, got {type(obj).__name__}")
            continue
        bad = False
        item_id = obj.get("item_id")
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or item_id == "":
            log.add(line, "item_id", "required: a non-empty string or an integer" + _got(obj, "item_id"))
            bad = True
        metric = obj.get("metric")
        if not isinstance(metric, str) or not metric.strip():
            log.add(line, "metric", "required: a non-empty string" + _got(obj, "metric"))
            bad = True
        gold = obj.get("gold")
        if _kind(gold) is None:
            log.add(line, "gold", "required: true/false (binary) or an integer score (ordinal)" + _got(obj, "gold"))
            bad = True
        if "verdict" not in obj:
            log.add(line, "verdict", "required: true/false, an integer score, or null (the judge gave no verdict)")
            bad = True
        verdict = obj.get("verdict")
        if verdict is not None and _kind(verdict) is None:
            log.add(line, "verdict", "must be true/false, an integer score, or null" + _got(obj, "verdict"))
            bad = True
        if not bad and verdict is not None and _kind(verdict) != _kind(gold):
            log.add(line, "verdict", f"is {_kind(verdict)} but gold is {_kind(gold)}: both booleans or both integers")
            bad = True
        if not bad:
            rows.append({"item_id": str(item_id), "metric": metric, "verdict": verdict, "gold": gold, "line": line})
    frame = pd.DataFrame(rows, columns=list(CALIBRATION_COLUMNS), dtype=object).astype({"line": "int64"})
    if frame.empty:
        return frame
    # one scale per metric, and an item once per metric
    for metric, group in frame.groupby("metric", sort=False):
        kinds = group["gold"].map(_kind)
        first = kinds.iloc[0]
        for line in group.loc[kinds != first, "line"]:
            log.add(int(line), "gold", f"metric {metric!r} mixes binary and ordinal labels (line "
                    f"{int(group['line'].iloc[0])} is {first})")
        dup = group["item_id"].duplicated(keep="first")
        for _, row in group[dup].iterrows():
            log.add(int(row["line"]), "item_id",
                    f"item {row['item_id']!r} appears more than once for metric {metric!r}")
    bad_lines = {p.line for p in log.problems}
    return frame[~frame["line"].isin(bad_lines)].reset_index(drop=True)


def _got(obj: dict[str, Any], key: str) -> str:
    if key not in obj:
        return ""
    text = repr(obj[key])
    return f" (got {text if len(text) <= 40 else text[:37] + '...'})"


def load_calibration(path: str | Path, on_error: OnError = "raise") -> pd.DataFrame:
    """Read a calibration set (module docstring).

    Parameters
    ----------
    path : str or Path
        JSONL file (``.gz`` allowed).
    on_error : {"raise", "skip"}
        ``"raise"``: one error listing every problem; ``"skip"``: keep the valid lines and warn.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CALIBRATION_COLUMNS`; ``verdict`` is None where the judge gave none; ``line`` is the 1-based
        line in the file. ``attrs["skipped"]``: the problems of skipped lines (``on_error="skip"``).

    Raises
    ------
    agentstats.records.problems.TrialLoadError
        Listing every problem with its line and field (``on_error="raise"``), or when nothing valid is left.
    OSError
        If the file cannot be read.
    """
    source = str(path)
    log = ProblemLog(source, on_error)
    records: list[tuple[int, Any]] = []
    with open_binary(Path(path)) as fh:
        for line, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            obj, problem = parse_json_line(raw)
            if problem is not None:
                log.add(line, None, problem)
                continue
            records.append((line, obj))
    frame = _check_records(records, log)
    if not records and not log.problems:
        log.add(None, None, "the file holds no calibration items")
    skipped = log.finish(len(records))
    if frame.empty:  # every line was skipped
        raise TrialLoadError(
            [*log.problems, Problem(source, None, None, "no valid calibration item is left")], source, skippable=False
        )
    frame.attrs["skipped"] = skipped
    return frame


def calibration_frame(items: list[dict[str, Any]] | pd.DataFrame, source: str = "<items>") -> pd.DataFrame:
    """Validate calibration items given in memory (dicts or a frame with the same fields) into a calibration frame.

    Raises
    ------
    agentstats.records.problems.TrialLoadError
        Listing every problem (``line`` is the 0-based record index).
    """
    if isinstance(items, pd.DataFrame):
        records = items.to_dict(orient="records")
        for r in records:  # a frame turns None into NaN in object columns
            if "verdict" in r and isinstance(r["verdict"], float) and r["verdict"] != r["verdict"]:
                r["verdict"] = None
    else:
        records = list(items)
    log = ProblemLog(source, "raise", unit="record")
    frame = _check_records(list(enumerate(records)), log)
    log.finish(len(records))
    return frame
