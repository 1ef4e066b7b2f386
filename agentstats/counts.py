"""From trials to counts per (agent, task): the sufficient statistics of every estimator and model.

For each (agent, task) cell, ``n`` is the number of scored trials (successes + failures), ``c`` the number of
successes and ``n_missing`` the number of trials that are missing (``status == "infra_error"``, or a
judge verdict that could not be obtained, ``judge_missing``). Missing
trials are left out of ``n``: a task with 3 recorded trials out of 4 planned has ``n = 3``, never a fourth
failure. The per-task unbiased estimators of pass@k (Chen et al. 2021, arXiv 2107.03374) and pass^k (Yao et
al. 2024, arXiv 2406.12045) are functions of ``(n, c)`` only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from agentstats.schema import Trial

__all__ = ["COUNTS_COLUMNS", "counts_frame", "empty_counts", "to_counts", "validate_counts"]

#: Columns of a counts table, in order. ``agent`` and ``task_id`` are text, the rest int64.
COUNTS_COLUMNS = ("agent", "task_id", "n", "c", "n_missing")

_MAX_NAMED = 5


def empty_counts() -> pd.DataFrame:
    """Return a counts table with no rows and the right columns and dtypes."""
    return counts_frame([], [], [], [], [])


def counts_frame(agents, tasks, n, c, n_missing) -> pd.DataFrame:
    """Build a canonical counts table (columns :data:`COUNTS_COLUMNS`, sorted by agent then task_id)."""
    df = pd.DataFrame(
        {
            "agent": pd.Series(agents, dtype=object).astype(str) if agents else pd.Series([], dtype=str),
            "task_id": pd.Series(tasks, dtype=object).astype(str) if tasks else pd.Series([], dtype=str),
            "n": np.asarray(n, dtype=np.int64),
            "c": np.asarray(c, dtype=np.int64),
            "n_missing": np.asarray(n_missing, dtype=np.int64),
        }
    )
    return df.sort_values(["agent", "task_id"], kind="stable").reset_index(drop=True)


def to_counts(trials: Iterable[Trial]) -> pd.DataFrame:
    """Count outcomes per (agent, task).

    Outcomes come from :meth:`agentstats.schema.Trial.outcome`: ``infra_error`` or ``judge_missing`` ->
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
        A cell whose trials are all missing has ``n = 0``.

    Raises
    ------
    ValueError
        When trials are unscored (outcome ``None``: no ``success``, ``reward`` or error status; the first
        few keys are named; score them first with ``agentstats.scoring.score_trials``), or when a key
        ``(agent, task_id, trial)`` occurs more than once.
    TypeError
        When an element is not a :class:`Trial`.
    """
    cells: dict[tuple[str, str], list[int]] = {}
    seen: set[tuple[str, str, int]] = set()
    unscored: list[tuple[str, str, int]] = []
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
                unscored.append(key)
            continue
        cell = cells.get((t.agent, t.task_id))
        if cell is None:
            cell = cells[(t.agent, t.task_id)] = [0, 0, 0]
        if out == "missing":
            cell[2] += 1
        else:
            cell[0] += 1
            if out == "success":
                cell[1] += 1
    if n_dupes:
        raise ValueError(
            f"{n_dupes} trial(s) repeat an (agent, task_id, trial) key already seen, e.g. "
            f"{', '.join(map(repr, dupes))}; each key must be unique (drop or renumber the repeats)"
        )
    if n_unscored:
        raise ValueError(
            f"{n_unscored} trial(s) have no outcome (no success, no reward, status 'completed'), e.g. "
            f"{', '.join(map(repr, unscored))}; score them first (`agentstats score` on the command line, "
            "agentstats.score_trials in Python) or set success/reward; trials with no ground truth to score "
            "against stay unscored"
        )
    keys = list(cells)
    vals = list(cells.values())
    return counts_frame(
        [k[0] for k in keys],
        [k[1] for k in keys],
        [v[0] for v in vals],
        [v[1] for v in vals],
        [v[2] for v in vals],
    )


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _describe_row(counts: pd.DataFrame, label: Any) -> str:
    row = counts.loc[label]
    return f"row {label!r} (agent={row['agent']!r}, task_id={row['task_id']!r})"


def validate_counts(counts: pd.DataFrame, func: str = "counts") -> pd.DataFrame:
    """Check a counts table and return a copy with int64 ``n, c, n_missing`` (``n_missing`` added as 0 if absent).

    The one validator behind every consumer of counts (:func:`agentstats.estimators.suite_pass_k`,
    :func:`agentstats.models.prepare_counts`), so a bad table gets the same message everywhere.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c`` and optionally ``n_missing``; one row per (agent, task).
    func : str
        Name of the calling function, put at the start of error messages.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    TypeError
        If ``counts`` is not a DataFrame.
    ValueError
        Listing every problem (row label, agent, task, field): a missing column, a missing agent/task, a count
        that is not a non-negative integer, ``c > n``, a duplicate (agent, task_id).
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
    df = counts.copy()
    if "n_missing" not in df.columns:
        df["n_missing"] = 0
    problems: list[str] = []
    for col in ("agent", "task_id"):
        for label in df.index[df[col].isna()]:
            problems.append(f"{_describe_row(df, label)}: field {col!r} is missing")
    for col in ("n", "c", "n_missing"):
        num = pd.to_numeric(df[col], errors="coerce")
        if df[col].dtype == bool:
            num = pd.Series(np.nan, index=df.index)
        bad = num.isna() | ~np.isfinite(num) | (num != np.round(num)) | (num < 0)
        for label in df.index[bad.to_numpy()]:
            problems.append(
                f"{_describe_row(df, label)}: field {col!r} = {_py(df.at[label, col])!r} is not a non-negative integer"
            )
        df[col] = np.where(bad, -1, num.fillna(-1)).astype(np.int64)
    over = (df["c"] > df["n"]) & (df["n"] >= 0) & (df["c"] >= 0)
    for label in df.index[over.to_numpy()]:
        c_val, n_val = _py(df.at[label, "c"]), _py(df.at[label, "n"])
        problems.append(f"{_describe_row(df, label)}: field 'c' = {c_val} > n = {n_val}")
    dup = df.duplicated(["agent", "task_id"], keep=False)
    if dup.any():
        for (agent, task), grp in df[dup].groupby(["agent", "task_id"], sort=False):
            problems.append(
                f"rows {list(grp.index)}: duplicate (agent={agent!r}, task_id={task!r}); one row per agent x task"
            )
    if problems:
        shown = problems[:25]
        more = f"\n  ... and {len(problems) - 25} more" if len(problems) > 25 else ""
        raise ValueError(
            f"{func}: invalid counts table ({len(problems)} problem(s)):\n  " + "\n  ".join(shown) + more
        )
    return df
