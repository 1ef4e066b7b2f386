"""Reader of calibration sets (format ``"calibration"``): JSONL of judge verdicts beside gold labels (gzip allowed).

The items and their rules are :mod:`agentstats.records.calibration`. This module reads the lines (each decoded on
its own, so one bad line costs one line), collects every problem with its line and field, and raises one
:class:`~agentstats.records.problems.LoadError` listing them all, or skips the bad lines with ``on_error="skip"``.
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from agentstats.files.sniff import open_binary
from agentstats.io.detect import head_records
from agentstats.io.jsonl import parse_json_line
from agentstats.io.registry import register_format
from agentstats.records.calibration import check_calibration, looks_like_calibration_item
from agentstats.records.problems import LoadError, OnError, Problem, ProblemLog

__all__ = ["looks_like_calibration", "read_calibration"]


def read_calibration(path: str | os.PathLike, *, on_error: OnError = "raise") -> pd.DataFrame:
    """Read a calibration set (format: :mod:`agentstats.records.calibration`).

    ``agentstats.load(path, format="calibration")`` calls this.

    Parameters
    ----------
    path : str or PathLike
        JSONL file (``.gz`` allowed).
    on_error : {"raise", "skip"}
        ``"raise"``: one error listing every problem; ``"skip"``: keep the valid lines and warn.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`~agentstats.records.calibration.CALIBRATION_COLUMNS`; ``verdict`` is None where the judge gave
        none; ``line`` is the 1-based line in the file. ``attrs["skipped"]``: the problems of skipped lines
        (``on_error="skip"``).

    Raises
    ------
    agentstats.records.problems.LoadError
        Listing every problem with its line and field (``on_error="raise"``), or when nothing valid is left.
    OSError
        If the file cannot be read.
    """
    source = str(path)
    log = ProblemLog(source, on_error)
    records: list[tuple[int, Any]] = []
    with open_binary(path) as fh:
        for line, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            obj, problem = parse_json_line(raw)
            if problem is not None:
                log.add(line, None, problem)
                continue
            records.append((line, obj))
    frame = check_calibration(records, log)
    if not records and not log.problems:
        log.add(None, None, "the file holds no calibration items")
    skipped = log.finish(len(records))
    if frame.empty:  # every line was skipped
        raise LoadError(
            [*log.problems, Problem(source, None, None, "no valid calibration item is left")], source, skippable=False
        )
    frame.attrs["skipped"] = skipped
    return frame


def looks_like_calibration(path: Any, head: bytes) -> bool:
    """Tell whether a JSON-lines head holds calibration items (most of its first objects have their shape)."""
    recs = head_records(head)
    return bool(recs) and 2 * sum(map(looks_like_calibration_item, recs)) > len(recs)


register_format("calibration", read_calibration, holds="calibration", aliases=("calibration_set",),
                detect=looks_like_calibration)
