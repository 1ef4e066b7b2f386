"""Calibration items: judge verdicts next to human (gold) labels, one JSON object each.

Format (JSONL, UTF-8; ``.gz`` read transparently; read by :mod:`agentstats.io.readers.calibration`)::

    {"item_id": "q17", "metric": "answer_relevance", "verdict": true, "gold": false}
    {"item_id": "q17", "metric": "helpfulness", "verdict": 4, "gold": 3}
    {"item_id": "q18", "metric": "answer_relevance", "verdict": null, "gold": true}

* ``item_id`` (string or integer) and ``metric`` (string) identify an item; a pair may appear once.
* ``verdict`` is what the judge said, ``gold`` the human label. Within one metric both are booleans (binary: pass /
  fail) or both integers (ordinal scores such as 1-5).
* ``verdict: null`` is a judge that gave no verdict (``judge_missing``): the item is counted apart and left out of
  every agreement figure, never scored as a failure. A ``gold`` label is required.
* ``scale`` (optional, ordinal metrics): the rubric's declared scale ``[lowest, highest]`` (integers), e.g. ``[1, 5]``:
  the categories of the confusion matrix and the weighted kappa are every score of the scale, used or not (a category
  nobody used still counts in the weights). Items of one metric that give it must agree, and every score must lie on
  it.

:func:`check_calibration` validates located items (every problem with its line and field);
:func:`calibration_frame` validates items given in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from agentstats.records.problems import ProblemLog

__all__ = ["CALIBRATION_COLUMNS", "calibration_frame", "check_calibration", "looks_like_calibration_item"]

#: Columns of a calibration frame, in order.
CALIBRATION_COLUMNS = ("item_id", "metric", "verdict", "gold", "scale", "line")


def looks_like_calibration_item(rec: Mapping[str, Any]) -> bool:
    """Tell whether a JSON object has the shape of a calibration item (``item_id`` and ``gold``), for detection."""
    return {"item_id", "gold"} <= rec.keys()


def _kind(value: Any) -> str | None:
    """``"binary"`` for a boolean, ``"ordinal"`` for an integer, None for anything else (null included)."""
    if isinstance(value, bool):
        return "binary"
    if isinstance(value, int):
        return "ordinal"
    return None


def check_calibration(records: list[tuple[int, Any]], log: ProblemLog) -> pd.DataFrame:
    """Validate located calibration items (format in the module docstring) into a calibration frame.

    Parameters
    ----------
    records : list of (int, object)
        ``(location, item)`` pairs: 1-based lines of a file, or 0-based record indices.
    log : ProblemLog
        Receives every problem (location, field, message); the caller applies its policy (``log.finish()``).

    Returns
    -------
    pandas.DataFrame
        The valid items, columns :data:`CALIBRATION_COLUMNS` (``line``: each item's location).
    """
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
        scale = _scale(obj, line, log) if not bad else None
        if scale is False:
            bad = True
        if not bad:
            rows.append({"item_id": str(item_id), "metric": metric, "verdict": verdict, "gold": gold,
                         "scale": scale, "line": line})
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
        scales = {sc for sc in group["scale"] if sc is not None}
        if len(scales) > 1:
            for line in group.loc[group["scale"].notna(), "line"]:
                log.add(int(line), "scale", f"metric {metric!r} declares different scales {sorted(scales)}")
        elif scales:
            lo, hi = next(iter(scales))
            for _, row in group.iterrows():
                for name in ("gold", "verdict"):
                    v = row[name]
                    if v is not None and not lo <= v <= hi:
                        log.add(int(row["line"]), name, f"{v} is outside the declared scale [{lo}, {hi}]")
        dup = group["item_id"].duplicated(keep="first")
        for _, row in group[dup].iterrows():
            log.add(int(row["line"]), "item_id",
                    f"item {row['item_id']!r} appears more than once for metric {metric!r}")
    bad_lines = {p.line for p in log.problems}
    return frame[~frame["line"].isin(bad_lines)].reset_index(drop=True)


def _scale(obj: dict[str, Any], line: int, log: ProblemLog) -> tuple[int, int] | bool | None:
    """Return the item's declared ``scale`` as ``(lowest, highest)``.

    None when absent; False (the problem logged) when bad.
    """
    scale = obj.get("scale")
    if scale is None:
        return None
    ok = (isinstance(scale, list) and len(scale) == 2 and all(_kind(v) == "ordinal" for v in scale)
          and scale[0] < scale[1])
    if not ok:
        log.add(line, "scale", "must be [lowest, highest], two integers with lowest < highest" + _got(obj, "scale"))
        return False
    if _kind(obj.get("gold")) != "ordinal":
        log.add(line, "scale", "applies to ordinal (integer) scores only")
        return False
    return int(scale[0]), int(scale[1])


def _got(obj: dict[str, Any], key: str) -> str:
    if key not in obj:
        return ""
    text = repr(obj[key])
    return f" (got {text if len(text) <= 40 else text[:37] + '...'})"


def calibration_frame(items: list[dict[str, Any]] | pd.DataFrame, source: str = "<items>") -> pd.DataFrame:
    """Validate calibration items given in memory (dicts or a frame with the same fields) into a calibration frame.

    Raises
    ------
    agentstats.records.problems.LoadError
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
    frame = check_calibration(list(enumerate(records)), log)
    log.finish(len(records))
    return frame
