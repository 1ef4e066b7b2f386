"""Suite pass@k and pass^k per agent: means over tasks of per-task unbiased values, with task-level uncertainty.

A suite value is ``(1/T) sum_t v_t`` over the ``T`` tasks an agent attempted at least ``k`` times, where ``v_t`` is
the per-task unbiased estimate (:func:`agentstats.estimators.pass_at_k`, :func:`agentstats.estimators.pass_hat_k`)
-- a mean of per-task values, never a function of pooled counts (Chen et al. 2021, arXiv 2107.03374; Yao et al.
2024, arXiv 2406.12045). Tasks are the clusters of the uncertainty (Miller 2024, "Adding Error Bars to Evals",
arXiv 2411.00640); the interval machinery is in :mod:`agentstats.estimators.bootstrap`.

Task coverage
-------------
The *suite* is the set of task ids in the counts table (all agents together). For an agent and a ``k``, a suite task
contributes only if the agent has ``n >= k`` usable trials on it; the others are

* **excluded** (every ``k``) when the agent has no usable trial on the task: all its trials were missing
  (``infra_error`` / ``judge_missing``), it has a row with ``n = 0``, or it has no row at all (the task was run by
  other agents only);
* **dropped** at that ``k`` when ``1 <= n < k`` (no unbiased estimate exists from fewer than ``k`` trials).

``extrapolated`` is the share of suite tasks with ``n < k`` (excluded plus dropped): ``1 - n_tasks / n_tasks_suite``.
A value with ``extrapolated > 0.5`` rests on under half of the suite's tasks (``under_half``). As ``k`` grows the
task set can shrink, so a curve over ``k`` can fall (pass@5 below pass@4) because other tasks are averaged: read
``n_tasks`` with every value.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from agentstats.estimators._checks import check_n_boot
from agentstats.estimators.bootstrap import (
    METHOD_BOOTSTRAP,
    METHOD_CLOPPER_PEARSON,
    bootstrap_means,
    clopper_pearson_interval,
    needs_boundary_interval,
    percentile_interval,
)
from agentstats.estimators.unbiased import pass_at_k, pass_hat_k
from agentstats.intervals import CI_PROB, DEFAULT_SEED, CiKind, check_ci, check_ks, resolve_random_seed
from agentstats.records.counts import validate_counts

__all__ = ["SUITE_COLUMNS", "excluded_tasks", "suite_pass_k"]

#: Columns of :func:`suite_pass_k`'s result, in order.
SUITE_COLUMNS = (
    "agent", "k", "n_tasks", "n_tasks_suite", "extrapolated", "under_half", "n_tasks_dropped", "dropped_tasks",
    "n_tasks_excluded", "excluded_tasks", "n_trials", "n_missing",
    "pass_at_k", "pass_at_k_se", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_at_k_ci_method",
    "pass_hat_k", "pass_hat_k_se", "pass_hat_k_ci_low", "pass_hat_k_ci_high", "pass_hat_k_ci_method",
    "ci_prob", "ci_kind", "n_boot",
)  # fmt: skip

_QUANTITIES = ("pass_at_k", "pass_hat_k")


def excluded_tasks(grp: pd.DataFrame, suite_tasks: list[Any]) -> list[dict[str, Any]]:
    """Suite tasks without a usable trial in one agent's rows ``grp``, each ``{"task_id", "reason"}``, suite order.

    ``grp`` holds the validated counts rows of one agent; ``suite_tasks`` the suite's task ids in order of first
    appearance.
    """
    out: list[dict[str, Any]] = []
    rows = {t: (int(n), int(m)) for t, n, m in zip(grp["task_id"], grp["n"], grp["n_missing"], strict=True)}
    for task in suite_tasks:
        if task not in rows:
            out.append({"task_id": task, "reason": "not run by this agent (other agents ran it)"})
            continue
        n, missing = rows[task]
        if n >= 1:
            continue
        if missing:
            out.append(
                {"task_id": task, "reason": f"all {missing} trial{'s' if missing != 1 else ''} missing "
                 "(infra_error or judge_missing)"}
            )  # fmt: skip
        else:
            out.append({"task_id": task, "reason": "no trial recorded (n = 0)"})
    return out


def k_groups(n: np.ndarray, ks_req: list[int] | None) -> tuple[list[int], dict[int, list[int]]]:
    """Group k values by the task set they use (tasks with ``n >= k``; the sets are nested, so the set size names it).

    ``ks_req`` None means 1 .. the smallest ``n`` (``[1]`` without tasks). Returns the k values (in the order asked)
    and ``{set size: [k, ...]}``.
    """
    if ks_req is not None:
        ks = ks_req
    elif n.size:
        ks = list(range(1, int(n.min()) + 1))
    else:
        ks = [1]
    by_size: dict[int, list[int]] = {}
    for kv in ks:
        by_size.setdefault(int((n >= kv).sum()), []).append(kv)
    return ks, by_size


def resample_rng(base: int, *parts: Any) -> np.random.Generator:
    """Return the generator of one block of resamples, ``default_rng([base, crc32(part) ..., size])``.

    Strings are hashed with CRC-32 so that the stream of one agent (or pair) does not depend on which other agents
    are in the call; integers are used as they are.
    """
    key = [base] + [zlib.crc32(str(p).encode("utf-8")) if not isinstance(p, int) else p for p in parts]
    return np.random.default_rng(key)


def suite_pass_k(
    counts: pd.DataFrame,
    k: int | Iterable[int] | None = None,
    *,
    n_boot: int = 2000,
    ci_prob: float = CI_PROB,
    ci_kind: CiKind = "eti",
    random_seed: int | np.random.Generator | None = DEFAULT_SEED,
) -> pd.DataFrame:
    """Per-agent suite pass@k and pass^k: mean over tasks of the per-task unbiased values, with uncertainty.

    For agent ``a`` and each ``k``, the suite value is ``(1/T) sum_t pass_at_k(n_t, c_t, k)`` (likewise pass^k) over
    the ``T`` tasks of ``a`` with ``n_t >= k`` -- a mean of per-task values, never a function of pooled counts and
    never divided by a global trial count (Chen et al. 2021, arXiv 2107.03374; Yao et al. 2024, arXiv 2406.12045).

    * Tasks on which the agent has no usable trial are **excluded** and listed with the reason in
      ``excluded_tasks`` (module docstring).
    * By default ``k`` runs over ``1 .. min n`` of the agent's tasks with ``n >= 1``, so no task is dropped. An
      explicit ``k`` may exceed that: tasks with ``1 <= n < k`` are then **dropped for that k** (whatever their
      ``c``) and listed in ``dropped_tasks``; nothing is imputed. ``extrapolated`` (share of the suite's tasks with
      ``n < k``) and ``under_half`` say how much of the suite each value speaks for.
    * Standard error: tasks are the clusters, ``se = sd_t(values, ddof=1) / sqrt(T)`` (the clustered standard
      error of Miller 2024, "Adding Error Bars to Evals", arXiv 2411.00640, with each task's trials reduced to its
      per-task estimate; it includes both between-task spread and within-task trial noise).
    * Interval (frequentist confidence interval for the mean over the task population the tasks were sampled
      from), per quantity, named in ``pass_at_k_ci_method`` / ``pass_hat_k_ci_method``:
      ``"percentile bootstrap"``, the task-cluster percentile bootstrap with ``n_boot`` resamples of the ``T``
      tasks (Efron & Tibshirani 1993, ch. 13; pass@k and pass^k, and all ``k`` sharing a task set, use the same
      resamples); or ``"Clopper-Pearson"`` on the task-level success mass at the boundary, where the per-task
      values have no spread (all 0, all 1 or all equal: the bootstrap interval would have zero width) or hold fewer
      than 5 tasks' worth of successes or of failures (the bootstrap cannot show the rare tasks the sample lacks).
      :mod:`agentstats.estimators.bootstrap` gives the rule, the sources and why this interval holds for means of
      values in [0, 1]. With fewer than 10 tasks the boundary interval is always used.

    Parameters
    ----------
    counts : pandas.DataFrame
        One row per agent x task with columns ``agent, task_id, n, c`` and optionally ``n_missing`` (integers,
        ``0 <= c <= n``; ``n`` excludes missing trials), as returned by ``to_counts``.
    k : int, iterable of int, or None
        The k values (each >= 1). None: per agent, ``1 .. min n`` over its tasks with ``n >= 1``.
    n_boot : int, default 2000
        Bootstrap resamples: 0 skips the bootstrap and leaves those intervals NaN (boundary intervals need no
        resampling and are still given); otherwise at least 100 (``MIN_N_BOOT`` in
        :mod:`agentstats.estimators._checks`: fewer leave each end of a 95% interval to one or two resampled means).
    ci_prob : float, default :data:`agentstats.intervals.CI_PROB` (0.95)
        Interval probability, in (0, 1).
    ci_kind : {"eti"}, default "eti"
        Interval shape. Only equal-tailed intervals are defined here (each tail ``(1 - ci_prob) / 2``); the
        parameter exists so that every interval in agentstats is asked for with the same two words.
    random_seed : int, numpy.random.Generator or None, default 0
        Seed of the bootstrap. An int ``s`` gives resamples for an agent from
        ``numpy.random.default_rng([s, crc32(agent), T])``, so results do not depend on which other agents or k
        values are in the call. A Generator contributes one draw as ``s`` (its stream advances by one value);
        None draws ``s`` from fresh entropy. ``s`` is recorded in ``attrs["random_seed"]``.

    Returns
    -------
    pandas.DataFrame
        One row per (agent, k), agents in order of first appearance, k ascending; columns :data:`SUITE_COLUMNS`:
        ``agent, k``; ``n_tasks`` (tasks behind the value), ``n_tasks_suite`` (task ids in the whole table),
        ``extrapolated`` (float, share of suite tasks with ``n < k``), ``under_half`` (bool,
        ``n_tasks < n_tasks_suite / 2``), ``n_tasks_dropped, dropped_tasks`` (task ids with ``1 <= n < k``),
        ``n_tasks_excluded, excluded_tasks`` (list of ``{"task_id", "reason"}`` for tasks without usable trials),
        ``n_trials, n_missing`` (summed over the tasks used); for ``q`` in ``pass_at_k, pass_hat_k``: ``q, q_se,
        q_ci_low, q_ci_high, q_ci_method``; ``ci_prob, ci_kind, n_boot``. Values are NaN where ``n_tasks = 0``;
        the SE and interval are NaN (method missing) where ``n_tasks < 2`` (one cluster says nothing about spread).
        An agent with no task having ``n >= 1`` gets one row ``k = 1`` (default k) with ``n_tasks = 0``.
        ``attrs`` records ``random_seed, n_boot, ci_prob, ci_kind`` and ``ci_method`` (the methods used, joined by
        " / "; None when no interval was made).

    Raises
    ------
    ValueError
        If the table lacks columns, has non-integer / negative counts, ``c > n``, duplicate (agent, task_id) rows
        (every problem is listed with its row label, agent and task), or ``k``, ``n_boot``, ``ci_prob``,
        ``ci_kind``, ``random_seed`` are invalid.
    TypeError
        If ``counts`` is not a DataFrame.
    """
    func = "suite_pass_k"
    df = validate_counts(counts, func)
    ks_req = check_ks(k, func)
    n_boot = check_n_boot(n_boot, func)
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, func, kinds=("eti",))
    base = resolve_random_seed(random_seed, func)
    suite_tasks = list(dict.fromkeys(df["task_id"]))
    t_suite = len(suite_tasks)

    rows: list[dict[str, Any]] = []
    for agent, grp in df.groupby("agent", sort=False, observed=True):
        excluded = excluded_tasks(grp, suite_tasks)
        g = grp[grp["n"].to_numpy() >= 1]
        n_t = g["n"].to_numpy()
        c_t = g["c"].to_numpy()
        miss_t = g["n_missing"].to_numpy()
        tasks = g["task_id"].to_numpy()
        ks, by_size = k_groups(n_t, ks_req)
        results: dict[int, dict[str, Any]] = {}
        for size, k_group in by_size.items():
            use = n_t >= k_group[0]
            kk = np.asarray(k_group)
            m = len(kk)
            if size:
                nn, cc = n_t[use][:, None], c_t[use][:, None]
                values = np.concatenate([pass_at_k(nn, cc, kk[None, :]), pass_hat_k(nn, cc, kk[None, :])], axis=1)
            else:
                values = np.empty((0, 2 * m))
            stats = _column_stats(values, n_boot, ci_prob, (base, str(agent), size))
            for j, kv in enumerate(k_group):
                row: dict[str, Any] = {
                    "agent": agent,
                    "k": kv,
                    "n_tasks": size,
                    "n_tasks_suite": t_suite,
                    "extrapolated": 1.0 - size / t_suite if t_suite else float("nan"),
                    "under_half": bool(size < t_suite / 2),
                    "n_tasks_dropped": int((~use).sum()),
                    "dropped_tasks": tasks[~use].tolist(),
                    "n_tasks_excluded": len(excluded),
                    "excluded_tasks": [dict(e) for e in excluded],
                    "n_trials": int(n_t[use].sum()),
                    "n_missing": int(miss_t[use].sum()),
                }
                for q_i, q in enumerate(_QUANTITIES):
                    col = q_i * m + j
                    row[q] = stats["mean"][col]
                    row[f"{q}_se"] = stats["se"][col]
                    row[f"{q}_ci_low"] = stats["lo"][col]
                    row[f"{q}_ci_high"] = stats["hi"][col]
                    row[f"{q}_ci_method"] = stats["method"][col]
                row.update({"ci_prob": ci_prob, "ci_kind": ci_kind, "n_boot": n_boot})
                results[kv] = row
        rows.extend(results[kv] for kv in ks)
    out = pd.DataFrame(rows, columns=list(SUITE_COLUMNS))
    methods = sorted({str(x) for q in _QUANTITIES for x in out[f"{q}_ci_method"] if pd.notna(x)})
    out.attrs.update(
        {
            "random_seed": base,
            "n_boot": n_boot,
            "ci_prob": ci_prob,
            "ci_kind": ci_kind,
            "ci_method": " / ".join(methods) if methods else None,
        }
    )
    return out


def _column_stats(values: np.ndarray, n_boot: int, ci_prob: float, rng_key: tuple[Any, ...]) -> dict[str, Any]:
    """Mean, clustered SE and interval (with its method) of each column of ``values`` (T tasks x m quantities).

    ``rng_key`` is passed to :func:`resample_rng` when the bootstrap runs.
    """
    size, width = values.shape
    nan = np.full(width, np.nan)
    if size == 0:
        return {"mean": nan, "se": nan, "lo": nan, "hi": nan, "method": [None] * width}
    means = values.mean(axis=0)
    if size < 2:
        return {"mean": means, "se": nan, "lo": nan, "hi": nan, "method": [None] * width}
    se = values.std(axis=0, ddof=1) / np.sqrt(size)
    boundary = needs_boundary_interval(values)
    lo, hi = nan.copy(), nan.copy()
    method: list[str | None] = [None] * width
    if n_boot > 0 and not boundary.all():
        b_lo, b_hi = percentile_interval(bootstrap_means(values, n_boot, resample_rng(*rng_key)), ci_prob)
        lo[~boundary], hi[~boundary] = b_lo[~boundary], b_hi[~boundary]
        for j in np.flatnonzero(~boundary):
            method[j] = METHOD_BOOTSTRAP
    if boundary.any():
        w_lo, w_hi = clopper_pearson_interval(np.clip(means[boundary], 0.0, 1.0), size, ci_prob)
        lo[boundary], hi[boundary] = w_lo, w_hi
        for j in np.flatnonzero(boundary):
            method[j] = METHOD_CLOPPER_PEARSON
    return {"mean": means, "se": se, "lo": lo, "hi": hi, "method": method}
