"""Scored results for the gate: one value per example, metric and trial, with strata and usage.

Input (JSONL, one object per line; or a pandas DataFrame in the long form), two shapes that may be mixed:

* long: ``{"id": "q1", "metric": "groundedness", "value": 0.9}``
* wide: ``{"id": "q1", "scores": {"groundedness": 0.9, "safety": 1}}`` (an FAI-style eval-set line with a
  ``scores`` object is valid as it is: ``input``, ``expected``, ``context`` and other fields are ignored)

``value`` is a number in [0, 1] or a boolean (binary metrics: 0/1), or ``null`` for a missing verdict (judge
failure: excluded from the metric and counted as ``judge_missing``). Optional on every line: ``trial`` (int >= 0;
default 0, 1, ... in file order per example and metric), ``risk_level`` (string), ``tags`` (list of strings),
``judge_missing`` (list of metric names whose verdicts are missing), and the usage of that trial: ``tokens``,
``cost_usd``, ``latency_s`` (numbers >= 0). An example's ``risk_level`` and ``tags`` must agree on all its lines;
usage given on several lines of one trial must agree.

Every problem is collected with file, line and field (:class:`agentstats.records.problems.TrialLoadError`).
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentstats.gating.config import EFFICIENCY_FIELDS
from agentstats.io.jsonl import iter_jsonl
from agentstats.records.problems import Problem, ProblemLog, TrialLoadError

__all__ = ["ScoreSet", "load_scores", "pair_ids"]


@dataclass(frozen=True)
class ScoreSet:
    """Scored results of one system (candidate or baseline).

    Attributes
    ----------
    scores : pandas.DataFrame
        Long form, one row per (``id``, ``trial``, ``metric``): columns ``id`` (str), ``trial`` (int),
        ``metric`` (str), ``value`` (float in [0, 1]; NaN = missing verdict).
    examples : pandas.DataFrame
        One row per example, index ``id``: ``risk_level`` (str or None), ``tags`` (tuple of str), ``line`` (int:
        where the example's first record is, in ``unit``).
    usage : pandas.DataFrame
        One row per (``id``, ``trial``) that carries usage: ``tokens``, ``cost_usd``, ``latency_s`` (NaN where not
        given).
    source : str
        File path or ``"<DataFrame>"``.
    sha256 : str
        SHA-256 of the file's bytes, or of the long frame as CSV for in-memory input.
    unit : {"line", "row", "record"}
        What ``examples["line"]`` counts: 1-based file lines, 0-based DataFrame rows or records of an iterable.
    """

    scores: pd.DataFrame
    examples: pd.DataFrame
    usage: pd.DataFrame
    source: str
    sha256: str
    notes: list[str] = field(default_factory=list)
    unit: str = "line"

    @property
    def metrics(self) -> list[str]:
        """Metric names, sorted."""
        return sorted(self.scores["metric"].unique())

    def example_means(self, metric: str) -> pd.Series:
        """Per-example mean of ``metric`` over its scored trials (index ``id``; examples with none left out)."""
        s = self.scores[(self.scores["metric"] == metric) & self.scores["value"].notna()]
        return s.groupby("id", sort=True)["value"].mean()

    def missing_share(self, metric: str) -> tuple[int, int]:
        """``(missing, total)`` verdicts of ``metric``."""
        s = self.scores[self.scores["metric"] == metric]
        return int(s["value"].isna().sum()), len(s)

    def max_trials(self, metric: str) -> int:
        """Largest number of scored trials of ``metric`` on one example."""
        s = self.scores[(self.scores["metric"] == metric) & self.scores["value"].notna()]
        return int(s.groupby("id").size().max()) if len(s) else 0

    def usage_means(self, name: str) -> pd.Series:
        """Per-example mean of usage field ``name`` over the trials that give it (index ``id``)."""
        u = self.usage.dropna(subset=[name])
        return u.groupby("id", sort=True)[name].mean()


def _str_id(v: Any) -> str | None:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (str, numbers.Integral)) or v == "":
        return None
    return str(v)


def _value(v: Any) -> tuple[float | None, str | None]:
    """Read a score value as float (NaN for null), or a problem."""
    if v is None:
        return math.nan, None
    if isinstance(v, (bool, np.bool_)):
        return float(v), None
    if not isinstance(v, numbers.Real) or not math.isfinite(v):
        return None, f"must be a number in [0, 1], true/false or null, got {v!r:.40}"
    x = float(v)
    if not 0.0 <= x <= 1.0:
        return None, f"must be in [0, 1], got {x}"
    return x, None


def _records(src: Any) -> tuple[str, str, Iterator[tuple[int, Mapping[str, Any]]], str]:
    """(source, unit, records, sha256) of a path, a DataFrame or an iterable of mappings."""
    if isinstance(src, (str, os.PathLike)):
        path = Path(src)
        if not path.is_file():  # worded as the other readers word it (agentstats.io.detect.open_binary)
            raise (IsADirectoryError(f"{path} is a directory, not a score file") if path.is_dir()
                   else FileNotFoundError(f"no such file: {path}"))
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        return str(path), "line", iter(()), digest.hexdigest()
    if isinstance(src, pd.DataFrame):
        digest_text = src.to_csv(index=False)
        rows = src.astype(object).where(src.notna(), None).to_dict(orient="records")
        return "<DataFrame>", "row", iter(enumerate(rows)), hashlib.sha256(digest_text.encode()).hexdigest()
    items = list(src)
    import json

    text = "\n".join(json.dumps(r, sort_keys=True, default=str) for r in items)
    return f"<{type(src).__name__}>", "record", iter(enumerate(items)), hashlib.sha256(text.encode()).hexdigest()


def load_scores(src: str | os.PathLike | pd.DataFrame | Iterable[Mapping[str, Any]]) -> ScoreSet:
    """Load scored results (format in the module docstring) from a JSONL file, a DataFrame or records.

    Parameters
    ----------
    src : path, pandas.DataFrame or iterable of mappings
        A ``.jsonl`` file (gzip allowed), a long DataFrame (``id, metric, value`` and the optional columns), or
        in-memory records of either shape.

    Returns
    -------
    ScoreSet

    Raises
    ------
    agentstats.records.problems.TrialLoadError
        Listing every problem with its line (or row) and field.
    OSError
        When the file cannot be read.
    """
    source, unit, records, sha = _records(src)
    log = ProblemLog(source, "raise", unit=unit)
    if unit == "line":
        records = iter_jsonl(src, log)  # type: ignore[arg-type]
    rows: list[tuple[str, int | None, str, float, int]] = []  # id, trial, metric, value, line
    strata: dict[str, tuple[str | None, tuple[str, ...], int]] = {}
    usage: dict[tuple[str, int], dict[str, float]] = {}
    usage_line: dict[tuple[str, int], int] = {}
    n_records = 0
    for loc, rec in records:
        n_records += 1
        if not isinstance(rec, Mapping):
            log.add(loc, None, f"expected an object, got {type(rec).__name__}")
            continue
        ex = _str_id(rec.get("id"))
        if ex is None:
            if rec.get("id") is None and {"agent", "task_id"} <= rec.keys():
                log.add(loc, "id", "required: this is a trial record (agent, task_id, trial), and the gate reads "
                        "scored examples (`id` with `metric` and `value`, or `scores`: docs/gate.md, 'Input'); gate "
                        'trials on their outcome with one line per trial, {"id": task_id, "trial": trial, "metric": '
                        '"success", "value": true or false}, or compare two trial files with `agentstats compare`')
            else:
                log.add(loc, "id", "required: a non-empty string or integer")
            continue
        trial = rec.get("trial")
        if trial is not None and (
            isinstance(trial, (bool, np.bool_)) or not isinstance(trial, numbers.Integral) or trial < 0
        ):
            log.add(loc, "trial", f"must be an integer >= 0, got {trial!r:.40}")
            continue
        trial = None if trial is None else int(trial)
        risk = rec.get("risk_level")
        if risk is not None and not isinstance(risk, str):
            log.add(loc, "risk_level", f"must be a string, got {type(risk).__name__}")
            continue
        tags_raw = rec.get("tags") or []
        if not isinstance(tags_raw, list) or not all(isinstance(t, str) for t in tags_raw):
            log.add(loc, "tags", "must be a list of strings")
            continue
        tags = tuple(sorted(set(tags_raw)))
        missing = rec.get("judge_missing") or []
        if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
            log.add(loc, "judge_missing", "must be a list of metric names")
            continue
        # the scores of this record
        pairs: list[tuple[str, Any, str]] = []
        if "scores" in rec:
            sc = rec["scores"]
            if not isinstance(sc, Mapping) or not sc:
                log.add(loc, "scores", "must be a non-empty object of metric -> value")
                continue
            if "metric" in rec:
                log.add(loc, "metric", "give either scores or metric/value, not both")
                continue
            pairs = [(str(m), v, f"scores.{m}") for m, v in sc.items()]
        elif "metric" in rec:
            m = rec["metric"]
            if not isinstance(m, str) or not m:
                log.add(loc, "metric", "must be a non-empty string")
                continue
            if "value" not in rec:
                log.add(loc, "value", "required with metric (null for a missing verdict)")
                continue
            pairs = [(m, rec["value"], "value")]
        else:
            log.add(loc, "scores", "required: a scores object, or metric and value")
            continue
        ok = True
        parsed: list[tuple[str, float]] = []
        for m, v, fld in pairs:
            val, problem = _value(v)
            if problem is not None:
                log.add(loc, fld, problem)
                ok = False
                continue
            assert val is not None
            parsed.append((m, math.nan if m in missing else val))
        use: dict[str, float] = {}
        for name in EFFICIENCY_FIELDS:
            if rec.get(name) is None:
                continue
            u = rec[name]
            if isinstance(u, (bool, np.bool_)) or not isinstance(u, numbers.Real) or not math.isfinite(u) or u < 0:
                log.add(loc, name, f"must be a number >= 0, got {u!r:.40}")
                ok = False
                continue
            use[name] = float(u)
        if not ok:
            continue
        prev = strata.get(ex)
        if prev is None:
            strata[ex] = (risk, tags, loc)
        else:
            if "risk_level" in rec and risk != prev[0]:
                log.add(loc, "risk_level", f"{risk!r} disagrees with {prev[0]!r} for id {ex!r} ({unit} {prev[2]})")
                continue
            if "tags" in rec and tags != prev[1]:
                log.add(loc, "tags", f"{list(tags)} disagree with {list(prev[1])} for id {ex!r} ({unit} {prev[2]})")
                continue
        for m, val in parsed:
            rows.append((ex, trial, m, val, loc))
        if use:
            key = (ex, trial if trial is not None else -1 - loc)  # trial-less usage is bound below
            usage.setdefault(key, {})
            for name, u in use.items():
                old = usage[key].get(name)
                if old is not None and old != u:
                    log.add(loc, name, f"{u} disagrees with {old} given for the same trial ({unit} {usage_line[key]})")
                usage[key][name] = u
            usage_line.setdefault(key, loc)
    if n_records == 0 and not log.problems:
        log.add(None, None, "no score records")
    # trials in file order per (id, metric) where not given; duplicates are problems
    frame = pd.DataFrame(rows, columns=["id", "trial", "metric", "value", "line"])
    if len(frame):
        given = frame["trial"].notna()
        auto = frame.loc[~given].groupby(["id", "metric"]).cumcount()
        frame["trial"] = frame["trial"].astype("float")
        frame.loc[~given, "trial"] = auto.astype(float)
        frame["trial"] = frame["trial"].astype(int)
        dup = frame.duplicated(["id", "trial", "metric"], keep="first")
        for _, r in frame[dup].iterrows():
            log.add(int(r["line"]), "metric", f"id {r['id']!r}, trial {r['trial']}, metric {r['metric']!r} given twice")
    elif not log.problems:
        log.add(None, None, "no scores")
    # usage per (id, trial): usage given without a trial belongs to the trial number its line got
    line_trial = {(r.id, r.line): r.trial for r in frame.itertuples()} if len(frame) else {}
    resolved: dict[tuple[str, int], dict[str, float]] = {}
    first_line: dict[tuple[str, int], int] = {}
    for (ex, t), vals in usage.items():
        line = usage_line[(ex, t)]
        key = (ex, int(line_trial.get((ex, line), 0)) if t < 0 else t)
        have = resolved.setdefault(key, {})
        first_line.setdefault(key, line)
        for name, u in vals.items():
            if name in have and have[name] != u:
                log.add(
                    line, name, f"{u} disagrees with {have[name]} given for the same trial ({unit} {first_line[key]})"
                )
            have.setdefault(name, u)
    try:
        log.finish(n_records)
    except TrialLoadError as exc:  # the gate reads every example or none: no skipping hint
        raise TrialLoadError(exc.problems, exc.source, skippable=False) from None
    urows = [
        {"id": ex, "trial": t, **{n: vals.get(n, math.nan) for n in EFFICIENCY_FIELDS}}
        for (ex, t), vals in resolved.items()
    ]
    usage_frame = pd.DataFrame(urows, columns=["id", "trial", *EFFICIENCY_FIELDS])
    index = pd.Index(list(strata), name="id", dtype=object)
    examples = pd.DataFrame(
        {
            "risk_level": pd.Series([r for r, _, _ in strata.values()], index=index, dtype=object),
            "tags": pd.Series([t for _, t, _ in strata.values()], index=index, dtype=object),
            "line": pd.Series([loc for _, _, loc in strata.values()], index=index, dtype="int64"),
        },
        index=index,
    )
    return ScoreSet(
        scores=frame.drop(columns="line").reset_index(drop=True),
        examples=examples,
        usage=usage_frame,
        source=source,
        sha256=sha,
        unit=unit,
    )


def pair_ids(candidate: ScoreSet, baseline: ScoreSet) -> tuple[list[str], list[str], list[str], list[str]]:
    """Pair the two sets on ``id``: ``(paired, only_candidate, only_baseline, conflicts)`` (sorted ids).

    ``conflicts`` describes examples whose ``risk_level`` differs between the two files (the strata would be
    ambiguous), each with the file and line (or row) of the example's record in both.
    """
    c = set(candidate.examples.index)
    b = set(baseline.examples.index)
    paired = sorted(c & b)
    conflicts = []
    for ex in paired:
        rc, rb = candidate.examples.at[ex, "risk_level"], baseline.examples.at[ex, "risk_level"]
        if rc != rb:
            conflicts.append(
                f"id {ex!r}: risk_level {rc!r} in the candidate ({_where(candidate, ex)}), {rb!r} in the baseline "
                f"({_where(baseline, ex)})"
            )
    return paired, sorted(c - b), sorted(b - c), conflicts


def _where(scores: ScoreSet, ex: str) -> str:
    """``"cand.jsonl, line 7, field 'risk_level'"``: where example ``ex`` sets its risk level."""
    line = scores.examples.at[ex, "line"] if "line" in scores.examples else None
    return Problem(scores.source, None if line is None else int(line), "risk_level", "", scores.unit).where()
