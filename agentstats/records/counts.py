"""From trials to counts per (agent, task): the sufficient statistics of every estimator and model.

For each (agent, task) cell, ``n`` is the number of scored trials (successes + failures), ``c`` the number of
successes and ``n_missing`` the number of trials that are missing (``status == "infra_error"``, or a
judge verdict that could not be obtained, ``judge_missing``). Missing
trials are left out of ``n``: a task with 3 recorded trials out of 4 planned has ``n = 3``, never a fourth
failure. The per-task unbiased estimators of pass@k (Chen et al. 2021, arXiv 2107.03374) and pass^k (Yao et
al. 2024, arXiv 2406.12045) are functions of ``(n, c)`` only.

This module holds the one counts schema (:data:`COUNTS_COLUMNS`) and its one validator, :func:`check_counts`
(every problem, by row position) with :func:`validate_counts` (validate or raise) on top; the file loaders
(:func:`agentstats.io.load_counts`) turn the same problems into located ones (file, line, column).
Trials that are absent from the agent x task x trial grid (neither recorded nor marked missing) are reported
in ``attrs["gaps"]`` (:class:`agentstats.records.gaps.GridGaps`), never counted. A metric's pass/fail verdicts
become counts of the same schema with :func:`metric_counts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentstats._util.text import plural
from agentstats.records.gaps import grid_gaps
from agentstats.records.trial import CODE_MISSING, CODE_SUCCESS, OUTCOME_CODE, Trial, outcome_field_hints

__all__ = [
    "COUNTS_COLUMNS",
    "COUNT_MAX",
    "CountsProblem",
    "check_counts",
    "counts_frame",
    "counts_from_codes",
    "metric_counts",
    "to_counts",
    "validate_counts",
]

#: Columns of a counts table, in order. ``agent`` and ``task_id`` are text, the rest int64.
COUNTS_COLUMNS = ("agent", "task_id", "n", "c", "n_missing")
#: Largest count a table may hold (int64); larger values are reported, never wrapped around.
COUNT_MAX = int(np.iinfo(np.int64).max)

_MAX_NAMED = 5


def _factor(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """Codes and distinct names (object array of ``str``) of a column of names; each name converted once."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object) if not isinstance(values, pd.Series) else values)
    names = np.asarray(uniques, dtype=object)
    if len(names) and pd.api.types.infer_dtype(names, skipna=False) != "string":
        names = np.array([str(v) for v in names], dtype=object)
    return np.asarray(codes, dtype=np.int64), names


def frame_from_codes(
    a_codes: np.ndarray, a_names: np.ndarray, t_codes: np.ndarray, t_names: np.ndarray, n: Any, c: Any, n_missing: Any
) -> pd.DataFrame:
    """Build the canonical counts table from name codes (sorted by agent then task_id, names compared once each).

    Parameters
    ----------
    a_codes, t_codes : numpy.ndarray of int, shape (m,)
        Index of each row's agent in ``a_names`` and task in ``t_names``.
    a_names, t_names : numpy.ndarray of str (object)
    n, c, n_missing : array-like of int, shape (m,)

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COUNTS_COLUMNS`; ``agent, task_id`` text (object dtype), the rest int64.
    """
    a_names = np.asarray(a_names, dtype=object)
    t_names = np.asarray(t_names, dtype=object)
    a_rank = np.empty(len(a_names), dtype=np.int64)
    a_rank[np.argsort(a_names, kind="stable")] = np.arange(len(a_names))
    t_rank = np.empty(len(t_names), dtype=np.int64)
    t_rank[np.argsort(t_names, kind="stable")] = np.arange(len(t_names))
    order = np.lexsort((t_rank[t_codes], a_rank[a_codes])) if len(a_codes) else np.zeros(0, np.int64)
    return pd.DataFrame(
        {
            "agent": pd.Series(a_names[a_codes[order]] if len(order) else [], dtype=object),
            "task_id": pd.Series(t_names[t_codes[order]] if len(order) else [], dtype=object),
            "n": np.asarray(n, dtype=np.int64)[order],
            "c": np.asarray(c, dtype=np.int64)[order],
            "n_missing": np.asarray(n_missing, dtype=np.int64)[order],
        }
    )


def counts_frame(agents: Any, tasks: Any, n: Any, c: Any, n_missing: Any) -> pd.DataFrame:
    """Build a canonical counts table (columns :data:`COUNTS_COLUMNS`, sorted by agent then task_id).

    Parameters
    ----------
    agents, tasks : sequence or numpy array of str, shape (m,)
    n, c, n_missing : sequence or numpy array of int, shape (m,)

    Returns
    -------
    pandas.DataFrame
        ``agent, task_id`` as text (object dtype), ``n, c, n_missing`` int64, index ``0 .. m-1``.
    """
    a_codes, a_names = _factor(agents)
    t_codes, t_names = _factor(tasks)
    return frame_from_codes(a_codes, a_names, t_codes, t_names, n, c, n_missing)


# ---------------------------------------------------------------- the one validator


@dataclass(frozen=True, slots=True)
class CountsProblem:
    """One problem in a counts table.

    Attributes
    ----------
    position : int or None
        0-based row position in the table; ``None`` for a whole-table problem (a missing column).
    column : str or None
        Column name as in the input (``"(agent, task_id)"`` for a duplicate).
    kind : {"missing_column", "missing", "not_count", "c_gt_n", "duplicate"}
    detail : str
        What is wrong, without the location (e.g. ``"-1 is not a non-negative integer (negative)"``).
    first : int or None
        ``duplicate`` only: position of the first row with the same (agent, task).
    """

    position: int | None
    column: str | None
    kind: str
    detail: str
    first: int | None = None


@dataclass(frozen=True)
class CountsCheck:
    """What :func:`check_counts` found: the valid rows in canonical form and every problem, in row order."""

    counts: pd.DataFrame
    problems: list[CountsProblem]


def _name_of(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return ""  # True is not an agent or a task
    if isinstance(v, float | np.floating):
        if np.isnan(v):
            return ""
        if float(v).is_integer():
            v = int(v)
    return str(_py(v)).strip()


def _text_column(raw: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return name codes, the distinct names (stripped text; ``3.0`` -> ``"3"``) and a missing/blank mask.

    Each distinct value is converted once, so a million rows with a few thousand names cost a hash pass.
    """
    raw_codes, uniques = pd.factorize(raw, use_na_sentinel=True)
    codes = np.asarray(raw_codes, dtype=np.int64)
    if pd.api.types.is_string_dtype(getattr(uniques, "dtype", None)) and not isinstance(uniques, np.ndarray):
        text = pd.Series(uniques).str.strip().to_numpy(dtype=object)  # text columns: vectorized (pyarrow)
    else:
        text = np.array([_name_of(u) for u in np.asarray(uniques, dtype=object)], dtype=object)
    if not len(text):  # every value missing
        return np.full(len(codes), -1, dtype=np.int64), np.zeros(0, dtype=object), np.ones(len(codes), dtype=bool)
    # stripping can make two raw values one name (" a" and "a"): factorize the texts again
    t_codes, t_names = pd.factorize(text)
    names = np.asarray(t_names, dtype=object)
    out = np.where(codes >= 0, np.asarray(t_codes, dtype=np.int64)[np.maximum(codes, 0)], -1)
    blank = (out < 0) | (names == "")[np.maximum(out, 0)]
    return out, names, blank


def _count_column(raw: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, str]]]:
    """Return counts as int64 with masks: values, ok, missing, and (position, detail) per value not a count."""
    m = len(raw)
    isna = raw.isna().to_numpy()
    problems: list[tuple[int, str]] = []
    if pd.api.types.is_bool_dtype(raw.dtype):
        for i in np.flatnonzero(~isna):
            problems.append((int(i), f"{_py(raw.iloc[i])!r} is not a non-negative integer (a boolean)"))
        return np.zeros(m, np.int64), np.zeros(m, bool), isna, problems
    if pd.api.types.is_integer_dtype(raw.dtype) and not isna.any():
        vals = raw.to_numpy()
        if vals.dtype.kind == "u":
            big = vals > COUNT_MAX
            neg = np.zeros(m, bool)
        else:
            big = np.zeros(m, bool)
            neg = vals < 0
        for i in np.flatnonzero(neg):
            problems.append((int(i), f"{int(vals[i])} is not a non-negative integer (negative)"))
        for i in np.flatnonzero(big):
            problems.append((int(i), f"{int(vals[i])} is not a non-negative integer (beyond {COUNT_MAX:,})"))
        ok = ~(neg | big)
        return np.where(ok, vals, 0).astype(np.int64), ok, isna, problems
    # text (CSV), floats, objects: numbers where they parse; integers beyond float precision parsed exactly
    num = pd.to_numeric(raw, errors="coerce")
    fnum = np.array(num.to_numpy(dtype=float, na_value=np.nan), dtype=float)  # a writable copy
    if raw.dtype == object:  # a True among numbers is not the count 1
        fnum[raw.map(lambda v: isinstance(v, bool | np.bool_)).to_numpy(dtype=bool)] = np.nan
    notnum = np.isnan(fnum) & ~isna
    finite = np.isfinite(fnum)
    whole = finite & (np.mod(np.where(finite, fnum, 0.0), 1) == 0)
    neg = whole & (fnum < 0)
    cand = whole & ~neg
    safe = cand & (fnum < 2.0**53)
    out = np.zeros(m, np.int64)
    out[safe] = fnum[safe].astype(np.int64)
    big = np.zeros(m, dtype=bool)
    for i in np.flatnonzero(cand & ~safe):  # rare: 2**53 and beyond
        exact = _exact_int(raw.iloc[i])
        if exact is None or exact > COUNT_MAX:
            big[i] = True
        else:
            out[i] = exact
    ok = cand & ~big
    for i in np.flatnonzero(notnum | (~finite & ~isna) | (~whole & ~isna) | neg | big):
        v = _py(raw.iloc[i])
        if notnum[i]:
            why = "not a number"
        elif not finite[i]:
            why = "not finite"
        elif not whole[i]:
            why = "not a whole number"
        elif neg[i]:
            why = "negative"
        else:
            why = f"beyond {COUNT_MAX:,}"
        problems.append((int(i), f"{v!r} is not a non-negative integer ({why})"))
    return out, ok, isna, problems


def _exact_int(v: Any) -> int | None:
    """Return the exact integer behind a whole number given as int, numpy integer, float or text."""
    v = _py(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            try:
                return int(float(v))
            except (ValueError, OverflowError):
                return None
    return None


def check_counts(
    df: pd.DataFrame,
    *,
    agent_col: str = "agent",
    task_col: str | None = None,
    n_col: str = "n",
    c_col: str = "c",
    n_missing_col: str = "n_missing",
) -> CountsCheck:
    """Check a counts table: every problem by row position, and the valid rows in canonical form.

    Checks: required columns present; agent and task non-empty; ``n``, ``c`` (and ``n_missing`` when present)
    non-negative integers within int64 (``3.0`` is accepted, ``2.5``, ``True``, ``NaN`` are not); ``c <= n``;
    each (agent, task) once (the first row is kept). Vectorized: a Python object is built only per problem.

    Parameters
    ----------
    df : pandas.DataFrame, shape (m, ...)
        One row per (agent, task).
    agent_col, task_col, n_col, c_col, n_missing_col : str
        Column names; ``task_col=None`` takes ``task_id`` if present, else ``task``. ``n_missing`` is optional
        (0 when absent).

    Returns
    -------
    CountsCheck
        ``counts``: the valid rows with columns :data:`COUNTS_COLUMNS` (sorted by agent then task_id);
        ``problems``: list of :class:`CountsProblem`, in row order.
    """
    cols = {str(c) for c in df.columns}
    if task_col is None:
        task_col = "task_id" if "task_id" in cols else "task"
    missing_cols = [c for c in (agent_col, task_col, n_col, c_col) if c not in cols]
    if missing_cols:
        problems = [
            CountsProblem(None, c, "missing_column", f"missing required column (columns are {sorted(cols)})")
            for c in missing_cols
        ]
        return CountsCheck(counts_frame([], [], [], [], []), problems)
    m = len(df)
    found: list[CountsProblem] = []
    bad = np.zeros(m, dtype=bool)
    a_codes, a_names, blank_a = _text_column(df[agent_col])
    t_codes, t_names, blank_t = _text_column(df[task_col])
    for col, blank in ((agent_col, blank_a), (task_col, blank_t)):
        for i in np.flatnonzero(blank):
            found.append(CountsProblem(int(i), col, "missing", "missing value"))
        bad |= blank
    values = {}
    for col, required in ((n_col, True), (c_col, True), (n_missing_col, False)):
        if col not in cols:
            values[col] = np.zeros(m, np.int64)
            continue
        vals, ok, isna, probs = _count_column(df[col])
        values[col] = vals
        if required:
            for i in np.flatnonzero(isna):
                found.append(CountsProblem(int(i), col, "missing", "missing value"))
            bad |= ~ok | isna
        else:
            bad |= ~ok & ~isna
        found.extend(CountsProblem(i, col, "not_count", d) for i, d in probs)
    n, c = values[n_col], values[c_col]
    over = ~bad & (c > n)
    for i in np.flatnonzero(over):
        found.append(CountsProblem(int(i), c_col, "c_gt_n", f"{c[i]} > n = {n[i]} (more successes than trials)"))
    bad |= over
    good = np.flatnonzero(~bad)
    if len(good):
        key = a_codes[good] * max(len(t_names), 1) + t_codes[good]
        _, first_idx, inverse = np.unique(key, return_index=True, return_inverse=True)
        dup = np.arange(len(good)) != first_idx[inverse]
        for j in np.flatnonzero(dup):
            i = good[j]
            first = int(good[first_idx[inverse[j]]])
            pair = f"(agent={a_names[a_codes[i]]!r}, task_id={t_names[t_codes[i]]!r})"
            found.append(
                CountsProblem(int(i), f"({agent_col}, {task_col})", "duplicate", f"duplicate {pair}", first=first)
            )
            bad[i] = True
    found.sort(key=lambda p: (p.position if p.position is not None else -1))
    keep = ~bad
    counts = frame_from_codes(
        a_codes[keep], a_names, t_codes[keep], t_names, n[keep], c[keep], values[n_missing_col][keep]
    )
    return CountsCheck(counts, found)


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def validate_counts(counts: pd.DataFrame, func: str = "counts") -> pd.DataFrame:
    """Check a counts table (:func:`check_counts`) and return a copy with int64 ``n, c, n_missing``, or raise.

    The one validator behind every consumer of counts (:func:`agentstats.estimators.suite_pass_k`,
    :func:`agentstats.models.prepare_counts`), so a bad table gets the same message everywhere.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c`` and optionally ``n_missing`` (added as 0 if absent); one row per
        (agent, task).
    func : str
        Name of the calling function, put at the start of error messages.

    Returns
    -------
    pandas.DataFrame
        The input's rows, index and extra columns, with ``n, c, n_missing`` as int64.

    Raises
    ------
    TypeError
        If ``counts`` is not a DataFrame.
    ValueError
        Listing every problem (row label, agent, task, field): a missing column, a missing agent/task, a count
        that is not a non-negative integer (or beyond int64), ``c > n``, a duplicate (agent, task_id).
    """
    if not isinstance(counts, pd.DataFrame):
        raise TypeError(f"{func}: counts must be a pandas DataFrame, got {type(counts).__name__}")
    required = ["agent", "task_id", "n", "c"]
    missing = [col for col in required if col not in counts.columns]
    if missing:
        raise ValueError(
            f"{func}: counts table lacks column(s) {missing}; expected agent, task_id, n, c[, n_missing] "
            f"(as returned by to_counts), got {list(counts.columns)}"
        )
    check = check_counts(counts, task_col="task_id")
    if check.problems:
        labels = counts.index
        problems: list[str] = []
        dup_groups: dict[int, list[Any]] = {}
        for p in check.problems:
            assert p.position is not None  # columns were checked above
            label = labels[p.position]
            row = counts.iloc[p.position]
            where = f"row {label!r} (agent={_py(row['agent'])!r}, task_id={_py(row['task_id'])!r})"
            if p.kind == "missing":
                problems.append(f"{where}: field {p.column!r} is missing")
            elif p.kind == "duplicate":
                assert p.first is not None
                dup_groups.setdefault(p.first, [labels[p.first]]).append(label)
            else:
                problems.append(f"{where}: field {p.column!r} = {p.detail}")
        for first, group in dup_groups.items():
            row = counts.iloc[first]
            problems.append(
                f"rows {group}: duplicate (agent={_py(row['agent'])!r}, task_id={_py(row['task_id'])!r}); "
                "one row per agent x task"
            )
        shown = problems[:25]
        more = f"\n  ... and {len(problems) - 25} more" if len(problems) > 25 else ""
        raise ValueError(
            f"{func}: invalid counts table ({plural(len(problems), 'problem')}):\n  " + "\n  ".join(shown) + more
        )
    df = counts.copy()
    df["n"] = df["n"].to_numpy(dtype=np.int64) if len(df) else np.zeros(0, np.int64)
    df["c"] = df["c"].to_numpy(dtype=np.int64) if len(df) else np.zeros(0, np.int64)
    df["n_missing"] = (
        np.zeros(len(df), np.int64) if "n_missing" not in df.columns else df["n_missing"].to_numpy(dtype=np.int64)
    )
    return df


# ---------------------------------------------------------------- trials -> counts


def _unscored_message(n_unscored: int, named: list[tuple[tuple[str, str, int], str]]) -> str:
    parts = []
    for key, hint in named:
        parts.append(f"{key!r}{hint}")
    return (
        f"{plural(n_unscored, 'trial has', 'trials have')} no outcome (no success, no reward, status "
        f"'completed'), e.g. {', '.join(parts)}; score them first (`agentstats score` on the command line, "
        "agentstats.score_trials in Python) or set success/reward; trials with no ground truth to score "
        "against stay unscored"
    )


def _hint_text(t: Trial) -> str:
    hints = outcome_field_hints((t.__pydantic_extra__ or {}).keys())
    return "".join(f" (it has a field {f!r}: did you mean {g!r}?)" for f, g in hints)


def to_counts(trials: Iterable[Trial]) -> pd.DataFrame:
    """Count outcomes per (agent, task).

    Outcomes come from :meth:`agentstats.records.trial.Trial.outcome`: ``infra_error`` or ``judge_missing`` ->
    missing (in ``n_missing``, not in ``n``); ``agent_error`` -> failure; ``success`` if given, else
    ``reward`` equal to 1 within 1e-6 -> success (so rewards ``[0.5, 0.5, 1, 0]`` give ``c = 1``).

    Parameters
    ----------
    trials : iterable of Trial
        E.g. the result of :func:`agentstats.io.load_trials`.

    Returns
    -------
    pandas.DataFrame
        One row per (agent, task_id) that has at least one trial, sorted by ``agent`` then ``task_id`` (as
        text), with columns ``agent, task_id`` (str) and ``n, c, n_missing`` (int64); ``0 <= c <= n``.
        A cell whose trials are all missing has ``n = 0``. ``attrs["gaps"]`` is a
        :class:`~agentstats.records.gaps.GridGaps`: the trials absent from the agent x task x trial grid.

    Raises
    ------
    ValueError
        When trials are unscored (outcome ``None``: no ``success``, ``reward`` or error status; the first
        few keys are named, with any field that looks like a misspelled outcome field; score them first
        with ``agentstats.scoring.score_trials``), or when a key ``(agent, task_id, trial)`` occurs more
        than once.
    TypeError
        When an element is not a :class:`Trial`.
    """
    agent_idx: dict[str, int] = {}
    task_idx: dict[str, int] = {}
    a_codes: list[int] = []
    t_codes: list[int] = []
    trial_nos: list[int] = []
    outcomes: list[int] = []  # OUTCOME_CODE
    seen: set[tuple[str, str, int]] = set()
    unscored: list[tuple[tuple[str, str, int], str]] = []
    dupes: list[tuple[str, str, int]] = []
    n_unscored = n_dupes = 0
    for i, t in enumerate(trials):
        if not isinstance(t, Trial):
            raise TypeError(f"to_counts expects Trial objects; element {i} is {type(t).__name__}")
        key = (t.agent, t.task_id, t.trial)
        if key in seen:
            n_dupes += 1
            if len(dupes) < _MAX_NAMED:
                dupes.append(key)
            continue
        seen.add(key)
        out = t.outcome()
        if out is None:
            n_unscored += 1
            if len(unscored) < _MAX_NAMED:
                unscored.append((key, _hint_text(t)))
            continue
        a_codes.append(agent_idx.setdefault(t.agent, len(agent_idx)))
        t_codes.append(task_idx.setdefault(t.task_id, len(task_idx)))
        trial_nos.append(t.trial)
        outcomes.append(OUTCOME_CODE[out])
    if n_dupes:
        raise ValueError(
            f"{plural(n_dupes, 'trial repeats', 'trials repeat')} an (agent, task_id, trial) key already seen, "
            f"e.g. {', '.join(map(repr, dupes))}; each key must be unique (drop or renumber the repeats)"
        )
    if n_unscored:
        raise ValueError(_unscored_message(n_unscored, unscored))
    return counts_from_codes(
        np.asarray(a_codes, dtype=np.int64),
        np.asarray(t_codes, dtype=np.int64),
        np.asarray(trial_nos, dtype=np.int64),
        np.asarray(outcomes, dtype=np.int8),
        list(agent_idx),
        list(task_idx),
    )


def counts_from_codes(
    agent_codes: np.ndarray,
    task_codes: np.ndarray,
    trials: np.ndarray,
    outcomes: np.ndarray,
    agents: Sequence[str],
    tasks: Sequence[str],
) -> pd.DataFrame:
    """Build the counts table from coded trials (the vectorized core of :func:`to_counts`).

    Parameters
    ----------
    agent_codes, task_codes, trials : numpy.ndarray of int, shape (m,)
        Index into ``agents`` / ``tasks`` and trial number of each trial; keys unique.
    outcomes : numpy.ndarray of int, shape (m,)
        :data:`agentstats.records.trial.OUTCOME_CODE` of each trial (failure 0, success 1, missing 2).
    agents, tasks : sequence of str

    Returns
    -------
    pandas.DataFrame
        As :func:`to_counts`, with ``attrs["gaps"]``.
    """
    n_t = max(len(tasks), 1)
    cell = agent_codes.astype(np.int64) * n_t + task_codes.astype(np.int64)
    present, inverse = np.unique(cell, return_inverse=True)  # memory O(trials), whatever agents x tasks is
    scored = outcomes != CODE_MISSING
    n = np.bincount(inverse, weights=scored, minlength=len(present))
    c = np.bincount(inverse, weights=outcomes == CODE_SUCCESS, minlength=len(present))
    miss = np.bincount(inverse, weights=~scored, minlength=len(present))
    out = frame_from_codes(
        present // n_t,
        np.asarray(agents, dtype=object),
        present % n_t,
        np.asarray(tasks, dtype=object),
        n.astype(np.int64),
        c.astype(np.int64),
        miss.astype(np.int64),
    )
    out.attrs["gaps"] = grid_gaps(agent_codes, task_codes, trials, agents, tasks)
    return out


def metric_counts(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Binary counts of one metric per (agent, task): trials meeting its threshold, for the pass@k machinery.

    A trial *passes* a metric when every one of its records with a verdict passes (an interaction-level metric must
    hold on every turn); a trial with no record carrying a verdict (not applicable, or no threshold) is *missing*.

    Parameters
    ----------
    frame : pandas.DataFrame
        A metrics frame (:func:`agentstats.metrics.compute`): columns ``agent, task_id, trial, metric, passed``
        (``passed`` True, False or missing: no verdict).
    metric : str
        The metric's name.

    Returns
    -------
    pandas.DataFrame
        ``agent, task_id, n, c, n_missing`` (:data:`COUNTS_COLUMNS`): ``n`` trials with a verdict, ``c`` of them
        passing, ``n_missing`` without one.

    Raises
    ------
    ValueError
        When ``metric`` is not in the frame.
    """
    g = frame[frame["metric"] == metric]
    if g.empty:
        raise ValueError(f"metric {metric!r} is not in the frame (it has {sorted(frame['metric'].unique())})")
    known = g["passed"].notna()
    per_trial = (g.assign(_known=known, _fail=known & ~g["passed"].fillna(True).astype(bool))
                 .groupby(["agent", "task_id", "trial"], sort=True)[["_known", "_fail"]].sum().reset_index())
    per_trial["_has"] = per_trial["_known"] > 0
    per_trial["_pass"] = per_trial["_has"] & (per_trial["_fail"] == 0)
    out = per_trial.groupby(["agent", "task_id"], sort=True).agg(
        n=("_has", "sum"), c=("_pass", "sum"), n_missing=("_has", lambda s: int((~s).sum())))
    return out.reset_index().astype({"n": "int64", "c": "int64", "n_missing": "int64"})
