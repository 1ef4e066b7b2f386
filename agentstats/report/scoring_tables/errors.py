"""Error tables: the most common tool-call errors, schema errors of the agents' calls, dataset errors."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, Literal

import pandas as pd

from agentstats.records.trial import ToolCall, Trial
from agentstats.report.scoring_tables.units import EmptyExpected, scored_units
from agentstats.scoring.schema_check import validate_tool_calls
from agentstats.scoring.tools import ArgMatchOptions, GroundTruthError

__all__ = ["TOOL_ERROR_KINDS", "ground_truth_errors", "schema_error_counts", "tool_error_counts"]

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
    empty_expected: EmptyExpected = "no_ground_truth",
    level: Literal["all", "trial", "interaction"] = "all",
    read_only: Collection[str] = (),
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
    read_only : collection of str
        Tools that do not change state, left out of both lists (see :func:`tool_readings`).

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

    for t, lvl, ii, s, acts, exps in scored_units(trials, options=options, empty_expected=empty_expected,
                                                  details=True, read_only=read_only):
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




def ground_truth_errors(
    trials: Iterable[Trial],
    *,
    empty_expected: EmptyExpected = "no_ground_truth",
) -> pd.DataFrame:
    """List the expected tool calls that violate their own tool's JSON-Schema (dataset errors), with locations.

    Parameters
    ----------
    trials : iterable of Trial
        Trials with tool specs (``tools``) can be checked; completed trials only, as everywhere in scoring.
    empty_expected : {"no_ground_truth", "no_calls"}
        As in :func:`agentstats.report.scoring_tables.tool_scores_frame`.

    Returns
    -------
    pandas.DataFrame
        One row per error: ``agent, task_id, trial, level`` (``interaction`` / ``trial``), ``interaction``
        (``<NA>`` at trial level), ``call_index`` (in that ``expected_tool_calls`` list), ``tool, kind, path,
        message``. By default the units they belong to get no tool score (see
        :func:`agentstats.scoring.tools.score_trial_tools`, ``invalid_ground_truth``).
    """
    errs: list[GroundTruthError] = []
    for _ in scored_units(trials, empty_expected=empty_expected, ground_truth_errors=errs):
        pass
    cols = ["agent", "task_id", "trial", "level", "interaction", "call_index", "tool", "kind", "path", "message"]
    df = pd.DataFrame.from_records([{c: getattr(e, c) for c in cols} for e in errs], columns=cols)
    return df.astype({"interaction": "Int64", "trial": "int64", "call_index": "int64"})
