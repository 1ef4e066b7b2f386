"""Tool-correctness tables: per-unit scores, means per agent, agreement with the benchmark, both readings.

Every function is a plain function over trials (or over the frame of :func:`tool_scores_frame`) returning a
:class:`pandas.DataFrame`. Tool scores come from :func:`agentstats.scoring.tools.score_trial_tools`; nothing here
re-implements a score.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from agentstats._util.options import option_name
from agentstats.records.trial import Status, Trial
from agentstats.report.scoring_tables.units import EmptyExpected, scored_units
from agentstats.scoring.tools import ArgMatchOptions, GroundTruthError, read_only_tools

__all__ = [
    "COMPONENTS",
    "READINGS",
    "tool_breakdown",
    "tool_outcome_agreement",
    "tool_readings",
    "tool_scores_frame",
    "tool_validity",
]

#: Tool-score components, in display order.
COMPONENTS = ("selection", "parameters", "sequence", "utilization")

_FRAME_COLS = [
    "agent", "task_id", "trial", "level", "interaction", "selection", "parameters", "sequence", "utilization",
    "overall", "passed", "precision", "recall", "f1", "n_actual", "n_expected", "n_correct", "benchmark_outcome",
    "all_expected_matched", "n_read_only_actual", "n_read_only_expected",
]
_MEAN_COLS = ["selection", "parameters", "sequence", "utilization", "overall", "precision", "recall", "f1"]




def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def tool_scores_frame(
    trials: Iterable[Trial],
    *,
    tool_threshold: float = 1.0,
    weights: Mapping[str, float] | None = None,
    options: ArgMatchOptions | None = None,
    empty_expected: EmptyExpected = "no_ground_truth",
    read_only: Collection[str] = (),
    invalid_ground_truth: Literal["exclude", "score"] = "exclude",
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
    read_only : collection of str
        Tools that do not change state, left out of both lists (the "state-changing calls" reading; see
        :func:`agentstats.scoring.tools.score_tool_calls`). Empty (default): every call counts.
    invalid_ground_truth : {"exclude", "score"}
        Units whose expected calls violate their tool's schema: left out (default) or scored anyway; listed in
        ``attrs["ground_truth_errors"]`` either way.

    Returns
    -------
    pandas.DataFrame
        Columns ``agent, task_id, trial, level`` (``"trial"`` / ``"interaction"``), ``interaction`` (index
        within the trial, ``<NA>`` at trial level), the components ``selection, parameters, sequence,
        utilization`` (NaN where not applicable), ``overall, passed, precision, recall, f1, n_actual,
        n_expected, n_correct``, ``benchmark_outcome`` (:meth:`~agentstats.records.trial.Trial.outcome`:
        ``"success"``, ``"failure"``, ``"missing"`` or ``None``) and ``all_expected_matched``
        (``n_correct == n_expected``: every expected call reproduced with exact arguments, extra calls
        allowed), ``n_read_only_actual, n_read_only_expected`` (calls left out by ``read_only``). Component
        definitions: :mod:`agentstats.scoring.tools`. ``attrs``: ``n_trials_skipped`` (trials not scored because
        of their status), ``tool_threshold``, ``read_only`` (sorted names) and ``ground_truth_errors`` (list of
        :class:`~agentstats.scoring.tools.GroundTruthError`).

    Raises
    ------
    TypeError
        When an element is not a :class:`~agentstats.records.trial.Trial`.
    ValueError
        For a threshold outside [0, 1] or an invalid weight (from ``score_tool_calls``).
    """
    trials = list(trials)
    rows: list[dict[str, Any]] = []
    gt_errors: list[GroundTruthError] = []
    for t, level, ii, s, _, _ in scored_units(trials, tool_threshold=tool_threshold, weights=weights, options=options,
                                              empty_expected=empty_expected, read_only=read_only,
                                              invalid_ground_truth=invalid_ground_truth,
                                              ground_truth_errors=gt_errors):
        rows.append({
            "agent": t.agent, "task_id": t.task_id, "trial": t.trial, "level": level, "interaction": ii,
            "selection": float(s.selection), "parameters": _nan(s.parameters), "sequence": _nan(s.sequence),
            "utilization": _nan(s.utilization), "overall": float(s.overall), "passed": bool(s.passed),
            "precision": float(s.precision), "recall": float(s.recall), "f1": float(s.f1),
            "n_actual": s.n_actual, "n_expected": s.n_expected, "n_correct": s.n_correct,
            "benchmark_outcome": t.outcome(), "all_expected_matched": s.n_correct == s.n_expected,
            "n_read_only_actual": s.n_read_only_actual, "n_read_only_expected": s.n_read_only_expected,
        })
    df = pd.DataFrame.from_records(rows, columns=_FRAME_COLS)
    df = df.astype({"interaction": "Int64", "passed": bool, "all_expected_matched": bool,
                    "n_actual": "int64", "n_expected": "int64", "n_correct": "int64", "trial": "int64",
                    "n_read_only_actual": "int64", "n_read_only_expected": "int64"})
    for c in _MEAN_COLS:
        df[c] = df[c].astype(float)
    # object dtype keeps None (unscored) apart from the outcome strings (pandas' str dtype would make it NaN)
    df["benchmark_outcome"] = pd.Series([r["benchmark_outcome"] for r in rows], index=df.index, dtype=object)
    df.attrs["n_trials_skipped"] = sum(1 for t in trials if t.status != Status.completed)
    df.attrs["tool_threshold"] = tool_threshold
    df.attrs["read_only"] = sorted(read_only)
    df.attrs["ground_truth_errors"] = gt_errors
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


#: The two readings of tool correctness that :func:`tool_readings` puts side by side.
READINGS = ("all calls", "state-changing calls")


def tool_readings(
    trials: Iterable[Trial],
    read_only: Collection[str] | None = None,
    *,
    tool_threshold: float = 1.0,
    weights: Mapping[str, float] | None = None,
    options: ArgMatchOptions | None = None,
    empty_expected: EmptyExpected = "no_ground_truth",
    predictor: str = "passed",
) -> pd.DataFrame:
    """Tool correctness read two ways: every call, and the state-changing calls only.

    Benchmarks that grade the final state of an environment (tau-bench) do not care about lookups: scored over
    every call, an agent that reads before it writes looks wrong. The second reading leaves calls to read-only
    tools out of both lists (``read_only`` of :func:`agentstats.scoring.tools.score_tool_calls`).

    Parameters
    ----------
    trials : iterable of Trial
    read_only : collection of str, optional
        Names of the tools that do not change state. ``None`` (default): from the trials' tool specs and known
        domain lists (:func:`agentstats.scoring.tools.read_only_tools`).
    tool_threshold, weights, options, empty_expected
        As in :func:`tool_scores_frame`.
    predictor : str
        Trial-level verdict compared with the benchmark (see :func:`tool_outcome_agreement`).

    Returns
    -------
    pandas.DataFrame
        One row per ``(reading, agent, level)``: ``reading`` (one of :data:`READINGS`), ``agent, level,
        n_units``, the mean components ``selection, parameters, sequence, utilization, overall, precision,
        recall, f1``, ``share_passed``, and, against the benchmark's outcome at trial level (NaN for interaction
        level or when nothing can be compared), ``n_compared, agreement, kappa, precision_vs_benchmark,
        recall_vs_benchmark``. ``attrs["read_only"]`` lists the names used; ``attrs["note"]`` says where they
        came from (given as ``read_only``, or found by :func:`agentstats.scoring.tools.read_only_tools`) and what
        each reading counts, or that none is known (both readings are then the same).
    """
    trials = list(trials)
    source = f"given ({option_name('read_only').rstrip('=')})"
    if read_only is None:
        read_only = read_only_tools(trials)
        source = "tool specs and known domain lists"
    names = sorted(read_only)
    kw: dict[str, Any] = {"tool_threshold": tool_threshold, "weights": weights, "options": options,
                          "empty_expected": empty_expected}
    parts = []
    for reading, ro in zip(READINGS, ((), names), strict=True):
        frame = tool_scores_frame(trials, read_only=ro, **kw)
        part = tool_breakdown(frame)
        part.insert(0, "reading", reading)
        stats: list[dict[str, Any]] = []
        for agent, level in zip(part["agent"], part["level"], strict=True):
            if level != "trial":
                stats.append({})
                continue
            _, st = tool_outcome_agreement(frame[frame["agent"] == agent], predictor=predictor)
            stats.append(st)
        part["n_compared"] = [st.get("n", 0) for st in stats]
        for col, key in (("agreement", "agreement"), ("kappa", "kappa"), ("precision_vs_benchmark", "precision"),
                         ("recall_vs_benchmark", "recall")):
            part[col] = [float(st.get(key, float("nan"))) for st in stats]
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    out["n_compared"] = out["n_compared"].astype("int64")
    out.attrs["read_only"] = names
    out.attrs["note"] = (f"The state-changing reading leaves calls to {len(names)} read-only tool(s) "
                         f"({', '.join(names)}; source: {source}) out of the expected and the actual calls; the "
                         "all-calls reading counts every call." if names else
                         "No read-only tool is known for these trials (no tool-spec flag, no known domain): "
                         "both readings count every call.")
    return out


def tool_validity(trials: Iterable[Trial]) -> pd.DataFrame:
    """Syntactic accuracy of the tool calls per agent: the catalogue metric ``tool_calls_valid`` per trial.

    A trial's value is 1 when every call satisfies its tool's JSON Schema (the trial's tool specs), else 0
    (:func:`agentstats.metrics.tool_use.tool_calls_valid`); trials without tool specs are not applicable.

    Returns
    -------
    pandas.DataFrame
        One row per agent with a trial that has tool specs: ``agent``, ``n_trials`` (with specs), ``n_valid``,
        ``share_valid``, ``n_violations`` (calls or arguments violating a schema, summed). Empty when no trial has
        tool specs.
    """
    from agentstats.metrics import compute

    frame = compute(list(trials), "tool_calls_valid", level="trial")
    frame = frame[frame["applicable"]]
    rows = [{"agent": agent, "n_trials": len(g), "n_valid": int((g["value"] == 1.0).sum()),
             "share_valid": float((g["value"] == 1.0).mean()),
             "n_violations": int(sum(len(ev.get("violations", [])) for ev in g["evidence"]))}
            for agent, g in frame.groupby("agent", sort=True)]
    return pd.DataFrame(rows, columns=["agent", "n_trials", "n_valid", "share_valid", "n_violations"])
