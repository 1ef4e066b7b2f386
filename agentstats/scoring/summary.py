"""Report tables for scoring.

Tool-correctness breakdown, common tool and schema errors, agreement of tool correctness with the benchmark's
outcome, and judge failure counts.

Every function is a plain function over trials (or a :class:`~agentstats.scoring.outcomes.ScoringResult`)
returning a :class:`pandas.DataFrame`; the report notebook and ``agentstats score`` only display them. Tool
scores come from :func:`agentstats.scoring.tools.score_trial_tools` and schema errors from
:func:`agentstats.scoring.schema_check.validate_tool_calls`; nothing here re-implements a score.

A *scored unit* is one list of actual calls scored against one list of expected calls:

* ``level="interaction"``: an interaction's own calls against its ``expected_tool_calls`` (Fair Forge
  ``ground_truth_agentic``);
* ``level="trial"``: every call of the conversation against the trial-level ``expected_tool_calls``
  (tau-bench ``info.task.actions``).

Only trials with ``status == "completed"`` are scored, as in :func:`agentstats.scoring.score_trials`
(``infra_error`` trials are missing, ``agent_error`` trials are failures whatever their calls were).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from agentstats.schema import Status, ToolCall, Trial
from agentstats.scoring.outcomes import ScoringResult
from agentstats.scoring.schema_check import validate_tool_calls
from agentstats.scoring.tools import ArgMatchOptions, ToolScore, score_trial_tools

__all__ = [
    "COMPONENTS",
    "TOOL_ERROR_KINDS",
    "judge_summary",
    "schema_error_counts",
    "scoring_available",
    "tool_breakdown",
    "tool_error_counts",
    "tool_outcome_agreement",
    "tool_scores_frame",
]

#: Tool-score components, in display order.
COMPONENTS = ("selection", "parameters", "sequence", "utilization")

#: Kinds of tool error counted by :func:`tool_error_counts`.
TOOL_ERROR_KINDS = (
    "missing_call",  # an expected call no actual call of that tool was paired with
    "extra_call",  # an actual call paired with no expected call (unexpected, or a duplicate)
    "wrong_value",  # a paired call gave a different value for an expected argument
    "missing_argument",  # a paired call left out an expected (non-optional) argument
    "extra_argument",  # a paired call gave an argument the expected call does not name
    "wrong_type",  # BFCL type rules (ArgMatchOptions(type_rules="bfcl")) rejected a value
    "malformed_arguments",  # the call's arguments were not valid JSON
    "order",  # a paired call out of the expected order (only where the sequence matters)
)

_DIFF_KIND = {
    "value": "wrong_value",
    "missing": "missing_argument",
    "extra": "extra_argument",
    "type": "wrong_type",
    "malformed": "malformed_arguments",
}

_FRAME_COLS = [
    "agent", "task_id", "trial", "level", "interaction", "selection", "parameters", "sequence", "utilization",
    "overall", "passed", "precision", "recall", "f1", "n_actual", "n_expected", "n_correct", "benchmark_outcome",
    "all_expected_matched",
]
_MEAN_COLS = ["selection", "parameters", "sequence", "utilization", "overall", "precision", "recall", "f1"]


# ---------------------------------------------------------------------------------------------------------
# what there is to score
# ---------------------------------------------------------------------------------------------------------
def scoring_available(trials: Iterable[Trial]) -> bool:
    """Whether any trial has something to score.

    Parameters
    ----------
    trials : iterable of Trial

    Returns
    -------
    bool
        True when some interaction has an ``expected_answer``, some interaction or trial has
        ``expected_tool_calls``, or some trial offers tool specs (``tools``) and made tool calls (which
        :func:`schema_error_counts` can validate).
    """
    for t in trials:
        if t.expected_tool_calls:
            return True
        has_calls = False
        for it in t.interactions:
            if it.expected_answer is not None or it.expected_tool_calls:
                return True
            has_calls = has_calls or bool(it.tool_calls)
        if has_calls and t.tools:
            return True
    return False


# ---------------------------------------------------------------------------------------------------------
# scored units
# ---------------------------------------------------------------------------------------------------------
def _units(
    trials: Iterable[Trial],
    *,
    tool_threshold: float,
    weights: Mapping[str, float] | None,
    options: ArgMatchOptions | None,
    empty_expected: Literal["no_ground_truth", "no_calls"],
    details: bool,
) -> Iterator[tuple[Trial, str, int | None, ToolScore, list[ToolCall], list[ToolCall]]]:
    """Yield ``(trial, level, interaction index, score, actual calls, expected calls)`` per scored unit."""
    kw: dict[str, Any] = {"tool_threshold": tool_threshold, "empty_expected": empty_expected, "details": details}
    if weights is not None:
        kw["weights"] = weights
    if options is not None:
        kw["options"] = options
    for t in trials:
        if not isinstance(t, Trial):
            raise TypeError(f"expected Trial objects, got {type(t).__name__}")
        if t.status != Status.completed:
            continue
        ts = score_trial_tools(t, **kw)
        for ii, s in enumerate(ts.interactions):
            if s is not None:
                it = t.interactions[ii]
                yield t, "interaction", ii, s, list(it.tool_calls), list(it.expected_tool_calls)
        if ts.trial is not None:
            calls = [c for it in t.interactions for c in it.tool_calls]
            yield t, "trial", None, ts.trial, calls, list(t.expected_tool_calls)


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def tool_scores_frame(
    trials: Iterable[Trial],
    *,
    tool_threshold: float = 1.0,
    weights: Mapping[str, float] | None = None,
    options: ArgMatchOptions | None = None,
    empty_expected: Literal["no_ground_truth", "no_calls"] = "no_ground_truth",
) -> pd.DataFrame:
    """One row per scored unit: the tool-correctness components of every trial and interaction.

    Parameters
    ----------
    trials : iterable of Trial
        Only ``status == "completed"`` trials are scored.
    tool_threshold : float
        ``passed = overall >= tool_threshold`` (default 1.0: every weighted component perfect; with the
        default weights that means the same multiset of tool names *and* every argument matched, so any
        extra call fails the unit).
    weights : mapping, optional
        Component weights (see :func:`agentstats.scoring.tools.score_tool_calls`).
    options : ArgMatchOptions, optional
        Argument comparison options (default: exact, JSON strings parsed).
    empty_expected : {"no_ground_truth", "no_calls"}
        What an empty expected list means (see :func:`agentstats.scoring.tools.score_trial_tools`):
        no ground truth (no unit, the default) or "no call should be made" (a unit that any call fails).

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, task_id, trial, level`` (``"trial"`` / ``"interaction"``), ``interaction`` (index
        within the trial, ``<NA>`` at trial level), the components ``selection, parameters, sequence,
        utilization`` (NaN where not applicable), ``overall, passed, precision, recall, f1, n_actual,
        n_expected, n_correct``, ``benchmark_outcome`` (:meth:`~agentstats.schema.Trial.outcome`:
        ``"success"``, ``"failure"``, ``"missing"`` or ``None``) and ``all_expected_matched``
        (``n_correct == n_expected``: every expected call reproduced with exact arguments, extra calls
        allowed). Component definitions: :mod:`agentstats.scoring.tools`. ``attrs["n_trials_skipped"]``
        counts trials not scored because of their status.

    Raises
    ------
    TypeError
        When an element is not a :class:`~agentstats.schema.Trial`.
    ValueError
        For a threshold outside [0, 1] or an invalid weight (from ``score_tool_calls``).
    """
    trials = list(trials)
    rows: list[dict[str, Any]] = []
    for t, level, ii, s, _, _ in _units(trials, tool_threshold=tool_threshold, weights=weights, options=options,
                                        empty_expected=empty_expected, details=False):
        rows.append({
            "agent": t.agent, "task_id": t.task_id, "trial": t.trial, "level": level, "interaction": ii,
            "selection": float(s.selection), "parameters": _nan(s.parameters), "sequence": _nan(s.sequence),
            "utilization": _nan(s.utilization), "overall": float(s.overall), "passed": bool(s.passed),
            "precision": float(s.precision), "recall": float(s.recall), "f1": float(s.f1),
            "n_actual": s.n_actual, "n_expected": s.n_expected, "n_correct": s.n_correct,
            "benchmark_outcome": t.outcome(), "all_expected_matched": s.n_correct == s.n_expected,
        })
    df = pd.DataFrame.from_records(rows, columns=_FRAME_COLS)
    df = df.astype({"interaction": "Int64", "passed": bool, "all_expected_matched": bool,
                    "n_actual": "int64", "n_expected": "int64", "n_correct": "int64", "trial": "int64"})
    for c in _MEAN_COLS:
        df[c] = df[c].astype(float)
    # object dtype keeps None (unscored) apart from the outcome strings (pandas' str dtype would make it NaN)
    df["benchmark_outcome"] = pd.Series([r["benchmark_outcome"] for r in rows], index=df.index, dtype=object)
    df.attrs["n_trials_skipped"] = sum(1 for t in trials if t.status != Status.completed)
    df.attrs["tool_threshold"] = tool_threshold
    return df


def tool_breakdown(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean tool-correctness components per agent and level.

    Parameters
    ----------
    frame : pandas.DataFrame
        From :func:`tool_scores_frame`.

    Returns
    -------
    pandas.DataFrame
        One row per ``(agent, level)``: ``agent, level, n_units``, the means of ``selection, parameters,
        sequence, utilization, overall, precision, recall, f1`` over the units where each applies (NaN when it
        applies to none), and ``share_passed`` (share of units with ``passed``).
    """
    cols = ["agent", "level", "n_units", *_MEAN_COLS, "share_passed"]
    if frame.empty:
        return pd.DataFrame(columns=cols)
    g = frame.groupby(["agent", "level"], sort=True)
    out = g[_MEAN_COLS].mean()
    out.insert(0, "n_units", g.size())
    out["share_passed"] = g["passed"].mean().astype(float)
    return out.reset_index()[cols]


# ---------------------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------------------
def _out_of_order(order: Sequence[int]) -> list[int]:
    """Positions of ``order`` outside one longest strictly increasing subsequence (the pairs out of order).

    Dynamic programming in O(n^2) with predecessor links; ties keep the earliest subsequence.
    """
    n = len(order)
    if n == 0:
        return []
    best = [1] * n
    prev = [-1] * n
    for i in range(n):
        for j in range(i):
            if order[j] < order[i] and best[j] + 1 > best[i]:
                best[i] = best[j] + 1
                prev[i] = j
    end = max(range(n), key=lambda i: (best[i], -i))
    keep = set()
    while end != -1:
        keep.add(end)
        end = prev[end]
    return [i for i in range(n) if i not in keep]


def _short(v: Any, width: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= width else text[: width - 3] + "..."


def tool_error_counts(
    trials: Iterable[Trial],
    *,
    top: int | None = 15,
    options: ArgMatchOptions | None = None,
    empty_expected: Literal["no_ground_truth", "no_calls"] = "no_ground_truth",
    level: Literal["all", "trial", "interaction"] = "all",
) -> pd.DataFrame:
    """List the most common tool-call errors, by kind, tool and argument, with an example of each.

    Parameters
    ----------
    trials : iterable of Trial
        Only ``status == "completed"`` trials are scored (as in :func:`tool_scores_frame`).
    top : int or None
        Keep the ``top`` most frequent rows (``None``: all).
    options : ArgMatchOptions, optional
        Argument comparison options.
    empty_expected : {"no_ground_truth", "no_calls"}
        As in :func:`tool_scores_frame`.
    level : {"all", "trial", "interaction"}
        Which scored units to count.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind`` (one of :data:`TOOL_ERROR_KINDS`), ``level``, ``tool``, ``argument`` (JSON path inside
        the arguments, ``""`` for whole-call errors), ``where`` (``tool`` or ``tool.param``), ``count``
        (occurrences), ``n_trials`` (distinct trials), ``example_agent, example_task_id, example_trial,
        example_detail`` (first occurrence in input order; for wrong values ``expected ... got ...``). Sorted by
        ``count`` descending, then kind, tool, argument. ``attrs["kind_totals"]`` holds the count per kind over
        *all* rows (before ``top``), ``attrs["n_units"]`` the units scored and ``attrs["n_units_with_errors"]``
        those with at least one error.

    Notes
    -----
    Errors follow the optimal one-to-one pairing of :func:`agentstats.scoring.tools.score_tool_calls`:
    expected calls left unpaired are ``missing_call``, actual calls left unpaired ``extra_call``; argument
    errors come from the pairs' diffs. ``order`` counts the pairs outside one longest common subsequence of
    actual and expected order (only for units whose ``sequence`` applies); which of two swapped calls is named
    is a convention (when lengths tie, the earlier call in actual order stays in the subsequence and the later
    one is named).
    """
    if level not in ("all", "trial", "interaction"):
        raise ValueError(f"level must be 'all', 'trial' or 'interaction', got {level!r}")
    agg: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    n_units = n_bad = 0

    def add(kind: str, lvl: str, tool: str, arg: str, t: Trial, detail: str) -> None:
        key = (kind, lvl, tool, arg)
        rec = agg.get(key)
        if rec is None:
            agg[key] = {"count": 1, "trials": {t.key}, "example": (t.agent, t.task_id, t.trial, detail)}
        else:
            rec["count"] += 1
            rec["trials"].add(t.key)

    for t, lvl, ii, s, acts, exps in _units(trials, tool_threshold=1.0, weights=None, options=options,
                                            empty_expected=empty_expected, details=True):
        if level != "all" and lvl != level:
            continue
        n_units += 1
        before = sum(r["count"] for r in agg.values())
        where = "" if ii is None else f" (interaction {ii})"
        for j in s.unmatched_expected:
            add("missing_call", lvl, exps[j].name, "", t, f"expected call #{j} {exps[j].name} not made{where}")
        for i in s.unmatched_actual:
            add("extra_call", lvl, acts[i].name, "", t, f"call #{i} {acts[i].name} matches no expected call{where}")
        for p in s.pairs:
            for d in p.diffs:
                kind = _DIFF_KIND.get(d.reason, d.reason)
                arg = "" if d.path == "$" else d.path
                if kind == "wrong_value" or kind == "wrong_type":
                    detail = f"expected {_short(d.expected)}, got {_short(d.actual)}"
                elif kind == "missing_argument":
                    detail = f"expected {_short(d.expected)}, argument absent"
                elif kind == "extra_argument":
                    detail = f"unexpected argument = {_short(d.actual)}"
                else:
                    detail = f"arguments not valid JSON: {_short(d.actual)}"
                add(kind, lvl, p.name, arg, t, detail + where)
        if s.sequence is not None and s.sequence < 1.0 and s.pairs:
            by_actual = sorted(s.pairs, key=lambda p: p.actual_index)
            for pos in _out_of_order([p.expected_index for p in by_actual]):
                p = by_actual[pos]
                add("order", lvl, p.name, "", t,
                    f"call #{p.actual_index} {p.name} pairs with expected #{p.expected_index}, out of order{where}")
        if sum(r["count"] for r in agg.values()) > before:
            n_bad += 1

    cols = ["kind", "level", "tool", "argument", "where", "count", "n_trials", "example_agent", "example_task_id",
            "example_trial", "example_detail"]
    rows = []
    for (kind, lvl, tool, arg), rec in agg.items():
        a, task, trial, detail = rec["example"]
        rows.append({"kind": kind, "level": lvl, "tool": tool, "argument": arg,
                     "where": tool + (arg[1:] if arg.startswith("$") else arg), "count": rec["count"],
                     "n_trials": len(rec["trials"]), "example_agent": a, "example_task_id": task,
                     "example_trial": trial, "example_detail": detail})
    df = pd.DataFrame.from_records(rows, columns=cols)
    kind_rank = {k: i for i, k in enumerate(TOOL_ERROR_KINDS)}
    totals = {k: int(df.loc[df["kind"] == k, "count"].sum()) for k in TOOL_ERROR_KINDS if (df["kind"] == k).any()}
    if not df.empty:
        df["_rank"] = df["kind"].map(kind_rank).fillna(len(kind_rank))
        df = df.sort_values(["count", "_rank", "tool", "argument", "level"], ascending=[False, True, True, True, True])
        df = df.drop(columns="_rank").reset_index(drop=True)
    if top is not None:
        df = df.head(top).reset_index(drop=True)
    df = df.astype({"count": "int64", "n_trials": "int64"}) if not df.empty else df
    df.attrs.update(kind_totals=totals, n_units=n_units, n_units_with_errors=n_bad)
    return df


def schema_error_counts(
    trials: Iterable[Trial],
    *,
    top: int | None = 15,
    forbid_extra: bool = True,
    strict_integers: bool = False,
) -> pd.DataFrame:
    """Tabulate schema errors of the agents' calls against each trial's tool specs, by error kind and tool.

    Parameters
    ----------
    trials : iterable of Trial
        Every trial with tool specs (``tools``) is checked, whatever its status (schema validity is a property
        of the calls); trials without specs are skipped and counted in ``attrs``.
    top : int or None
        Keep the ``top`` most frequent rows (``None``: all).
    forbid_extra, strict_integers : bool
        Passed to :func:`agentstats.scoring.schema_check.validate_tool_calls`.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind`` (``unknown_tool``, ``malformed_json``, ``missing_required``, ``wrong_type``,
        ``extra_argument``, ``null_optional``, ``invalid_value``, ``invalid_spec``), ``tool``, ``count``
        (errors), ``n_calls`` (distinct calls), ``n_trials`` (distinct trials), ``example_path`` (JSON path of
        the first occurrence, e.g. ``$.filters[0].name``), ``example_message``, ``example_agent,
        example_task_id, example_trial, example_interaction``. Sorted by ``count`` descending, then kind and
        tool. ``attrs``: ``n_trials_checked``, ``n_trials_without_tools``, ``n_calls_checked``,
        ``n_calls_with_errors``, ``kind_totals`` (per kind, before ``top``) and ``note`` (a sentence saying
        what was skipped).

    Raises
    ------
    ValueError
        When a trial's specs repeat a tool name (naming the trial).
    """
    agg: dict[tuple[str, str], dict[str, Any]] = {}
    n_checked = n_without = n_calls = 0
    bad_calls: set[tuple[Any, ...]] = set()
    for t in trials:
        if not t.tools:
            n_without += 1
            continue
        n_checked += 1
        calls: list[ToolCall] = []
        where: list[int] = []
        for ii, it in enumerate(t.interactions):
            calls.extend(it.tool_calls)
            where.extend([ii] * len(it.tool_calls))
        n_calls += len(calls)
        try:
            errors = validate_tool_calls(calls, t.tools, forbid_extra=forbid_extra, strict_integers=strict_integers)
        except ValueError as exc:
            raise ValueError(f"trial (agent={t.agent!r}, task_id={t.task_id!r}, trial={t.trial}): {exc}") from exc
        for e in errors:
            key = (e.kind, e.tool)
            call_key = (*t.key, e.call_index)
            bad_calls.add(call_key)
            rec = agg.get(key)
            if rec is None:
                agg[key] = {"count": 1, "calls": {call_key}, "trials": {t.key},
                            "example": (e.path, e.message, t.agent, t.task_id, t.trial, where[e.call_index])}
            else:
                rec["count"] += 1
                rec["calls"].add(call_key)
                rec["trials"].add(t.key)
    cols = ["kind", "tool", "count", "n_calls", "n_trials", "example_path", "example_message", "example_agent",
            "example_task_id", "example_trial", "example_interaction"]
    rows = []
    for (kind, tool), rec in agg.items():
        path, msg, a, task, trial, ii = rec["example"]
        rows.append({"kind": kind, "tool": tool, "count": rec["count"], "n_calls": len(rec["calls"]),
                     "n_trials": len(rec["trials"]), "example_path": path, "example_message": msg,
                     "example_agent": a, "example_task_id": task, "example_trial": trial,
                     "example_interaction": ii})
    df = pd.DataFrame.from_records(rows, columns=cols)
    totals: dict[str, int] = {}
    if not df.empty:
        df = df.sort_values(["count", "kind", "tool"], ascending=[False, True, True]).reset_index(drop=True)
        totals = {str(k): int(v) for k, v in df.groupby("kind")["count"].sum().items()}
    if top is not None:
        df = df.head(top).reset_index(drop=True)
    if n_checked == 0:
        note = (f"No trial offers tool specs (`tools`): schema validation skipped for all {n_without} trials."
                if n_without else "No trials.")
    else:
        note = (f"Validated {n_calls} calls in {n_checked} trials with tool specs; {len(bad_calls)} calls have "
                f"errors." + (f" Skipped {n_without} trials without tool specs." if n_without else ""))
    df.attrs.update(n_trials_checked=n_checked, n_trials_without_tools=n_without, n_calls_checked=n_calls,
                    n_calls_with_errors=len(bad_calls), kind_totals=totals, note=note)
    return df


# ---------------------------------------------------------------------------------------------------------
# agreement with the benchmark
# ---------------------------------------------------------------------------------------------------------
def tool_outcome_agreement(
    frame: pd.DataFrame, *, predictor: str = "passed"
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """How well trial-level tool correctness agrees with the benchmark's own outcome.

    Parameters
    ----------
    frame : pandas.DataFrame
        From :func:`tool_scores_frame`. Only ``level == "trial"`` units whose ``benchmark_outcome`` is
        ``"success"`` or ``"failure"`` are used.
    predictor : str
        Boolean column used as the tool verdict: ``"passed"`` (``overall >= tool_threshold``, the default) or
        ``"all_expected_matched"`` (every expected call reproduced, extra calls allowed).

    Returns
    -------
    crosstab : pandas.DataFrame
        2 x 2 counts, index ``tool_passed`` (True, False), columns ``benchmark`` (``"success"``,
        ``"failure"``).
    stats : dict
        ``n`` (units compared), ``n_excluded`` (trial-level units whose benchmark outcome is missing or
        absent), ``agreement`` (share on the diagonal), ``kappa`` (Cohen's kappa), ``precision`` (share of
        tool-passed units that the benchmark counts as success), ``recall`` (share of benchmark successes that
        pass on tools), ``predictor``. Ratios are NaN when their denominator is 0.

    Raises
    ------
    KeyError
        When ``predictor`` is not a column of ``frame``.

    Notes
    -----
    Cohen's kappa (Cohen 1960, "A coefficient of agreement for nominal scales", Educational and
    Psychological Measurement 20(1):37-46): ``kappa = (p_o - p_e) / (1 - p_e)`` with observed agreement
    ``p_o = (a + d) / n`` and chance agreement ``p_e = ((a + b)(a + c) + (c + d)(b + d)) / n^2`` for the
    table ``[[a, b], [c, d]]`` (rows tool passed yes/no, columns benchmark success/failure). NaN when
    ``p_e = 1`` (both raters constant and equal).
    """
    if predictor not in frame.columns:
        raise KeyError(f"tool_outcome_agreement: no column {predictor!r} in the frame")
    trial_units = frame[frame["level"] == "trial"]
    sub = trial_units[trial_units["benchmark_outcome"].isin(["success", "failure"])]
    tool = sub[predictor].astype(bool).to_numpy()
    bench = (sub["benchmark_outcome"] == "success").to_numpy()
    a = int(np.sum(tool & bench))
    b = int(np.sum(tool & ~bench))
    c = int(np.sum(~tool & bench))
    d = int(np.sum(~tool & ~bench))
    n = a + b + c + d
    table = pd.DataFrame([[a, b], [c, d]], index=pd.Index([True, False], name="tool_passed"),
                         columns=pd.Index(["success", "failure"], name="benchmark"))

    def ratio(x: float, y: float) -> float:
        return x / y if y else float("nan")

    po = ratio(a + d, n)
    pe = ratio((a + b) * (a + c) + (c + d) * (b + d), n * n)
    kappa = (po - pe) / (1.0 - pe) if n and not math.isclose(pe, 1.0) else float("nan")
    stats = {
        "n": n,
        "n_excluded": int(len(trial_units) - n),
        "agreement": po,
        "kappa": kappa,
        "precision": ratio(a, a + b),
        "recall": ratio(a, a + c),
        "predictor": predictor,
    }
    return table, stats


# ---------------------------------------------------------------------------------------------------------
# judge
# ---------------------------------------------------------------------------------------------------------
def judge_summary(result: ScoringResult) -> pd.DataFrame:
    """Judge failures by kind, calls, cache hits, tokens and cost of one scoring run, as a two-column table.

    Parameters
    ----------
    result : ScoringResult
        From :func:`agentstats.scoring.score_trials`.

    Returns
    -------
    pandas.DataFrame
        Columns ``item`` and ``value`` (object), rows in display order: judge, answers judged, missing
        verdicts (``judge_missing``) and trials made missing by them, one row ``judge failures: <kind>`` per
        error kind (``timeout``, ``rate_limit``, ``server_error``, ``truncated``, ``invalid_output``,
        ``http_<status>``, ...), LLM tool-metric verdicts and their failures (when any), verdicts requested,
        cache hits, duplicates sent once, HTTP requests, prompt and completion tokens, cost in USD (``None``
        when the model is not in the price table) and the judge's wall-clock seconds. Counts cover this run
        only (``result.judge_stats``).
    """
    s = result.summary()
    st = result.judge_stats or {}
    rows: list[tuple[str, Any]] = [
        ("judge", s["judge"]),
        ("answers judged", s["n_answers_judged"]),
        ("missing verdicts (judge_missing)", s["n_judge_missing"]),
        ("trials missing because of the judge", s["n_trials_judge_missing"]),
    ]
    for kind, n in sorted(s["judge_missing_by_kind"].items(), key=lambda kv: (-kv[1], str(kv[0]))):
        rows.append((f"judge failures: {kind}", int(n)))
    if result.tool_verdicts:
        rows.append(("tool-metric verdicts", len(result.tool_verdicts)))
        tk: dict[str, int] = {}
        for v in result.tool_verdicts:
            if not v.ok:
                tk[v.error_kind or "error"] = tk.get(v.error_kind or "error", 0) + 1
        for kind, n in sorted(tk.items(), key=lambda kv: (-kv[1], kv[0])):
            rows.append((f"tool-metric failures: {kind}", n))
    rows += [
        ("verdicts requested", int(st.get("requested", 0))),
        ("cache hits", s["judge_cache_hits"]),
        ("duplicates sent once", int(st.get("deduplicated", 0))),
        ("HTTP requests", s["judge_http_requests"]),
        ("prompt tokens", int(st.get("prompt_tokens", 0))),
        ("completion tokens", int(st.get("completion_tokens", 0))),
        ("cost (USD)", s["judge_cost_usd"]),
        ("judge wall time (s)", round(float(st.get("wall_s", 0.0)), 3)),
    ]
    return pd.DataFrame(rows, columns=["item", "value"], dtype=object)
