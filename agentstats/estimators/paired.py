"""Paired comparisons of two agents run on the same tasks: differences in suite pass@k / pass^k.

Agents evaluated on the same tasks are paired: a hard task is hard for both, so the per-task differences
``d_t = v_a,t - v_b,t`` vary much less than either agent's values, and the difference of the two suite means is
the mean of the ``d_t``. Comparing two *marginal* intervals (do they overlap?) ignores this pairing and misjudges the
difference both ways; the intervals here resample the tasks jointly.

* Difference and interval: the mean of ``d_t`` over the tasks both agents attempted at least ``k`` times, with the
  paired task-cluster percentile bootstrap (tasks resampled jointly for both agents; Efron & Tibshirani 1993,
  "An Introduction to the Bootstrap", ch. 13; for evals, Miller 2024, "Adding Error Bars to Evals",
  arXiv 2411.00640, on paired differences). At the boundary -- the ``d_t`` have no spread (e.g. both agents fail
  every task, where the bootstrap interval would have zero width), or either agent's values call for the boundary
  interval (:func:`agentstats.estimators.bootstrap.needs_boundary_interval`) -- the interval is the MOVER combination
  of the two agents' Clopper-Pearson intervals (:mod:`agentstats.estimators.bootstrap`).
* For ``k = 1`` with one trial per task and agent, the exact McNemar test (McNemar 1947, "Note on the sampling error
  of the difference between correlated proportions or percentages", Psychometrika 12:153-157): under equal success
  rates, the tasks solved by exactly one agent split between them as Binomial(b + c, 1/2), so the two-sided p-value
  is ``scipy.stats.binomtest(b, b + c, 0.5).pvalue`` with ``b`` (``c``) the tasks only ``agent_a`` (``agent_b``)
  solved (exact conditional version; Fagerland, Lydersen & Laake 2013, BMC Medical Research Methodology 13:91).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from agentstats.estimators._checks import check_n_boot
from agentstats.estimators.bootstrap import (
    METHOD_BOOTSTRAP,
    METHOD_MOVER,
    SPREAD_TOL,
    bootstrap_means,
    clopper_pearson_interval,
    mover_difference,
    needs_boundary_interval,
    no_spread,
    percentile_interval,
)
from agentstats.estimators.suite import k_groups, resample_rng
from agentstats.estimators.unbiased import pass_at_k, pass_hat_k
from agentstats.intervals import CI_PROB, DEFAULT_SEED, CiKind, check_ci, check_ks, resolve_random_seed
from agentstats.records.counts import validate_counts

__all__ = ["PAIRED_COLUMNS", "paired_pass_k", "paired_pass_k_table"]

_QUANTITIES = ("pass_at_k", "pass_hat_k")

#: Columns of :func:`paired_pass_k`'s result, in order.
PAIRED_COLUMNS = (
    "agent_a", "agent_b", "k", "n_tasks", "n_tasks_paired", "n_tasks_dropped", "dropped_tasks",
    "tasks_only_a", "tasks_only_b",
    *(f"{q}{s}" for q in _QUANTITIES
      for s in ("_a", "_b", "_diff", "_diff_se", "_diff_ci_low", "_diff_ci_high", "_diff_ci_method")),
    "mcnemar_a_only", "mcnemar_b_only", "mcnemar_p", "ci_prob", "ci_kind", "n_boot",
)  # fmt: skip


def paired_pass_k(
    counts: pd.DataFrame,
    agent_a: Any,
    agent_b: Any,
    k: int | Iterable[int] | None = None,
    *,
    n_boot: int = 2000,
    ci_prob: float = CI_PROB,
    ci_kind: CiKind = "eti",
    random_seed: int | np.random.Generator | None = DEFAULT_SEED,
) -> pd.DataFrame:
    """Paired difference ``agent_a - agent_b`` in suite pass@k and pass^k, with a paired bootstrap interval.

    For each ``k`` the difference is the mean over the tasks both agents attempted at least ``k`` times of
    ``v_a,t - v_b,t``, where ``v`` is the per-task unbiased estimate (:func:`agentstats.estimators.pass_at_k`,
    :func:`agentstats.estimators.pass_hat_k`). The interval resamples those tasks jointly (paired task-cluster
    percentile bootstrap; the module docstring gives the sources), or, at the boundary, combines the two agents'
    Clopper-Pearson intervals (MOVER); ``*_diff_ci_method`` names the one used. For ``k = 1`` with
    exactly one trial per task for both agents, the exact McNemar test is added.

    Parameters
    ----------
    counts : pandas.DataFrame
        Counts table: ``agent, task_id, n, c`` and optionally ``n_missing`` (as returned by ``to_counts``).
    agent_a, agent_b : str
        The two agents (values of ``counts["agent"]``); the difference is ``a - b``.
    k : int, iterable of int, or None
        The k values. None: ``1 .. min n`` over the paired tasks (both agents' trials), so no task is dropped.
    n_boot : int, default 2000
        Bootstrap resamples: 0 leaves the bootstrap intervals NaN; otherwise at least 100 (as in
        :func:`agentstats.estimators.suite_pass_k`).
    ci_prob : float, default :data:`agentstats.intervals.CI_PROB` (0.95)
        Interval probability, in (0, 1).
    ci_kind : {"eti"}, default "eti"
        Interval shape; only equal-tailed intervals are defined for these frequentist intervals.
    random_seed : int, numpy.random.Generator or None, default 0
        Seed: resamples come from ``numpy.random.default_rng([s, crc32(agent_a), crc32(agent_b), T])``; a
        Generator contributes one draw as ``s``, None fresh entropy; ``s`` is in ``attrs["random_seed"]``.

    Returns
    -------
    pandas.DataFrame
        One row per ``k`` (ascending), columns :data:`PAIRED_COLUMNS`: ``agent_a, agent_b, k``; ``n_tasks`` (tasks
        behind the difference: both agents have ``n >= k``), ``n_tasks_paired`` (tasks where both have ``n >= 1``),
        ``n_tasks_dropped, dropped_tasks`` (paired tasks where one agent has ``n < k``), ``tasks_only_a,
        tasks_only_b`` (tasks with usable trials for one agent only: not compared); for ``q`` in ``pass_at_k,
        pass_hat_k``: ``q_a, q_b`` (each agent's mean over the same tasks), ``q_diff`` (``q_a - q_b``),
        ``q_diff_se`` (``sd(d_t) / sqrt(T)``), ``q_diff_ci_low, q_diff_ci_high, q_diff_ci_method``;
        ``mcnemar_a_only, mcnemar_b_only`` (tasks only a / only b solved) and ``mcnemar_p`` (two-sided exact
        p-value; 1.0 when no task is discordant), NaN unless ``k = 1`` and every paired task has ``n = 1`` for both
        agents; ``ci_prob, ci_kind, n_boot``. Values are NaN where ``n_tasks = 0``; SE and interval NaN where
        ``n_tasks < 2``.

    Raises
    ------
    ValueError
        For an invalid counts table (as :func:`agentstats.estimators.suite_pass_k`), an agent not in the table, the
        same agent twice, or invalid ``k``, ``n_boot``, ``ci_prob``, ``ci_kind``, ``random_seed``.

    Examples
    --------
    Thirty tasks, one trial each; ``A`` solves tasks 0-14, ``B`` tasks 6-14:

    >>> import pandas as pd
    >>> counts = pd.DataFrame({"agent": ["A"] * 30 + ["B"] * 30, "task_id": [f"t{i:02d}" for i in range(30)] * 2,
    ...                        "n": 1, "c": [int(i < 15) for i in range(30)] + [int(6 <= i < 15) for i in range(30)]})
    >>> row = paired_pass_k(counts, "A", "B").iloc[0]
    >>> round(float(row.pass_hat_k_diff), 3), round(float(row.mcnemar_p), 5)
    (0.2, 0.03125)
    """
    func = "paired_pass_k"
    df = validate_counts(counts, func)
    ks_req = check_ks(k, func)
    n_boot = check_n_boot(n_boot, func)
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, func, kinds=("eti",))
    base = resolve_random_seed(random_seed, func)
    _check_agents(df, [agent_a, agent_b], func)
    if agent_a == agent_b:
        raise ValueError(f"{func}: agent_a and agent_b are both {agent_a!r}; give two different agents")
    out = _paired(_usable(df), agent_a, agent_b, ks_req, n_boot, ci_prob, ci_kind, base)
    out.attrs.update({"random_seed": base, "n_boot": n_boot, "ci_prob": ci_prob, "ci_kind": ci_kind})
    return out


def paired_pass_k_table(
    counts: pd.DataFrame,
    k: int | Iterable[int] | None = None,
    *,
    agents: Sequence[Any] | None = None,
    n_boot: int = 2000,
    ci_prob: float = CI_PROB,
    ci_kind: CiKind = "eti",
    random_seed: int | np.random.Generator | None = DEFAULT_SEED,
) -> pd.DataFrame:
    """Paired differences for every pair of agents, each pair once (``agent_a`` listed before ``agent_b``).

    Runs :func:`paired_pass_k` for each unordered pair of ``agents``. Each interval is for its own pair (they are
    not simultaneous): with many agents some intervals will exclude 0 by chance. To claim one agent beats *every*
    other, require each of its paired intervals to exclude 0 (an intersection-union test, which needs no
    multiplicity correction; Berger 1982, "Multiparameter hypothesis testing and acceptance sampling",
    Technometrics 24:295-300). :func:`agentstats.read_suite` does so.

    Parameters
    ----------
    counts : pandas.DataFrame
        Counts table (as for :func:`paired_pass_k`).
    k : int, iterable of int, or None
        The k values; None: per pair, ``1 .. min n`` over its paired tasks.
    agents : sequence of str, optional
        Agents to compare, in this order; default every agent in order of first appearance.
    n_boot, ci_prob, ci_kind, random_seed
        As for :func:`paired_pass_k`. A Generator or None seed is resolved once to an integer ``s`` for the whole
        table; every pair then draws from its own stream (``[s, crc32(a), crc32(b), T]``), so a pair's numbers do not
        depend on which other agents are compared.

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`paired_pass_k` for all pairs (columns :data:`PAIRED_COLUMNS`), pairs in the order of
        ``agents`` (``(a1, a2), (a1, a3), ..., (a2, a3), ...``), ``k`` ascending within a pair. Empty (with these
        columns) when fewer than two agents are given. ``attrs`` as for :func:`paired_pass_k`.

    Raises
    ------
    ValueError
        As :func:`paired_pass_k`; also for an agent named twice in ``agents``.
    """
    func = "paired_pass_k_table"
    df = validate_counts(counts, func)
    ks_req = check_ks(k, func)
    n_boot = check_n_boot(n_boot, func)
    ci_prob, ci_kind = check_ci(ci_prob, ci_kind, func, kinds=("eti",))
    base = resolve_random_seed(random_seed, func)
    names = list(dict.fromkeys(df["agent"])) if agents is None else list(agents)
    if len(set(names)) != len(names):
        raise ValueError(f"{func}: agents lists an agent more than once: {names!r}")
    _check_agents(df, names, func)
    usable = _usable(df)
    parts = [
        _paired(usable, a, b, ks_req, n_boot, ci_prob, ci_kind, base)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(PAIRED_COLUMNS))
    out.attrs.update({"random_seed": base, "n_boot": n_boot, "ci_prob": ci_prob, "ci_kind": ci_kind})
    return out


def _check_agents(df: pd.DataFrame, agents: list[Any], func: str) -> None:
    known = list(dict.fromkeys(df["agent"]))
    unknown = [a for a in agents if a not in set(known)]
    if unknown:
        shown = ", ".join(repr(a) for a in known[:20]) + (" ..." if len(known) > 20 else "")
        raise ValueError(f"{func}: agent(s) {unknown!r} not in the counts table; agents present: {shown}")


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (``binomtest(b, b + c, 1/2)``; 1.0 if none)."""
    total = a_only + b_only
    if total == 0:
        return 1.0
    return float(stats.binomtest(a_only, total, 0.5, alternative="two-sided").pvalue)


def _usable(df: pd.DataFrame) -> dict[Any, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per agent, the ``(task_id, n, c)`` arrays of its rows with ``n >= 1`` (in table order)."""
    use = df[df["n"].to_numpy() >= 1]
    return {
        agent: (g["task_id"].to_numpy(dtype=object), g["n"].to_numpy(), g["c"].to_numpy())
        for agent, g in use.groupby("agent", sort=False, observed=True)
    }


def _paired(
    usable: dict[Any, tuple[np.ndarray, np.ndarray, np.ndarray]],
    a: Any,
    b: Any,
    ks_req: list[int] | None,
    n_boot: int,
    ci_prob: float,
    ci_kind: str,
    base: int,
) -> pd.DataFrame:
    empty = (np.empty(0, dtype=object), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
    tasks_a, n_a_all, c_a_all = usable.get(a, empty)
    tasks_b, n_b_all, c_b_all = usable.get(b, empty)
    pos_b = pd.Index(tasks_b).get_indexer(pd.Index(tasks_a))  # where each of a's tasks sits in b's rows, or -1
    shared = pos_b >= 0
    in_a = np.zeros(len(tasks_b), dtype=bool)
    in_a[pos_b[shared]] = True
    only_a, only_b = tasks_a[~shared].tolist(), tasks_b[~in_a].tolist()
    tasks = tasks_a[shared]
    n_a, c_a = n_a_all[shared], c_a_all[shared]
    n_b, c_b = n_b_all[pos_b[shared]], c_b_all[pos_b[shared]]
    n_min = np.minimum(n_a, n_b)
    ks, by_size = k_groups(n_min, ks_req)
    rows: dict[int, dict[str, Any]] = {}
    for size, k_group in by_size.items():
        use = n_min >= k_group[0]
        kk = np.asarray(k_group)[None, :]
        m = kk.shape[1]
        if size:
            va = np.concatenate(
                [pass_at_k(n_a[use, None], c_a[use, None], kk), pass_hat_k(n_a[use, None], c_a[use, None], kk)], axis=1
            )
            vb = np.concatenate(
                [pass_at_k(n_b[use, None], c_b[use, None], kk), pass_hat_k(n_b[use, None], c_b[use, None], kk)], axis=1
            )
        else:
            va = vb = np.empty((0, 2 * m))
        st = _diff_stats(va, vb, n_boot, ci_prob, (base, str(a), str(b), size))
        one_trial = bool(size) and bool(np.all(n_a[use] == 1) and np.all(n_b[use] == 1))
        for j, kv in enumerate(k_group):
            row: dict[str, Any] = {
                "agent_a": a,
                "agent_b": b,
                "k": kv,
                "n_tasks": size,
                "n_tasks_paired": len(tasks),
                "n_tasks_dropped": int((~use).sum()),
                "dropped_tasks": tasks[~use].tolist(),
                "tasks_only_a": list(only_a),
                "tasks_only_b": list(only_b),
            }
            for q_i, q in enumerate(_QUANTITIES):
                col = q_i * m + j
                row[f"{q}_a"] = st["mean_a"][col]
                row[f"{q}_b"] = st["mean_b"][col]
                row[f"{q}_diff"] = st["diff"][col]
                row[f"{q}_diff_se"] = st["se"][col]
                row[f"{q}_diff_ci_low"] = st["lo"][col]
                row[f"{q}_diff_ci_high"] = st["hi"][col]
                row[f"{q}_diff_ci_method"] = st["method"][col]
            if kv == 1 and one_trial:
                sa, sb = c_a[use] == 1, c_b[use] == 1
                a_only, b_only = int(np.sum(sa & ~sb)), int(np.sum(~sa & sb))
                row.update(
                    {"mcnemar_a_only": a_only, "mcnemar_b_only": b_only, "mcnemar_p": mcnemar_exact(a_only, b_only)}
                )
            else:
                row.update({"mcnemar_a_only": np.nan, "mcnemar_b_only": np.nan, "mcnemar_p": np.nan})
            row.update({"ci_prob": ci_prob, "ci_kind": ci_kind, "n_boot": n_boot})
            rows[kv] = row
    return pd.DataFrame([rows[kv] for kv in ks], columns=list(PAIRED_COLUMNS))


def _diff_stats(
    va: np.ndarray, vb: np.ndarray, n_boot: int, ci_prob: float, rng_key: tuple[Any, ...]
) -> dict[str, Any]:
    """Means, paired difference, its SE and interval per column of the per-task values ``va``, ``vb`` (T x m)."""
    size, width = va.shape
    nan = np.full(width, np.nan)
    if size == 0:
        return {"mean_a": nan, "mean_b": nan, "diff": nan, "se": nan, "lo": nan, "hi": nan, "method": [None] * width}
    d = va - vb
    mean_a, mean_b, diff = va.mean(axis=0), vb.mean(axis=0), d.mean(axis=0)
    if size < 2:
        return {"mean_a": mean_a, "mean_b": mean_b, "diff": diff, "se": nan, "lo": nan, "hi": nan,
                "method": [None] * width}  # fmt: skip
    se = d.std(axis=0, ddof=1) / np.sqrt(size)
    flat_d = no_spread(d)
    boundary = flat_d | needs_boundary_interval(va) | needs_boundary_interval(vb)
    lo, hi = nan.copy(), nan.copy()
    method: list[str | None] = [None] * width
    if n_boot > 0 and not boundary.all():
        b_lo, b_hi = percentile_interval(bootstrap_means(d, n_boot, resample_rng(*rng_key)), ci_prob)
        lo[~boundary], hi[~boundary] = b_lo[~boundary], b_hi[~boundary]
        for j in np.flatnonzero(~boundary):
            method[j] = METHOD_BOOTSTRAP
    if boundary.any():
        ma, mb = np.clip(mean_a[boundary], 0.0, 1.0), np.clip(mean_b[boundary], 0.0, 1.0)
        corr = np.where(flat_d[boundary], 0.0, _pearson(va[:, boundary], vb[:, boundary]))
        ci_a, ci_b = clopper_pearson_interval(ma, size, ci_prob), clopper_pearson_interval(mb, size, ci_prob)
        m_lo, m_hi = mover_difference(ma, ci_a, mb, ci_b, corr)
        # a correlation of exactly 1 with mirror-image limits would cancel the width: drop the term there
        collapsed = m_hi - m_lo <= SPREAD_TOL
        if collapsed.any():
            z_lo, z_hi = mover_difference(ma, ci_a, mb, ci_b, 0.0)
            m_lo, m_hi = np.where(collapsed, z_lo, m_lo), np.where(collapsed, z_hi, m_hi)
        lo[boundary], hi[boundary] = m_lo, m_hi
        for j in np.flatnonzero(boundary):
            method[j] = METHOD_MOVER
    return {"mean_a": mean_a, "mean_b": mean_b, "diff": diff, "se": se, "lo": lo, "hi": hi, "method": method}


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson correlation per column of ``x``, ``y`` (T x m); 0 where either column has no spread."""
    xc, yc = x - x.mean(axis=0), y - y.mean(axis=0)
    sxy = (xc * yc).sum(axis=0)
    sxx, syy = (xc**2).sum(axis=0), (yc**2).sum(axis=0)
    ok = (np.ptp(x, axis=0) > SPREAD_TOL) & (np.ptp(y, axis=0) > SPREAD_TOL)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = sxy / np.sqrt(sxx * syy)
    return np.where(ok, np.clip(r, -1.0, 1.0), 0.0)
