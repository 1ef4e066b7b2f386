"""Reader of score records (format ``"scores"``): a JSONL file (gzip allowed), a long DataFrame or in-memory records.

The records and their rules are :mod:`agentstats.records.scores`; this module finds them in a source, hashes the
source (the gate's decision record names it by SHA-256) and applies the problem policy: the gate reads every example
or none, so every problem is listed (file, line or row, field) and there is no skipping.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from agentstats.io.detect import head_records
from agentstats.io.jsonl import iter_jsonl
from agentstats.io.registry import register_format
from agentstats.records.problems import LoadError, OnError, ProblemLog
from agentstats.records.scores import ScoreSet, looks_like_score_record, score_set

__all__ = ["looks_like_scores", "read_scores"]


def _records(src: Any) -> tuple[str, str, Iterator[tuple[int, Mapping[str, Any]]] | None, str]:
    """``(source, unit, records, sha256)`` of a path (records ``None``: read the lines), a DataFrame or records."""
    if isinstance(src, (str, os.PathLike)):
        path = Path(src)
        if not path.is_file():  # worded as the other readers word it (agentstats.files.sniff.open_binary)
            raise (IsADirectoryError(f"{path} is a directory, not a score file") if path.is_dir()
                   else FileNotFoundError(f"no such file: {path}"))
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        return str(path), "line", None, digest.hexdigest()
    if isinstance(src, pd.DataFrame):
        digest_text = src.to_csv(index=False)
        rows = src.astype(object).where(src.notna(), None).to_dict(orient="records")
        return "<DataFrame>", "row", iter(enumerate(rows)), hashlib.sha256(digest_text.encode()).hexdigest()
    items = list(src)
    text = "\n".join(json.dumps(r, sort_keys=True, default=str) for r in items)
    return f"<{type(src).__name__}>", "record", iter(enumerate(items)), hashlib.sha256(text.encode()).hexdigest()


def read_scores(src: str | os.PathLike | pd.DataFrame | Iterable[Mapping[str, Any]], *,
                on_error: OnError = "raise") -> ScoreSet:
    """Read score records (format: :mod:`agentstats.records.scores`) from a JSONL file, a DataFrame or records.

    ``agentstats.load(src, format="scores")`` calls this.

    Parameters
    ----------
    src : path, pandas.DataFrame or iterable of mappings
        A ``.jsonl`` file (gzip allowed), a long DataFrame (``id, metric, value`` and the optional columns), or
        in-memory records of either shape.
    on_error : {"raise"}
        Score records are read whole: the gate compares every example or none.

    Returns
    -------
    ScoreSet

    Raises
    ------
    agentstats.records.problems.LoadError
        Listing every problem with its line (or row) and field.
    ValueError
        For ``on_error="skip"``.
    OSError
        When the file cannot be read.
    """
    if on_error != "raise":
        raise ValueError("score records are read whole (the gate compares every example or none): "
                         f"on_error={on_error!r} does not apply; fix the records the error lists")
    source, unit, records, sha = _records(src)
    log = ProblemLog(source, "raise", unit=unit)
    if records is None:
        records = iter_jsonl(src, log)  # type: ignore[arg-type]
    out = score_set(records, log, source=source, sha256=sha, unit=unit)
    try:
        log.finish()
    except LoadError as exc:  # the gate reads every example or none: no skipping hint
        raise LoadError(exc.problems, exc.source, skippable=False) from None
    return out


def looks_like_scores(path: Any, head: bytes) -> bool:
    """Tell whether a JSON-lines head holds score records (most of its first objects have their shape)."""
    recs = head_records(head)
    return bool(recs) and 2 * sum(map(looks_like_score_record, recs)) > len(recs)


register_format("scores", read_scores, holds="scores", aliases=("score_records",), detect=looks_like_scores)
