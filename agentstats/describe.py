"""Plain summaries of a data set and a plain-language reading of the estimates, for reports and the CLI."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from agentstats.estimators.intervals import METHOD_CLOPPER_PEARSON

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
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "[n/a]"
    return f"[{lo:.2f}, {hi:.2f}]"


def _fmt_prob(prob: float) -> str:
    """``0.95`` -> ``"95%"``, ``0.975`` -> ``"97.5%"``."""
    return f"{100 * float(prob):.10g}%"


def _ci_label(table: pd.DataFrame) -> str:
    """Return the interval probability of a result table as text (``"95%"``), from its ``ci_prob`` column or attrs."""
    if "ci_prob" in table and len(table):
        probs = pd.unique(table["ci_prob"].dropna())
        if len(probs) == 1:
            return _fmt_prob(probs[0])
        return "per-row (ci_prob)"
    return _fmt_prob(table.attrs.get("ci_prob", 0.95))


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class _Diff:
    """A paired difference ``first - second`` in pass^k, oriented as asked."""

    diff: float
    lo: float
    hi: float
    n_tasks: int
    p: float

    @property
    def above_zero(self) -> bool:
        return bool(np.isfinite(self.lo) and self.lo > 0)

    def text(self, label: str) -> str:
        p = f"; exact McNemar p = {self.p:.3g}" if np.isfinite(self.p) else ""
        return (
            f"{self.diff:+.2f}, {label} paired interval {_fmt_ci(self.lo, self.hi)}, "
            f"{_plural(self.n_tasks, 'shared task')}{p}"
        )


def _oriented(paired: pd.DataFrame, first: object, second: object, k: int) -> _Diff | None:
    """``first - second`` in pass^k at ``k`` from an all-pairs table, whichever way round the pair is stored.

    None when the table has no such row or the two agents share no task at ``k``.
    """
    rows = paired[paired["k"] == k]
    fwd = rows[(rows["agent_a"] == first) & (rows["agent_b"] == second)]
    if len(fwd):
        r, sign = fwd.iloc[0], 1.0
    else:
        back = rows[(rows["agent_a"] == second) & (rows["agent_b"] == first)]
        if not len(back):
            return None
        r, sign = back.iloc[0], -1.0
    if int(r["n_tasks"]) == 0:
        return None
    lo, hi = sign * float(r["pass_hat_k_diff_ci_low"]), sign * float(r["pass_hat_k_diff_ci_high"])
    p = r["mcnemar_p"] if "mcnemar_p" in r else np.nan
    return _Diff(
        diff=sign * float(r["pass_hat_k_diff"]),
        lo=min(lo, hi),
        hi=max(lo, hi),
        n_tasks=int(r["n_tasks"]),
        p=float(p) if pd.notna(p) else float("nan"),
    )


def _paired_lines(at1: pd.DataFrame, paired: pd.DataFrame | None, k_lo: int) -> list[str]:
    """Sentences on which agent is better at ``k_lo``, from paired differences only."""
    leader = at1.iloc[0]["agent"]
    others = [a for a in at1["agent"] if a != leader]
    if paired is None or not len(paired) or not (paired["k"] == k_lo).any():
        return [
            f"- Which agent is better is not settled here: no paired comparison at k = {k_lo} was given. Agents run "
            "on the same tasks are compared by their paired difference (`agentstats.paired_pass_k_table`), not by "
            "whether their separate intervals overlap."
        ]
    label = _ci_label(paired)  # the paired table's own interval probability
    diffs = {o: _oriented(paired, leader, o, k_lo) for o in others}
    settled_vs_leader = {o: d for o, d in diffs.items() if d is not None and d.above_zero}
    unsettled = [o for o in others if o not in settled_vs_leader]
    lines: list[str] = []
    if not unsettled:
        closest = min(settled_vs_leader, key=lambda o: settled_vs_leader[o].lo)
        lines.append(
            f"- **{leader}** is the best agent at k = {k_lo}: its paired difference in pass^{k_lo} is above 0 against "
            f"every other agent (closest: **{closest}**, {settled_vs_leader[closest].text(label)})."
        )
    else:
        shown = []
        for o in unsettled[:3]:
            d = diffs[o]
            why = d.text(label) if d is not None else f"no shared task with {k_lo}+ trials"
            shown.append(f"**{o}** ({why})")
        more = f" and {len(unsettled) - 3} more" if len(unsettled) > 3 else ""
        lines.append(
            f"- No agent is shown to be the best at k = {k_lo}: the paired difference between **{leader}** and "
            f"{', '.join(shown)}{more} is not clearly above 0, so these data do not settle which is better."
        )
    settled = []
    for _, r in paired[paired["k"] == k_lo].iterrows():
        a, b = r["agent_a"], r["agent_b"]
        if leader in (a, b):
            continue
        d = _oriented(paired, a, b, k_lo)
        if d is None or not (np.isfinite(d.lo) and np.isfinite(d.hi)) or d.lo <= 0 <= d.hi:
            continue
        better, worse = (a, b) if d.lo > 0 else (b, a)
        shown_d = d if d.lo > 0 else _oriented(paired, b, a, k_lo)
        if shown_d is not None:
            settled.append(f"**{better}** above **{worse}** ({shown_d.text(label)})")
    if settled:
        more = f"; and {len(settled) - 5} more pairs" if len(settled) > 5 else ""
        lines.append(f"- Other pairs whose paired difference excludes 0: {'; '.join(settled[:5])}{more}.")
    lines.append(
        "  (Each paired interval resamples the tasks the two agents share. To lead every other agent, all of an "
        "agent's own paired intervals must lie above 0; that keeps the error rate of the claim at the interval's "
        "level without a multiplicity correction.)"
    )
    return lines


def read_suite(
    suite: pd.DataFrame, ks: tuple[int, ...] | None = None, *, paired: pd.DataFrame | None = None
) -> str:
    """Write a short plain-language reading of per-agent suite pass@k / pass^k (Markdown).

    Which agent is better is read from **paired** differences on shared tasks only: an agent is called the best
    only when its paired interval against every other agent lies above 0 (an intersection-union test; Berger
    1982, Technometrics 24:295-300). Overlap of the separate (marginal) intervals is never used: it ignores that
    the agents faced the same tasks.

    Parameters
    ----------
    suite : pandas.DataFrame
        Output of :func:`agentstats.estimators.suite_pass_k` (columns ``agent, k, n_tasks, pass_at_k,
        pass_at_k_ci_low, pass_at_k_ci_high, pass_hat_k, pass_hat_k_ci_low, pass_hat_k_ci_high``; with
        ``n_tasks_suite``, ``under_half``, ``n_tasks_excluded``, ``ci_prob`` and the ``*_ci_method`` columns the
        reading also covers task coverage, exclusions, the interval probability and method).
    ks : tuple of int, optional
        Which k to talk about; default the smallest and the largest k present.
    paired : pandas.DataFrame, optional
        Output of :func:`agentstats.estimators.paired_pass_k_table` for the same counts. Without it no agent is
        called better than another.

    Returns
    -------
    str
        Markdown bullet points: the leading agent at the smallest k and what the paired differences say about it,
        other pairs the paired differences separate, how reliability drops from pass^1 to pass^k with the tasks
        behind each value, exclusions, and how the intervals were made.
    """
    if suite.empty:
        return "No estimates: the data hold no agent with a recorded trial."
    label = _ci_label(suite)
    lines: list[str] = []
    k_all = sorted(int(k) for k in suite["k"].unique())
    k_lo = ks[0] if ks else k_all[0]
    k_hi = ks[-1] if ks else k_all[-1]
    at1 = suite[suite["k"] == k_lo].sort_values("pass_hat_k", ascending=False, na_position="last")

    def tasks_of(r: pd.Series) -> str:
        if "n_tasks_suite" in r and pd.notna(r["n_tasks_suite"]):
            return f"{int(r['n_tasks'])} of {int(r['n_tasks_suite'])} tasks"
        return _plural(int(r["n_tasks"]), "task")

    if len(at1) >= 1:
        top = at1.iloc[0]
        lead = "has the highest estimate" if len(at1) > 1 else "succeeds on this share of tasks"
        lines.append(
            f"- At k = {k_lo}, **{top['agent']}** {lead}, pass^{k_lo} = {top['pass_hat_k']:.2f} ({label} interval "
            f"{_fmt_ci(top['pass_hat_k_ci_low'], top['pass_hat_k_ci_high'])}, {tasks_of(top)})."
        )
        if len(at1) >= 2:
            lines.extend(_paired_lines(at1, paired, k_lo))
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
                if not np.isfinite(pk) and int(g.loc[k_hi, "n_tasks"]) == 0:
                    lines.append(f"  - **{agent}**: no task with {k_hi} usable trials, so no pass^{k_hi} estimate.")
                elif np.isfinite(pk) and np.isfinite(p1):
                    under = bool(g.loc[k_hi, "under_half"]) if "under_half" in g else int(g.loc[k_hi, "n_tasks"]) < 10
                    few = " -- under half of the tasks, read with care" if under else ""
                    lines.append(
                        f"  - **{agent}**: pass^{k_hi} = {pk:.2f} against pass^{k_lo} = {p1:.2f}; "
                        f"pass@{k_hi} = {ak:.2f}; pass^{k_hi} rests on {tasks_of(g.loc[k_hi])}{few}."
                    )
    dropped = suite[suite["n_tasks_dropped"] > 0] if "n_tasks_dropped" in suite else suite.iloc[:0]
    if len(dropped):
        ks_d = sorted(int(k) for k in dropped["k"].unique())
        lines.append(
            f"- For k in {ks_d}, some tasks had fewer than k recorded trials and are left out of those means, so "
            "values at different k average different tasks (the table's `dropped` and `extrapolated` columns; open "
            "markers in the plot)."
        )
    if "n_tasks_excluded" in suite:
        per_agent = suite.groupby("agent", sort=False)["n_tasks_excluded"].max()
        per_agent = per_agent[per_agent > 0]
        if len(per_agent):
            listed = ", ".join(f"**{a}** {int(v)}" for a, v in per_agent.items())
            lines.append(
                f"- Tasks without a usable trial are left out at every k (all trials missing, or not run): {listed}."
            )
    methods = set()
    for q in ("pass_at_k", "pass_hat_k"):
        if f"{q}_ci_method" in suite:
            methods |= {str(m) for m in suite[f"{q}_ci_method"].dropna()}
    text = (
        f"- Intervals are {label} task-cluster bootstrap intervals: they reflect which tasks happened to be in the "
        "suite as well as the trial-to-trial noise."
    )
    if METHOD_CLOPPER_PEARSON in methods:
        text += (
            " Near 0 or 1 (every task with the same value, or fewer than 5 tasks' worth of successes or failures) "
            "resampling the tasks cannot show what the sample lacks, and the interval is the Clopper-Pearson "
            "interval on the task-level success mass instead (its `ci_method`)."
        )
    lines.append(text)
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
        Index ``(agent, k)``; columns ``tasks`` (tasks behind the value out of the suite's, e.g. ``41/83``),
        ``extrapolated`` (share of the suite's tasks with fewer than k usable trials), ``pass@k``,
        ``pass@k P CI``, ``pass^k``, ``pass^k P CI`` (``P`` from ``ci_prob``, e.g. ``95%``), ``dropped`` (tasks
        with fewer than k trials, left out of that k's mean) and ``note`` (``under half of the tasks`` when the value
        rests on fewer than half of the suite's tasks; ``boundary interval`` where the interval is the Clopper-Pearson
        interval used near 0 or 1, see :func:`agentstats.estimators.suite_pass_k`). Values are strings, except
        ``dropped``.
    """
    label = _ci_label(suite)

    def ci(lo: float, hi: float) -> str:
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return "n/a"
        return f"[{lo:.{digits}f}, {hi:.{digits}f}]"

    def val(x: float) -> str:
        return f"{x:.{digits}f}" if np.isfinite(x) else "n/a"

    rows = []
    for _, r in suite.iterrows():
        n_suite = r.get("n_tasks_suite")
        has_suite = n_suite is not None and pd.notna(n_suite)
        notes = []
        if has_suite and bool(r.get("under_half", False)):
            notes.append("under half of the tasks")
        boundary = [
            sym
            for q, sym in (("pass_at_k", "pass@k"), ("pass_hat_k", "pass^k"))
            if r.get(f"{q}_ci_method") == METHOD_CLOPPER_PEARSON
        ]
        if boundary:
            notes.append(f"boundary interval ({', '.join(boundary)}: Clopper-Pearson)")
        extrap = r.get("extrapolated")
        rows.append(
            {
                "agent": r["agent"],
                "k": int(r["k"]),
                "tasks": f"{int(r['n_tasks'])}/{int(n_suite)}" if has_suite else str(int(r["n_tasks"])),
                "extrapolated": f"{float(extrap):.2f}" if extrap is not None and pd.notna(extrap) else "n/a",
                "pass@k": val(r["pass_at_k"]),
                f"pass@k {label} CI": ci(r["pass_at_k_ci_low"], r["pass_at_k_ci_high"]),
                "pass^k": val(r["pass_hat_k"]),
                f"pass^k {label} CI": ci(r["pass_hat_k_ci_low"], r["pass_hat_k_ci_high"]),
                "dropped": int(r.get("n_tasks_dropped", 0) or 0),
                "note": "; ".join(notes),
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
