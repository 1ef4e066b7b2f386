"""Plain summaries of a data set and a plain-language reading of the estimates, for reports and the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["describe_counts", "format_suite_table", "read_suite", "suggest_k"]


def describe_counts(counts: pd.DataFrame) -> pd.DataFrame:
    """Per-agent overview of a counts table.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing`` (one row per agent x task cell; ``n`` excludes missing
        trials), as returned by :func:`agentstats.to_counts`.

    Returns
    -------
    pandas.DataFrame
        One row per agent: ``tasks`` (cells with at least one recorded trial), ``trials`` (sum of n),
        ``successes`` (sum of c), ``missing`` (infrastructure errors, excluded), ``tasks_with_missing``,
        ``trials_per_task_min`` / ``_median`` / ``_max`` (over cells with n >= 1), ``success_rate``
        (pooled c / n, for orientation only: suite values are means over tasks).

    Raises
    ------
    ValueError
        When a required column is absent.
    """
    required = {"agent", "task_id", "n", "c", "n_missing"}
    missing_cols = required - set(counts.columns)
    if missing_cols:
        raise ValueError(f"counts: missing column(s) {sorted(missing_cols)}")
    rows = []
    for agent, g in counts.groupby("agent", sort=True):
        observed = g[g["n"] > 0]
        n = observed["n"].to_numpy()
        rows.append(
            dict(
                agent=agent,
                tasks=len(observed),
                tasks_all_missing=int(((g["n"] == 0) & (g["n_missing"] > 0)).sum()),
                trials=int(g["n"].sum()),
                successes=int(g["c"].sum()),
                missing=int(g["n_missing"].sum()),
                tasks_with_missing=int((g["n_missing"] > 0).sum()),
                trials_per_task_min=int(n.min()) if n.size else 0,
                trials_per_task_median=float(np.median(n)) if n.size else 0.0,
                trials_per_task_max=int(n.max()) if n.size else 0,
                success_rate=float(g["c"].sum() / g["n"].sum()) if g["n"].sum() else float("nan"),
            )
        )
    return pd.DataFrame(rows)


def _fmt_ci(lo: float, hi: float) -> str:
    return f"[{lo:.2f}, {hi:.2f}]"


def read_suite(suite: pd.DataFrame, ks: tuple[int, ...] | None = None) -> str:
    """Write a short plain-language reading of per-agent suite pass@k / pass^k (Markdown).

    Parameters
    ----------
    suite : pandas.DataFrame
        Output of :func:`agentstats.estimators.suite_pass_k` (columns ``agent, k, n_tasks, pass_at_k,
        pass_at_k_ci_low, pass_at_k_ci_high, pass_hat_k, pass_hat_k_ci_low, pass_hat_k_ci_high``).
    ks : tuple of int, optional
        Which k to talk about; default the smallest and the largest k present.

    Returns
    -------
    str
        Markdown bullet points: the best agent at pass^1 and whether its interval separates from the others,
        how much reliability drops from pass^1 to pass^k, and the gap between pass@k and pass^k.
    """
    if suite.empty:
        return "No estimates: the data hold no agent with a recorded trial."
    lines: list[str] = []
    k_all = sorted(int(k) for k in suite["k"].unique())
    k_lo = ks[0] if ks else k_all[0]
    k_hi = ks[-1] if ks else k_all[-1]
    at1 = suite[suite["k"] == k_lo].sort_values("pass_hat_k", ascending=False)
    if len(at1) >= 1:
        best = at1.iloc[0]
        lead = "has the highest success rate" if len(at1) > 1 else "succeeds on this share of tasks"
        lines.append(
            f"- At k = {k_lo}, **{best['agent']}** {lead}, "
            f"{best['pass_hat_k']:.2f} (95% interval {_fmt_ci(best['pass_hat_k_ci_low'], best['pass_hat_k_ci_high'])}"
            f", {int(best['n_tasks'])} tasks)."
        )
        if len(at1) >= 2:
            second = at1.iloc[1]
            overlap = best["pass_hat_k_ci_low"] <= second["pass_hat_k_ci_high"]
            lines.append(
                f"- The runner-up, **{second['agent']}**, has {second['pass_hat_k']:.2f} "
                f"{_fmt_ci(second['pass_hat_k_ci_low'], second['pass_hat_k_ci_high'])}: the intervals "
                + (
                    "overlap, so these data do not settle which agent is better (see the Bayesian contrasts)."
                    if overlap
                    else "do not overlap, a clear difference at this sample size."
                )
            )
    if k_hi > k_lo:
        lines.append(
            f"- pass^{k_hi} (all {k_hi} tries succeed) against pass^{k_lo}, and pass@{k_hi} (at least one success in "
            f"{k_hi} tries): a wide gap between pass@{k_hi} and pass^{k_hi} means an agent can solve many tasks but "
            "not reliably."
        )
        for agent, g in suite.groupby("agent", sort=True):
            g = g.set_index("k")
            if k_lo in g.index and k_hi in g.index:
                p1, pk = g.loc[k_lo, "pass_hat_k"], g.loc[k_hi, "pass_hat_k"]
                ak = g.loc[k_hi, "pass_at_k"]
                t1, tk = int(g.loc[k_lo, "n_tasks"]), int(g.loc[k_hi, "n_tasks"])
                if np.isfinite(pk) and np.isfinite(p1):
                    few = (
                        f" (only {tk} task{'s' if tk != 1 else ''} with {k_hi}+ trials: read with care)"
                        if tk < 10
                        else ""
                    )
                    lines.append(
                        f"  - **{agent}**: pass^{k_hi} = {pk:.2f} against pass^{k_lo} = {p1:.2f}; "
                        f"pass@{k_hi} = {ak:.2f}; {tk} of {t1} tasks{few}."
                    )
    dropped = suite[suite.get("n_tasks_dropped", pd.Series(0, index=suite.index)) > 0]
    if len(dropped):
        ks_d = sorted(int(k) for k in dropped["k"].unique())
        lines.append(
            f"- For k in {ks_d}, some tasks had fewer than k recorded trials and are left out of those means "
            "(the table's `dropped` column; open markers in the plot)."
        )
    lines.append(
        "- Intervals are 95% task-cluster bootstrap intervals: they reflect which tasks happened to be in the suite "
        "as well as the trial-to-trial noise."
    )
    return "\n".join(lines)


def format_suite_table(suite: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Compact display of :func:`agentstats.estimators.suite_pass_k`: one row per (agent, k), value and interval.

    Parameters
    ----------
    suite : pandas.DataFrame
        Output of :func:`agentstats.estimators.suite_pass_k`.
    digits : int
        Decimals shown.

    Returns
    -------
    pandas.DataFrame
        Index ``(agent, k)``; columns ``tasks``, ``pass@k``, ``pass@k 95% CI``, ``pass^k``, ``pass^k 95% CI``,
        ``dropped`` (tasks with fewer than k trials, left out of that k's mean). Values are strings.
    """

    def ci(lo: float, hi: float) -> str:
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return "n/a"
        return f"[{lo:.{digits}f}, {hi:.{digits}f}]"

    def val(x: float) -> str:
        return f"{x:.{digits}f}" if np.isfinite(x) else "n/a"

    rows = []
    for _, r in suite.iterrows():
        rows.append(
            {
                "agent": r["agent"],
                "k": int(r["k"]),
                "tasks": int(r["n_tasks"]),
                "pass@k": val(r["pass_at_k"]),
                "pass@k 95% CI": ci(r["pass_at_k_ci_low"], r["pass_at_k_ci_high"]),
                "pass^k": val(r["pass_hat_k"]),
                "pass^k 95% CI": ci(r["pass_hat_k_ci_low"], r["pass_hat_k_ci_high"]),
                "dropped": int(r.get("n_tasks_dropped", 0) or 0),
            }
        )
    return pd.DataFrame(rows).set_index(["agent", "k"])


def suggest_k(counts: pd.DataFrame, max_k: int = 8) -> list[int]:
    """K values for a report: 1 .. the median number of recorded trials per (agent, task) cell, capped at ``max_k``.

    With unequal trials per task (METR-style data: most tasks 8 runs, a few 1), the smallest n would restrict every
    agent to k = 1; the median keeps the typical design while :func:`agentstats.estimators.suite_pass_k` drops,
    for each k, the tasks with fewer than k trials and says which.

    Parameters
    ----------
    counts : pandas.DataFrame
        Columns ``agent, task_id, n, c, n_missing``.
    max_k : int
        Upper cap.

    Returns
    -------
    list of int
        ``[1, ..., K]``; ``[1]`` when no cell has a trial.
    """
    n = counts.loc[counts["n"] > 0, "n"]
    k_hi = int(np.median(n)) if len(n) else 1
    return list(range(1, max(1, min(max_k, k_hi)) + 1))
