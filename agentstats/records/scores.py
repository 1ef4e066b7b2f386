"""Score records: one value per example, metric and trial, with strata and usage (the gate's and the loop's input).

Records (JSON objects; a JSONL file, a long DataFrame or in-memory mappings: :mod:`agentstats.io.readers.scores`
reads them), two shapes that may be mixed:

* long: ``{"id": "q1", "metric": "groundedness", "value": 0.9}``
* wide: ``{"id": "q1", "scores": {"groundedness": 0.9, "safety": 1}}`` (an FAI-style eval-set line with a
  ``scores`` object is valid as it is: ``input``, ``expected``, ``context`` and other fields are ignored)

``value`` is a number in [0, 1] or a boolean (binary metrics: 0/1), or ``null`` for a missing verdict (judge
failure: excluded from the metric and counted as ``judge_missing``). Optional on every record: ``trial`` (int >= 0;
default 0, 1, ... in record order per example and metric), ``risk_level`` (string), ``tags`` (list of strings),
``judge_missing`` (list of metric names whose verdicts are missing), and the usage of that trial: ``tokens``,
``cost_usd``, ``latency_s`` (numbers >= 0, :data:`EFFICIENCY_FIELDS`). An example's ``risk_level`` and ``tags`` must
agree on all its records; usage given on several records of one trial must agree.

:func:`score_set` validates located records into a :class:`ScoreSet`; every problem goes to a
:class:`~agentstats.records.problems.ProblemLog` with its location and field. :func:`scores_from_trials` reads the
project's own trials (:mod:`agentstats.records.trial`) as score records of one binary metric, ``success``: one record
per trial, ``id`` the task, the outcome 1 (success), 0 (failure) or null (missing: an infrastructure error or a
missing judge verdict, excluded and counted like a missing verdict), with the trial's risk level, tags and usage
(``tokens`` = input + output tokens).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentstats.records.problems import ProblemLog

__all__ = ["EFFICIENCY_FIELDS", "SUCCESS_METRIC", "ScoreSet", "looks_like_score_record", "score_set",
           "scores_from_trials"]

#: The binary metric a trials file is gated on: each trial's outcome (:meth:`agentstats.records.trial.Trial.outcome`).
SUCCESS_METRIC = "success"

#: Usage fields of the score records that the efficiency checks compare (per example, summed over its metrics' trial).
EFFICIENCY_FIELDS = ("tokens", "cost_usd", "latency_s")


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


def looks_like_score_record(rec: Mapping[str, Any]) -> bool:
    """Tell whether a JSON object has the shape of a score record (``id`` with ``scores``, or with ``metric``).

    A trial record (``agent``, ``task_id``) is not one. For content detection; :func:`score_set` validates.
    """
    return "id" in rec and ("scores" in rec or "metric" in rec) and not {"agent", "task_id"} <= rec.keys()


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


@dataclass(frozen=True)
class _Record:
    """One valid score record: its example, trial (None: numbered later), strata, scores and usage."""

    id: str
    trial: int | None
    risk: str | None
    tags: tuple[str, ...]
    scores: list[tuple[str, float]]
    usage: dict[str, float]
    has_risk: bool
    has_tags: bool


_TRIAL_RECORD = ('required: this is a trial record (agent, task_id, trial), and the gate reads scored examples '
                 '(`id` with `metric` and `value`, or `scores`: docs/gate.md, \'Input\'); gate trials on their outcome '
                 'with one line per trial, {"id": task_id, "trial": trial, "metric": "success", "value": true or '
                 'false}, or compare two trial files with `agentstats compare`')


def _header(loc: int, rec: Mapping[str, Any], log: ProblemLog) -> tuple[str, int | None, str | None,
                                                                          tuple[str, ...], list[str]] | None:
    """Check a record's id, trial, risk level, tags and ``judge_missing``; ``None`` (problem logged) when bad."""
    ex = _str_id(rec.get("id"))
    if ex is None:
        trial_like = rec.get("id") is None and {"agent", "task_id"} <= rec.keys()
        log.add(loc, "id", _TRIAL_RECORD if trial_like else "required: a non-empty string or integer")
        return None
    trial = rec.get("trial")
    if trial is not None and (
        isinstance(trial, (bool, np.bool_)) or not isinstance(trial, numbers.Integral) or trial < 0
    ):
        log.add(loc, "trial", f"must be an integer >= 0, got {trial!r:.40}")
        return None
    risk = rec.get("risk_level")
    if risk is not None and not isinstance(risk, str):
        log.add(loc, "risk_level", f"must be a string, got {type(risk).__name__}")
        return None
    tags_raw = rec.get("tags") or []
    if not isinstance(tags_raw, list) or not all(isinstance(t, str) for t in tags_raw):
        log.add(loc, "tags", "must be a list of strings")
        return None
    missing = rec.get("judge_missing") or []
    if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
        log.add(loc, "judge_missing", "must be a list of metric names")
        return None
    return ex, None if trial is None else int(trial), risk, tuple(sorted(set(tags_raw))), missing


def _pairs(loc: int, rec: Mapping[str, Any], log: ProblemLog) -> list[tuple[str, Any, str]] | None:
    """``(metric, raw value, field)`` of a record's scores (wide or long shape); ``None`` when malformed."""
    if "scores" in rec:
        sc = rec["scores"]
        if not isinstance(sc, Mapping) or not sc:
            log.add(loc, "scores", "must be a non-empty object of metric -> value")
            return None
        if "metric" in rec:
            log.add(loc, "metric", "give either scores or metric/value, not both")
            return None
        return [(str(m), v, f"scores.{m}") for m, v in sc.items()]
    if "metric" in rec:
        m = rec["metric"]
        if not isinstance(m, str) or not m:
            log.add(loc, "metric", "must be a non-empty string")
            return None
        if "value" not in rec:
            log.add(loc, "value", "required with metric (null for a missing verdict)")
            return None
        return [(m, rec["value"], "value")]
    log.add(loc, "scores", "required: a scores object, or metric and value")
    return None


def _parse(loc: int, rec: Any, log: ProblemLog) -> _Record | None:
    """Validate one record; every problem goes to ``log`` at ``loc``; ``None`` when it is not usable."""
    if not isinstance(rec, Mapping):
        log.add(loc, None, f"expected an object, got {type(rec).__name__}")
        return None
    head = _header(loc, rec, log)
    if head is None:
        return None
    ex, trial, risk, tags, missing = head
    pairs = _pairs(loc, rec, log)
    if pairs is None:
        return None
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
        return None
    return _Record(ex, trial, risk, tags, parsed, use, "risk_level" in rec, "tags" in rec)


class _Collect:
    """Accumulates valid records: the score rows, each example's strata, each trial's usage."""

    def __init__(self, log: ProblemLog, unit: str):
        self.log, self.unit = log, unit
        self.rows: list[tuple[str, int | None, str, float, int]] = []  # id, trial, metric, value, location
        self.strata: dict[str, tuple[str | None, tuple[str, ...], int]] = {}
        self.usage: dict[tuple[str, int], dict[str, float]] = {}
        self.usage_line: dict[tuple[str, int], int] = {}

    def add(self, loc: int, r: _Record) -> None:
        """Add a valid record at ``loc``, unless its strata disagree with the example's earlier records."""
        prev = self.strata.get(r.id)
        if prev is None:
            self.strata[r.id] = (r.risk, r.tags, loc)
        elif r.has_risk and r.risk != prev[0]:
            self.log.add(loc, "risk_level",
                         f"{r.risk!r} disagrees with {prev[0]!r} for id {r.id!r} ({self.unit} {prev[2]})")
            return
        elif r.has_tags and r.tags != prev[1]:
            self.log.add(loc, "tags",
                         f"{list(r.tags)} disagree with {list(prev[1])} for id {r.id!r} ({self.unit} {prev[2]})")
            return
        for m, val in r.scores:
            self.rows.append((r.id, r.trial, m, val, loc))
        if r.usage:
            key = (r.id, r.trial if r.trial is not None else -1 - loc)  # trial-less usage is bound later
            have = self.usage.setdefault(key, {})
            for name, u in r.usage.items():
                old = have.get(name)
                if old is not None and old != u:
                    self.log.add(loc, name, f"{u} disagrees with {old} given for the same trial "
                                 f"({self.unit} {self.usage_line[key]})")
                have[name] = u
            self.usage_line.setdefault(key, loc)

    def frame(self) -> pd.DataFrame:
        """Return the score rows, trials numbered in record order per (id, metric) where not given.

        A repeated (id, trial, metric) is logged as a problem at its location.
        """
        frame = pd.DataFrame(self.rows, columns=["id", "trial", "metric", "value", "line"])
        if not len(frame):
            return frame
        given = frame["trial"].notna()
        auto = frame.loc[~given].groupby(["id", "metric"]).cumcount()
        frame["trial"] = frame["trial"].astype("float")
        frame.loc[~given, "trial"] = auto.astype(float)
        frame["trial"] = frame["trial"].astype(int)
        dup = frame.duplicated(["id", "trial", "metric"], keep="first")
        for _, r in frame[dup].iterrows():
            self.log.add(int(r["line"]), "metric",
                         f"id {r['id']!r}, trial {r['trial']}, metric {r['metric']!r} given twice")
        return frame

    def usage_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Usage per (id, trial): usage given without a trial belongs to the trial number its record got."""
        line_trial = {(r.id, r.line): r.trial for r in frame.itertuples()} if len(frame) else {}
        resolved: dict[tuple[str, int], dict[str, float]] = {}
        first_line: dict[tuple[str, int], int] = {}
        for (ex, t), vals in self.usage.items():
            line = self.usage_line[(ex, t)]
            key = (ex, int(line_trial.get((ex, line), 0)) if t < 0 else t)
            have = resolved.setdefault(key, {})
            first_line.setdefault(key, line)
            for name, u in vals.items():
                if name in have and have[name] != u:
                    self.log.add(line, name, f"{u} disagrees with {have[name]} given for the same trial "
                                 f"({self.unit} {first_line[key]})")
                have.setdefault(name, u)
        urows = [{"id": ex, "trial": t, **{n: vals.get(n, math.nan) for n in EFFICIENCY_FIELDS}}
                 for (ex, t), vals in resolved.items()]
        return pd.DataFrame(urows, columns=["id", "trial", *EFFICIENCY_FIELDS])

    def examples(self) -> pd.DataFrame:
        """One row per example (index ``id``): ``risk_level``, ``tags``, ``line`` of its first record."""
        index = pd.Index(list(self.strata), name="id", dtype=object)
        return pd.DataFrame(
            {
                "risk_level": pd.Series([r for r, _, _ in self.strata.values()], index=index, dtype=object),
                "tags": pd.Series([t for _, t, _ in self.strata.values()], index=index, dtype=object),
                "line": pd.Series([loc for _, _, loc in self.strata.values()], index=index, dtype="int64"),
            },
            index=index,
        )


def score_set(records: Iterable[tuple[int, Any]], log: ProblemLog, *, source: str, sha256: str,
              unit: str = "line") -> ScoreSet:
    """Validate located score records (format in the module docstring) into a :class:`ScoreSet`.

    Parameters
    ----------
    records : iterable of (int, object)
        ``(location, record)`` pairs: 1-based lines of a file, 0-based DataFrame rows or record indices.
    log : ProblemLog
        Receives every problem (location, field, message); the caller applies its policy (``log.finish()``).
    source, sha256, unit : str
        Stored on the set (see :class:`ScoreSet`).

    Returns
    -------
    ScoreSet
        Built from the valid records; only meaningful when ``log`` has no problems.
    """
    collect = _Collect(log, unit)
    n_records = 0
    for loc, rec in records:
        n_records += 1
        parsed = _parse(loc, rec, log)
        if parsed is not None:
            collect.add(loc, parsed)
    if n_records == 0 and not log.problems:
        log.add(None, None, "no score records")
    frame = collect.frame()
    if not len(frame) and not log.problems:
        log.add(None, None, "no scores")
    usage = collect.usage_frame(frame)
    return ScoreSet(scores=frame.drop(columns="line").reset_index(drop=True), examples=collect.examples(),
                    usage=usage, source=source, sha256=sha256, unit=unit)


def scores_from_trials(trials: Iterable[Any], *, source: str, sha256: str) -> ScoreSet:
    """Read trials of one agent as score records of the binary metric ``success`` (module docstring).

    Parameters
    ----------
    trials : iterable of agentstats.records.trial.Trial
        Scored trials (each with an outcome) of one agent.
    source, sha256 : str
        Stored on the set: the trials file and the SHA-256 of its bytes.

    Returns
    -------
    ScoreSet

    Raises
    ------
    ValueError
        When the trials are of several agents (gate one agent's file against another's), or a trial has no outcome
        yet (score it first), naming the trial.
    agentstats.records.problems.LoadError
        When trials of one task disagree on their risk level or tags (every problem located by trial index).
    """
    items = list(trials)
    agents = sorted({t.agent for t in items})
    if len(agents) > 1:
        raise ValueError(f"{source}: trials of {len(agents)} agents ({', '.join(agents[:5])}): the gate compares one "
                         "candidate with one baseline; give each agent's trials in a file of its own")
    records = []
    for i, t in enumerate(items):
        outcome = t.outcome()
        if outcome is None:
            raise ValueError(f"{source}: trial {i} (task {t.task_id!r}, trial {t.trial}) has no outcome (no "
                             "success or reward): score the trials first (`agentstats score`)")
        rec: dict[str, Any] = {"id": t.task_id, "trial": t.trial, "metric": SUCCESS_METRIC,
                               "value": None if outcome == "missing" else outcome == "success", "tags": list(t.tags)}
        if t.risk_level is not None:
            rec["risk_level"] = t.risk_level
        u = t.usage
        if u is not None:
            if u.input_tokens is not None or u.output_tokens is not None:
                rec["tokens"] = (u.input_tokens or 0) + (u.output_tokens or 0)
            if u.cost_usd is not None:
                rec["cost_usd"] = u.cost_usd
            if u.latency_s is not None:
                rec["latency_s"] = u.latency_s
        records.append(rec)
    log = ProblemLog(source, unit="trial")
    out = score_set(enumerate(records), log, source=source, sha256=sha256, unit="trial")
    log.finish()
    return out
